"""Human review of presentation: bound to one report's bytes, never changing task or safety results."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY

from evalkit.core.errors import InputError
from evalkit.programs.review import IDENTITY_ASSURANCE, apply_review
from evalkit.records.report_reader import load_report

PENDING = "acceptance-project-0-answer"
SETTLED = "acceptance-project-1-answer"
UNSCORED = "acceptance-project-2-answer"
UNGRADED = "triage-0"

Run = Callable[..., subprocess.CompletedProcess[str]]


def graded(task: bool | None, quality: bool | None, safety: bool | None, pending: bool | None) -> dict[str, Any]:
    status = "unscored" if pending is None else "scored"
    return {"status": status, "task_pass": task, "quality_pass": quality, "safety_pass": safety,
            "review_pending": pending, "reason": "supported fact"}


def run_report() -> dict[str, Any]:
    """Three graded cases (pending, settled, unscored) and one case of another suite without a grade."""
    ids = [PENDING, SETTLED, UNSCORED, UNGRADED]
    return {
        "format": "evalkit-run-report/1",
        "eval": dict(KEY),
        "tests": [{"nodeid": f"test_suite.py::test_task[{i}]", "outcome": "passed"} for i in ids],
        "cases": [
            {"id": PENDING, "status": "scored", "checks": {"test_task": "passed"}, "passed": True,
             "grade": graded(True, True, True, True)},
            {"id": SETTLED, "status": "scored", "checks": {"test_task": "passed"}, "passed": True,
             "grade": graded(True, True, True, False)},
            {"id": UNSCORED, "status": "unscored", "checks": {}, "passed": False,
             "grade": graded(None, None, None, None)},
            {"id": UNGRADED, "status": "scored", "checks": {"test_task": "passed"}, "passed": True},
        ],
    }


def decision(sample: str = PENDING, verdict: str = "accept_presentation", **extra: Any) -> dict[str, Any]:
    return {"sample_id": sample, "decision": verdict, "reviewer": "ana", "rationale": "wording is fine", **extra}


def report_bytes(report: dict[str, Any]) -> bytes:
    return (json.dumps(report, indent=1) + "\n").encode("utf-8")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def review(decisions: list[Any], report: dict[str, Any] | None = None) -> dict[str, Any]:
    report = report or run_report()
    raw = report_bytes(report)
    return apply_review(report, raw, {"report_sha256": sha(raw), "decisions": decisions})


def grade_of(report: dict[str, Any], sample: str) -> dict[str, Any]:
    grade: dict[str, Any] = next(c for c in report["cases"] if c["id"] == sample)["grade"]
    return grade


def test_accept_clears_review_pending_and_leaves_the_results() -> None:
    source = run_report()
    out = review([decision()], source)
    grade = grade_of(out, PENDING)
    assert grade == {**graded(True, True, True, False),
                     "review": {"decision": "accept_presentation", "reviewer": "ana", "rationale": "wording is fine"}}
    assert source == run_report()  # the argument is not modified
    assert [c for c in out["cases"] if c["id"] != PENDING] == [c for c in source["cases"] if c["id"] != PENDING]
    assert out["tests"] == source["tests"]


def test_reject_fails_quality_only() -> None:
    grade = grade_of(review([decision(verdict="reject_presentation")]), PENDING)
    assert (grade["task_pass"], grade["quality_pass"], grade["safety_pass"]) == (True, False, True)
    assert grade["review_pending"] is False
    assert grade["review"]["decision"] == "reject_presentation"


def test_audit_names_the_source_and_the_decisions_as_given() -> None:
    report = run_report()
    raw = report_bytes(report)
    given = [decision()]
    out = apply_review(report, raw, {"report_sha256": sha(raw), "decisions": given})
    assert out["review_audit"] == [{"source_report_sha256": sha(raw), "decisions": given,
                                    "identity_assurance": IDENTITY_ASSURANCE}]


def test_a_single_earlier_round_is_kept() -> None:
    report = run_report()
    earlier = {"source_report_sha256": "0" * 64, "decisions": [], "identity_assurance": IDENTITY_ASSURANCE}
    report["review_audit"] = earlier
    out = review([decision()], report)
    assert out["review_audit"][0] == earlier
    assert len(out["review_audit"]) == 2


REFUSALS: list[tuple[str, Callable[[dict[str, Any], bytes], tuple[dict[str, Any], bytes, Any]], str]] = [
    ("object does not match its bytes",
     lambda r, raw: ({**r, "cases": r["cases"][:1]}, raw, {"report_sha256": sha(raw), "decisions": [decision()]}),
     r"report: the report object does not match the report bytes"),
    ("wrong sha",
     lambda r, raw: (r, raw, {"report_sha256": "ab" * 32, "decisions": [decision()]}),
     rf"report_sha256 abababababab… does not match report \({sha(report_bytes(run_report()))[:12]}…\): "
     r"decisions were made on another report"),
    ("missing sha",
     lambda r, raw: (r, raw, {"decisions": [decision()]}),
     r"decisions: no 'report_sha256' string; set it to the SHA-256"),
    ("unknown sample",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision("acceptance-project-0-answr")]}),
     r"sample 'acceptance-project-0-answr' is not a case of report \(closest: 'acceptance-project-0-answer'\)"),
    ("duplicate sample",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(), decision()]}),
     rf"decisions\[1\] \(sample '{PENDING}'\): sample '{PENDING}' is decided twice"),
    ("accept_task",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(verdict="accept_task")]}),
     r"'decision': Input should be 'accept_presentation' or 'reject_presentation' \(got 'accept_task'\); "
     r"review can change presentation only"),
    ("override_safety",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(verdict="override_safety")]}),
     r"\(got 'override_safety'\); review can change presentation only .* task and safety results stay"),
    ("decision carries task_pass",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(task_pass=True)]}),
     r"unknown key 'task_pass' \(allowed: decision, rationale, reviewer, sample_id\); review can change presentation only"),
    ("decision carries safety_pass",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(safety_pass=True)]}),
     r"unknown key 'safety_pass' .*; review can change presentation only"),
    ("empty reviewer",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(reviewer="")]}),
     r"'reviewer': Value error, must not be empty"),
    ("blank rationale",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(rationale="  ")]}),
     r"'rationale': Value error, must not be empty"),
    ("sample without grade",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(UNGRADED)]}),
     rf"sample '{UNGRADED}' has no grade in report"),
    ("sample not pending",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(SETTLED)]}),
     rf"sample '{SETTLED}' is not pending review in report \(review_pending is false\)"),
    ("unscored sample",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision(UNSCORED)]}),
     rf"sample '{UNSCORED}' is not pending review in report \(review_pending is null\)"),
    ("empty decisions",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": []}),
     r"decisions: the decisions list is empty, so there is nothing to review"),
    ("decisions not an object",
     lambda r, raw: (r, raw, [decision()]),
     r"decisions: not a decisions file \(expected a JSON object"),
    ("unknown top-level key",
     lambda r, raw: (r, raw, {"report_sha256": sha(raw), "decisions": [decision()], "approve_all": True}),
     r"unknown key 'approve_all' \(allowed: decisions, report_sha256\)"),
    ("not a run report",
     lambda r, raw: ({"tests": r["tests"]}, raw, {"report_sha256": sha(raw), "decisions": [decision()]}),
     r"report: not an evalkit run report \(no 'cases' list\)"),
]


@pytest.mark.parametrize("make, message", [(m, msg) for _, m, msg in REFUSALS], ids=[name for name, _, _ in REFUSALS])
def test_refusals(make: Callable[[dict[str, Any], bytes], tuple[dict[str, Any], bytes, Any]], message: str) -> None:
    report = run_report()
    args = make(report, report_bytes(report))
    before = copy.deepcopy(args)
    with pytest.raises(InputError, match=message) as caught:
        apply_review(*args)
    assert "\n" not in str(caught.value)
    assert args == before


def test_an_already_reviewed_sample_is_refused_and_names_the_review() -> None:
    out = review([decision()])
    raw = report_bytes(out)
    with pytest.raises(InputError, match=rf"sample '{PENDING}' is not pending review in report "
                                         r"\(already reviewed \(accept_presentation by 'ana'\)\)"):
        apply_review(out, raw, {"report_sha256": sha(raw), "decisions": [decision()]})


# -- the command line ------------------------------------------------------------------------------------------


def write_inputs(tmp_path: Path, decisions: Any) -> tuple[Path, Path, Path]:
    """The report file, a decisions file (`report_sha256` None: the report's real SHA-256) and --out."""
    report_path = tmp_path / "R.json"
    report_path.write_bytes(report_bytes(run_report()))
    if isinstance(decisions, dict) and decisions.get("report_sha256", "") is None:
        decisions = {**decisions, "report_sha256": sha(report_path.read_bytes())}
    decisions_path = tmp_path / "D.json"
    decisions_path.write_text(json.dumps(decisions), encoding="utf-8")
    return report_path, decisions_path, tmp_path / "R2.json"


def review_cli(run_evalkit: Run, report: Path, decisions: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return run_evalkit("--report", str(report), "--decisions", str(decisions), "--out", str(out),
                       command="review")


def test_cli_writes_a_reviewed_report_the_gate_can_load(tmp_path: Path, run_evalkit: Run) -> None:
    report, decisions, out = write_inputs(tmp_path, {"report_sha256": None, "decisions": [decision()]})
    source = report.read_bytes()
    result = review_cli(run_evalkit, report, decisions, out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"reviewed 1 case(s) of {report} (sha256 {sha(source)[:12]}): 1 accepted, 0 rejected; "
                             f"wrote {out}; gate it: evalkit gate BASELINE {out} --policy POLICY\n")
    assert report.read_bytes() == source
    loaded = load_report(out)
    assert grade_of({"cases": list(loaded.cases)}, PENDING)["review_pending"] is False
    assert loaded.outcomes == load_report(report).outcomes
    written = json.loads(out.read_text(encoding="utf-8"))
    assert [r["source_report_sha256"] for r in written["review_audit"]] == [sha(source)]


def test_a_second_round_appends_its_audit_and_refuses_the_reviewed_sample(tmp_path: Path, run_evalkit: Run) -> None:
    report = run_report()
    report["cases"].append({"id": "acceptance-project-3-answer", "status": "scored", "checks": {}, "passed": True,
                            "grade": graded(True, True, True, True)})
    first_path = tmp_path / "R.json"
    first_path.write_bytes(report_bytes(report))
    round_one = tmp_path / "D1.json"
    round_one.write_text(json.dumps({"report_sha256": sha(first_path.read_bytes()), "decisions": [decision()]}))
    reviewed = tmp_path / "R2.json"
    assert review_cli(run_evalkit, first_path, round_one, reviewed).returncode == 0
    second_sha = sha(reviewed.read_bytes())

    again = tmp_path / "D2.json"
    again.write_text(json.dumps({"report_sha256": second_sha, "decisions": [decision(verdict="reject_presentation")]}))
    refused = review_cli(run_evalkit, reviewed, again, tmp_path / "R3.json")
    assert refused.returncode == 3
    assert f"sample '{PENDING}' is not pending review" in refused.stderr
    assert "already reviewed (accept_presentation by 'ana')" in refused.stderr
    assert not (tmp_path / "R3.json").exists()

    round_two = tmp_path / "D3.json"
    round_two.write_text(json.dumps({"report_sha256": second_sha, "decisions": [
        decision("acceptance-project-3-answer", "reject_presentation", reviewer="bo")]}))
    result = review_cli(run_evalkit, reviewed, round_two, tmp_path / "R3.json")
    assert result.returncode == 0, result.stderr
    assert "0 accepted, 1 rejected" in result.stdout
    final = json.loads((tmp_path / "R3.json").read_text(encoding="utf-8"))
    assert [r["source_report_sha256"] for r in final["review_audit"]] == [sha(first_path.read_bytes()), second_sha]
    assert grade_of(final, PENDING)["review"]["reviewer"] == "ana"
    assert grade_of(final, "acceptance-project-3-answer")["quality_pass"] is False
    load_report(tmp_path / "R3.json")


CLI_REFUSALS = [
    ("wrong sha", {"report_sha256": "ab" * 32, "decisions": [decision()]}, "decisions were made on another report"),
    ("override safety", {"report_sha256": None, "decisions": [decision(verdict="override_safety")]},
     "review can change presentation only"),
    ("task_pass", {"report_sha256": None, "decisions": [decision(task_pass=False)]}, "unknown key 'task_pass'"),
    ("not pending", {"report_sha256": None, "decisions": [decision(SETTLED)]}, "is not pending review"),
    ("unknown sample", {"report_sha256": None, "decisions": [decision("nope")]}, "is not a case of"),
]


@pytest.mark.parametrize("decisions, message", [(d, m) for _, d, m in CLI_REFUSALS], ids=[n for n, _, _ in CLI_REFUSALS])
def test_cli_refusals_exit_3_with_one_line_and_write_nothing(tmp_path: Path, run_evalkit: Run,
                                                             decisions: dict[str, Any], message: str) -> None:
    report, decisions_path, out = write_inputs(tmp_path, decisions)
    source = report.read_bytes()
    result = review_cli(run_evalkit, report, decisions_path, out)
    assert result.returncode == 3
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalkit.review: error: "), result.stderr
    assert message in lines[0]
    assert not out.exists()
    assert report.read_bytes() == source


def test_cli_refuses_to_write_over_the_source_report(tmp_path: Path, run_evalkit: Run) -> None:
    report, decisions, _ = write_inputs(tmp_path, {"report_sha256": None, "decisions": [decision()]})
    source = report.read_bytes()
    result = review_cli(run_evalkit, report, decisions, tmp_path / "." / "R.json")
    assert result.returncode == 3
    assert result.stderr.splitlines() == [f"evalkit.review: error: {tmp_path / 'R.json'}: cannot write the reviewed "
                                          f"report there: it is the report itself (--report) ({report}), an input of "
                                          "this command, and evalkit never overwrites its inputs; choose another path"]
    assert report.read_bytes() == source


@pytest.mark.parametrize("content, message", [
    (b'{"report_sha256": "x", "decisions": [', r"D\.json: not valid JSON \(line 1, column 38"),
    (None, r"decisions file not found"),
])
def test_cli_refuses_unreadable_decisions(tmp_path: Path, run_evalkit: Run, content: bytes | None, message: str) -> None:
    report, decisions, out = write_inputs(tmp_path, {})
    if content is None:
        decisions.unlink()
    else:
        decisions.write_bytes(content)
    result = review_cli(run_evalkit, report, decisions, out)
    assert result.returncode == 3
    assert len(result.stderr.splitlines()) == 1
    assert re.search(message, result.stderr)
    assert not out.exists()


def test_cli_refuses_a_report_that_is_not_json(tmp_path: Path, run_evalkit: Run) -> None:
    report, decisions, out = write_inputs(tmp_path, {"report_sha256": None, "decisions": [decision()]})
    report.write_text('{"cases": [', encoding="utf-8")
    result = review_cli(run_evalkit, report, decisions, out)
    assert result.returncode == 3
    assert result.stderr.splitlines() == [f"evalkit.review: error: {report}: not valid JSON "
                                          "(line 1, column 12: Expecting value); is the file truncated?"]
    assert not out.exists()


def test_cli_usage_error_exits_3(run_evalkit: Run) -> None:
    result = run_evalkit("--report", "R.json", command="review")
    assert result.returncode == 3
    assert "the following arguments are required: --out" in result.stderr
    result = run_evalkit("--report", "R.json", "--out", "O.json", command="review")  # decisions or labels
    assert result.returncode == 3
    assert "one of the arguments --decisions --labels is required" in result.stderr


def test_the_help_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35: `evalkit review --help` showed `--decisions decisions.yaml`, which the command (JSON only)
    reads as JSON (a decisions file written as YAML, as its name asks, is refused). The example names a JSON file
    and runs as shown, on files of the names it uses."""
    import shlex

    from evalkit.cli.main import SUBCOMMANDS
    from evalkit.cli.review import main

    argv = shlex.split(SUBCOMMANDS["review"].example)
    assert argv[:2] == ["evalkit", "review"]
    given = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert Path(given["--decisions"]).suffix == ".json"
    monkeypatch.chdir(tmp_path)
    report = Path(given["--report"])
    report.write_bytes(report_bytes(run_report()))
    Path(given["--decisions"]).write_text(json.dumps({"report_sha256": sha(report.read_bytes()),
                                                      "decisions": [decision()]}), encoding="utf-8")
    assert main(argv[2:]) == 0, capsys.readouterr().err
    assert Path(given["--out"]).is_file()
