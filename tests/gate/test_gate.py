"""The gate's rules, each on small hand-built reports (no model, no files)."""

from __future__ import annotations

import pytest
from conftest import report

from evalkit.core.policy import Policy
from evalkit.gate.decide import changed_components, decide, is_critical
from evalkit.gate.decision import ExitCode, Verdict, exit_code
from evalkit.records.report_reader import report_from_mapping

POLICY = Policy(max_regressions=0, min_pass_rate=0.9, critical=("test_priority", "test_reply_matches_schema"))
BASE = {f"test_label[c{i}]": "passed" for i in range(20)} | {"test_priority[c0]": "passed"}


def gate(baseline: dict, candidate: dict, policy: Policy = POLICY):
    return decide(policy, report_from_mapping(baseline, "baseline"), report_from_mapping(candidate, "candidate"))


def test_changed_dataset_is_incomparable_and_says_what_to_rerun():
    result = gate(report(BASE), report(BASE, dataset_sha="bbb", dataset="issue-triage@2"))
    assert result.decision is Verdict.INCOMPARABLE
    assert result.reasons == ("baseline ran issue-triage@1 (aaa), candidate ran issue-triage@2 (bbb); "
                              "rerun the baseline on the candidate's dataset",)
    assert result.regressed == () and result.pass_rate is None


def test_changed_judge_is_incomparable():
    result = gate(report(BASE), report(BASE, judge_model="other"))
    assert result.decision is Verdict.INCOMPARABLE
    assert "judge changed from j to other" in result.reasons[0]


def test_another_suite_is_incomparable():
    result = gate(report(BASE, suite="a"), report(BASE, suite="b"))
    assert result.decision is Verdict.INCOMPARABLE and "suite a" in result.reasons[0]


def test_incomparable_reports_every_reason():
    result = gate(report(BASE), report(BASE, dataset_sha="bbb", judge_model="other"))
    assert len(result.reasons) == 2


def test_one_regression_blocks_and_names_the_test_and_the_change():
    result = gate(report(BASE), report(BASE | {"test_label[c3]": "failed"}, prompt_version="v2"))
    assert result.decision is Verdict.BLOCK
    assert result.regressed == ("test_triage.py::test_label[c3]",)
    assert result.changed == {"prompt_version": ("v1", "v2")}
    assert result.reasons == ("1 regression(s); policy allows 0",)


def test_regressions_within_the_allowance_go():
    lenient = POLICY.model_copy(update={"max_regressions": 1})
    result = gate(report(BASE), report(BASE | {"test_label[c3]": "failed"}), lenient)
    assert result.decision is Verdict.GO and len(result.regressed) == 1


@pytest.mark.parametrize("outcome", ["skipped", "error", "xfailed"])
def test_skipped_or_errored_counts_as_not_passed(outcome):
    result = gate(report(BASE), report(BASE | {"test_label[c3]": outcome}))
    assert result.regressed == ("test_triage.py::test_label[c3]",)


def test_critical_failure_blocks_even_if_the_baseline_failed_it_too():
    both = BASE | {"test_priority[c0]": "failed"}
    result = gate(report(both), report(both))
    assert result.decision is Verdict.BLOCK and result.regressed == ()
    assert result.critical_failures == ("test_triage.py::test_priority[c0]",)
    assert result.reasons == ("1 critical test(s) fail",)


def test_low_pass_rate_blocks_without_a_regression():
    weak = BASE | {f"test_label[c{i}]": "failed" for i in range(3)}
    result = gate(report(weak), report(weak))
    assert result.decision is Verdict.BLOCK and result.reasons == ("pass rate 0.857 is below 0.9",)
    assert result.pass_rate == 0.857


def test_pass_rate_exactly_at_the_floor_goes():
    tests = {f"test_label[c{i}]": "passed" for i in range(9)} | {"test_label[c9]": "failed"}
    result = gate(report(tests), report(tests))
    assert result.decision is Verdict.GO and result.pass_rate == 0.9


