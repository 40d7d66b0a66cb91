"""Reading run reports: evalkit's own and any pytest-json-report file with an `eval` block."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import report, write_json

from evalkit.core.errors import InputError
from evalkit.core.failure import MESSAGE_CHARS, failure_message
from evalkit.records.report_reader import load_report, parse_report

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

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


# --- why a test did not pass: read from what pytest-json-report writes ------------------------

PYTEST_CASES = '''
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("fixture typo: no such file data.json\\nsecond line")

@pytest.fixture
def bad_teardown():
    yield 1
    raise ValueError("teardown boom")

def test_fails():
    assert 1 == 2, "one is not two"

def test_setup_errors(broken):
    pass

def test_teardown_errors(bad_teardown):
    pass

def test_skips():
    pytest.skip("unscored: call denied")

@pytest.mark.skip(reason="marker reason")
def test_skip_marker():
    pass

@pytest.mark.xfail(reason="strict one", strict=True)
def test_strict_xpass():
    pass

def test_fail_without_traceback():
    pytest.fail("plain failure text", pytrace=False)

def test_passes():
    pass
'''

ADD_EVAL = '''
def pytest_json_modifyreport(json_report):
    json_report["eval"] = {"dataset": "mine@1", "dataset_sha": "d", "model": "m", "judge_model": "j"}
'''


def test_messages_come_from_a_real_pytest_json_report(tmp_path):
    """A real pytest-json-report file (a third party's suite, no evalkit plugin): each test that did not pass
    gets the first line of why, from the stage that did not pass."""
    (tmp_path / "test_third_party.py").write_text(PYTEST_CASES)
    (tmp_path / "conftest.py").write_text(ADD_EVAL)
    out = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-q", "-p", "no:cacheprovider",
                    "-p", "no:hydra_pytest", "--rootdir", str(tmp_path), "--json-report", f"--json-report-file={out}"],
                   cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    loaded = load_report(out)
    assert len(loaded.outcomes) == 8
    assert {name.split("::")[-1]: line for name, line in loaded.messages.items()} == {
        "test_fails": "AssertionError: one is not two",
        "test_setup_errors": "RuntimeError: fixture typo: no such file data.json",
        "test_teardown_errors": "ValueError: teardown boom",
        "test_skips": "Skipped: unscored: call denied",
        "test_skip_marker": "Skipped: marker reason",
        "test_strict_xpass": "[XPASS(strict)] strict one",
        "test_fail_without_traceback": "Failed: plain failure text",
    }


def _test(outcome: str, **stages: dict) -> dict:
    return {"nodeid": "t.py::test_x", "outcome": outcome, **stages}


@pytest.mark.parametrize("entry, line", [
    # no crash block: the traceback's first `E ` line, not the source line above it
    (_test("failed", call={"outcome": "failed", "longrepr": ">   assert f()\nE   KeyError: 'k'\nE   more\n\nt.py:3"}),
     "KeyError: 'k'"),
    # neither a crash nor E lines: the first non-empty line
    (_test("failed", call={"outcome": "failed", "longrepr": "\n  odd text\nnext"}), "odd text"),
    # an empty crash message falls back to the longrepr
    (_test("failed", call={"outcome": "failed", "crash": {"message": ""}, "longrepr": "E   ValueError: v"}),
     "ValueError: v"),
    # the first stage that did not pass decides (call before teardown)
    (_test("failed", call={"outcome": "failed", "crash": {"message": "first"}},
           teardown={"outcome": "failed", "crash": {"message": "second"}}), "first"),
    # a long line is cut to MESSAGE_CHARS
    (_test("failed", call={"outcome": "failed", "crash": {"message": "x" * 1000}}), "x" * 297 + "..."),
    # a tuple-looking longrepr that is not one is read as text
    (_test("skipped", setup={"outcome": "skipped", "longrepr": "(not, a tuple)"}), "(not, a tuple)"),
    # nothing says why, or the fields are not text: no message
    (_test("failed"), None),
    (_test("failed", call={"outcome": "failed", "crash": {"message": 3}, "longrepr": ["list"]}), None),
    (_test("failed", call="not a stage"), None),
])
def test_failure_message_of_hand_built_entries(entry, line):
    assert failure_message(entry) == line
    assert MESSAGE_CHARS == 300


def test_only_tests_that_did_not_pass_keep_a_message():
    tests = [{"nodeid": "a", "outcome": "passed", "call": {"outcome": "passed", "longrepr": "chatter"}},
             {"nodeid": "b", "outcome": "failed", "call": {"outcome": "failed", "crash": {"message": "why b"}}},
             {"nodeid": "c", "outcome": "failed"}]
    loaded = parse_report(json.dumps({"eval": GOOD["eval"], "tests": tests}), "r.json")
    assert loaded.messages == {"b": "why b"}
