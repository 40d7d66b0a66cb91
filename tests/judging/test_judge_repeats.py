"""`judge.repeats=K` end to end: a scaffolded suite with `faithfulness` and `llm-rubric` checks, judged three times
per reply by a pinned judge on a loopback OpenAI-compatible server, recorded live and replayed (each repeat its own
call), its self-agreement in the report, a judge that flips on a reply reviewed rather than blocked, and a
calibration beside the baseline that lets `min_judge_kappa` decide.

The model's replies and the judge's answers are authored here: the judge flips on one reply by the seed each
repeat is sent with (repeat r: seed r), so what each check and the gate must say is worked out here.
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

from evalkit.judging.llm_rubric import JUDGE_PROMPT
from evalkit.judging.ready_judges import system_prompt

pytestmark = pytest.mark.slow

CHECKS = """\
  - name: faithful
    faithfulness: {context: text}
  - name: polite
    llm-rubric: The reason is stated without insulting the customer
"""
FLIPPED = "broken-zip"
"""The case whose v2 reply claims "Monday": the judge passes it on repeat 0 only (a flip, and a majority fail)."""


def judge_answer(system: str, user: str, seed: int) -> str:
    if system == system_prompt("faithfulness"):
        unsure = "Monday" in user and seed > 0
        return json.dumps({"reason": "Monday is not in the context" if unsure else "all in it",
                           "score": 2 if unsure else 5})
    assert system == JUDGE_PROMPT
    return json.dumps({"pass": True, "reason": "polite"})


def test_a_judge_judging_each_reply_three_times_is_recorded_replayed_measured_and_reviewed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    def report(job: str) -> dict[str, Any]:
        return json.loads((tmp_path / f"outputs/{job}/report.json").read_text())

    assert run("evalkit.cli.main", "new", "project").returncode == 0
    assert run("evalkit.cli.main", "new", "suite", "reviews").returncode == 0
    suite = tmp_path / "suites/reviews"
    (suite / "checks.yaml").write_text((suite / "checks.yaml").read_text() + CHECKS)
    labels = {c["text"]: (c["id"], c["label"]) for c in json.loads((suite / "datasets/v1.json").read_text())["cases"]}
    cases = sorted(case for case, _ in labels.values())

    def answer(body: dict[str, Any]) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if body["model"] == "fake-judge":
            return judge_answer(system, user, int(body.get("seed", 0)))
        case, label = labels[user]
        said = "refund on Monday" if case == FLIPPED and "briefly" in system else "what the message says"
        return json.dumps({"label": label, "reason": said})

    (tmp_path / "conf/judge").mkdir()
    (tmp_path / "conf/judge/fake.yaml").write_text("name: fake-judge\nprovider: openai\n"
                                                   "base_url: http://127.0.0.1:9/v1\noptions: {temperature: 0}\n"
                                                   "repeats: 1\n")
    option = tmp_path / "conf/suite/reviews.yaml"
    option.write_text(option.read_text().replace("  # - /judge: gemini-flash", "  - /judge: fake"))
    (suite / "prompts/v2.txt").write_text((suite / "prompts/v1.txt").read_text() + "\nAnswer briefly.\n")
    (tmp_path / "conf/prompt").mkdir()
    (tmp_path / "conf/prompt/v2.yaml").write_text("version: v2\nfile: ${suite.path}/prompts/v2.txt\n")

    with FakeOpenAI(answer) as server:
        urls = (f"model.base_url={server.base_url}", f"judge.base_url={server.base_url}")

        def judged() -> int:
            return sum(r.body["model"] == "fake-judge" for r in server.requests)

        once = run("evalkit", "mode=live", "baseline=none", *urls, "hydra.run.dir=outputs/once")
        assert once.returncode == 0, once.stderr
        assert judged() == 2 * len(cases)
        first = run("evalkit", "mode=live", "baseline=none", "judge.repeats=3", *urls, "hydra.run.dir=outputs/v1")
        assert first.returncode == 0, first.stderr
        assert judged() == 2 * len(cases) + 2 * 3 * len(cases)  # K is in the judge's fingerprint: all asked again
        assert run("evalkit.cli.main", "bless", "outputs/v1/report.json").returncode == 0
        gated = run("evalkit", "mode=live", "prompt=v2", "judge.repeats=3", *urls, "hydra.run.dir=outputs/v2")
        sent = len(server.requests)
        replayed = run("evalkit", "prompt=v2", "judge.repeats=3", "hydra.run.dir=outputs/v2-replayed")
        assert len(server.requests) == sent  # the replay called nothing: every repeat came from the recording

    # K = 3 is another judge fingerprint than K = 1, and the report says what it covers
    assert report("once")["eval"]["judge_sha"] != report("v1")["eval"]["judge_sha"]
    assert report("v1")["eval"]["settings"]["judge"]["repeats"] == 3
    recording = json.loads(Path(tmp_path / report("v2")["provenance"]["recording"]).read_text())
    assert {f"judge/faithful/{FLIPPED}", f"judge/faithful/{FLIPPED}~1", f"judge/faithful/{FLIPPED}~2"} <= \
        set(recording["calls"])
    for job, done in (("v2", gated), ("v2-replayed", replayed)):
        # the flip is reviewed, never a regression on its own, and the decision names check and case
        assert done.returncode == 0, done.stdout + done.stderr
        decision = json.loads((tmp_path / f"outputs/{job}/decision.json").read_text())
        assert decision["decision"] == "review", job
        assert decision["regressed"] == []
        [flip] = [f for f in decision["findings"] if f["rule"] == "judge_flips"]
        assert flip["tests"] == [f"checks.yaml::faithful[{FLIPPED}]"] and flip["figures"]["cases"] == [FLIPPED]
        block = report(job)["judges"]["faithful"]
        assert block["repeats"] == 3 and block["verdicts"][FLIPPED]["0"] == ["score 5", "score 2", "score 2"]
        agreement = block["self_agreement"]
        assert (agreement["replies"], agreement["agreeing"]) == (len(cases), len(cases) - 1)
        outcome = {t["nodeid"]: t["outcome"] for t in report(job)["tests"]}
        assert outcome[f"checks.yaml::faithful[{FLIPPED}]"] == "failed"  # one pass of three: a majority fail
        assert report(job)["judges"]["polite"]["self_agreement"]["agreement"] == 1.0
        assert "judge faithful" in done.stdout, done.stdout
        assert "self-agreement 0.800" in (tmp_path / f"outputs/{job}/report.html").read_text()
        assert "self-agreement 0.800 (4 of 5 replies)" in done.stdout, done.stdout

    # a calibration of this judge beside the baseline, at the policy's floor, lets the check block again
    policy = tmp_path / "strict.yaml"
    policy.write_text("min_judge_kappa: 0.5\njudge_flips: ignore\n")
    uncalibrated = run("evalkit.cli.main", "gate", "suites/reviews/runs/baseline.json", "outputs/v2/report.json",
                       "--policy", str(policy), "--out", "outputs/uncalibrated.json")
    assert uncalibrated.returncode == 0, uncalibrated.stdout + uncalibrated.stderr  # review: capped
    found = json.loads((tmp_path / "outputs/uncalibrated.json").read_text())
    assert found["decision"] == "review"
    assert any(f["rule"] == "judge_calibration" and f["figures"]["why"] == "missing" and
               f["subject"] == "faithful" for f in found["findings"])
    (suite / "judge_labels.yaml").write_text("labels:\n  faithful:\n" + "".join(
        f"    {case}: {2 if case == FLIPPED else 5}\n" for case in cases))
    calibrated = run("evalkit.cli.main", "calibrate", "suite=reviews", "--report", "outputs/v2/report.json",
                     "--out", "suites/reviews/runs/judge_calibration.json")
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    written = json.loads((suite / "runs/judge_calibration.json").read_text())
    assert written["judge"] == {"model": "fake-judge", "sha": report("v2")["eval"]["judge_sha"]}
    assert written["checks"]["faithful"]["kappa_kind"] == "weighted-quadratic"
    assert written["checks"]["faithful"]["kappa"] >= 0.5
    blocked = run("evalkit.cli.main", "gate", "suites/reviews/runs/baseline.json", "outputs/v2/report.json",
                  "--policy", str(policy))
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
