"""Declared checks as pytest tests (evalkit.run.declared), black-box with pytester: ids, outcomes, one-line
failure messages, unparseable replies failing (never erroring), classification metrics and critical checks."""

from __future__ import annotations

import json

import pytest
from helpers.bounded import evalkit_bounded

from evalkit.core.failure import failure_message

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


def run_checks(pytester: pytest.Pytester, run: dict, checks: str, **files: str) -> tuple[pytest.RunResult, dict]:
    run_file = pytester.path / "run.json"
    run_file.write_text(json.dumps(run))
    (pytester.path / "checks.yaml").write_text(checks)
    if files:
        pytester.makepyfile(**files)
    out = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--evalkit-run={run_file}", "-rs",
                                           "--json-report", f"--json-report-file={out}")
    return result, (json.loads(out.read_text()) if out.exists() else {})


def replayed(calls: dict[str, str]) -> dict[str, dict]:
    return {cid: {"status": "replayed", "text": text, "reason": None, "stop_reason": "stop"}
            for cid, text in calls.items()}


def test_ready_made_judges_read_their_answers_and_keep_the_score_as_a_metric(pytester: pytest.Pytester):
    cases = [{"id": "t1", "fields": {"context": "Refunds within 30 days."}},
             {"id": "t2", "fields": {"context": "Refunds within 30 days."}},
             {"id": "t3", "fields": {}}]  # no context: no judge was asked, the check could not run, naming the field
    calls = {"task/t1": "30 days", "task/t2": "60 days", "task/t3": "?",
             "judge/faithful/t1": '{"reason": "stated in the context", "score": 5}',
             "judge/faithful/t2": '{"reason": "60 contradicts 30", "score": 1}'}
    result, data = run_checks(pytester, {**RUN, "cases": cases, "calls": replayed(calls)},
                              "checks:\n  - name: faithful\n    faithfulness: {context: context}\n")
    tests = {t["nodeid"]: t for t in data["tests"]}
    assert tests["checks.yaml::faithful[t1]"]["outcome"] == "passed"
    assert tests["checks.yaml::faithful[t2]"]["call"]["longrepr"] == \
        "expected faithfulness to the context at level 4 or above (of 5), came 1: 60 contradicts 30"
    # neither a pass nor a plain failure: skipped, saying so; the case unscored with why; the score unmeasured there
    missing = "expected case field 'context' for the judge, but case t3 has none"
    assert tests["checks.yaml::faithful[t3]"]["outcome"] == "skipped"
    assert failure_message(tests["checks.yaml::faithful[t3]"]) == f"Skipped: could not run: {missing}"
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert data["metrics"]["faithful.score"] == {"mean": 3.0, "count": 2, "unmeasured": 1}
    cases = {c["id"]: c for c in data["cases"]}
    assert {cid: c["metrics"] for cid, c in cases.items()} == {"t1": {"faithful.score": 5.0},
                                                               "t2": {"faithful.score": 1.0},
                                                               "t3": {"faithful.score": None}}
    assert [c["status"] for c in cases.values()] == ["scored", "scored", "unscored"]
    assert cases["t3"]["could_not_run"] == {"faithful": missing}
    assert cases["t3"]["problems"] == [f"faithful: could not run: {missing}"]


PAIRWISE = """\
checks:
  - name: no_worse
    pairwise: {against: baseline}
  - name: beats_reference
    pairwise: {against: {case: reference}, require: win}
"""


