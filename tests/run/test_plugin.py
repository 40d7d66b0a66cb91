"""evalkit's pytest plugin, black-box with pytester: parametrisation, reply fixtures, report fields."""

from __future__ import annotations

import json

import pytest

RUN = {
    "key": {"suite": "s", "dataset": "d@1", "dataset_sha": "aaa", "model": "m", "prompt_version": "v1",
            "prompt_sha": "p", "judge_model": "j", "components": {}},
    "provenance": {"recording_provenance": "authored"},
    "cases": [{"id": "c1", "fields": {"want": "x", "judged": True}},
              {"id": "c2", "fields": {"want": "y", "judged": False}},
              {"id": "c3", "fields": {"want": "z", "judged": False}},
              {"id": "c4", "fields": {"want": "w", "judged": False}}],
    "calls": {
        "task/c1": {"status": "replayed", "text": "x", "reason": None, "stop_reason": "stop"},
        "task/c2": {"status": "replayed", "text": "wrong", "reason": None, "stop_reason": "stop"},
        "task/c3": {"status": "missing", "text": None, "reason": "no recording for task/c3 in r.json", "stop_reason": None},
        "judge/quality/c1": {"status": "replayed", "text": "ok", "reason": None, "stop_reason": "stop"},
        "task/c4": {"status": "budget_denied", "text": None, "reason": "budget_denied: budget.max_calls=3 would be exceeded",
                    "stop_reason": None},
    },
}

TESTS = """
import pytest

def test_reply(case, task_reply):
    assert task_reply == case.want

@pytest.mark.cases(lambda case: case.judged)
def test_judged(case, judge_reply):
    assert judge_reply("quality") == "ok"

def test_key(eval_key):
    assert eval_key["model"] == "m"
"""


@pytest.fixture
def run_file(pytester: pytest.Pytester):
    path = pytester.path / "run.json"
    path.write_text(json.dumps(RUN))
    pytester.makepyfile(test_suite=TESTS)
    return path


def test_cases_become_parameters_and_replies_fixtures(pytester, run_file):
    result = pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "-v")
    result.assert_outcomes(passed=3, failed=1, errors=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*test_reply?c1? PASSED*", "*test_reply?c2? FAILED*", "*test_reply?c3? ERROR*", "*test_reply?c4? SKIPPED*",
        "*test_judged?c1? PASSED*"])
    result.stdout.fnmatch_lines(["*no recording for task/c3 in r.json*"])
    assert "test_judged[c2]" not in result.stdout.str()


def test_report_gets_key_cases_and_provenance_and_loses_machine_fields(pytester, run_file):
    out = pytester.path / "report.json"
    pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report",
                       f"--json-report-file={out}")
    data = json.loads(out.read_text())
    assert data["eval"] == RUN["key"] and data["provenance"] == RUN["provenance"]
    assert "environment" not in data and "root" not in data
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["c1"]["checks"] == {"test_reply": "passed", "test_judged": "passed"} and cases["c1"]["passed"]
    assert cases["c2"]["passed"] is False
    assert cases["c3"]["calls"] == {"task/c3": "missing"}
    assert cases["c3"]["problems"] == ["no recording for task/c3 in r.json"]
    assert cases["c3"]["status"] == "scored"  # a replay miss fails its checks; it is not a budget or call failure
    assert cases["c4"]["status"] == "unscored" and cases["c4"]["checks"] == {"test_reply": "skipped"}
    assert {t["nodeid"]: t.get("case") for t in data["tests"]}["test_suite.py::test_reply[c2]"] == "c2"


def test_plugin_is_inert_without_an_evalkit_run(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    out = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--json-report", f"--json-report-file={out}")
    result.assert_outcomes(passed=1)
    data = json.loads(out.read_text())
    assert "eval" not in data and "environment" in data


METRIC_TESTS = """
import math

def test_metric(case, record_metric):
    record_metric("score", {"c1": 1.0, "c2": 0.5, "c3": None, "c4": 0}[case.id])

def test_bad_metric(case, record_metric):
    if case.id == "c1":
        record_metric("score2", math.nan)
"""


def test_record_metric_per_case_and_run_aggregates(pytester, run_file):
    pytester.makepyfile(test_suite=METRIC_TESTS)
    out = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report",
                                f"--json-report-file={out}")
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines(["*case c1: metric 'score2' must be a finite number or None, got nan*"])
    data = json.loads(out.read_text())
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["c2"]["metrics"] == {"score": 0.5} and cases["c3"]["metrics"] == {"score": None}
    assert data["metrics"] == {"score": {"mean": 0.5, "count": 3, "unmeasured": 1},
                               "pass_rate": {"mean": 0.875, "count": 8, "unmeasured": 0},
                               "case_pass_rate": {"mean": 0.75, "count": 4, "unmeasured": 0}}
    assert data["pass_rate"] == round(7 / 8, 6)


