"""The gate's rule for repeated runs: which tests regressed, and whether the suite fell, when both sides sampled
each test N times.

Two guards share the policy's `alpha`, half each, so together they block an unchanged system (an A/A pair) no
more often than `alpha` (a union bound):
- per test, a one-sided Fisher exact test of the baseline's k/N against the candidate's k'/M, Holm-corrected
  over the tests compared: it catches a single hard break;
- for the suite, a paired test of per-case pass fractions: it catches a broad drop no single test can show. It
  decides by a sign-flip randomization test of the per-case changes (one-sided, p < alpha / 2), which is exact
  for an unchanged system whatever the number of cases, since then each case's two sides are exchangeable; the
  paired cluster bootstrap (evalkit.gate.stats) beside it gives the size of the change and its interval. The
  bootstrap alone is not used to decide: with few cases, or one flaky case among steady ones, its percentile
  interval is too narrow and would block an unchanged system (one case falling 1.0 -> 0.0 gives the point
  interval [-1, -1]).

Pure: no I/O; the seed of the random draws is an argument.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from evalkit.gate.stats import PairedStatistics, paired_fraction_bootstrap
from evalkit.records.report_reader import Counts

__all__ = ["MOST_REPEATS", "RepeatsOutcome", "compare_repeats", "fisher_lower_p", "holm", "min_fisher_p",
           "repeats_for_any_outcome", "sign_flip_p", "wilson_interval"]

_Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile
MOST_REPEATS = 1000
"""The most samples per call a run may take (evalkit.core.config.MAX_REPEATS): searches for a number of repeats
stop there."""


def wilson_interval(passed: int, runs: int, z: float = _Z95) -> tuple[float, float]:
    """Wilson score interval (95 % by default) of a pass rate k/N; (0, 1) when nothing ran."""
    if runs <= 0:
        return (0.0, 1.0)
    rate = passed / runs
    denominator = 1 + z * z / runs
    centre = (rate + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs)) / denominator
    # at k = 0 and k = N the bound is exactly 0 or 1; rounding would leave 1e-16 off it
    return (0.0 if passed == 0 else max(0.0, centre - half), 1.0 if passed == runs else min(1.0, centre + half))


def fisher_lower_p(base_passed: int, base_runs: int, cand_passed: int, cand_runs: int) -> float:
    """One-sided Fisher exact p-value that the candidate's pass rate is lower than the baseline's: the
    hypergeometric probability of the candidate passing `cand_passed` or fewer, given both sides' total passes.
    Exact (integer binomials), for the small N of repeated samples."""
    total, passes = base_runs + cand_runs, base_passed + cand_passed
    low = max(0, passes - base_runs)
    tail = sum(math.comb(passes, x) * math.comb(total - passes, cand_runs - x) for x in range(low, cand_passed + 1))
    return min(1.0, tail / math.comb(total, cand_runs))


def min_fisher_p(base_runs: int, cand_runs: int) -> float:
    """The smallest p-value `fisher_lower_p` can give at these sample sizes (every baseline sample passes, every
    candidate sample fails): below what a test cannot be called regressed however it turns out."""
    return 1 / math.comb(base_runs + cand_runs, cand_runs)


def repeats_for_any_outcome(tests: int, level: float) -> int | None:
    """The fewest samples per side (N on both) at which the best outcome (every baseline sample passing, every
    candidate sample failing) reaches `level` for each of `tests` tests (Holm's strictest step, level / tests);
    None beyond MOST_REPEATS."""
    if tests < 1 or not 0 < level < 1:
        return None
    return next((runs for runs in range(1, MOST_REPEATS + 1) if min_fisher_p(runs, runs) <= level / tests), None)


def holm(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down correction: which hypotheses are rejected, controlling the family-wise error at alpha."""
    order = sorted(range(len(pvalues)), key=lambda index: pvalues[index])
    rejected = [False] * len(pvalues)
    for step, index in enumerate(order):
        if pvalues[index] > alpha / (len(pvalues) - step):
            break
        rejected[index] = True
    return rejected


def sign_flip_p(groups: Sequence[Hashable], differences: Sequence[float], *, seed: int = 17,
                resamples: int = 2000) -> float:
    """One-sided p-value that the mean per-group change is below zero: each group's mean change is given a
    random sign `resamples` times (a seeded numpy Generator), and p = (1 + draws at or below the observed
    mean) / (1 + resamples), which is valid (never below its nominal level) for any number of draws."""
    import numpy as np  # here, not at the top: the gate imports this module, and most gates never sample

    labels = sorted(set(groups), key=repr)
    index = {label: number for number, label in enumerate(labels)}
    codes = np.fromiter((index[label] for label in groups), dtype=np.int64, count=len(groups))
    sums = np.bincount(codes, weights=np.asarray(differences, dtype=np.float64), minlength=len(labels))
    effects = sums / np.bincount(codes, minlength=len(labels))
    observed = float(effects.mean())
    rng = np.random.default_rng(seed)
    at_or_below = 0
    for start in range(0, resamples, 256):  # chunks keep the sign matrix small for many groups
        rows = min(256, resamples - start)
        signs = rng.integers(0, 2, size=(rows, len(effects)), dtype=np.int8) * 2 - 1
        # a tolerance, so that draws equal to the observed mean up to rounding count as equal
        at_or_below += int(np.count_nonzero((signs @ effects) / len(effects) <= observed + 1e-12))
    return (1 + at_or_below) / (1 + resamples)


@dataclass(frozen=True)
class RepeatsOutcome:
    """What the two guards found."""

    alpha: float
    regressed: dict[str, float] = field(default_factory=dict)
    """Tests whose drop is significant after Holm's correction: nodeid -> Fisher p-value."""
    unreliable_baseline: tuple[str, ...] = ()
    """Tests flaky on the baseline (0 < k < N): neither a pass nor a failure to compare against."""
    insufficient_data: str | None = None
    """Why no outcome could be significant at these sample sizes (None when one could)."""
    suite: PairedStatistics | None = None
    """The paired bootstrap of per-case pass fractions (the change's size): its interval is the two-sided
    (1 - alpha) one."""
    suite_p: float | None = None
    """The sign-flip test's one-sided p-value of a drop in per-case pass fractions."""
    suite_drop: bool = False
    """Whether suite_p < alpha / 2: a drop across cases."""
    improved: dict[str, float] = field(default_factory=dict)
    """Tests whose rise is significant by the same test turned round (the candidate's rate above the
    baseline's), Holm-corrected at alpha / 2: reported as fixed, deciding nothing."""
    method: str = "fixed"
    """`fixed` (Fisher with Holm, the sign-flip test: this module) or `sequential` (e-values for a run sampled in
    rounds, evalkit.gate.sequential_rule; its p-values are always-valid ones, 1 / E)."""


def compare_repeats(baseline: Mapping[str, Counts], candidate: Mapping[str, Counts], *, alpha: float,
                    min_repeats: int = 2, seed: int = 17, resamples: int = 2000) -> RepeatsOutcome:
    """Apply both guards to the tests repeated on both sides, each at alpha / 2."""
    share = alpha / 2
    names = sorted(name for name in baseline if name in candidate)
    unreliable = tuple(name for name in names if 0 < baseline[name].passed < baseline[name].runs)
    if not names:
        return RepeatsOutcome(alpha, insufficient_data="no test is repeated on both sides")
    smallest = min(min(baseline[name].runs, candidate[name].runs) for name in names)
    if smallest < min_repeats:
        return RepeatsOutcome(alpha, unreliable_baseline=unreliable,
                              insufficient_data=f"a test has {smallest} sample(s); the policy asks for "
                                                f"{min_repeats} on each side")
    pvalues = [fisher_lower_p(baseline[n].passed, baseline[n].runs, candidate[n].passed, candidate[n].runs)
               for n in names]
    regressed = {name: p for name, p, hit in zip(names, pvalues, holm(pvalues, share), strict=True) if hit}
    # the mirror image: the candidate's rate higher than the baseline's, by the same test and correction
    rises = [fisher_lower_p(candidate[n].passed, candidate[n].runs, baseline[n].passed, baseline[n].runs)
             for n in names]
    improved = {name: p for name, p, hit in zip(names, rises, holm(rises, share), strict=True) if hit}
    # the best possible outcome of the best-placed test must clear Holm's first (strictest) step
    best = min(min_fisher_p(baseline[n].runs, candidate[n].runs) for n in names)
    insufficient = None
    if best > share / len(names):
        needed = repeats_for_any_outcome(len(names), share)
        more = (f"run at least {needed} repeats on each side (run.repeats={needed})" if needed is not None
                else f"more than {MOST_REPEATS} repeats on each side would be needed")
        insufficient = (f"{len(names)} test(s) at these sample sizes: even every sample failing gives p >= "
                        f"{best:.3g}, above alpha/2 / {len(names)}; {more}")
    groups = [candidate[n].case or baseline[n].case or n for n in names]
    before = [baseline[n].passed / baseline[n].runs for n in names]
    after = [candidate[n].passed / candidate[n].runs for n in names]
    suite = paired_fraction_bootstrap(groups, before, after, seed=seed, resamples=resamples, confidence=1 - alpha)
    p = sign_flip_p(groups, [a - b for a, b in zip(after, before, strict=True)], seed=seed, resamples=resamples)
    return RepeatsOutcome(alpha, regressed, unreliable, insufficient, suite, p, p < share, improved)
