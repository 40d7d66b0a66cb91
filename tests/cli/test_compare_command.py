"""`evalkit compare`: two run reports -> per case and per metric changes; exit 0, 2 or 3."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import evalkit_cli, report, write_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
BASELINE = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"


def _with_cases(outcomes: dict[str, str], cases: dict[str, bool], metrics: dict[str, float | None],
                **key: str) -> dict:
    """An authored report: tests, per-case results and run-level metrics."""
    data = report(outcomes, **key)
    data["cases"] = [{"id": case, "passed": passed} for case, passed in cases.items()]
    data["metrics"] = {name: {"mean": value, "count": 1} for name, value in metrics.items()}
    return data


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    base = write_json(tmp_path / "base.json", _with_cases(
        {"test_a": "passed"}, {"a": True, "b": False, "c": True, "gone": True}, {"recall": 0.5, "faith": 0.9}))
    cand = write_json(tmp_path / "cand.json", _with_cases(
        {"test_a": "passed"}, {"a": False, "b": True, "c": True, "fresh": False}, {"recall": 0.75, "faith": None},
        model="m2"))
    return base, cand


def test_text_lists_cases_by_status_and_metric_deltas(tmp_path: Path):
    base, cand = _pair(tmp_path)
    done = evalkit_cli("evalkit.cli.main", "compare", str(base), str(cand))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "changed: model m -> m2" in out
    assert "cases: 1 regressed, 1 missing, 1 improved, 1 new, 1 unchanged" in out
    assert "regressed (1):\n  - a\nmissing (1):\n  - gone\nimproved (1):\n  - b\nnew (1):\n  - fresh" in out
    assert [line.split() for line in out.splitlines() if line.startswith("  recall")] == [
        ["recall", "0.500", "0.750", "+0.250", "improved"]]
    assert [line.split() for line in out.splitlines() if line.startswith("  faith")] == [
        ["faith", "0.900", "n/a", "n/a", "regressed"]]  # no longer measurable is a drop


def test_json_holds_every_case_and_metric(tmp_path: Path):
    base, cand = _pair(tmp_path)
    done = evalkit_cli("evalkit.cli.main", "compare", str(base), str(cand), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["comparable"] is True and data["unit"] == "case"
    assert data["cases"] == {"regressed": ["a"], "missing": ["gone"], "improved": ["b"], "new": ["fresh"],
                             "unchanged": ["c"]}
    assert data["metrics"]["recall"] == {"before": 0.5, "after": 0.75, "delta": 0.25, "status": "improved"}


def test_reports_without_cases_are_compared_per_test(tmp_path: Path):
    base = write_json(tmp_path / "b.json", report({"test_x": "passed", "test_y": "failed"}))
    cand = write_json(tmp_path / "c.json", report({"test_x": "failed", "test_y": "passed"}))
    data = json.loads(evalkit_cli("evalkit.cli.main", "compare", str(base), str(cand), "--json").stdout)
    assert data["unit"] == "test"
    assert data["cases"]["regressed"] == ["test_triage.py::test_x"]
    assert data["cases"]["improved"] == ["test_triage.py::test_y"]


def test_a_shipped_baseline_against_itself_is_all_unchanged():
    done = evalkit_cli("evalkit.cli.main", "compare", str(BASELINE), str(BASELINE))
    assert done.returncode == 0, done.stderr
    assert "cases: 0 regressed, 0 missing, 0 improved, 0 new, 12 unchanged" in done.stdout


def test_different_datasets_are_incomparable_exit_2():
    other = PROJECT_ROOT / "suites/issue_triage/runs/baseline-dataset-v2.json"
    done = evalkit_cli("evalkit.cli.main", "compare", str(BASELINE), str(other))
    assert done.returncode == 2, done.stderr
    assert "INCOMPARABLE" in done.stdout and "rerun the baseline on the candidate's dataset" in done.stdout
    assert "cases:" not in done.stdout  # nothing compared
    data = json.loads(evalkit_cli("evalkit.cli.main", "compare", str(BASELINE), str(other), "--json").stdout)
    assert data["comparable"] is False and data["incomparable"] and data["counts"]["unchanged"] == 0


def test_bad_inputs_exit_3_in_one_line(tmp_path: Path):
    missing = evalkit_cli("evalkit.cli.main", "compare", str(tmp_path / "nope.json"), str(BASELINE))
    assert missing.returncode == 3 and "nope.json" in missing.stderr and len(missing.stderr.splitlines()) == 1
    not_report = write_json(tmp_path / "x.json", {"tests": []})
    done = evalkit_cli("evalkit.cli.main", "compare", str(BASELINE), str(not_report))
    assert done.returncode == 3 and "not a run report" in done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert evalkit_cli("evalkit.cli.main", "compare", str(broken), str(BASELINE)).returncode == 3
    usage = evalkit_cli("evalkit.cli.main", "compare", str(BASELINE))
    assert usage.returncode == 3 and "usage:" in usage.stderr
