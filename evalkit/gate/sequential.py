"""Sequential repeats: an always-valid test of whether a repeated test got worse, for sampling in rounds. Pure.

A candidate sampled in rounds, and stopped for a test as soon as its question is settled, must not be judged by a
test made for one fixed N: looking after every round and stopping at the first significant look blocks an
unchanged system far more often than alpha. The test here keeps its error rate whatever the rule for when to look
or stop.

**A mixture likelihood ratio against the recorded baseline pool (a mixture SPRT with a composite null).** The
baseline is a recorded pool: k_b passes of N_b samples of the test. The candidate's samples arrive in rounds: k of
n passed so far. The evidence of a drop after n samples is

    E_n = [ mean over a grid of (p_b, p_c) with p_c < p_b - 0.25 of L(p_b, p_c) ] / max over p_c >= p_b of L(p_b, p_c)

with L(p_b, p_c) = p_b^k_b (1 - p_b)^(N_b - k_b) p_c^k (1 - p_c)^(n - k) the likelihood of the pool and the
candidate's samples. For any (p_b, p_c) in the null, the numerator over L(p_b, p_c) is a nonnegative martingale
of mean 1 in the candidate's samples (the prior's weights are fixed before any sample), and the maximum in the
denominator is at least L(p_b, p_c); so E_n never exceeds that martingale, and by Ville's inequality the chance
that E_n ever reaches 1 / alpha is at most alpha (universal inference, Wasserman, Ramdas and Balakrishnan 2020).
The denominator's maximum is in closed form: both sides' own rates where the candidate is no worse, else the
pooled rate of both.

The other side is the same construction with the null "dropped by delta or more" (p_c <= p_b - delta) and the
prior on p_c > p_b - delta: when its E reaches 1 / beta the test is settled as no worse than delta and is no
longer sampled. Stopping a test's sampling early never raises the rate at which an unchanged test is called
regressed: that rate is bounded by the first process alone, over every stopping rule.

The suite's paired guard (`SuiteBets`) spends its share of alpha the same way: bettors stake a fixed fraction
of their wealth on each paired change (the gate bets on every pair of samples; a case's mean over a round is
as valid) as rounds bring them; while no case got worse each stake is
fair or worse, whichever cases a round chose to sample, so Ville's inequality bounds it as above.

Over m tests, each test's drop process is held to m / alpha_share (Bonferroni over e-values, valid whatever the
dependence between tests); the no-worse side only decides when to stop sampling and needs no correction.

Nothing here reads a file, a clock or a random generator.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["GRID_POINTS", "LEAST_DROP", "SUITE_BETS", "Counts2", "SuiteBets", "Verdict", "drop_evalue",
           "no_worse_evalue", "rise_evalue", "settle", "upper_bound"]

GRID_POINTS = 40
"""The prior's grid on each rate: points (i + 1/2) / 40, so no rate sits at 0 or 1."""
LEAST_DROP = 0.25
"""The drop test's prior lies on drops of at least this much (p_c < p_b - 0.25): any fixed prior keeps the test
valid, and one spread over drops too small for one test's 20 samples to show would only dilute the evidence for
those it can (measured: 0.90 -> 0.94 of a 0.95 -> 0.2 break caught by 20 samples); smaller drops spread over
many cases are the suite guard's."""
SUITE_BETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
"""The fractions the suite's bettors stake (below 1: a case's change can be -1)."""
_STEPS = 100  # ternary-search steps for the boundary maximum: far below any figure's resolution


class Verdict(enum.StrEnum):
    """Where a test stands after a round."""

    REGRESSED = "regressed"
    """The drop's evidence reached the test's share of alpha: the test regressed."""
    NO_WORSE = "no_worse"
    """Evidence, at level beta, that it did not drop by delta or more: sampling it stops."""
    OPEN = "open"
    """Neither yet: sample it again, up to the most repeats."""
    NEW = "new"
    """Not in the baseline: no drop to ask about, so nothing keeps it sampled."""


@dataclass(frozen=True)
class Counts2:
    """A test's samples on both sides: the baseline pool's passes of its runs, the candidate's so far."""

    base_passed: int
    base_runs: int
    passed: int
    runs: int

    def __post_init__(self) -> None:
        if not (0 <= self.base_passed <= self.base_runs and 0 <= self.passed <= self.runs):
            raise ValueError(f"counts {self} are not 0 <= k <= n on each side")


@lru_cache(maxsize=8)
def _grid(points: int) -> npt.NDArray[np.float64]:
    return (np.arange(points, dtype=np.float64) + 0.5) / points


def _loglik(p: npt.NDArray[np.float64] | float, passed: int, runs: int) -> npt.NDArray[np.float64] | float:
    """log of p^k (1 - p)^(n - k), with 0 log 0 = 0."""
    out = 0.0 if passed == 0 else passed * np.log(p)
    return out + (0.0 if runs == passed else (runs - passed) * np.log1p(-p))


def _log_mixture(c: Counts2, keep: npt.NDArray[np.bool_]) -> float:
    """log of the mean likelihood over the grid pairs `keep` selects (rows: p_b, columns: p_c)."""
    grid = _grid(GRID_POINTS)
    base = np.asarray(_loglik(grid, c.base_passed, c.base_runs))[:, None]
    cand = np.asarray(_loglik(grid, c.passed, c.runs))[None, :]
    values = (base + cand)[keep]
    top = float(values.max())
    return top + math.log(float(np.exp(values - top).mean()))


