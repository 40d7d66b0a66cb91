"""Reading run reports: evalkit's own and any pytest-json-report file with an `eval` block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import report, write_json

from evalkit.core.errors import InputError
from evalkit.core.report import load_report, parse_report

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project

GOOD = report({"test_label[a]": "passed", "test_label[b]": "failed"})


def test_a_seed_format_report_loads():
    loaded = parse_report(json.dumps(GOOD), "r.json")
    assert loaded.outcomes == {"test_triage.py::test_label[a]": "passed", "test_triage.py::test_label[b]": "failed"}
    assert loaded.passed == 1 and loaded.eval["model"] == "m"


def test_a_shipped_evalkit_report_loads_with_cases_and_provenance():
    loaded = load_report(PROJECT_ROOT / "suites/issue_triage/runs/baseline.json")
    assert len(loaded.outcomes) == 51 and loaded.passed == 51
    assert loaded.provenance["recording_provenance"] == "authored"
    assert {c["id"] for c in loaded.cases} >= {"import-drops-tasks", "where-is-data"}


@pytest.mark.parametrize("text, message", [
    ('{"eval": {"model": "m"}, "tests": [', r"r\.json: not valid JSON \(line 1, column \d+: .*\); is the file truncated\?"),
    ("not json at all", r"r\.json: not valid JSON"),
    (json.dumps({"tests": GOOD["tests"]}), r"r\.json: not a run report: no 'eval' block"),
    (json.dumps({"eval": GOOD["eval"]}), r"r\.json: not a run report: no 'tests' list"),
    (json.dumps({"eval": GOOD["eval"], "tests": []}), r"r\.json: the run has no tests"),
    (json.dumps([1, 2]), r"r\.json: not a run report \(expected a JSON object\)"),
    (json.dumps({"eval": GOOD["eval"], "tests": [{"nodeid": "x"}]}), r"tests\[0\] needs 'nodeid' and 'outcome'"),
    (json.dumps({"eval": GOOD["eval"], "tests": [{"nodeid": "x", "outcome": "won"}]}), r"has outcome 'won'; expected one of error, failed"),
    (json.dumps({"eval": GOOD["eval"], "tests": GOOD["tests"] + GOOD["tests"][:1]}),
     r"duplicate test id 'test_triage\.py::test_label\[a\]'"),
])
def test_bad_reports_are_one_line_input_errors(text, message):
    with pytest.raises(InputError, match=message) as caught:
        parse_report(text, "r.json")
    assert "\n" not in str(caught.value)


def test_missing_report_file_names_the_path(tmp_path):
    with pytest.raises(InputError, match=r"nope\.json: report file not found"):
        load_report(tmp_path / "nope.json")


def test_truncated_file_on_disk(tmp_path):
    text = json.dumps(GOOD)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match=r"cut\.json: not valid JSON"):
        load_report(path)


def test_write_json_helper_round_trips(tmp_path):
    assert load_report(write_json(tmp_path / "ok.json", GOOD)).passed == 1
