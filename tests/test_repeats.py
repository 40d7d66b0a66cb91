"""Repeated runs: the statistics of evalkit.gate.repeats, the report's per-test counts, and decide() with both
sides repeated (issue 11, items 5 and 6)."""

from __future__ import annotations

import math

import pytest

from evalkit.core.policy import Policy, RepeatsRule, policy_sha256
from evalkit.core.report import Counts
from evalkit.gate.repeats import compare_repeats, fisher_lower_p, holm, min_fisher_p, wilson_interval
from evalkit.gate.stats import FRACTION_ESTIMAND, StatisticsInputError, paired_fraction_bootstrap


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
    assert out.suite is not None and out.suite.interval[1] < 0


def test_too_few_samples_is_insufficient_data() -> None:
    base, cand = _side({"t[a]": 3, "t[b]": 3}, runs=3), _side({"t[a]": 0, "t[b]": 3}, runs=3)
    out = compare_repeats(base, cand, alpha=0.05)
    assert out.insufficient_data and "run more repeats" in out.insufficient_data and out.regressed == {}
    out = compare_repeats(base, cand, alpha=0.05, min_repeats=5)
    assert out.insufficient_data and "asks for 5" in out.insufficient_data
    assert compare_repeats({}, cand, alpha=0.05).insufficient_data == "no test is repeated on both sides"


def test_repeats_policy_keys_and_unchanged_identity() -> None:
    assert Policy().repeats == RepeatsRule(alpha=0.05, unreliable_baseline="review", insufficient_data="review")
    # a policy that leaves `repeats` alone hashes as it did before the key existed
    assert policy_sha256(Policy()) != policy_sha256(Policy(repeats=RepeatsRule(alpha=0.01)))
