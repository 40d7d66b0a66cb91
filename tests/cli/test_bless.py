"""`evalkit bless`: refusals (unscored, errored, incomplete runs; no target), the canonical baseline it
writes atomically, and what it says it replaced. Every write goes to a temporary copy, never a shipped file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli, write_json

from evalkit.cli.bless import main
from evalkit.run.canonical import canonical_text

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

SHIPPED = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"


def shipped() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    return data


def bless(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _unscored(d: dict[str, Any]) -> None:
    d["cases"][2]["status"] = "unscored"


def _errored(d: dict[str, Any]) -> None:
    d["tests"][4]["outcome"] = "error"


def _interrupted(d: dict[str, Any]) -> None:
    d["exitcode"] = 2


def _no_exitcode(d: dict[str, Any]) -> None:
    del d["exitcode"]


def _stopped_early(d: dict[str, Any]) -> None:
    d["tests"] = d["tests"][:10]
    d["summary"] = {"failed": 1, "passed": 9, "total": 10, "collected": 51}


@pytest.mark.parametrize("spoil, message", [
    (_unscored, "1 unscored case(s) (token-leak)"),
    (_errored, "1 test(s) errored (test_triage.py::test_reply_matches_schema[sort-by-due])"),
    (_interrupted, "pytest was interrupted (exit code 2"),
    (_no_exitcode, "no pytest exit code ('exitcode')"),
    (_stopped_early, "interrupted run: 10 of 51 collected tests ran"),
])
def test_a_run_that_cannot_be_a_baseline_is_refused(tmp_path, capsys, spoil, message):
    data = shipped()
    spoil(data)
    report = write_json(tmp_path / "report.json", data)
    target = tmp_path / "baseline.json"
    code, out, err = bless(capsys, report, "--to", target)
    assert code == 3
    assert message in err and err.startswith(f"error: {report}: ") and len(err.strip().splitlines()) == 1
    assert "a baseline must be a complete, fully scored run" in err
    assert not target.exists() and out == ""


def _fail(data: dict[str, Any], index: int) -> None:
    data["tests"][index]["outcome"] = "failed"
    data["exitcode"], data["summary"] = 1, {"collected": 51, "passed": 50, "failed": 1, "total": 51}  # consistent


def _not_critical(data: dict[str, Any]) -> int:
    """The first test the shipped suite's policy (triage) does not list as critical."""
    return next(i for i, t in enumerate(data["tests"])
                if not t["nodeid"].split("::")[-1].startswith(("test_priority", "test_reply_matches_schema")))


def test_failed_tests_are_allowed_in_a_baseline(tmp_path, capsys):
    data = shipped()
    index = _not_critical(data)
    _fail(data, index)
    target = tmp_path / "b.json"
    code, out, _ = bless(capsys, write_json(tmp_path / "r.json", data), "--to", target)
    assert code == 0 and "new baseline: pass rate 0.980, 51 tests" in out
    assert "warning" not in out
    assert json.loads(target.read_text())["tests"][index]["outcome"] == "failed"


def test_a_run_its_own_policy_blocks_is_refused_naming_what_fails_unless_yes(tmp_path, capsys):
    data = shipped()
    _fail(data, 0)  # test_reply_matches_schema: critical in the triage policy the run composed
    report, target = write_json(tmp_path / "r.json", data), tmp_path / "b.json"
    code, out, err = bless(capsys, report, "--to", target)
    assert code == 3 and not target.exists()
    assert "its own policy 'triage' blocks it: 1 critical test(s) fail" in err
    assert "pass --yes to bless it anyway" in err
    code, out, _ = bless(capsys, report, "--to", target, "--yes")
    assert code == 0 and target.exists()
    assert "warning: its own policy 'triage' blocks it: 1 critical test(s) fail" in out


def test_a_report_naming_no_baseline_needs_to(tmp_path, capsys):
    data = shipped()
    del data["provenance"]["baseline"]
    report = write_json(tmp_path / "r.json", data)
    code, _, err = bless(capsys, report)
    assert code == 3 and "names no baseline of its suite (provenance.baseline" in err and "--to PATH" in err


