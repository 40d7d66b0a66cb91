"""The gate on real pytest reports (tests/corpus/pytest_reports/: real outputs of pytest and its plugins on
toolz, more-itertools and python-dateutil), checked against an independent count: pytest's own JUnit XML of
the same run, read here with the standard library alone, and pytest's exit code as the run printed it."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Decision, Verdict
from evalkit.records.report_reader import RunReport, report_from_mapping

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "pytest_reports"
RUNS = sorted(p.name.removesuffix(".meta.json") for p in CORPUS.glob("*.meta.json"))
# The reports are pytest's own; the gate needs an eval key, the same on both sides (as a conftest would add).
KEY = {"dataset": "corpus", "dataset_sha": "c0", "model": "-", "judge_model": "-"}


def test_the_corpus_is_there():
    assert len(RUNS) >= 18
    assert {r.split("-")[0] for r in RUNS} >= {"toolz", "more", "python"}


@cache
def raw(run: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((CORPUS / f"{run}.json.gz").read_bytes()))
    return data


@cache
def loaded(run: str) -> RunReport:
    return report_from_mapping({**raw(run), "eval": KEY}, run)


@cache
def junit(run: str) -> tuple[dict[tuple[str, str], str], int]:
    """(classname, name) -> final outcome per JUnit XML, and the number of collection errors.

    A rerun test appears once per attempt: the last one is how it ended. XPASS (non-strict) is a plain
    testcase there, so it counts as passed; an xfail is `skipped` of type pytest.xfail."""
    root = ET.fromstring(gzip.decompress((CORPUS / f"{run}.junit.xml.gz").read_bytes()))
    final: dict[tuple[str, str], str] = {}
    collection_errors = 0
    for case in root.iter("testcase"):
        tags = {child.tag: child for child in case}
        if "error" in tags and tags["error"].get("message") == "collection failure":
            collection_errors += 1
            continue
        skipped = tags.get("skipped")
        outcome = ("failed" if "failure" in tags else "error" if "error" in tags else
                   "xfailed" if skipped is not None and skipped.get("type") == "pytest.xfail" else
                   "skipped" if skipped is not None else "passed")
        final[(case.get("classname", ""), case.get("name", ""))] = outcome
    return final, collection_errors


def meta(run: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / f"{run}.meta.json").read_text(encoding="utf-8"))
    return data


def evalkit_counts(report: RunReport) -> Counter[str]:
    counts = Counter(report.outcomes.values())
    counts["passed"] += counts.pop("xpassed", 0)  # JUnit XML does not tell a non-strict XPASS from a pass
    return +counts


@pytest.mark.parametrize("run", RUNS)
def test_each_report_reads_as_pytests_own_junit_xml_counts_it(run):
    report, (cases, collection_errors) = loaded(run), junit(run)
    assert raw(run)["exitcode"] == meta(run)["pytest_exit_code"]
    expected = +Counter(cases.values())
    if any("pytest exited 1 (tests failed) but no test in the report failed" in p for p in report.problems):
        # the lossy subtests record: JSON says every test passed where JUnit saw the failing subtest
        assert expected["failed"] > evalkit_counts(report)["failed"] == 0
        assert report.passed == len(report.outcomes)
    else:
        assert evalkit_counts(report) == expected
    assert bool(collection_errors) == any(p.startswith("collection error in") for p in report.problems)


def gate(baseline: str, candidate: str, policy: Policy | None = None) -> Decision:
    return decide(policy or Policy(), loaded(baseline), loaded(candidate))


def junit_regressions(baseline: str, candidate: str) -> int:
    before, after = junit(baseline)[0], junit(candidate)[0]
    return sum(1 for key, o in before.items() if o == "passed" and after.get(key) != "passed")


ADJACENT = [("toolz-1.0.0", "toolz-1.1.0"), ("more-itertools-11.1.0", "more-itertools-11.2.1"),
            ("python-dateutil-3.0.0", "python-dateutil-4.0.0"), ("python-dateutil-4.0.0", "python-dateutil-4.0.0-xdist"),
            ("toolz-1.1.0", "toolz-1.1.0-regressed"), ("toolz-1.1.0", "toolz-1.1.0-regressed-reruns"),
            ("toolz-1.1.0", "toolz-1.1.0-flaky-reruns"), ("python-dateutil-4.0.0", "python-dateutil-4.0.0-regressed")]


@pytest.mark.parametrize("baseline, candidate", ADJACENT)
def test_regressions_between_runs_match_junit(baseline, candidate):
    result = gate(baseline, candidate, Policy(max_regressions=10_000))
    assert len(result.regressed) == junit_regressions(baseline, candidate)
    assert result.tests == len(junit(candidate)[0])
    problems = loaded(candidate).problems
    assert (result.decision is Verdict.GO) == (not problems)


def test_an_injected_regression_blocks_naming_the_tests_and_the_critical_one():
    result = gate("toolz-1.1.0", "toolz-1.1.0-regressed", Policy(critical=("test_second",)))
    failing = sorted(name for (_, name), o in junit("toolz-1.1.0-regressed")[0].items() if o == "failed")
    assert result.decision is Verdict.BLOCK
    assert sorted(n.rsplit("::", 1)[-1] for n in result.regressed) == failing
    assert result.critical_failures == ("toolz/tests/test_itertoolz.py::test_second",)
    reruns = gate("toolz-1.1.0", "toolz-1.1.0-regressed-reruns")  # --reruns 1: failing after the rerun
    assert reruns.regressed == result.regressed and reruns.reasons == ("5 regression(s); policy allows 0",)


def test_a_flaky_test_that_passed_on_rerun_passes():
    result = gate("toolz-1.1.0", "toolz-1.1.0-flaky-reruns", Policy(critical=("test_flaky",)))
    assert raw("toolz-1.1.0-flaky-reruns")["summary"]["rerun"] == 1
    assert result.decision is Verdict.GO and result.reasons == () and result.warnings == ()
    assert loaded("toolz-1.1.0-flaky-reruns").outcomes["toolz/tests/test_flaky.py::test_flaky_passes_on_rerun"] \
        == "passed"


@pytest.mark.parametrize("candidate, reason", [
    ("toolz-1.1.0-import-error", "collection error in 1 module(s), whose tests did not run: "
                                 "toolz/tests/test_frequencies_v2.py (ImportError: cannot import name "),
    ("toolz-1.1.0-import-error-continue", "collection error in 1 module(s), whose tests did not run: "
                                          "toolz/tests/test_frequencies_v2.py (ImportError: cannot import name "),
    ("toolz-1.1.0-regressed-x", "interrupted run: 12 of 186 collected tests ran"),
    ("toolz-1.1.0-regressed-maxfail", "interrupted run: 130 of 186 collected tests ran"),
    ("more-itertools-11.2.1-subtest-failure", "pytest exited 1 (tests failed) but no test in the report failed"),
])
def test_collection_errors_interruptions_and_contradicting_exit_codes_block(candidate, reason):
    baseline = "more-itertools-11.2.1" if candidate.startswith("more") else "toolz-1.1.0"
    result = gate(baseline, candidate, Policy(max_regressions=10_000))
    assert result.decision is Verdict.BLOCK
    assert any(r.startswith(reason) for r in result.reasons), result.reasons


def test_the_import_error_run_that_went_on_has_every_other_test_passing_and_still_blocks():
    result = gate("toolz-1.1.0", "toolz-1.1.0-import-error-continue")
    assert result.pass_rate == 1.0 and result.regressed == () and result.decision is Verdict.BLOCK


def test_outcomes_of_strict_and_non_strict_xfail_skip_and_subtests():
    report = loaded("toolz-1.1.0-outcomes")
    module = "toolz/tests/test_outcomes.py::"
    by_name = {n.removeprefix(module): o for n, o in report.outcomes.items() if n.startswith(module)}
    # pytest writes non-ASCII parameter ids escaped (\\xfc) unless told otherwise
    assert by_name == {"test_xfail_fails": "xfailed", "test_xfail_passes_nonstrict": "xpassed",
                       "test_xfail_passes_strict": "failed", "test_skipped": "skipped", "test_ids[a::b]": "passed",
                       "test_ids[with space]": "failed", "test_ids[\\xfcn\\xefc\\xf8d\\xe9]": "passed",
                       "test_ids[x[1]]": "passed", "TestGroup::test_inside": "passed", "test_subtests": "failed"}
    result = gate("toolz-1.1.0-outcomes", "toolz-1.1.0-outcomes", Policy(critical=("test_ids", "TestGroup", "b]")))
    assert result.critical_failures == ("toolz/tests/test_outcomes.py::test_ids[with space]",)
    assert result.warnings == ("critical 'b]' matches no test in either report; check the name (a test-name or "
                               "class-name prefix, or Class::test)",)
    assert result.outcomes == {"failed": 3, "passed": 54, "skipped": 1, "xfailed": 1, "xpassed": 1}
    assert (result.passed, result.tests, result.ran_pass_rate) == (55, 60, 0.948)


def colon_ids(run: str) -> list[str]:
    return [n for n in loaded(run).outcomes if "::" in n[n.find("[") :] and "[" in n]


def test_dateutil_ids_with_colons_in_parameters_stay_critical_when_they_fail_or_vanish():
    ids = colon_ids("python-dateutil-4.0.0")
    assert ids, "python-dateutil's suite has parametrize ids with '::' inside the brackets"
    target = ids[0]
    name = target.split("::")[-1] if "[" not in target else target[: target.index("[")].rsplit("::", 1)[-1]
    policy = Policy(critical=(name,), max_regressions=10_000)
    base = loaded("python-dateutil-4.0.0")
    assert base.outcomes[target] == "passed"
    # derived in memory from the real report: the same run with that one test failing, then without it
    failing = RunReport(base.eval, {**base.outcomes, target: "failed"})
    vanished = RunReport(base.eval, {n: o for n, o in base.outcomes.items() if n != target})
    assert target in decide(policy, base, failing).critical_failures
    assert decide(policy, base, failing).decision is Verdict.BLOCK
    assert decide(policy, base, vanished).missing_critical == (target,)
    assert decide(policy, base, vanished).decision is Verdict.BLOCK


def test_an_injected_regression_in_dateutil_blocks_with_its_easter_tests():
    result = gate("python-dateutil-4.0.0", "python-dateutil-4.0.0-regressed", Policy(critical=("test_easter",)))
    assert result.decision is Verdict.BLOCK and result.regressed
    assert all("test_easter.py" in n for n in result.regressed)
    assert result.critical_failures


def test_a_unittest_class_of_more_itertools_can_be_critical():
    result = gate("more-itertools-11.2.1", "more-itertools-11.2.1", Policy(critical=("WindowedTests",)))
    assert result.decision is Verdict.GO and result.warnings == ()
    assert any("::WindowedTests::" in n for n in loaded("more-itertools-11.2.1").outcomes)


def test_repeated_tests_are_distinct_and_counted_twice():
    report = loaded("toolz-1.1.0-repeat")  # pytest-repeat --count 2: ids end in 1-2] and 2-2]
    first = [n for n in report.outcomes if n.endswith("1-2]")]
    second = {n for n in report.outcomes if n.endswith("2-2]")}
    assert first and len(first) + len(second) == len(report.outcomes)
    assert {n[: -len("1-2]")] + "2-2]" for n in first} == second
