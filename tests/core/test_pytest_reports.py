"""Reading pytest's reports as a pytest user reads them: node ids, every outcome pytest and its common plugins
write, and the run's own record (exitcode, collectors, summary). Authored inputs, shaped like the real ones in
tests/corpus/pytest_reports/ (which tests/product/test_corpus.py gates)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import KEY

from evalkit.core.errors import InputError
from evalkit.core.nodeid import matches_critical, qualified_name
from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.records.report_reader import report_from_mapping
from evalkit.render.markdown import render_markdown
from evalkit.render.text import render_decision

DATEUTIL = "tests/test_parser.py::test_parse_tzinfos[2017-01-01 12:00 EST::tzinfos0]"


@pytest.mark.parametrize("nodeid, qualified", [
    ("t.py::test_a", "test_a"),
    ("t.py::test_a[x]", "test_a"),
    (DATEUTIL, "test_parse_tzinfos"),
    ("t.py::test_ids[a::b]", "test_ids"),
    ("t.py::test_ids[x[1]]", "test_ids"),
    ("t.py::test_ids[with space]", "test_ids"),
    ("t.py::test_ids[\u00fcn\u00efc\u00f8d\u00e9]", "test_ids"),
    ("tests/test_more.py::WindowedTests::test_basic", "WindowedTests::test_basic"),
    ("t.py::TestA::TestB::test_c[1-2]", "TestA::TestB::test_c"),
    ("toolz/itertoolz.py::toolz.itertoolz.second", "toolz.itertoolz.second"),
])
def test_the_name_is_what_precedes_the_parameters(nodeid, qualified):
    assert qualified_name(nodeid) == qualified


@pytest.mark.parametrize("nodeid, prefixes, expected", [
    (DATEUTIL, ("test_parse_tzinfos",), True),
    (DATEUTIL, ("tzinfos0]",), False),  # what follows `::` inside the brackets is a parameter, not a name
    ("t.py::test_ids[a::test_priority]", ("test_priority",), False),
    ("t.py::test_priority[a::b]", ("test_priority",), True),
    ("tests/test_more.py::WindowedTests::test_basic", ("WindowedTests",), True),
    ("tests/test_more.py::WindowedTests::test_basic", ("WindowedTests::test_b",), True),
    ("tests/test_more.py::WindowedTests::test_basic", ("OtherTests::test_basic",), False),
    ("tests/test_more.py::WindowedTests::test_basic", ("test_basic",), True),
    ("t.py::test_a", (), False),
])
def test_critical_names_match_tests_and_classes_never_parameters(nodeid, prefixes, expected):
    assert matches_critical(nodeid, prefixes) is expected


def pytest_report(tests: list[dict[str, Any]], **run: Any) -> dict[str, Any]:
    """A pytest-json-report file's shape: tests with phases, plus exitcode / summary / collectors when given."""
    return {"eval": KEY, "tests": tests, **run}


def entry(nodeid: str, outcome: Any, call: str | None = "passed", setup: str = "passed") -> dict[str, Any]:
    phases: dict[str, Any] = {"setup": {"outcome": setup}, "teardown": {"outcome": "passed"}}
    if call is not None:
        phases["call"] = {"outcome": call}
    return {"nodeid": nodeid, "outcome": outcome, **phases}


@pytest.mark.parametrize("given, read", [
    (entry("t.py::test_flaky", "rerun", call="passed"), "passed"),  # pytest-rerunfailures: passed on rerun
    (entry("t.py::test_flaky", "rerun", call="failed"), "failed"),
    (entry("t.py::test_flaky", "rerun", call=None, setup="failed"), "error"),
    (entry("t.py::test_flaky", "rerun", call="skipped"), "skipped"),
    (entry("t.py::T::test_sub", "subtests passed"), "passed"),  # pytest 9's subtests
    (entry("t.py::T::test_sub", "subtests passed", call="failed"), "failed"),
    (entry("t.py::T::test_sub", "subtests failed", call="passed"), "failed"),
    (entry("t.py::T::test_sub", "subtests skipped", call="passed"), "skipped"),
    (entry("t.py::test_x", "xpassed"), "xpassed"),
])
def test_plugins_outcomes_are_read_by_what_they_mean(given, read):
    loaded = report_from_mapping(pytest_report([given]), "r.json")
    assert list(loaded.outcomes.values()) == [read]