def test_test_missing_from_the_candidate_is_a_regression():
    fewer = {k: v for k, v in BASE.items() if k != "test_label[c5]"}
    assert gate(report(BASE), report(fewer)).regressed == ("test_triage.py::test_label[c5]",)


def test_deleting_a_failing_critical_test_blocks():
    failing = BASE | {"test_priority[c0]": "failed"}
    deleted = {k: v for k, v in failing.items() if k != "test_priority[c0]"}
    result = gate(report(failing), report(deleted))
    assert result.decision is Verdict.BLOCK and result.regressed == ()
    assert result.missing_critical == ("test_triage.py::test_priority[c0]",)
    assert result.reasons == ("1 critical test(s) from the baseline are missing from the candidate",)


def test_deleting_a_failing_non_critical_test_is_not_blocked():
    failing = BASE | {"test_label[c1]": "failed"}
    deleted = {k: v for k, v in failing.items() if k != "test_label[c1]"}
    result = gate(report(failing), report(deleted))
    assert result.decision is Verdict.GO and result.regressed == () and result.fixed == ()


def test_fix_without_regression_goes_and_lists_the_fix():
    result = gate(report(BASE | {"test_label[c1]": "failed"}), report(BASE))
    assert result.decision is Verdict.GO and result.fixed == ("test_triage.py::test_label[c1]",)


def test_new_passing_test_on_candidate_is_neither_fixed_nor_regressed():
    result = gate(report(BASE), report(BASE | {"test_label[new]": "passed"}))
    assert result.decision is Verdict.GO and result.fixed == () and result.regressed == ()


def test_all_reasons_accumulate():
    bad = BASE | {"test_priority[c0]": "failed"} | {f"test_label[c{i}]": "failed" for i in range(3)}
    result = gate(report(BASE), report(bad))
    assert result.reasons == ("4 regression(s); policy allows 0", "1 critical test(s) fail",
                              "pass rate 0.810 is below 0.9")


def test_critical_prefix_matches_the_test_name_not_the_file():
    assert is_critical("suite/test_priority.py::test_label[x]", ("test_priority",)) is False
    assert is_critical("test_triage.py::test_priority[x]", ("test_priority",)) is True
    assert is_critical("test_triage.py::test_priority[x]", ()) is False


def test_changed_lists_components_in_key_order_and_flattens_suite_components():
    b = {"model": "a", "prompt_version": "v1", "prompt_sha": "x", "dataset_sha": "d", "components": {"retriever": "k1"}}
    c = {"model": "a", "prompt_version": "v2", "prompt_sha": "y", "dataset_sha": "d", "components": {"retriever": "k2"}}
    assert list(changed_components(b, c).items()) == [
        ("prompt_version", ("v1", "v2")), ("prompt_sha", ("x", "y")), ("components.retriever", ("k1", "k2"))]


def test_decision_json_has_the_documented_fields():
    data = gate(report(BASE), report(BASE)).record().data()
    assert {"decision", "reasons", "regressed", "fixed", "critical_failures", "missing_critical",
            "pass_rate", "changed"} <= data.keys()
    assert data["decision"] == "go"


@pytest.mark.parametrize("verdict, code", [(Verdict.GO, 0), (Verdict.BLOCK, 1), (Verdict.INCOMPARABLE, 2),
                                           (Verdict.REVIEW, 0)])
def test_exit_codes_of_decisions(verdict, code):
    assert exit_code(verdict) == code


def test_review_can_fail_the_job_and_errors_never_share_a_decision_code():
    assert exit_code(Verdict.REVIEW, review_fails=True) == ExitCode.BLOCK
    assert {ExitCode.INPUT_ERROR, ExitCode.INTERNAL_ERROR}.isdisjoint({0, 1, 2})


