"""Repeated runs: the statistics of evalkit.gate.repeats, the report's per-test counts, and decide() with both
sides repeated."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from evalkit.core.errors import InputError
from evalkit.core.policy import Policy, RepeatsRule, policy_sha256
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.gate.repeats import compare_repeats, fisher_lower_p, holm, min_fisher_p, sign_flip_p, wilson_interval
from evalkit.gate.stats import FRACTION_ESTIMAND, StatisticsInputError, paired_fraction_bootstrap
from evalkit.records.report_reader import Counts, RunReport, report_from_mapping

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_wilson_interval_matches_the_textbook_figures() -> None:
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and round(high, 4) == 0.2775
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_fisher_is_the_exact_hypergeometric_tail() -> None:
    assert fisher_lower_p(10, 10, 5, 10) == pytest.approx(252 / 15504)
    assert fisher_lower_p(10, 10, 0, 10) == pytest.approx(1 / math.comb(20, 10))
    assert fisher_lower_p(3, 3, 0, 3) == pytest.approx(1 / 20) == min_fisher_p(3, 3)
    assert fisher_lower_p(5, 10, 5, 10) > 0.5  # the same rate is no evidence of a drop
    assert fisher_lower_p(0, 10, 10, 10) == 1.0  # an improvement never reads as a drop
    # the tail sums to one over every possible candidate count
    assert fisher_lower_p(7, 10, 10, 10) == 1.0


def test_holm_steps_down_and_stops_at_the_first_failure() -> None:
    assert holm([0.01, 0.02, 0.04], 0.05) == [True, True, True]
    assert holm([0.04, 0.01], 0.05) == [True, True]
    assert holm([0.03, 0.04], 0.05) == [False, False]
    assert holm([0.001, 0.03, 0.04], 0.05) == [True, False, False]
    assert holm([], 0.05) == []


def test_fraction_bootstrap_is_paired_by_case_and_refuses_bad_fractions() -> None:
    stats = paired_fraction_bootstrap(["a", "a", "b"], [1.0, 1.0, 0.5], [0.0, 1.0, 0.5], confidence=0.9)
    assert stats.estimand == FRACTION_ESTIMAND and stats.groups == 2 and stats.cases == 3
    assert stats.difference == pytest.approx(-0.25)
    with pytest.raises(StatisticsInputError, match="between 0 and 1"):
        paired_fraction_bootstrap(["a"], [1.5], [1.0])
    with pytest.raises(StatisticsInputError, match="lengths differ"):
        paired_fraction_bootstrap(["a"], [1.0, 1.0], [1.0])


def _side(rates: dict[str, int], runs: int = 10) -> dict[str, Counts]:
    return {name: Counts(passed, runs, name.split("[")[-1].rstrip("]")) for name, passed in rates.items()}


def test_a_hard_break_regresses_and_a_small_wobble_does_not() -> None:
    names = [f"t[c{i}]" for i in range(20)]
    base = _side({n: 10 for n in names} | {"t[c0]": 6})
    cand = _side({n: 10 for n in names} | {"t[c0]": 4, "t[c1]": 0, "t[c2]": 9})
    out = compare_repeats(base, cand, alpha=0.05)
    assert list(out.regressed) == ["t[c1]"] and out.unreliable_baseline == ("t[c0]",)
    assert out.insufficient_data is None and out.suite is not None and not out.suite_drop


def test_a_broad_drop_shows_in_the_suite_guard_only() -> None:
    names = [f"t[c{i}]" for i in range(20)]
    base = _side({n: 10 for n in names})
    cand = _side({n: (5 if i % 2 else 10) for i, n in enumerate(names)})
    out = compare_repeats(base, cand, alpha=0.05)
    assert out.regressed == {} and out.suite_drop
    assert out.suite is not None and out.suite.interval[1] < 0 and out.suite_p is not None and out.suite_p < 0.01


def test_too_few_samples_is_insufficient_data() -> None:
    base, cand = _side({"t[a]": 3, "t[b]": 3}, runs=3), _side({"t[a]": 0, "t[b]": 3}, runs=3)
    out = compare_repeats(base, cand, alpha=0.05)
    assert out.insufficient_data and "run at least 5 repeats on each side (run.repeats=5)" in out.insufficient_data
    assert out.regressed == {}
    out = compare_repeats(base, cand, alpha=0.05, min_repeats=5)
    assert out.insufficient_data and "asks for 5" in out.insufficient_data
    assert compare_repeats({}, cand, alpha=0.05).insufficient_data == "no test is repeated on both sides"


def test_repeats_policy_keys_and_unchanged_identity() -> None:
    assert Policy().repeats == RepeatsRule(alpha=0.05, unreliable_baseline="review", insufficient_data="review")
    # a policy that leaves `repeats` alone hashes as it did before the key existed
    assert policy_sha256(Policy()) != policy_sha256(Policy(repeats=RepeatsRule(alpha=0.01)))


def _report(rates: dict[str, tuple[int, int]], prompt: str = "p1") -> RunReport:
    """A hand-built run report whose tests carry repeats: nodeid -> (passed, runs)."""
    tests = [{"nodeid": name, "case": name.split("[")[-1].rstrip("]"),
              "outcome": "passed" if passed == runs else "failed", "repeats": {"passed": passed, "runs": runs}}
             for name, (passed, runs) in rates.items()]
    key = {"suite": "s", "dataset_sha": "d", "judge_model": "j", "prompt_sha": prompt}
    return report_from_mapping({"eval": key, "tests": tests}, "r.json")


def _rates(**changes: int) -> dict[str, tuple[int, int]]:
    rates = {f"test_x[c{i}]": (10, 10) for i in range(20)}
    return rates | {f"test_x[{case}]": (passed, 10) for case, passed in changes.items()}


def test_report_reads_repeats_and_refuses_bad_counts() -> None:
    report = _report({"test_x[a]": (3, 10), "test_x[b]": (10, 10)})
    assert report.repeats == {"test_x[a]": Counts(3, 10, "a"), "test_x[b]": Counts(10, 10, "b")}
    assert report.outcomes == {"test_x[a]": "failed", "test_x[b]": "passed"}
    assert report_from_mapping({"eval": {}, "tests": [{"nodeid": "t", "outcome": "passed"}]}, "r").repeats == {}
    for block, match in (({"passed": 11, "runs": 10}, "0 <= k <= n"), ({"passed": 1}, "0 <= k <= n"),
                         ({"passed": True, "runs": 1}, "0 <= k <= n"), ([1, 2], "0 <= k <= n"),
                         ({"passed": 9, "runs": 10}, "contradicts 9 of 10")):
        with pytest.raises(InputError, match=match):
            report_from_mapping({"eval": {}, "tests": [{"nodeid": "t", "outcome": "passed", "repeats": block}]},
                                "r.json")
    with pytest.raises(InputError, match="contradicts 10 of 10"):
        report_from_mapping({"eval": {}, "tests": [{"nodeid": "t", "outcome": "failed",
                                                    "repeats": {"passed": 10, "runs": 10}}]}, "r.json")


def test_decide_a_flaky_aa_pair_is_review_not_block() -> None:
    base, cand = _report(_rates(c0=7, c1=5)), _report(_rates(c0=4, c1=6, c2=9), "p2")
    decision = decide(Policy(), base, cand)
    assert decision.decision is Verdict.REVIEW, decision.reasons
    assert decision.regressed == () and decision.repeats is not None
    assert decision.repeats["unreliable_baseline"] == ["test_x[c0]", "test_x[c1]"]
    assert decision.review_reasons[0].startswith("unreliable_baseline: 2 test(s)")
    assert "repeats" in decision.record().data()
    # c2 passed 10 of 10 on the baseline and 9 now: no drop one can tell from chance, named for review
    too_small = next(f for f in decision.findings if f.rule == "too_small_to_tell")
    assert too_small.tests == ("test_x[c2]",) and "candidate 9/10, baseline 10/10" in too_small.message
    ignore = Policy(repeats=RepeatsRule(unreliable_baseline="ignore", too_small_to_tell="ignore"))
    assert decide(ignore, base, cand).decision is Verdict.GO


def test_decide_a_hard_break_blocks_naming_the_counts() -> None:
    decision = decide(Policy(), _report(_rates()), _report(_rates(c3=0), "p2"))
    assert decision.decision is Verdict.BLOCK and decision.regressed == ("test_x[c3]",)
    assert decision.messages["test_x[c3]"].startswith("0/10 samples passed (95% interval 0.00-0.28), baseline 10/10")


def test_decide_a_broad_drop_blocks_through_the_suite_guard() -> None:
    drop = {f"c{i}": 5 for i in range(0, 20, 2)}
    decision = decide(Policy(), _report(_rates()), _report(_rates(**drop), "p2"))
    assert decision.decision is Verdict.BLOCK and decision.regressed == ()
    assert any(reason.startswith("pass fractions fell across cases") for reason in decision.reasons)


def test_decide_critical_still_demands_every_sample() -> None:
    decision = decide(Policy(critical=("test_x",)), _report(_rates()), _report(_rates(c3=9), "p2"))
    assert decision.decision is Verdict.BLOCK and decision.critical_failures == ("test_x[c3]",)


def test_decide_too_few_samples_is_insufficient_data_for_review_or_block() -> None:
    base = _report({"test_x[a]": (3, 3)})
    cand = _report({"test_x[a]": (0, 3)}, "p2")
    decision = decide(Policy(), base, cand)
    assert decision.decision is Verdict.REVIEW and decision.review_reasons[0].startswith("insufficient_data:")
    strict = Policy(repeats=RepeatsRule(insufficient_data="block"))
    assert decide(strict, base, cand).decision is Verdict.BLOCK


def test_decide_repeats_on_one_side_only_compares_outcomes_and_warns() -> None:
    single = report_from_mapping({"eval": {"suite": "s", "dataset_sha": "d", "judge_model": "j", "prompt_sha": "p1"},
                                  "tests": [{"nodeid": f"test_x[c{i}]", "outcome": "passed"} for i in range(20)]},
                                 "b.json")
    decision = decide(Policy(), single, _report(_rates(c3=9), "p2"))
    assert decision.decision is Verdict.BLOCK and decision.regressed == ("test_x[c3]",)
    assert decision.repeats is None and "only the candidate carries repeated samples" in decision.warnings[0]


def test_sign_flip_is_exact_for_one_case_and_sees_a_broad_drop() -> None:
    # one case falling all the way is no evidence about the suite: half of all sign flips are as low
    assert sign_flip_p(["a"], [-1.0]) > 0.4
    assert sign_flip_p(["a", "b"], [0.0, 0.0]) == 1.0  # nothing changed
    assert sign_flip_p([f"c{i}" for i in range(10)], [-0.5] * 10) < 0.01
    # the same seed gives the same p; rows of one case count once (their mean)
    assert sign_flip_p(["a", "a", "b"], [-1.0, 0.0, -0.5], seed=3) == sign_flip_p(["a", "b"], [-0.5, -0.5], seed=3)


def test_the_repeats_benchmark_forms_runs_of_n_from_disjoint_blocks_of_a_pool() -> None:
    """benchmarks/repeats.py (run by hand: it records 160,000 live calls) gates runs of N = 10 formed from blocks of
    a pool run's samples; a block's counts are the samples of that block that passed."""
    spec = importlib.util.spec_from_file_location("repeats_benchmark", PROJECT_ROOT / "benchmarks" / "repeats.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pool = {"eval": {"suite": "s", "dataset_sha": "d", "judge_model": "j", "prompt_sha": "p1"}, "provenance": {"repeats": 20},
            "tests": [{"nodeid": "t.py::test_x[a]", "case": "a", "outcome": "failed",
                       "repeats": {"passed": 17, "runs": 20, "not_passed": [0, 12, 19]}},
                      {"nodeid": "t.py::test_x[b]", "case": "b", "outcome": "passed",
                       "repeats": {"passed": 20, "runs": 20, "not_passed": []}}],
            "cases": [{"id": "a", "status": "scored"}, {"id": "b", "status": "scored"}]}
    first, second = module.block(pool, 0), module.block(pool, 10)
    assert [t["repeats"] for t in first["tests"]] == [{"passed": 9, "runs": 10}, {"passed": 10, "runs": 10}]
    assert [t["repeats"] for t in second["tests"]] == [{"passed": 8, "runs": 10}, {"passed": 10, "runs": 10}]
    assert [t["outcome"] for t in second["tests"]] == ["failed", "passed"]
    assert first["provenance"]["repeats"] == 10
    counts = report_from_mapping(second, "block").repeats  # the gate reads a block as it reads a run's report
    assert (counts["t.py::test_x[a]"].passed, counts["t.py::test_x[a]"].runs) == (8, 10)


def test_decide_counts_of_one_sample_are_single_runs() -> None:
    base, cand = _report({"test_x[a]": (1, 1), "test_x[b]": (1, 1)}), _report({"test_x[a]": (0, 1), "test_x[b]": (1, 1)}, "p2")
    decision = decide(Policy(), base, cand)
    assert decision.decision is Verdict.BLOCK and decision.regressed == ("test_x[a]",) and decision.repeats is None
    assert decision.warnings == ()


def test_decide_reports_a_significant_rise_as_fixed() -> None:
    base, cand = _report(_rates(c0=0, c1=5)), _report(_rates(c1=6), "p2")
    decision = decide(Policy(), base, cand)
    assert decision.fixed == ("test_x[c0]",)  # 0/10 -> 10/10; 5/10 -> 6/10 is noise
    out = compare_repeats(base.repeats, cand.repeats, alpha=0.05)
    assert list(out.improved) == ["test_x[c0]"] and out.improved["test_x[c0]"] == pytest.approx(1 / math.comb(20, 10))
