"""The ready-made judges and the pairwise check kind end to end: a scaffolded suite with `faithfulness`,
`answer-relevancy`, `g-eval` and `pairwise` checks in its checks.yaml, judged by a pinned judge on a loopback
OpenAI-compatible server, recorded live, replayed with no server, blessed, and then a prompt change recorded
against that baseline (so the pairwise check compares) and replayed.

The model's replies and the judge's answers are authored by this test (the functions below): what each check
must say is worked out from them here, never read back from evalkit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeOpenAI

from evalkit.judging.ready_judges import system_prompt

pytestmark = pytest.mark.slow

CHECKS = """\
  - name: faithful
    faithfulness: {context: text}
  - name: answers
    answer-relevancy: {question: text, pass_at: 3}
  - name: explains
    g-eval:
      criteria: The reason names what in the text decides the label
      steps: [Find the words of the text the reason quotes., Decide whether they decide the label.]
      pass_at: 3
  - name: no_worse
    pairwise: {against: baseline, criterion: "Which reply gives the more specific reason?"}
"""
V2_WORD = "briefly"
V2_REASONS = {"late-refund": "specific: the refund was promised for Monday",  # unfaithful, and a pairwise win
              "broken-zip": "vague",  # a pairwise loss
              "opening-hours": "asks about hours"}  # the judge's preference flips with the order: a tie
V1_REASON = "what the message says"


def model_reply(case: str, label: str, v2: bool) -> str:
    return json.dumps({"label": label, "reason": V2_REASONS.get(case, V1_REASON) if v2 else V1_REASON})


def judge_answer(system: str, user: str) -> str:
    """The authored judge: faithfulness fails a reply claiming "Monday"; g-eval answers in prose (no JSON) for a
    reply about hours; pairwise prefers the "specific" reply, avoids the "vague" one, else picks the first shown."""
    if system == system_prompt("faithfulness"):
        unfaithful = "Monday" in user
        return json.dumps({"reason": "Monday is not in the context" if unfaithful else "all in the context",
                           "score": 2 if unfaithful else 5})
    if system == system_prompt("answer-relevancy"):
        return json.dumps({"reason": "it classifies the message", "score": 4})
    if system == system_prompt("g-eval"):
        return "Score: 3" if "asks about hours" in user else json.dumps({"reason": "names it", "score": 3})
    first, second = user.split("First answer:\n", 1)[1].split("\n\nSecond answer:\n", 1)
    second = second.split("\n\n", 1)[0]
    for word, prefer in (("specific", True), ("vague", False)):
        if (word in first) != (word in second):
            return json.dumps({"verdict": "first" if (word in first) == prefer else "second"})
    return json.dumps({"verdict": "first"})


def test_ready_made_judges_and_pairwise_are_recorded_replayed_and_compare_against_the_baseline(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    def tests(job: str) -> dict[str, dict[str, Any]]:
        report = json.loads((tmp_path / f"outputs/{job}/report.json").read_text())
        return {t["nodeid"].removeprefix("checks.yaml::"): t for t in report["tests"]}

    assert run("evalkit.cli.main", "new", "project").returncode == 0
    assert run("evalkit.cli.main", "new", "suite", "reviews").returncode == 0
    suite = tmp_path / "suites/reviews"
    (suite / "checks.yaml").write_text((suite / "checks.yaml").read_text() + CHECKS)
    refused = run("evalkit", "baseline=none")
    assert refused.returncode == 3
    assert "answer-relevancy, faithfulness, g-eval, pairwise checks need the suite's pinned judge" in refused.stderr
    labels = {c["text"]: (c["id"], c["label"]) for c in json.loads((suite / "datasets/v1.json").read_text())["cases"]}

    def answer(body: dict[str, Any]) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if body["model"] == "fake-judge":
            return judge_answer(system, user)
        case, label = labels[user]
        return model_reply(case, label, V2_WORD in system)

    (tmp_path / "conf/judge").mkdir()
    (tmp_path / "conf/judge/fake.yaml").write_text("name: fake-judge\nprovider: openai\n"
                                                   "base_url: http://127.0.0.1:9/v1\noptions: {temperature: 0}\n")
    option = tmp_path / "conf/suite/reviews.yaml"
    option.write_text(option.read_text().replace("  # - /judge: gemini-flash", "  - /judge: fake"))
    (suite / "prompts/v2.txt").write_text((suite / "prompts/v1.txt").read_text() + f"\nAnswer {V2_WORD}.\n")
    (tmp_path / "conf/prompt").mkdir()
    (tmp_path / "conf/prompt/v2.yaml").write_text("version: v2\nfile: ${suite.path}/prompts/v2.txt\n")
    cases = sorted(case for case, _ in labels.values())
    changed = sorted(V2_REASONS)

    with FakeOpenAI(answer) as server:
        def judged() -> list[str]:
            return [r.body["messages"][0]["content"] for r in server.requests if r.body["model"] == "fake-judge"]

        live = run("evalkit", "mode=live", "baseline=none", f"model.base_url={server.base_url}",
                   f"judge.base_url={server.base_url}", "hydra.run.dir=outputs/first")
        assert live.returncode == 0, live.stderr
        # one judge call per ready-made check and case; with no baseline, no pairwise call
        assert sorted(judged()) == sorted(system_prompt(k) for k in ("faithfulness", "answer-relevancy", "g-eval")
                                          for _ in cases)
        replayed = run("evalkit", "baseline=none", "hydra.run.dir=outputs/replayed")
        first_calls = len(server.requests)
        assert replayed.returncode == 0, replayed.stderr
        for job in ("first", "replayed"):
            outcomes = tests(job)
            assert all(outcomes[f"{name}[{c}]"]["outcome"] == "passed" for name in ("faithful", "answers", "explains")
                       for c in cases), job
            assert {outcomes[f"no_worse[{c}]"]["outcome"] for c in cases} == {"skipped"}
        blessed = run("evalkit.cli.main", "bless", "outputs/first/report.json")
        assert blessed.returncode == 0, blessed.stdout + blessed.stderr

        gated = run("evalkit", "prompt=v2", "mode=live", f"model.base_url={server.base_url}",
                    f"judge.base_url={server.base_url}", "hydra.run.dir=outputs/v2")
        v2_calls = len(server.requests) - first_calls
        # five task calls, three ready-made judge calls per case, and two pairwise calls per reply that changed
        assert v2_calls == len(cases) * 4 + 2 * len(changed), gated.stderr
        replayed_v2 = run("evalkit", "prompt=v2", "hydra.run.dir=outputs/v2-replayed")
        assert len(server.requests) - first_calls == v2_calls  # the replay called nothing
    assert replayed_v2.returncode == gated.returncode, replayed_v2.stderr

    for job in ("v2", "v2-replayed"):
        outcomes = tests(job)
        failed = sorted(name for name, t in outcomes.items() if t["outcome"] != "passed")
        assert failed == ["explains[opening-hours]", "faithful[late-refund]", "no_worse[broken-zip]"], job
        assert "error" not in {t["outcome"] for t in outcomes.values()}  # the prose answer fails, never errors
        assert outcomes["faithful[late-refund]"]["call"]["longrepr"] == (
            "expected faithfulness to the context at level 4 or above (of 5), came 2: Monday is not in the context")
        assert outcomes["explains[opening-hours]"]["call"]["longrepr"] == (
            "expected the judge's score as JSON {\"reason\": ..., \"score\": 1-5}, came unparseable JSON "
            "(Expecting value): Score: 3")
        assert outcomes["no_worse[broken-zip]"]["call"]["longrepr"] == (
            "expected no loss against the baseline's reply, came a loss (the judge preferred the baseline's reply "
            "in both orders)")
        report = json.loads((tmp_path / f"outputs/{job}/report.json").read_text())
        metrics = {name: m["mean"] for name, m in report["metrics"].items()}
        # a win (late-refund), a loss (broken-zip), three ties: opening-hours flipped, two replies unchanged
        assert (metrics["no_worse.win"], metrics["no_worse.loss"], metrics["no_worse.tie"]) == (0.2, 0.2, 0.6)
        assert metrics["no_worse.disagree"] == 0.2
        assert metrics["faithful.score"] == (5 * 4 + 2) / 5
        assert report["eval"]["judge_model"] == "fake-judge"

    # the prompts are in the recorded requests: the judge's system message and the check's own words
    recording = next(p for p in (tmp_path / "recordings").rglob("*.json") if "v2" in p.name)
    calls = json.loads(recording.read_text())["calls"]
    assert calls["judge/faithful/late-refund"]["request"]["messages"][0]["content"] == system_prompt("faithfulness")
    assert sorted(c for c in calls if c.startswith("judge/no_worse/")) == sorted(
        f"judge/no_worse/{order}/{case}" for order in ("new-first", "old-first") for case in changed)
    # calibration: a person's labels of the v2 replies, set against the checks' verdicts in the replayed report
    recorded_as = json.loads((tmp_path / "outputs/v2-replayed/report.json").read_text())["provenance"]["recording"]
    labels = {"faithful": {"late-refund": "fail", "fast-fix": "fail", "broken-zip": "pass"},  # TN, FP, TP
              "explains": {"opening-hours": "pass", "late-refund": "pass"},  # FN (the prose answer), TP
              "no_worse": {"broken-zip": "fail", "late-refund": "pass"}}  # TN, TP
    (suite / "judge_labels.yaml").write_text(json.dumps({"recording": recorded_as, "labels": labels}))
    calibrated = run("evalkit.cli.main", "calibrate", "suite=reviews", "--report", "outputs/v2-replayed/report.json",
                     "--out", "calibration.json")
    assert calibrated.returncode == 0, calibrated.stderr
    result = json.loads((tmp_path / "calibration.json").read_text())["checks"]
    assert {c: (r["tp"], r["fp"], r["tn"], r["fn"]) for c, r in result.items()} == {
        "faithful": (1, 1, 1, 0), "explains": (1, 0, 0, 1), "no_worse": (1, 0, 1, 0)}
    assert "  - faithful[fast-fix]: labelled fail, the check passed" in calibrated.stdout
    (suite / "judge_labels.yaml").write_text(json.dumps({"recording": "recordings/other.json", "labels": labels}))
    other = run("evalkit.cli.main", "calibrate", "suite=reviews", "--report", "outputs/v2-replayed/report.json")
    assert other.returncode == 3 and "the labels are about the replies of recordings/other.json" in other.stderr

    # so a change to a check's words is a stale recording for its calls, refused by name, never a new verdict
    checks = suite / "checks.yaml"
    checks.write_text(checks.read_text().replace("decides the label", "decides the label, in a few words"))
    stale = run("evalkit", "prompt=v2", "hydra.run.dir=outputs/stale")
    assert stale.returncode == 3 and "judge/explains/" in stale.stderr, stale.stderr