@pytest.mark.parametrize("outcome, message", [
    (["passed"], r"r\.json: tests\[0\] \(t\.py::test_a\) has outcome \['passed'\]; expected one of"),
    ("subtests won", r"has outcome 'subtests won'"),
    ("rerunning", r"has outcome 'rerunning'"),
])
def test_outcomes_no_plugin_writes_are_refused_in_one_line(outcome, message):
    with pytest.raises(InputError, match=message) as caught:
        report_from_mapping(pytest_report([entry("t.py::test_a", outcome)]), "r.json")
    assert "\n" not in str(caught.value)


def test_a_non_integer_exitcode_is_refused():
    with pytest.raises(InputError, match=r"r\.json: 'exitcode' is '1'"):
        report_from_mapping(pytest_report([entry("t.py::test_a", "passed")], exitcode="1"), "r.json")


def test_exit_code_5_without_tests_is_an_input_error_naming_it():
    with pytest.raises(InputError, match=r"the run has no tests.*pytest exit code 5: no tests collected"):
        report_from_mapping(pytest_report([], exitcode=5, summary={"total": 0, "collected": 0}), "r.json")


PASSING_RUN = [entry("t.py::test_a", "passed"), entry("t.py::test_b", "passed")]


@pytest.mark.parametrize("run, problem", [
    ({"exitcode": 2, "collectors": [{"nodeid": "t_new.py", "outcome": "failed",
                                     "longrepr": "ImportError while importing\nE   ImportError: no name x"}]},
     "collection error in 1 module(s), whose tests did not run: t_new.py (ImportError: no name x)"),
    ({"summary": {"passed": 2, "total": 2, "collected": 9}},
     "interrupted run: 2 of 9 collected tests ran (stopped by -x/--maxfail or an interrupt); "
     "the rest have no outcome"),
    ({"exitcode": 1}, "pytest exited 1 (tests failed) but no test in the report failed: the report lost a "
                      "failure (a failing subtest recorded as passed?)"),
    ({"exitcode": 2}, "pytest was interrupted (exit code 2: collection errors or an interrupt)"),
    ({"exitcode": 3}, "pytest had an internal error (exit code 3)"),
    ({"exitcode": 4}, "pytest was misused (exit code 4: usage error)"),
    ({"exitcode": 5}, "pytest exited 5 (no tests collected) but the report lists 2 tests"),
    ({"exitcode": 7}, "pytest exited 7, which is none of its own exit codes"),
    ({"exitcode": 0, "summary": {"passed": 3, "total": 3, "collected": 3}},
     "the report's summary counts 3 tests but lists 2"),
])
def test_the_runs_own_record_blocks_a_candidate_and_warns_about_a_baseline(run, problem):
    base = report_from_mapping(pytest_report(PASSING_RUN, exitcode=0), "b.json")
    bad = report_from_mapping(pytest_report(PASSING_RUN, **run), "c.json")
    assert bad.problems == (problem,)
    as_candidate = decide(Policy(), base, bad)
    assert as_candidate.decision is Verdict.BLOCK and as_candidate.reasons == (problem,)
    as_baseline = decide(Policy(), bad, base)
    assert as_baseline.decision is Verdict.GO and as_baseline.warnings == (f"baseline: {problem}",)


def test_exit_code_0_with_a_failing_test_contradicts():
    bad = report_from_mapping(pytest_report([*PASSING_RUN, entry("t.py::test_c", "failed", call="failed")],
                                            exitcode=0), "c.json")
    assert bad.problems == ("pytest exited 0 (all passed) but the report records 1 failing test(s)",)


def test_a_consistent_record_has_no_problems():
    deselected = {"passed": 2, "total": 2, "collected": 3, "deselected": 1}
    assert report_from_mapping(pytest_report(PASSING_RUN, exitcode=0, summary=deselected), "r.json").problems == ()
    failing = [PASSING_RUN[0], entry("t.py::test_c", "failed", call="failed")]
    assert report_from_mapping(pytest_report(failing, exitcode=1), "r.json").problems == ()