def test_bad_input_is_one_line(tmp_path, capsys):
    (tmp_path / "bad.json").write_text('{"eval": {}, "tests": [', encoding="utf-8")
    code, _, err = bless(capsys, tmp_path / "bad.json", "--to", tmp_path / "b.json")
    assert code == 3 and "bad.json: not valid JSON" in err and len(err.strip().splitlines()) == 1
    code, _, err = bless(capsys, tmp_path / "missing.json", "--to", tmp_path / "b.json")
    assert code == 3 and "missing.json: report file not found" in err
    assert not (tmp_path / "b.json").exists()


def test_bless_writes_the_suite_baseline_canonically_and_says_what_it_replaced(tmp_path, capsys):
    target = tmp_path / "runs" / "baseline.json"
    target.parent.mkdir()
    target.write_bytes(SHIPPED.read_bytes())
    # a job report with timings, naming (as the runner does) its suite's baseline path: here the copy
    job = shipped()
    job["provenance"].update(baseline=str(target), git_commit="0" * 40, python="3.99.0")
    job["created"], job["duration"] = 1.0, 2.0
    job["tests"][0]["call"]["duration"] = 0.5
    report = write_json(tmp_path / "report.json", job)

    code, out, _ = bless(capsys, report)
    assert code == 0, out
    assert out.splitlines()[0] == f"blessed {report} -> {target}"
    # only provenance.baseline differs from the shipped canonical file
    assert "other content differs" in out and "eval key: unchanged" in out and "pass rate 1.000 -> 1.000" in out
    written = target.read_text(encoding="utf-8")
    assert written == canonical_text(job)
    assert "created" not in json.loads(written) and "git_commit" not in written and '"duration"' not in written

    code, out, _ = bless(capsys, report)  # again: nothing left to change
    assert code == 0 and out.splitlines()[1] == f"no change: {target} is byte-identical"
    assert not list(target.parent.glob(".*.tmp"))  # the atomic write left no temp file


def test_bless_reports_outcome_and_key_changes_and_dry_run_writes_nothing(tmp_path, capsys):
    target = tmp_path / "baseline.json"
    target.write_bytes(SHIPPED.read_bytes())
    candidate = shipped()
    candidate["eval"]["model"] = "gemma4:e2b"
    candidate["tests"][1]["outcome"] = "failed"
    candidate["exitcode"] = 1  # what pytest exits with when a test failed
    candidate["summary"] = {"collected": 52, "passed": 51, "failed": 1, "total": 52}
    candidate["tests"].append({"nodeid": "test_triage.py::test_new[x]", "outcome": "passed"})
    report = write_json(tmp_path / "r.json", candidate)
    code, out, _ = bless(capsys, report, "--to", target, "--dry-run")
    assert code == 0
    assert out.splitlines()[0].startswith("dry run, nothing written: would bless")
    assert ("replaced: pass rate 1.000 -> 0.981; tests 51 -> 52 (1 new, 0 gone, 1 with another outcome: "
            "test_triage.py::test_reply_matches_schema[where-is-data]); eval key: model gemini-3.8-flash -> "
            "gemma4:e2b") in out
    assert target.read_bytes() == SHIPPED.read_bytes()


@pytest.mark.slow
def test_bless_a_real_run_through_the_command(tmp_path):
    job = tmp_path / "job"
    done = evalkit_cli("evalkit", "baseline=none", f"hydra.run.dir={job}")
    assert done.returncode == 0, done.stderr
    report = json.loads((job / "report.json").read_text(encoding="utf-8"))
    assert report["provenance"]["baseline"] == "suites/issue_triage/runs/baseline.json"
    assert {"created", "duration"} <= report.keys()  # the job's own report keeps its timings
    target = tmp_path / "baseline.json"
    target.write_bytes(SHIPPED.read_bytes())
    done = evalkit_cli("evalkit.cli.main", "bless", str(job / "report.json"), "--to", str(target))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"no change: {target} is byte-identical"


def test_a_policy_that_cannot_be_read_here_is_noted_and_the_run_blessed(tmp_path, capsys):
    data = shipped()
    data["provenance"]["policy"] = "no-such-policy"
    target = tmp_path / "b.json"
    code, out, _ = bless(capsys, write_json(tmp_path / "r.json", data), "--to", target)
    assert code == 0 and target.exists()
    assert "note: not checked against the policy the run composed: " in out and "no-such-policy" in out