def test_unscored_cases_block_as_an_incomplete_run():
    candidate = report(BASE) | {"cases": [{"id": "c1", "status": "unscored"}, {"id": "c2", "status": "scored"},
                                          {"id": "c3", "status": "unscored"}]}
    result = gate(report(BASE), candidate)
    assert result.decision is Verdict.BLOCK
    assert result.reasons == ("incomplete run: 2 unscored (c1, c3)",)


DENIED = "budget_denied: budget.max_calls=3 would be exceeded"


def cut_short(denied: tuple[str, ...], mark: bool = True) -> dict:
    """A candidate whose budget ran out: the tests of the `denied` cases skipped by evalkit's plugin with the
    budget's reason, those cases unscored and (`mark`) carrying evalkit's `denied` mark."""
    outcomes = {name: "skipped" if name.endswith(tuple(f"[{c}]" for c in denied)) else o for name, o in BASE.items()}
    candidate = report(outcomes)
    for test in candidate["tests"]:
        if test["outcome"] == "skipped":
            test["setup"] = {"outcome": "skipped", "longrepr": repr(("triage.py", 1, f"Skipped: unscored: {DENIED}"))}
    candidate["cases"] = [{"id": f"c{i}", "status": "unscored" if f"c{i}" in denied else "scored"}
                          | ({"denied": DENIED} if mark and f"c{i}" in denied else {}) for i in range(20)]
    return candidate


def test_a_run_cut_short_by_its_budget_is_incomplete_never_regressions():
    no_floor = POLICY.model_copy(update={"min_pass_rate": 0.0})
    result = gate(report(BASE), cut_short(("c0", "c4", "c7")), no_floor)
    assert result.decision is Verdict.BLOCK
    assert result.regressed == () and result.critical_failures == ()  # test_priority[c0] is critical, not measured
    assert result.reasons == ("incomplete: 3 case(s) denied by the budget (budget.max_calls=3 would be exceeded): "
                              "c0, c4, c7",)
    # nothing is dropped from a denominator: a pass-rate floor still reads the unmeasured tests as not passing
    assert gate(report(BASE), cut_short(("c0", "c4", "c7"))).reasons[1:] == ("pass rate 0.810 is below 0.9",)
    [finding] = [f for f in result.findings if f.rule != "unmatched_critical"]
    assert finding.rule == "budget_denied" and finding.figures["cases"] == ["c0", "c4", "c7"]
    # the policy may call for review instead; the review is still an incomplete run, never a go
    review = gate(report(BASE), cut_short(("c0", "c4", "c7")), Policy(on_budget_denied="review"))
    assert review.decision is Verdict.REVIEW and review.regressed == ()
    assert exit_code(review.decision) == ExitCode.GO and exit_code(review.decision, review_fails=True) == 1


def test_an_unscored_case_without_evalkits_denied_mark_keeps_its_tests_regressions():
    # another tool's errored samples (an adapted report) are failures of their tests, never a budget's denial
    result = gate(report(BASE), cut_short(("c4",), mark=False), Policy(max_regressions=0))
    assert result.regressed == ("test_triage.py::test_label[c4]",)
    assert result.reasons == ("incomplete run: 1 unscored (c4)", "1 regression(s); policy allows 0")
    # a marked case's test that failed on its own (not skipped with the budget's reason) stays a regression
    failed = cut_short(("c4",))
    failed["tests"][4] = {"nodeid": "test_triage.py::test_label[c4]", "outcome": "failed"}
    assert gate(report(BASE), failed, Policy(max_regressions=0)).regressed == ("test_triage.py::test_label[c4]",)


# --- the full policy: each rule alone, then the order block > review > go ---

def run_with(cases=(), metrics=None, outcomes=None, **key):
    data = report(outcomes or BASE, **key)
    data["cases"] = list(cases)
    data["metrics"] = metrics or {}
    return data


