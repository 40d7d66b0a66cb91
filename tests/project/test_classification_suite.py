"""A 20-case, four-label classification suite, scaffolded with `new suite --labels`, its cases in a CSV file
whose columns the dataset option maps to case fields, and driven through
`python -m evalkit`: the first run says how to make a baseline, a live run records, a replay repeats it, bless
makes it the baseline, a prompt change is recorded and gated. The confusion matrix and macro-F1 in the reports
are checked against a count made here, independently of evalkit's.

The dataset and the model's replies are authored by this test: a loopback OpenAI-compatible server answers each
message with the label written below (a few deliberately wrong, one reply cut off under the second prompt).
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

pytestmark = pytest.mark.slow

LABELS = ("billing", "bug", "account", "feature")
CASES = {f"{label}-{n}": label for label in LABELS for n in range(1, 6)}
TEXT = {case: f"Ticket {case}: a customer message about {label}s, number {case[-1]}." for case, label in CASES.items()}
WRONG_V1 = {"billing-1": "account", "feature-2": "bug"}
WRONG_V2 = {**WRONG_V1, "bug-3": "billing", "account-4": "feature"}
CUT_OFF_V2 = "feature-5"  # under prompt v2 this reply stops mid-string: it must fail its checks, never error
V2_WORD = "briefly"


def predicted(case: str, v2: bool) -> str | None:
    if v2 and case == CUT_OFF_V2:
        return None
    return (WRONG_V2 if v2 else WRONG_V1).get(case, CASES[case])


def reply(body: dict[str, Any]) -> str:
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    case = next(c for c, text in TEXT.items() if text == user)
    v2 = V2_WORD in system
    label = predicted(case, v2)
    if label is None:
        return '{"label": "feature", "reason": "the customer asks for'
    return json.dumps({"label": label, "reason": "what the message asks about"})


def independent(v2: bool) -> tuple[dict[str, dict[str, int]], float]:
    """The confusion matrix (expected -> predicted -> count) and macro-F1, counted the textbook way."""
    pairs = [(label, predicted(case, v2)) for case, label in CASES.items()]
    confusion: dict[str, dict[str, int]] = {}
    for expected, got in pairs:
        column = "(none)" if got is None else got
        confusion.setdefault(expected, {}).setdefault(column, 0)
        confusion[expected][column] += 1
    f1s = []
    for label in LABELS:
        tp = sum(1 for e, p in pairs if e == label and p == label)
        fp = sum(1 for e, p in pairs if e != label and p == label)
        fn = sum(1 for e, p in pairs if e == label and p != label)
        f1s.append(2 * tp / (2 * tp + fp + fn))
    return confusion, sum(f1s) / len(f1s)


def nonzero(confusion: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {row: {col: n for col, n in cols.items() if n} for row, cols in confusion.items()}


def test_a_classification_suite_from_scaffold_to_a_gated_prompt_change(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    assert run("evalkit.cli.main", "new", "project").returncode == 0
    assert ".venv/" in (tmp_path / ".gitignore").read_text().splitlines()
    made = run("evalkit.cli.main", "new", "suite", "tickets", "--labels", ",".join(LABELS))
    assert made.returncode == 0, made.stderr
    suite = tmp_path / "suites/tickets"
    assert not list(suite.glob("test_*.py")) and not (suite / "conftest.py").exists()  # declared checks only
    # the cases as a CSV file with its own column names, mapped to case fields by the dataset option
    rows = "".join(f'{case},"{TEXT[case]}",{label}\n' for case, label in CASES.items())
    (suite / "datasets/tickets.csv").write_text("ticket_id,body,category\n" + rows)
    (tmp_path / "conf/dataset").mkdir()
    (tmp_path / "conf/dataset/tickets.yaml").write_text(
        "file: ${suite.path}/datasets/tickets.csv\nname: tickets\nversion: 1\n"
        "fields: {id: ticket_id, text: body, label: category}\n")
    option = tmp_path / "conf/suite/tickets.yaml"
    option.write_text(option.read_text().replace("- /dataset: v1 ", "- /dataset: tickets "))

    first = run("evalkit")  # a new suite has no baseline: the error says the two commands that make one
    assert first.returncode == 3
    assert "suite tickets has no baseline yet" in first.stderr
    assert "evalkit run suite=tickets baseline=none" in first.stderr and "evalkit bless" in first.stderr

    with FakeOpenAI(reply) as server:
        live = run("evalkit", "mode=live", "baseline=none", f"model.base_url={server.base_url}",
                   "hydra.run.dir=outputs/first")
        assert live.returncode == 0, live.stderr
        replayed = run("evalkit", "baseline=none", "hydra.run.dir=outputs/replayed", "run.workers=2")
        assert replayed.returncode == 0, replayed.stderr  # on two processes: their shards merged into one report
        blessed = run("evalkit.cli.main", "bless", "outputs/first/report.json")
        assert blessed.returncode == 0, blessed.stderr
        assert "warning" not in blessed.stdout

        (suite / "prompts/v2.txt").write_text((suite / "prompts/v1.txt").read_text().replace(
            "classify it", f"{V2_WORD} classify it"))
        (tmp_path / "conf/prompt").mkdir()
        (tmp_path / "conf/prompt/v2.yaml").write_text("version: v2\nfile: ${suite.path}/prompts/v2.txt\n")
        gated = run("evalkit", "prompt=v2", "mode=live", f"model.base_url={server.base_url}",
                    "hydra.run.dir=outputs/v2")
        assert len(server.requests) == 40  # 20 cases, twice; the replay called nothing
    assert gated.returncode == 1, gated.stderr  # BLOCK
    assert gated.stdout.startswith("decision: BLOCK")

    for job, v2 in (("first", False), ("replayed", False), ("v2", True)):
        report = json.loads((tmp_path / f"outputs/{job}/report.json").read_text())
        confusion, macro_f1 = independent(v2)
        assert nonzero(report["classification"]["label_matches"]["confusion"]) == confusion, job
        assert report["metrics"]["macro_f1"]["mean"] == pytest.approx(macro_f1, abs=1e-6), job
        assert report["metrics"]["accuracy"]["mean"] == (15 if v2 else 18) / 20
        assert report["metrics"]["recall.feature"]["mean"] == (3 if v2 else 4) / 5
        assert report["eval"]["dataset"] == "tickets@1"
        pairs = report["classification"]["label_matches"]["pairs"]  # each case's labels, merged from shards too
        assert {case: label for case, (label, _) in pairs.items()} == CASES
        assert sum(expected == predicted for expected, predicted in pairs.values()) == (15 if v2 else 18)
        outcomes = {t["nodeid"]: t["outcome"] for t in report["tests"]}
        assert len(outcomes) == 60 and "error" not in outcomes.values()  # the cut-off reply fails, never errors
    assert outcomes[f"checks.yaml::reply_is_json[{CUT_OFF_V2}]"] == "failed"

    decision = json.loads((tmp_path / "outputs/v2/decision.json").read_text())
    assert "1 critical test(s) fail" in decision["reasons"]  # reply_is_json is critical in checks.yaml
    # the classification metrics' changes come with their paired interval (evalkit.gate.classified)
    accuracy = decision["metrics"]["accuracy"]
    assert accuracy["delta"] == pytest.approx(-0.15) and accuracy["interval"][0] < -0.15 < accuracy["interval"][1]
    assert accuracy["interval"][1] <= 0  # the three cases v2 got wrong, none it got right: no gain is plausible
    assert "accuracy: 0.900 -> 0.750 (-0.150 [" in gated.stdout and "macro_f1: " in gated.stdout
    assert set(decision["regressed"]) == {f"checks.yaml::label_matches[{c}]" for c in ("bug-3", "account-4")} | {
        f"checks.yaml::{name}[{CUT_OFF_V2}]" for name in ("reply_is_json", "label_matches", "reason_is_short")}
    assert 'expected label "account", came "feature"' in gated.stdout
    assert "CONFUSION label_matches" in gated.stdout
    markdown = (tmp_path / "outputs/v2/decision.md").read_text()
    assert "| expected \\ predicted | account | billing | bug | feature | (none) |" in markdown
    assert "| feature | 0 | 0 | 1 | 3 | 1 |" in markdown
    assert f"| accuracy | 0.900 | 0.750 | -0.150 [{accuracy['interval'][0]:.3f}, " in markdown

    refused = run("evalkit.cli.main", "bless", "outputs/v2/report.json")  # its own policy blocks it: said, nothing written
    assert refused.returncode == 3
    assert "its own policy 'tickets' blocks it: 1 critical test(s) fail" in refused.stderr


def test_an_llm_rubric_check_is_judged_by_the_pinned_judge_recorded_and_replayed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    assert run("evalkit.cli.main", "new", "project").returncode == 0
    assert run("evalkit.cli.main", "new", "suite", "reviews").returncode == 0
    checks = tmp_path / "suites/reviews/checks.yaml"
    checks.write_text(checks.read_text() + "  - name: explains\n    llm-rubric: The reason says why the label fits\n")
    refused = run("evalkit", "baseline=none")
    assert refused.returncode == 3 and "llm-rubric checks need the suite's pinned judge" in refused.stderr

    # an authored judge: it fails the reply about the fixed login, passes the others
    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        if body["model"] == "fake-judge":
            failing = user.startswith("Case fast-fix:")
            return json.dumps({"pass": not failing, "reason": "no why" if failing else "says why"})
        dataset = json.loads((tmp_path / "suites/reviews/datasets/v1.json").read_text())
        label = next(c["label"] for c in dataset["cases"] if c["text"] == user)
        return json.dumps({"label": label, "reason": "what the message says"})

    (tmp_path / "conf/judge").mkdir()
    (tmp_path / "conf/judge/fake.yaml").write_text("name: fake-judge\nprovider: openai\n"
                                                   "base_url: http://127.0.0.1:9/v1\noptions: {temperature: 0}\n")
    option = tmp_path / "conf/suite/reviews.yaml"
    option.write_text(option.read_text().replace("  # - /judge: gemini-flash", "  - /judge: fake"))
    with FakeOpenAI(answer) as server:
        live = run("evalkit", "mode=live", "baseline=none", f"model.base_url={server.base_url}",
                   f"judge.base_url={server.base_url}", "hydra.run.dir=outputs/live")
        assert live.returncode == 0, live.stderr
        assert [r.body["model"] for r in server.requests].count("fake-judge") == 5
    replayed = run("evalkit", "baseline=none", "hydra.run.dir=outputs/replayed")  # no server: from the recording
    assert replayed.returncode == 0, replayed.stderr
    for job in ("live", "replayed"):
        report = json.loads((tmp_path / f"outputs/{job}/report.json").read_text())
        tests = {t["nodeid"]: t for t in report["tests"]}
        assert tests["checks.yaml::explains[fast-fix]"]["outcome"] == "failed"
        assert tests["checks.yaml::explains[fast-fix]"]["call"]["longrepr"] == \
            "expected the rubric met, came the judge's fail: no why"
        assert all(t["outcome"] == "passed" for n, t in tests.items() if "fast-fix" not in n), job
        assert report["eval"]["judge_model"] == "fake-judge"
