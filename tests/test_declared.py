"""Declared checks as pytest tests (evalkit.run.declared), black-box with pytester: ids, outcomes, one-line
failure messages, unparseable replies failing (never erroring), classification metrics and critical checks."""

from __future__ import annotations

import json

import pytest

REPLIES = {"t1": '{"label": "billing", "summary": "refund"}',
           "t2": '{"label": "bug", "summary": "crash"}',
           "t3": '{"label": "billing", "summary": "cut off',  # authored: a reply cut off mid-string
           "t4": '{"label": "account", "summary": "' + "x" * 50 + '"}'}
LABELS = {"t1": "billing", "t2": "billing", "t3": "bug", "t4": "account"}
RUN = {
    "key": {"suite": "s", "dataset": "d@1", "dataset_sha": "aaa", "model": "m", "prompt_version": "v1",
            "prompt_sha": "p", "judge_model": None, "components": {}},
    "provenance": {"recording_provenance": "authored"},
    "suite": {"critical": ["reply_is_json"]},
    "cases": [{"id": cid, "fields": {"label": label}} for cid, label in LABELS.items()],
    "calls": {f"task/{cid}": {"status": "replayed", "text": text, "reason": None, "stop_reason": "stop"}
              for cid, text in REPLIES.items()},
}
CHECKS = """\
checks:
  - name: reply_is_json
    is-json: true
    critical: true
  - name: label_matches
    field: label
    classification: label
  - name: summary_short
    field: summary
    length: {max: 20}
  - name: label_known
    field: label
    one-of: [billing, bug, account]
    where: {label: billing}
  - name: helper_agrees
    python: helpers:not_empty
"""
HELPERS = """
def not_empty(reply, case):
    return None if reply.strip() else f"case {case.id}: empty reply"
"""
HANDWRITTEN = """
def test_handwritten(case, task_reply):
    assert task_reply.startswith("{")
"""


@pytest.fixture
def report(pytester: pytest.Pytester):
    run_file = pytester.path / "run.json"
    run_file.write_text(json.dumps(RUN))
    (pytester.path / "checks.yaml").write_text(CHECKS)
    pytester.makepyfile(helpers=HELPERS, test_suite=HANDWRITTEN)
    out = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "-v",
                                           "--json-report", f"--json-report-file={out}")
    return result, json.loads(out.read_text())


def test_each_check_over_each_case_is_a_test_with_a_stable_id(report):
    result, data = report
    outcomes = {t["nodeid"]: t["outcome"] for t in data["tests"]}
    assert outcomes == {
        "checks.yaml::reply_is_json[t1]": "passed", "checks.yaml::reply_is_json[t2]": "passed",
        "checks.yaml::reply_is_json[t3]": "failed", "checks.yaml::reply_is_json[t4]": "passed",
        "checks.yaml::label_matches[t1]": "passed", "checks.yaml::label_matches[t2]": "failed",
        "checks.yaml::label_matches[t3]": "failed", "checks.yaml::label_matches[t4]": "passed",
        "checks.yaml::summary_short[t1]": "passed", "checks.yaml::summary_short[t2]": "passed",
        "checks.yaml::summary_short[t3]": "failed", "checks.yaml::summary_short[t4]": "failed",
        "checks.yaml::label_known[t1]": "passed", "checks.yaml::label_known[t2]": "passed",
        "checks.yaml::helper_agrees[t1]": "passed", "checks.yaml::helper_agrees[t2]": "passed",
        "checks.yaml::helper_agrees[t3]": "passed", "checks.yaml::helper_agrees[t4]": "passed",
        "test_suite.py::test_handwritten[t1]": "passed", "test_suite.py::test_handwritten[t2]": "passed",
        "test_suite.py::test_handwritten[t3]": "passed", "test_suite.py::test_handwritten[t4]": "passed",
    }
    result.assert_outcomes(passed=17, failed=5)  # an unparseable reply fails its checks, it errors none
    # each failure is one line of expected against came
    tests = {t["nodeid"]: t for t in data["tests"]}
    assert tests["checks.yaml::label_matches[t2]"]["call"]["longrepr"] == 'expected label "billing", came "bug"'
    assert tests["checks.yaml::reply_is_json[t3]"]["call"]["longrepr"].startswith(
        'expected a JSON reply, came unparseable JSON (Unterminated string starting at: line 1 column 33): '
        '{"label": "billing", "summary": "cut off')
    assert tests["checks.yaml::summary_short[t4]"]["call"]["longrepr"] == "expected 0 to 20 characters, came 50"
    # cases carry their declared checks beside the hand-written ones
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["t1"]["checks"] == {"reply_is_json": "passed", "label_matches": "passed",
                                     "summary_short": "passed", "label_known": "passed",
                                     "helper_agrees": "passed", "test_handwritten": "passed"}
    assert cases["t1"]["passed"] and not cases["t2"]["passed"]
    assert data["metrics"]["case_pass_rate"]["mean"] == 0.25