SLICE_RUN = {
    **RUN,
    "suite": {"slices": [{"by": "language(text)", "where": {"kind": "rag"}}, "kind"],
              "abstention_check": "test_abstention"},
    "cases": [{"id": "a", "fields": {"kind": "rag", "text": "ডেলিভারি কত দিনে?", "expect": "abstain", "ok": False}},
              {"id": "b", "fields": {"kind": "rag", "text": "Express ডেলিভারি?", "expect": "answer", "ok": True}},
              {"id": "c", "fields": {"kind": "rag", "text": "How long?", "expect": "answer", "ok": False}},
              {"id": "d", "fields": {"kind": "tool", "text": "List orders", "expect": "answer", "ok": True}}],
    "calls": {},
}
SLICE_TESTS = """
def test_abstention(case):
    assert case.ok

def test_builtin_name_is_refused(case, record_metric):
    if case.id == "a":
        record_metric("pass_rate", 1.0)
"""


def test_slices_by_language_and_field_with_unsafe_cases(pytester):
    run_file = pytester.path / "run.json"
    run_file.write_text(json.dumps(SLICE_RUN))
    pytester.makepyfile(test_suite=SLICE_TESTS)
    out = pytester.path / "report.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report",
                                f"--json-report-file={out}")
    result.stdout.fnmatch_lines(["*'pass_rate' is computed by evalkit; record another metric name*"])
    slices = json.loads(out.read_text())["slices"]
    by_language = slices["language(text) where kind=rag"]
    assert by_language["bn"] == {"cases": 1, "pass_rate": 0.0, "failures": ["a"], "unsafe": ["a"]}
    assert by_language["mixed"]["pass_rate"] == 1.0 and by_language["en"]["failures"] == ["c"]
    assert set(slices["kind"]) == {"rag", "tool"} and slices["kind"]["tool"]["cases"] == 1


def test_reply_contract_problems_are_reported_per_case(pytester):
    run = {**RUN, "cases": [{"id": "c1", "fields": {"want": "", "judged": False}}],
           "calls": {"task/c1": {"status": "replayed", "text": "", "reason": None, "stop_reason": "weird",
                                 "contract": ["unknown stop reason 'weird'"]}}}
    path = pytester.path / "run.json"
    path.write_text(json.dumps(run))
    pytester.makepyfile(test_suite="def test_reply(case, task_reply):\n    assert task_reply == case.want\n")
    out = pytester.path / "report.json"
    pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={path}", "--json-report", f"--json-report-file={out}")
    case = json.loads(out.read_text())["cases"][0]
    assert case["problems"] == ["task/c1: unknown stop reason 'weird'"] and case["passed"] is True


def test_record_property_data_is_kept(pytester, run_file):
    pytester.makepyfile(test_suite="def test_p(case, record_property):\n    record_property('note', case.id)\n")
    out = pytester.path / "report.json"
    pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report", f"--json-report-file={out}")
    tests = {t["nodeid"]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["test_suite.py::test_p[c2]"]["user_properties"] == [{"note": "c2"}]


def test_cases_keep_their_task_output_and_judge_replies_cut_to_size(pytester, run_file):
    from evalkit.run.eval_block import REPLY_CHARS

    long_run = json.loads(run_file.read_text())
    long_run["calls"]["task/c2"]["text"] = "w" * (REPLY_CHARS + 5)
    run_file.write_text(json.dumps(long_run))
    out = pytester.path / "report.json"
    pytester.runpytest("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report",
                       f"--json-report-file={out}")
    cases = {c["id"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["c1"]["output"] == "x" and cases["c1"]["judge_replies"] == {"quality": "ok"}
    assert cases["c2"]["output"] == "w" * REPLY_CHARS + " [... cut: 5 more characters]"
    assert "judge_replies" not in cases["c2"]
    assert cases["c3"]["output"] is None  # the call was never answered: no reply, said as null