PASSING_CASE = {"id": "rc15", "passed": True, "checks": {"test_abstains": "passed", "test_cites": "passed"}}
FAILING_CASE = {"id": "rc15", "passed": False, "checks": {"test_abstains": "failed", "test_cites": "passed"}}
LOOSE = Policy()


def test_critical_case_failure_blocks_naming_the_failed_checks():
    policy = Policy(critical_cases=("rc15",))
    assert gate(run_with([PASSING_CASE]), run_with([PASSING_CASE]), policy).decision is Verdict.GO
    result = gate(run_with([PASSING_CASE]), run_with([FAILING_CASE]), policy)
    assert result.decision is Verdict.BLOCK and result.reasons == ("critical case rc15 failed: test_abstains",)


def test_critical_case_absent_blocks():
    result = gate(run_with([PASSING_CASE]), run_with([]), Policy(critical_cases=("rc15",)))
    assert result.reasons == ("critical case rc15 is missing from the candidate",)


@pytest.mark.parametrize("rule, verdict", [("block_below", Verdict.BLOCK), ("review_below", Verdict.REVIEW)])
def test_absolute_floors(rule, verdict):
    policy = Policy(**{rule: {"citation_validity": 0.95}})
    ok = gate(run_with(metrics={"citation_validity": 0.9}), run_with(metrics={"citation_validity": 0.96}), policy)
    assert ok.decision is Verdict.GO
    low = gate(run_with(metrics={"citation_validity": 1.0}), run_with(metrics={"citation_validity": 0.941}), policy)
    assert low.decision is verdict
    assert "citation_validity 0.941 is below 0.95" in low.reasons + low.review_reasons
    gone = gate(run_with(metrics={"citation_validity": 1.0}), run_with(metrics={"citation_validity": None}), policy)
    assert gone.decision is verdict
    assert "citation_validity cannot be measured on the candidate (floor 0.95)" in gone.reasons + gone.review_reasons


@pytest.mark.parametrize("rule, verdict", [("block_on_drop", Verdict.BLOCK), ("review_on_drop", Verdict.REVIEW)])
def test_drops_against_the_baseline(rule, verdict):
    policy = Policy(**{rule: ("citation_validity",)})
    same = gate(run_with(metrics={"citation_validity": 0.9}), run_with(metrics={"citation_validity": 0.9}), policy)
    assert same.decision is Verdict.GO
    drop = gate(run_with(metrics={"citation_validity": 1.0}), run_with(metrics={"citation_validity": 0.941}), policy)
    assert drop.decision is verdict
    assert "citation_validity fell 1.000 -> 0.941" in drop.reasons + drop.review_reasons
    null = gate(run_with(metrics={"citation_validity": 1.0}), run_with(metrics={"citation_validity": None}), policy)
    assert "citation_validity fell 1.000 -> no longer measurable" in null.reasons + null.review_reasons
    assert drop.metrics["citation_validity"]["status"] == "regressed"


def test_regressions_can_be_made_a_review():
    policy = Policy(regressions="review")
    result = gate(run_with(), run_with(outcomes=BASE | {"test_label[c3]": "failed"}), policy)
    assert result.decision is Verdict.REVIEW and result.review_reasons == ("1 regression(s); policy allows 0",)
    assert exit_code(result.decision, policy.review_fails) == 0
    assert exit_code(result.decision, Policy(review_fails=True).review_fails) == 1


@pytest.mark.parametrize("setting, verdict", [("incomparable", Verdict.INCOMPARABLE), ("review", Verdict.REVIEW),
                                              ("block", Verdict.BLOCK)])
def test_the_policy_decides_what_an_incomparable_baseline_means(setting, verdict):
    result = gate(run_with(), run_with(dataset_sha="other"), Policy(on_incomparable=setting))
    assert result.decision is verdict
    assert "rerun the baseline on the candidate's dataset" in (result.reasons + result.review_reasons)[0]