def test_a_run_that_collected_nothing_because_of_an_import_error_blocks():
    base = report_from_mapping(pytest_report(PASSING_RUN, exitcode=0), "b.json")
    broken = report_from_mapping(pytest_report([], exitcode=2, summary={"total": 0, "collected": 2}, collectors=[
        {"nodeid": "t.py", "outcome": "failed", "longrepr": "E   ModuleNotFoundError: No module named 'x'"}]),
        "c.json")
    result = decide(Policy(), base, broken)
    assert result.decision is Verdict.BLOCK and result.pass_rate == 0.0 and result.tests == 0
    assert result.reasons[0] == ("collection error in 1 module(s), whose tests did not run: "
                                 "t.py (ModuleNotFoundError: No module named 'x')")
    assert result.regressed == ("t.py::test_a", "t.py::test_b")


def outcomes_report(outcomes: dict[str, str]) -> Any:
    return report_from_mapping(pytest_report([entry(n, o) for n, o in outcomes.items()]), "r.json")


def test_critical_tests_with_colons_in_their_parameters_fail_and_vanish_visibly():
    policy = Policy(critical=("test_parse_tzinfos",))
    base = outcomes_report({DATEUTIL: "passed", "t.py::test_other": "passed"})
    failing = decide(policy, base, outcomes_report({DATEUTIL: "failed", "t.py::test_other": "passed"}))
    assert failing.decision is Verdict.BLOCK and failing.critical_failures == (DATEUTIL,)
    vanished = decide(Policy(critical=("test_parse_tzinfos",), max_regressions=5), base,
                      outcomes_report({"t.py::test_other": "passed"}))
    assert vanished.decision is Verdict.BLOCK and vanished.missing_critical == (DATEUTIL,)


def test_a_unittest_class_can_be_critical():
    policy = Policy(critical=("WindowedTests",), max_regressions=5)
    base = outcomes_report({"tests/test_more.py::WindowedTests::test_basic": "passed"})
    result = decide(policy, base, outcomes_report({"tests/test_more.py::WindowedTests::test_basic": "error"}))
    assert result.critical_failures == ("tests/test_more.py::WindowedTests::test_basic",)


def test_a_critical_name_matching_nothing_is_a_warning_shown_everywhere():
    policy = Policy(critical=("test_prority", "test_a"))
    base = outcomes_report({"t.py::test_a": "passed"})
    result = decide(policy, base, base)
    assert result.decision is Verdict.GO
    warning = ("critical 'test_prority' matches no test in either report; check the name (a test-name or "
               "class-name prefix, or Class::test)")
    assert result.warnings == (warning,)
    assert json.loads(json.dumps(result.record().data()))["warnings"] == [warning]
    assert f"warnings:\n  - {warning}" in render_decision(result)
    assert f"**Warnings**\n\n- {warning}" in render_markdown(result)


def test_skips_and_xfails_lower_pass_rate_but_not_ran_pass_rate_and_xpass_passes():
    base = outcomes_report({"t.py::a": "passed", "t.py::b": "skipped", "t.py::c": "xfailed", "t.py::d": "xpassed"})
    result = decide(Policy(min_pass_rate=0.5), base, base)
    assert result.decision is Verdict.GO
    assert (result.passed, result.tests, result.pass_rate, result.ran_pass_rate) == (2, 4, 0.5, 1.0)
    assert result.outcomes == {"passed": 1, "skipped": 1, "xfailed": 1, "xpassed": 1}
    failing = outcomes_report({"t.py::a": "passed", "t.py::b": "failed", "t.py::c": "error", "t.py::d": "skipped"})
    assert decide(Policy(), failing, failing).ran_pass_rate == 0.333
    only_skips = outcomes_report({"t.py::a": "skipped"})
    assert decide(Policy(), only_skips, only_skips).ran_pass_rate is None


@pytest.mark.parametrize("before, after, regressed, fixed", [
    ("passed", "xpassed", False, False), ("xpassed", "xfailed", True, False), ("passed", "skipped", True, False),
    ("passed", "xfailed", True, False), ("skipped", "passed", False, True), ("xfailed", "xpassed", False, True),
])
def test_regressions_and_fixes_by_outcome(before, after, regressed, fixed):
    result = decide(Policy(max_regressions=5), outcomes_report({"t.py::a": before}), outcomes_report({"t.py::a": after}))
    assert (bool(result.regressed), bool(result.fixed)) == (regressed, fixed)


def test_evalkits_own_reports_keep_pytests_record_and_it_reads_clean():
    from evalkit.records.report_reader import load_report
    PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

    path = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"
    assert json.loads(path.read_text(encoding="utf-8"))["exitcode"] == 0
    assert load_report(path).problems == ()