def test_pairwise_compares_where_there_is_another_reply_and_says_where_there_is_none(pytester: pytest.Pytester):
    cases = [{"id": cid, "fields": {"reference": "ref"}} for cid in ("won", "lost", "same", "new")]
    calls = {"task/won": "better", "task/lost": "worse", "task/same": "ref", "task/new": "fresh",
             "judge/no_worse/new-first/won": "first", "judge/no_worse/old-first/won": "second",
             "judge/no_worse/new-first/lost": "second", "judge/no_worse/old-first/lost": "first",
             # `same` gave the baseline's reply: no judge was asked for no_worse
             "judge/beats_reference/new-first/won": '{"verdict": "first"}',
             "judge/beats_reference/old-first/won": '{"verdict": "first"}',  # flips with the order: a tie
             "judge/beats_reference/new-first/lost": "second", "judge/beats_reference/old-first/lost": "first",
             "judge/beats_reference/new-first/new": "first", "judge/beats_reference/old-first/new": "second"}
    run = {**RUN, "cases": cases, "calls": replayed(calls),
           "suite": {"baseline_cases": ["won", "lost", "same"]}}  # `new` is a case the baseline never ran
    result, data = run_checks(pytester, run, PAIRWISE)
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    assert {name: t["outcome"] for name, t in tests.items()} == {
        "no_worse[won]": "passed", "no_worse[lost]": "failed", "no_worse[same]": "passed", "no_worse[new]": "skipped",
        "beats_reference[won]": "failed", "beats_reference[lost]": "failed", "beats_reference[same]": "failed",
        "beats_reference[new]": "passed"}
    assert tests["no_worse[lost]"]["call"]["longrepr"] == ("expected no loss against the baseline's reply, came a "
                                                          "loss (the judge preferred the baseline's reply in both "
                                                          "orders)")
    assert tests["beats_reference[same]"]["call"]["longrepr"] == ("expected a win against case field 'reference', "
                                                                 "came the same reply as case field 'reference'")
    assert "not compared: the run has no baseline reply for case new" in tests["no_worse[new]"]["call"]["longrepr"]
    metrics = {name: m["mean"] for name, m in data["metrics"].items()}
    assert metrics["no_worse.win"] == pytest.approx(1 / 3) and metrics["no_worse.tie"] == pytest.approx(1 / 3)
    assert data["metrics"]["no_worse.loss"]["count"] == 3  # the skipped case measured nothing
    assert metrics["beats_reference.disagree"] == 0.25


REDUCED = """\
checks:
  - {name: every, field: label, equals: right}
  - {name: most, field: label, equals: right, reduce: majority}
  - {name: two, field: label, equals: right, reduce: {at_least: 2}}
  - {name: share, field: label, equals: right, reduce: {mean: 0.75}}
"""
MARKED = """
import json
import pytest


@pytest.mark.reduce("majority")
def test_marked(case, task_reply):
    assert json.loads(task_reply)["label"] == "right"
"""


def test_reducers_decide_the_outcome_and_the_counts_stay(pytester: pytest.Pytester):
    labels = {"a": ["right", "wrong", "right"], "b": ["wrong", "wrong", "right"]}
    calls = {f"task/{case}" + (f"#{i}" if i else ""): json.dumps({"label": label})
             for case, seq in labels.items() for i, label in enumerate(seq)}
    run = {**RUN, "repeats": 3, "cases": [{"id": c, "fields": {}} for c in labels], "calls": replayed(calls)}
    result, data = run_checks(pytester, run, REDUCED, test_marked=MARKED)
    tests = {t["nodeid"].split("::")[-1]: t for t in data["tests"]}
    direct = {case: seq.count("right") for case, seq in labels.items()}  # a: 2 of 3, b: 1 of 3
    rules = {"every": ("all", lambda k: k == 3), "most": ("majority", lambda k: k > 1.5),
             "two": ("at_least 2", lambda k: k >= 2), "share": ("mean 0.75", lambda k: k / 3 >= 0.75),
             "test_marked": ("majority", lambda k: k > 1.5)}
    for name, (reduce, rule) in rules.items():
        for case, k in direct.items():
            test = tests[f"{name}[{case}]"]
            assert test["repeats"]["passed"] == k and test["repeats"]["runs"] == 3
            assert test["repeats"]["reduce"] == reduce
            assert test["outcome"] == ("passed" if rule(k) else "failed"), (name, case)
    assert data["metrics"]["pass_rate"]["mean"] == 0.3  # most[a], two[a], test_marked[a] of 10