def test_block_wins_over_review_and_review_over_go():
    policy = Policy(critical_cases=("rc15",), review_on_drop=("recall",))
    metrics_b, metrics_c = {"recall": 0.9}, {"recall": 0.8}
    both = gate(run_with([PASSING_CASE], metrics_b), run_with([FAILING_CASE], metrics_c), policy)
    assert both.decision is Verdict.BLOCK and both.review_reasons == ("recall fell 0.900 -> 0.800",)
    review_only = gate(run_with([PASSING_CASE], metrics_b), run_with([PASSING_CASE], metrics_c), policy)
    assert review_only.decision is Verdict.REVIEW
    neither = gate(run_with([PASSING_CASE], metrics_b), run_with([PASSING_CASE], metrics_b), policy)
    assert neither.decision is Verdict.GO


# --- new failing tests and why listed tests did not pass ---------------------------------------

def with_messages(data: dict, messages: dict[str, str]) -> dict:
    """Give tests of a hand-built report the failing `call` stage pytest-json-report writes."""
    for test in data["tests"]:
        name = test["nodeid"].split("::", 1)[1]
        if name in messages:
            test["call"] = {"outcome": "failed", "crash": {"message": messages[name]}}
    return data


@pytest.mark.parametrize("setting, verdict, reasons, review", [
    ("review", Verdict.REVIEW, (), ("1 new test(s) not passing (absent from the baseline)",)),
    ("block", Verdict.BLOCK, ("1 new test(s) not passing (absent from the baseline)",), ()),
    ("ignore", Verdict.GO, (), ()),
])
def test_a_new_failing_test_is_listed_and_the_policy_decides(setting, verdict, reasons, review):
    candidate = with_messages(report(BASE | {"test_new[c0]": "error"}), {"test_new[c0]": "NameError: fixtur"})
    result = gate(report(BASE), candidate, POLICY.model_copy(update={"new_failing": setting}))
    assert result.decision is verdict
    assert result.reasons == reasons and result.review_reasons == review
    assert result.new_failing == ("test_triage.py::test_new[c0]",)
    assert result.regressed == () and result.messages == {"test_triage.py::test_new[c0]": "NameError: fixtur"}


def test_new_failing_defaults_to_review_and_a_new_passing_test_is_not_listed():
    assert Policy().new_failing == "review"
    result = gate(report(BASE), report(BASE | {"test_new[c0]": "passed", "test_other[c0]": "skipped"}))
    assert result.new_failing == ("test_triage.py::test_other[c0]",)
    assert result.decision is Verdict.REVIEW


def test_a_new_failing_critical_test_blocks_and_is_in_both_lists():
    result = gate(report(BASE), report(BASE | {"test_priority[c9]": "failed"}))
    assert result.decision is Verdict.BLOCK
    assert result.critical_failures == result.new_failing == ("test_triage.py::test_priority[c9]",)
    assert result.review_reasons == ("1 new test(s) not passing (absent from the baseline)",)


def test_listed_tests_carry_why_they_did_not_pass():
    baseline = report(BASE | {"test_label[c5]": "failed"})
    candidate = {k: v for k, v in BASE.items() if k != "test_priority[c0]"}  # a critical test vanished
    candidate |= {"test_label[c3]": "failed", "test_label[c4]": "failed", "test_label[c5]": "passed"}
    result = gate(baseline, with_messages(report(candidate), {"test_label[c3]": "AssertionError: bug != feature"}))
    assert result.regressed == ("test_triage.py::test_label[c3]", "test_triage.py::test_label[c4]",
                                "test_triage.py::test_priority[c0]")
    # c4 says nothing (no stage tells why), the vanished test is said absent, the fixed c5 carries nothing
    assert result.messages == {"test_triage.py::test_label[c3]": "AssertionError: bug != feature",
                               "test_triage.py::test_priority[c0]": "absent from the candidate"}
    as_json = result.record().data()
    assert as_json["messages"] == result.messages and as_json["new_failing"] == []