def test_classification_metrics_confusion_matrix_and_critical_checks(report):
    _, data = report
    block = data["classification"]["label_matches"]
    assert block["cases"] == 4
    assert block["confusion"] == {"account": {"account": 1, "billing": 0, "bug": 0, "(none)": 0},
                                  "billing": {"account": 0, "billing": 1, "bug": 1, "(none)": 0},
                                  "bug": {"account": 0, "billing": 0, "bug": 0, "(none)": 1}}
    metrics = {name: m["mean"] for name, m in data["metrics"].items()}
    assert metrics["accuracy"] == 0.5
    # account F1 1, billing P 1 R 0.5 F1 2/3, bug never right F1 0
    assert metrics["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3, abs=1e-6)
    assert metrics["recall.billing"] == 0.5 and metrics["precision.bug"] == 0.0  # predicted once, wrongly
    assert data["critical_checks"] == ["reply_is_json"]


def test_a_missing_python_function_is_a_collection_error(pytester: pytest.Pytester):
    run_file = pytester.path / "run.json"
    run_file.write_text(json.dumps(RUN))
    (pytester.path / "checks.yaml").write_text("checks:\n  - name: c\n    python: helpers:nothing\n")
    pytester.makepyfile(helpers=HELPERS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--evalkit-run={run_file}")
    result.stdout.fnmatch_lines(["*python check helpers:nothing: helpers defines no function nothing*"])
    assert result.ret == 2


def test_declared_checks_run_once_per_sample_and_report_k_of_n(pytester: pytest.Pytester):
    replies = {"task/t1": '{"label": "billing"}', "task/t1#1": '{"label": "bug"}',  # right, then wrong
               "task/t2": '{"label": "bug"}', "task/t2#1": '{"label": "bug"}'}
    run = {**RUN, "repeats": 2, "cases": [{"id": "t1", "fields": {"label": "billing"}},
                                          {"id": "t2", "fields": {"label": "bug"}}],
           "calls": {cid: {"status": "replayed", "text": text, "reason": None, "stop_reason": "stop"}
                     for cid, text in replies.items()}}
    run_file = pytester.path / "run.json"
    run_file.write_text(json.dumps(run))
    (pytester.path / "checks.yaml").write_text("checks:\n  - {name: label_matches, field: label, "
                                               "classification: label}\n")
    out = pytester.path / "report.json"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report",
                                  f"--json-report-file={out}")
    tests = {t["nodeid"]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["checks.yaml::label_matches[t1]"]["outcome"] == "failed"
    assert tests["checks.yaml::label_matches[t1]"]["repeats"] == {"passed": 1, "runs": 2, "not_passed": [1],
                                                                         "reduce": "all"}
    assert tests["checks.yaml::label_matches[t2]"]["repeats"] == {"passed": 2, "runs": 2, "not_passed": [],
                                                                         "reduce": "all"}
    # the metrics count each case once, by its first sample's label
    data = json.loads(out.read_text())
    assert data["classification"]["label_matches"]["confusion"]["billing"]["billing"] == 1
    assert data["metrics"]["accuracy"]["mean"] == 1.0


def test_an_llm_rubric_check_reads_the_judges_answer_for_its_case(pytester: pytest.Pytester):
    calls = {"task/t1": '{"label": "billing"}', "task/t2": '{"label": "bug"}',
             "judge/names_problem/t1": '{"pass": true, "reason": "names the refund"}',
             "judge/names_problem/t2": '{"pass": false, "reason": "no problem named"}'}
    run = {**RUN, "cases": [{"id": "t1", "fields": {"label": "billing"}}, {"id": "t2", "fields": {"label": "bug"}}],
           "calls": {cid: {"status": "replayed", "text": text, "reason": None, "stop_reason": "stop"}
                     for cid, text in calls.items()}}
    run_file = pytester.path / "run.json"
    run_file.write_text(json.dumps(run))
    (pytester.path / "checks.yaml").write_text("checks:\n  - name: names_problem\n    llm-rubric: Names the problem\n")
    out = pytester.path / "report.json"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "--json-report",
                                  f"--json-report-file={out}")
    tests = {t["nodeid"]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["checks.yaml::names_problem[t1]"]["outcome"] == "passed"
    assert tests["checks.yaml::names_problem[t2]"]["call"]["longrepr"] == \
        "expected the rubric met, came the judge's fail: no problem named"