def _rate(passed: int, runs: int) -> float:
    return passed / runs if runs else 0.5


def drop_evalue(c: Counts2) -> float:
    """log E of a drop (p_c < p_b) after the candidate's samples so far; 0 before any."""
    if c.runs == 0:
        return 0.0
    grid = _grid(GRID_POINTS)
    numerator = _log_mixture(c, grid[None, :] < grid[:, None] - LEAST_DROP)
    base, cand = _rate(c.base_passed, c.base_runs), _rate(c.passed, c.runs)
    if cand >= base:  # the sides' own rates lie in the null
        denominator = float(_loglik(base, c.base_passed, c.base_runs)) + float(_loglik(cand, c.passed, c.runs))
    else:  # on its boundary: one rate for both
        pooled = (c.base_passed + c.passed) / (c.base_runs + c.runs)
        denominator = (float(_loglik(pooled, c.base_passed, c.base_runs))
                       + float(_loglik(pooled, c.passed, c.runs)))
    return numerator - denominator


def rise_evalue(c: Counts2) -> float:
    """log E of a rise (p_c > p_b): the drop's construction with the sides' roles exchanged, a likelihood ratio
    of the same data and so as valid; 0 before any candidate sample."""
    if c.runs == 0:
        return 0.0
    return drop_evalue(Counts2(c.passed, c.runs, c.base_passed, c.base_runs))


@lru_cache(maxsize=4096)
def upper_bound(passed: int, runs: int, level: float) -> float:
    """The one-sided Clopper-Pearson upper bound of a pass rate at `level`: the highest rate at which k or fewer
    passes of n has probability at least `level` (1 when every sample passed)."""
    if passed >= runs:
        return 1.0

    def tail(rate: float) -> float:
        return math.fsum(math.comb(runs, k) * rate ** k * (1 - rate) ** (runs - k) for k in range(passed + 1))

    low, high = passed / runs, 1.0
    for _ in range(_STEPS):
        middle = (low + high) / 2
        if tail(middle) >= level:
            low = middle
        else:
            high = middle
    return high


def no_worse_evalue(c: Counts2, delta: float, *, pool_level: float) -> float:
    """log E that the candidate's rate is above p0 = (the pool's upper bound at `pool_level`) - delta: a mixture,
    over a grid of rates q > p0, of the candidate's likelihood ratio (q / p0)^k ((1 - q) / (1 - p0))^(n - k),
    which has mean at most 1 whenever the candidate's rate is p0 or less. Infinite when p0 <= 0 (a baseline rate
    below delta cannot fall by delta)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta is {delta!r}; the drop that matters lies in (0, 1)")
    floor = upper_bound(c.base_passed, c.base_runs, pool_level) - delta
    if floor <= 0:
        return math.inf
    if c.runs == 0:
        return 0.0
    grid = _grid(GRID_POINTS)
    rates = floor + (1 - floor) * np.sin(np.pi * grid / 2) ** 2  # over (p0, 1), denser towards 1, where most tests live
    values = np.asarray(_loglik(rates, c.passed, c.runs)) - float(_loglik(floor, c.passed, c.runs))
    top = float(values.max())
    return top + math.log(float(np.exp(values - top).mean()))


@dataclass(frozen=True)
class SuiteBets:
    """The suite's paired guard, sequentially: an equal-weight mixture of bettors, each staking a fixed fraction
    of its wealth on every case's mean paired change (baseline minus candidate, in [-1, 1]) as each round brings
    it. While no case got worse, every change has mean <= 0 given what came before, whichever cases a round
    samples (chosen from earlier rounds), so each bettor's wealth is a nonnegative supermartingale and the
    mixture's reaching 1 / level has probability at most level (Ville)."""

    logs: tuple[float, ...] = (0.0,) * len(SUITE_BETS)

    def update(self, changes: Iterable[float]) -> SuiteBets:
        """After a round: each sampled case's mean of (baseline - candidate) over the round's pairs."""
        logs = list(self.logs)
        for change in changes:
            if not -1 <= change <= 1:
                raise ValueError(f"a case's mean paired change is {change!r}; it lies in [-1, 1]")
            for index, bet in enumerate(SUITE_BETS):
                logs[index] += math.log1p(bet * change)
        return SuiteBets(tuple(logs))

    @property
    def log_value(self) -> float:
        """log of the mixture's wealth (its e-value)."""
        top = max(self.logs)
        return top + math.log(math.fsum(math.exp(value - top) for value in self.logs) / len(self.logs))


def settle(c: Counts2, *, level: float, futility: float, delta: float, choosing: Counts2 | None = None) -> Verdict:
    """After a round: regressed when the drop's E reaches 1 / level (the test's share of alpha); no worse when the
    candidate's rate is shown above the pool's upper bound less delta, half of `futility` spent on each of the
    bound and the candidate's E; else open. `choosing`, where given, is the part of the pool the no-worse side
    reads (the samples the suite guard never pairs, evalkit.gate.sequential_rule.unpaired)."""
    if drop_evalue(c) >= math.log(1 / level):
        return Verdict.REGRESSED
    if no_worse_evalue(choosing or c, delta, pool_level=futility / 2) >= math.log(2 / futility):
        return Verdict.NO_WORSE
    return Verdict.OPEN