def test_min_ran_pass_rate_leaves_known_skips_out():
    # a suite with known skips, gated against itself: pass_rate counts the skips against it, the ran rate does not
    outcomes = {f"test_label[c{i}]": "passed" for i in range(6)} | {"test_slow[c0]": "skipped",
                                                                   "test_known[c0]": "xfailed"}
    strict_all = Policy(min_pass_rate=1.0)
    strict_ran = Policy(min_ran_pass_rate=1.0)
    assert gate(report(outcomes), report(outcomes), strict_all).decision is Verdict.BLOCK
    result = gate(report(outcomes), report(outcomes), strict_ran)
    assert result.decision is Verdict.GO and result.pass_rate == 0.75 and result.ran_pass_rate == 1.0
    failing = outcomes | {"test_label[c5]": "failed"}
    blocked = gate(report(failing), report(failing), strict_ran)
    assert blocked.decision is Verdict.BLOCK
    assert "pass rate of the tests that ran 0.833 is below 1.0" in blocked.reasons


def test_min_ran_pass_rate_blocks_a_run_where_nothing_ran():
    skipped = {"test_label[c0]": "skipped", "test_label[c1]": "skipped"}
    result = gate(report(skipped), report(skipped), Policy(min_ran_pass_rate=0.5))
    assert result.decision is Verdict.BLOCK
    assert result.reasons == ("pass rate of the tests that ran not measurable (no test ran) is below 0.5",)
    assert gate(report(skipped), report(skipped), Policy()).decision is Verdict.GO  # no floor, no block


@pytest.mark.parametrize("rule, verdict", [("block_on_drop", Verdict.BLOCK), ("review_on_drop", Verdict.REVIEW)])
def test_a_drop_rule_may_allow_each_metric_a_fall(rule, verdict):
    policy = Policy(**{rule: {"recall.billing": 0.05}})
    small = gate(run_with(metrics={"recall.billing": 0.9}), run_with(metrics={"recall.billing": 0.86}), policy)
    assert small.decision is Verdict.GO
    large = gate(run_with(metrics={"recall.billing": 0.9}), run_with(metrics={"recall.billing": 0.84}), policy)
    assert large.decision is verdict
    assert "recall.billing fell 0.900 -> 0.840" in large.reasons + large.review_reasons
    gone = gate(run_with(metrics={"recall.billing": 0.9}), run_with(metrics={"recall.billing": None}), policy)
    assert gone.decision is verdict  # no longer measurable is beyond any allowance


def test_a_drop_allowance_is_not_negative():
    with pytest.raises(ValueError, match="the drop a metric may take is a number of at least 0"):
        Policy(block_on_drop={"macro_f1": -0.1})


# --- issue 41: a check that can no longer run, a metric that can no longer be measured, one check on one case ---

def declared_run(outcomes: dict[str, str], metrics: dict | None = None, cases: list | None = None) -> dict:
    """A run report of declared checks (`checks.yaml::NAME[case]`), as evalkit writes it."""
    return {"eval": report({})["eval"], "metrics": metrics or {}, "cases": cases or [],
            "tests": [{"nodeid": f"checks.yaml::{name}", "outcome": o} for name, o in outcomes.items()]}


