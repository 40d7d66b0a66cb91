"""Sequential repeats' test (evalkit.gate.sequential): its error rates under optional stopping checked by simulation
with fixed seeds, against the fixed-N Fisher test looked at after every sample, which does not keep them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalkit.gate.detectable import sequential_test_drop
from evalkit.gate.repeats import fisher_lower_p
from evalkit.gate.sequential import (
    Counts2,
    SuiteBets,
    Verdict,
    drop_evalue,
    no_worse_evalue,
    rise_evalue,
    settle,
    upper_bound,
)

POOL = 20
LOOKS = 40


def _peeking_rejects(rng: np.random.Generator, base: float, cand: float, trials: int, rejects) -> float:
    """The share of streams that a rule rejects at any look: the baseline pool drawn once, the candidate's samples
    one at a time, looked at after every one, stopped at the first rejection."""
    hits = 0
    for _ in range(trials):
        pool = int(rng.binomial(POOL, base))
        passes = np.cumsum(rng.random(LOOKS) < cand)
        hits += any(rejects(Counts2(pool, POOL, int(passes[n - 1]), n)) for n in range(1, LOOKS + 1))
    return hits / trials


@pytest.mark.parametrize("rate", [0.5, 0.9, 0.97])
def test_an_unchanged_test_is_called_regressed_at_most_alpha_of_the_time_however_often_it_is_looked_at(
        rate: float) -> None:
    rng = np.random.default_rng(int(rate * 1000))
    alpha, trials = 0.05, 400
    found = _peeking_rejects(rng, rate, rate, trials, lambda c: drop_evalue(c) >= math.log(1 / alpha))
    assert found <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials)


def test_the_fixed_n_test_looked_at_every_round_does_not_keep_alpha() -> None:
    """What the sequential test is for: Fisher's test at 0.05, asked after every sample, blocks an unchanged test
    more often than 0.05 (the same streams the sequential test keeps to alpha)."""
    rng = np.random.default_rng(5)
    found = _peeking_rejects(rng, 0.7, 0.7, 400,
                             lambda c: fisher_lower_p(c.base_passed, c.base_runs, c.passed, c.runs) <= 0.05)
    assert found > 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


def test_a_hard_break_is_found_within_twenty_samples_at_a_corrected_level() -> None:
    rng = np.random.default_rng(11)
    level = 0.025 / 20  # the per-test share over 20 tests
    found = _peeking_rejects(rng, 0.95, 0.2, 200, lambda c: c.runs <= 20 and drop_evalue(c) >= math.log(1 / level))
    assert found >= 0.9


def test_no_worse_is_said_of_a_test_that_dropped_by_delta_at_most_futility_of_the_time() -> None:
    rng = np.random.default_rng(17)
    futility, trials = 0.2, 300
    # dropped by exactly delta: the hardest case for the no-worse side
    found = _peeking_rejects(rng, 0.9, 0.6, trials,
                             lambda c: no_worse_evalue(c, 0.3, pool_level=futility / 2) >= math.log(2 / futility))
    assert found <= futility + 3 * math.sqrt(futility * (1 - futility) / trials)


def test_settle_stops_a_steady_test_as_no_worse_and_a_broken_one_as_regressed() -> None:
    assert settle(Counts2(20, 20, 10, 10), level=0.05, futility=0.2, delta=0.3) is Verdict.NO_WORSE
    assert settle(Counts2(20, 20, 0, 10), level=0.001, futility=0.2, delta=0.3) is Verdict.REGRESSED
    assert settle(Counts2(20, 20, 2, 3), level=0.001, futility=0.2, delta=0.3) is Verdict.OPEN
    # a baseline that passes less than delta cannot fall by delta: settled before any sample
    assert settle(Counts2(0, 20, 0, 0), level=0.05, futility=0.2, delta=0.3) is Verdict.NO_WORSE
    # no sample yet: no evidence either way
    assert drop_evalue(Counts2(20, 20, 0, 0)) == 0.0 and no_worse_evalue(Counts2(20, 20, 0, 0), 0.3,
                                                                          pool_level=0.1) == 0.0


def test_the_pools_upper_bound_is_clopper_pearsons() -> None:
    assert upper_bound(0, 10, 0.05) == pytest.approx(1 - 0.05 ** (1 / 10))  # the closed form at k = 0
    assert upper_bound(10, 10, 0.05) == 1.0
    bound = upper_bound(7, 20, 0.1)
    assert sum(math.comb(20, k) * bound ** k * (1 - bound) ** (20 - k) for k in range(8)) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        Counts2(3, 2, 0, 0)


def _suite_rounds(rng: np.random.Generator, base: np.ndarray, cand: np.ndarray, level: float, *,
                  rounds: int = 4, size: int = 5) -> bool:
    """Rounds of `size` samples per case; after each, the cases whose changes so far favour the candidate stop
    being sampled (the stopping most likely to fool a fixed-sample test); True when the guard fires."""
    bets, open_cases = SuiteBets(), np.ones(len(base), dtype=bool)
    total = np.zeros(len(base))
    for _ in range(rounds):
        chosen = np.flatnonzero(open_cases)
        change = (rng.binomial(size, base[chosen]) - rng.binomial(size, cand[chosen])) / size
        bets = bets.update(change.tolist())
        if bets.log_value >= math.log(1 / level):
            return True
        total[chosen] += change
        open_cases &= total >= 0
        if not open_cases.any():
            return False
    return False


def test_the_suite_guard_keeps_its_level_when_rounds_choose_which_cases_to_sample() -> None:
    rng = np.random.default_rng(23)
    rates = rng.uniform(0.6, 1.0, 20)
    trials, level = 400, 0.025
    fired = sum(_suite_rounds(rng, rates, rates, level) for _ in range(trials)) / trials
    assert fired <= level + 3 * math.sqrt(level * (1 - level) / trials)


def test_the_suite_guard_sees_a_broad_drop_within_a_few_rounds() -> None:
    rng = np.random.default_rng(29)
    rates = rng.uniform(0.7, 1.0, 20)
    fired = sum(_suite_rounds(rng, rates, rates - 0.3, 0.025) for _ in range(200)) / 200
    assert fired >= 0.95
    with pytest.raises(ValueError, match=r"lies in \[-1, 1\]"):
        SuiteBets().update([1.5])


def _caught_in_rounds(rng: np.random.Generator, pool: int, runs: int, rate: float, trials: int, level: float,
                      choosing: tuple[int, int] | None) -> float:
    """The share of candidates at `rate` that the rounds (2 samples each, up to 20) find regressed before they
    stop them as no worse: settle() after every round, as the runner does for one test."""
    hits = 0
    for _ in range(trials):
        passes = np.cumsum(rng.random(20) < rate)
        for n in range(2, 21, 2):
            chosen = None if choosing is None else Counts2(*choosing, int(passes[n - 1]), n)
            verdict = settle(Counts2(pool, runs, int(passes[n - 1]), n), level=level, futility=0.3, delta=0.6,
                             choosing=chosen)
            if verdict is not Verdict.OPEN:
                hits += verdict is Verdict.REGRESSED
                break
    return hits / trials


@pytest.mark.parametrize(("pool", "runs", "choosing"), [(40, 40, None), (38, 40, None), (19, 20, None),
                                                       (36, 40, (17, 20))])
def test_the_sequential_detectable_drop_is_caught_with_its_power_by_the_rounds(
        pool: int, runs: int, choosing: tuple[int, int] | None) -> None:
    """The figure a sequential decision states for one test (an exact sum over the rounds' paths) against the
    rounds simulated with settle(): at the figure about 80 % are caught, 5 points further down more, 5 points
    less far fewer. `choosing`: the pool samples the no-worse side reads, where they are not the whole pool."""
    level = 0.025 / 20
    drop = sequential_test_drop(pool, runs, 20, 2, level=level, power=0.8, delta=0.6, futility=0.3,
                                choosing=choosing)
    assert drop is not None and 0 < drop < pool / runs
    rng, trials = np.random.default_rng(pool * 100 + runs), 1500
    margin = 3 * math.sqrt(0.8 * 0.2 / trials)
    at = _caught_in_rounds(rng, pool, runs, pool / runs - drop, trials, level, choosing)
    assert abs(at - 0.8) <= margin
    assert _caught_in_rounds(rng, pool, runs, pool / runs - drop - 0.05, trials, level, choosing) > 0.8
    assert _caught_in_rounds(rng, pool, runs, pool / runs - drop + 0.05, trials, level, choosing) < 0.8
    # none when even a candidate that never passes is not caught that often: a pool of 2 cannot show a drop
    assert sequential_test_drop(2, 2, 20, 2, level=level, power=0.8, delta=0.6, futility=0.3) is None


def test_a_rise_is_the_drop_turned_round() -> None:
    assert rise_evalue(Counts2(2, 20, 18, 20)) == drop_evalue(Counts2(18, 20, 2, 20)) > math.log(1000)
    assert rise_evalue(Counts2(18, 20, 2, 20)) < 0 and rise_evalue(Counts2(5, 20, 0, 0)) == 0.0