def test_a_reducer_that_cannot_pass_or_be_read_is_a_usage_error_naming_the_test(pytester: pytest.Pytester):
    run = {**RUN, "repeats": 2, "cases": [{"id": "a", "fields": {}}],
           "calls": replayed({"task/a": "x", "task/a#1": "x"})}
    result, _ = run_checks(pytester, run, "checks:\n  - {name: c, equals: x, reduce: {at_least: 3}}\n")
    result.stderr.fnmatch_lines(["*checks.yaml::c[[]a[]]: reduce at_least 3 asks for more passing samples than the "
                                 "run takes (run.repeats=2)*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    bad = MARKED.replace('reduce("majority")', "reduce(most=2)")
    result, _ = run_checks(pytester, run, "checks:\n  - {name: c, equals: x}\n", test_marked=bad)
    result.stderr.fnmatch_lines(["*test_marked.py::test_marked[[]a[]]: reduce {'most': 2} is not a reducer*"])


SCAFFOLDED_CHECKS = {  # each appended to a scaffolded suite's checks.yaml, whose cases have id, text and label
    "  - name: faithful\n    faithfulness: {context: passages}\n":
        "check faithful: faithfulness.context names case field 'passages', which no case of the dataset has (its "
        "cases have: label, text)",
    "  - name: billing_only\n    equals: x\n    where: {label: billing}\n":
        "check billing_only: where label='billing' matches no case of the dataset, so the check would never run "
        "(label takes 'negative', 'neutral', 'positive')",
}


@pytest.mark.parametrize("entry", sorted(SCAFFOLDED_CHECKS))
def test_a_check_that_could_never_run_is_refused_when_the_checks_are_read(tmp_path, entry):
    # issue 41: `faithfulness: {context: passages}`, a field no case has, failed every case on both sides and the
    # gate said GO; issue 35: a `where:` that matched no case ended as "pytest collected no tests"
    assert evalkit_bounded("new", "project", cwd=tmp_path).returncode == 0
    assert evalkit_bounded("new", "suite", "reviews", cwd=tmp_path).returncode == 0
    checks = tmp_path / "suites/reviews/checks.yaml"
    checks.write_text(checks.read_text() + entry)
    done = evalkit_bounded("run", "baseline=none", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.endswith(f"checks.yaml: {SCAFFOLDED_CHECKS[entry]}"), line


SUMMARY_SCANS = """
import _pytest.terminal

scans = []
_read = _pytest.terminal.TerminalReporter.getreports


def getreports(self, name):
    scans.append(name)
    return _read(self, name)


_pytest.terminal.TerminalReporter.getreports = getreports


def pytest_unconfigure(config):
    print(f"\\nscans of every passed stage: {scans.count('')}")
"""


def test_the_summary_of_many_failing_checks_reads_the_reports_once(pytester: pytest.Pytester):
    # issue 35: 1,000 declared checks took 124 s, about n^1.9: pytest's summary looked up each failure's teardown
    # report in a scan of every report of the run (pytest-dev/pytest#13360)
    checks = "checks:\n" + "".join(f"  - {{name: c{i}, equals: nothing}}\n" for i in range(30))
    run = {**RUN, "calls": replayed({f"task/{cid}": "something" for cid in LABELS})}
    result, data = run_checks(pytester, run, checks, conftest=SUMMARY_SCANS, test_noisy=NOISY)
    assert data["summary"]["failed"] == 121
    # every failure still shown, with what its teardown printed
    result.stdout.fnmatch_lines(["*c29[[]t4[]]*", "*test_noisy*", "*Captured stdout teardown*", "said at teardown",
                                 "scans of every passed stage: 1"])


NOISY = """
import pytest


@pytest.fixture
def noisy():
    yield
    print("said at teardown")


def test_noisy(noisy):
    assert False
"""


def test_with_repeats_a_check_that_could_not_run_in_any_sample_leaves_its_case_unscored(pytester: pytest.Pytester):
    # the regex stops at its budget on one sample's reply only: the shown sample passes under `majority`, and the
    # case is still unscored, since that sample measured nothing
    calls = {"task/a": "x", "task/a#1": "a" * 45 + "!", "task/a#2": "x"}
    run = {**RUN, "repeats": 3, "cases": [{"id": "a", "fields": {}}], "calls": replayed(calls)}
    result, data = run_checks(pytester, run, r"checks: [{name: c, regex: '^(\w|\w\w)*$', reduce: majority}]")
    test = data["tests"][0]
    assert test["outcome"] == "passed" and test["repeats"]["passed"] == 2
    case = data["cases"][0]
    assert case["status"] == "unscored" and list(case["could_not_run"]) == ["c"]
    assert case["could_not_run"]["c"].startswith("regex /^(\\w|\\w\\w)*$/ ran past its time budget of 0.5 s")


def test_majority_of_the_judges_repeats_passes_on_more_than_half_and_means_the_metrics() -> None:
    from evalkit.judging.checks import Verdict
    from evalkit.run.declared import majority

    one = Verdict(False, "came 2", metrics={"score": 2.0})
    assert majority([one]) is one
    two_of_three = majority([Verdict(True, metrics={"score": 5.0}), one, Verdict(True, metrics={"score": 4.0})])
    assert two_of_three.passed and two_of_three.message == ""
    assert two_of_three.metrics == {"score": pytest.approx(11 / 3)}
    split = majority([Verdict(True, metrics={"score": 5.0}), Verdict(False, "came 2", metrics={"score": None})])
    assert not split.passed  # a tie fails: the judge has not shown the reply meets the check
    assert split.message == "1 of 2 judge repeats passed; came 2" and split.metrics == {"score": 5.0}