def test_a_suite_metric_the_candidate_can_no_longer_measure_never_goes():
    # issue 41's run: the baseline's weak judge failed every faithfulness test, and a mistyped context field failed
    # them all on the candidate too; nothing regressed, and faithful.score vanished from the candidate's metrics
    failing = {f"faithful[{c}]": "failed" for c in ("refund-window", "late-fee")} | {"has_key_facts[late-fee]": "passed"}
    baseline = declared_run(failing, {"faithful.score": {"mean": 2.0, "count": 2, "unmeasured": 0}})
    for after in ({}, {"faithful.score": {"mean": None, "count": 0, "unmeasured": 2}}):
        result = gate(baseline, declared_run(failing, after), Policy())
        assert result.decision is Verdict.REVIEW
        why = "its report has no such metric" if not after else "no case measured it"
        assert result.review_reasons == (f"unmeasurable: faithful.score was 2.000 on the baseline and cannot be "
                                         f"measured on the candidate ({why})",)
    # a metric the policy already decides on is said once, by that rule
    decided = gate(baseline, declared_run(failing), Policy(block_on_drop={"faithful.score": 0.0}))
    assert decided.decision is Verdict.BLOCK and decided.review_reasons == ()
    assert decided.reasons == ("faithful.score fell 2.000 -> no longer measurable",)


def test_a_check_that_could_not_run_on_a_case_blocks_naming_the_check_and_why():
    why = "expected case field 'passages' for the judge, but case late-fee has none"
    outcomes = {"faithful[refund-window]": "passed", "faithful[late-fee]": "skipped"}
    cases = [{"id": "refund-window", "status": "scored"},
             {"id": "late-fee", "status": "unscored", "could_not_run": {"faithful": why}}]
    candidate = declared_run(outcomes, cases=cases)
    candidate["tests"][1]["call"] = {"outcome": "skipped",
                                     "longrepr": repr(("declared.py", 99, f"Skipped: could not run: {why}"))}
    result = gate(declared_run(outcomes | {"faithful[late-fee]": "failed"}), candidate, Policy())
    assert result.decision is Verdict.BLOCK and result.review_reasons == ()
    assert result.reasons == ("incomplete run: 1 unscored (late-fee)",
                              f"could_not_run: check faithful could not run on 1 case(s) (late-fee): {why}")
    finding = next(f for f in result.findings if f.rule == "could_not_run")
    assert finding.figures == {"check": "faithful", "cases": ["late-fee"], "why": why}


def test_the_policy_makes_one_check_on_one_case_critical_by_the_id_it_shows():
    outcomes = {"has_key_facts[refund-window]": "failed", "has_key_facts[late-fee]": "failed"}
    policy = Policy(critical=("has_key_facts[refund-window]",))
    result = gate(declared_run(outcomes), declared_run(outcomes), policy)  # failing on both sides: no regression
    assert result.decision is Verdict.BLOCK and result.warnings == ()
    assert result.critical_failures == ("checks.yaml::has_key_facts[refund-window]",)
    assert is_critical("checks.yaml::has_key_facts[refund-window]", ("checks.yaml::has_key_facts[refund-window]",))
    assert not is_critical("checks.yaml::has_key_facts[late-fee]", policy.critical)
    fixed = outcomes | {"has_key_facts[refund-window]": "passed"}
    assert gate(declared_run(outcomes), declared_run(fixed), policy).decision is Verdict.GO


def test_a_test_that_ran_on_the_baseline_and_is_skipped_on_the_candidate_calls_for_review():
    before = {"test_label[c1]": "failed", "test_label[c2]": "failed", "test_label[c3]": "passed"}
    after = {"test_label[c1]": "skipped", "test_label[c2]": "failed", "test_label[c3]": "passed"}
    result = gate(report(before), report(after), Policy())
    assert result.decision is Verdict.REVIEW
    assert result.review_reasons == ("unmeasurable: 1 test(s) that ran on the baseline are skipped on the candidate "
                                     "(test_triage.py::test_label[c1])",)
    # a skip over an unscored case is said by the rules that block it, not again here
    unscored = report(after)
    unscored["tests"][0]["call"] = {"outcome": "skipped", "longrepr": "('x.py', 1, 'Skipped: unscored: timeout')"}
    unscored["cases"] = [{"id": "c1", "status": "unscored"}]
    blocked = gate(report(before), unscored, Policy())
    assert blocked.decision is Verdict.BLOCK and blocked.review_reasons == ()
