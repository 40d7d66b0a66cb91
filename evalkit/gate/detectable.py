"""The smallest drop a decision could have detected, and the sample sizes that would detect a given one. Pure.

Two figures, each at a one-sided level and a power the caller gives (the gate: its policy's):

- **the suite's headline metric** (`suite_drop`): paired over units (cases, or the suite's groups where it
  groups them), a one-sided paired test of the mean per-unit change, in the normal approximation. With G units
  whose per-unit changes spread with standard deviation s when nothing dropped, a drop of d is detected with the
  stated power when

      d * sqrt(G) >= z(1 - level) * sqrt(s**2 + d) + z(power) * sqrt(s**2 + d * (1 - d))

  The first root is the spread the test compares against (the mean square change, as a sign-flip or a paired
  z-test sees it: s**2 + d(1 - d) + d**2); the second is the spread of the estimate under the drop. `d(1 - d)` is
  the most variance a mean drop of d can add to per-unit changes in [-1, 0]: the drop falling on whole units
  (d of them fail outright). A drop spread evenly over every unit adds less, so the figure is conservative: such a
  drop at or above it is caught at least as often as the stated power says. For the drop on whole units, small
  suites are also held to an exact floor the approximation misses: a sign-flip test that sees k equal falls and
  nothing else moving gives p = 2**-k, so at least `fewest_falling(level)` units must fall, which happens with
  the stated power only from some d on (`suite_drop` is the larger of the two).
- **one repeated test sampled in rounds** (`sequential_test_drop`, `run.repeats=auto`): the gate's sequential
  test (evalkit.gate.sequential) looking after every round of `batch` samples, up to `most`, and the runner
  stopping the test's sampling once it is shown no worse. Exact by dynamic programming over the candidate's pass
  count at each look: the chance that the drop's e-value reaches its bar at some look before the no-worse side
  stops it. A case also keeps being sampled while another of its tests is open, which only adds looks, so the
  figure is conservative.
- **one repeated test** (`one_test_drop`): a one-sided Fisher exact test of the baseline's k/N against the
  candidate's k'/M at a fixed level (the gate: its per-test share of alpha over the m tests compared, the level
  Holm's first step applies, so that the figure holds whichever step a test is reached at). Exact: the
  candidate's count is binomial at its pass rate, and the figure is the baseline's rate minus the highest
  candidate rate that is still caught with the stated power.

Nothing here reads a file, a clock or a random generator; every function is a closed form, a bisection or an
exact sum over binomial counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from evalkit.gate.repeats import MOST_REPEATS, fisher_lower_p
from evalkit.gate.sequential import Counts2, drop_evalue, no_worse_evalue

__all__ = ["MOST_UNITS", "Spread", "cases_needed", "counted_spread", "fewest_falling", "one_test_drop",
           "one_test_repeats", "repeats_needed", "sequential_test_drop", "spread", "suite_drop", "z"]

_STEPS = 60  # bisection steps: 2**-60 of the unit interval, far below any figure shown
MOST_UNITS = 10_000_000
"""The most units `cases_needed` searches up to: beyond it, the target is said to be out of reach."""


def z(probability: float) -> float:
    """The standard normal quantile."""
    return NormalDist().inv_cdf(probability)


@dataclass(frozen=True)
class Spread:
    """Per-unit changes of a paired metric: how many units and how far their changes spread."""

    units: int
    """Independent units (cases, or groups of cases)."""
    sd: float
    """Sample standard deviation of the per-unit changes (0 with one unit)."""
    mean: float
    """Mean per-unit change (candidate minus baseline)."""


def spread(units: Sequence[Hashable], changes: Sequence[float]) -> Spread:
    """The per-unit changes of paired rows: row i belongs to unit `units[i]` and changed by `changes[i]`; a unit's
    change is the mean of its rows' (units weighted equally, as the paired bootstrap weights groups)."""
    if len(units) != len(changes):
        raise ValueError(f"lengths differ: {len(units)} units, {len(changes)} changes")
    sums: dict[Hashable, float] = {}
    sizes: dict[Hashable, int] = {}
    for unit, change in zip(units, changes, strict=True):
        sums[unit] = sums.get(unit, 0.0) + float(change)
        sizes[unit] = sizes.get(unit, 0) + 1
    effects = [sums[unit] / sizes[unit] for unit in sums]
    count = len(effects)
    if count == 0:
        return Spread(0, 0.0, 0.0)
    mean = math.fsum(effects) / count
    variance = math.fsum((e - mean) ** 2 for e in effects) / (count - 1) if count > 1 else 0.0
    return Spread(count, math.sqrt(variance), mean)


def counted_spread(units: int, fell: int, rose: int) -> Spread:
    """The spread of per-unit changes that are -1 for `fell` units, +1 for `rose` and 0 for the rest (0/1
    outcomes paired), in closed form: a million tests need no list."""
    if units < 1:
        return Spread(0, 0.0, 0.0)
    mean = (rose - fell) / units
    variance = max(0.0, (fell + rose - units * mean * mean) / (units - 1)) if units > 1 else 0.0
    return Spread(units, math.sqrt(variance), mean)


def _shortfall(drop: float, units: int, sd: float, za: float, zb: float) -> float:
    """How far a drop is from meeting the normal approximation's condition (<= 0: met). Convex in `drop`."""
    var = sd * sd
    return (za * math.sqrt(var + drop) + zb * math.sqrt(max(0.0, var + drop * (1 - drop)))
            - drop * math.sqrt(units))


def fewest_falling(level: float) -> int:
    """The fewest units that must fall for a sign-flip test to reach `level` at all: k equal falls and nothing
    else moving give p = 2**-k, so k must exceed log2(1 / level)."""
    return math.floor(math.log2(1 / level)) + 1


def _at_least(count: int, units: int, rate: float) -> float:
    """P(Binomial(units, rate) >= count), from the few terms below `count` (units may be millions)."""
    if count <= 0:
        return 1.0
    if rate >= 1:
        return 1.0 if units >= count else 0.0
    if rate <= 0:
        return 0.0
    below = math.fsum(math.exp(math.lgamma(units + 1) - math.lgamma(k + 1) - math.lgamma(units - k + 1)
                               + k * math.log(rate) + (units - k) * math.log1p(-rate))
                      for k in range(min(count, units + 1)))
    return max(0.0, 1.0 - below)


def _detected(drop: float, units: int, sd: float, level: float, power: float) -> bool:
    """Whether a drop of `drop` is caught with `power`: the normal approximation's condition, and, for small
    suites where that approximation is too kind, the exact floor of a drop falling on whole units (enough of
    them must fall, with `power`, for the test to reach `level`)."""
    return (_shortfall(drop, units, sd, z(1 - level), z(power)) <= 0
            and _at_least(fewest_falling(level), units, drop) >= power)


def suite_drop(units: int, sd: float, *, level: float, power: float) -> float | None:
    """The smallest mean drop per unit a one-sided paired test at `level` detects with `power`, over `units` units
    whose changes spread by `sd` when nothing dropped; None when not even a drop of 1 (every unit failing) is."""
    _check(level, power)
    if units < 1 or not _detected(1.0, units, sd, level, power):
        return None
    # both conditions hold from some drop on (the shortfall is convex and not negative at 0; the floor grows
    # with the drop): bisect for where they start to
    low, high = 0.0, 1.0
    for _ in range(_STEPS):
        middle = (low + high) / 2
        if _detected(middle, units, sd, level, power):
            high = middle
        else:
            low = middle
    return high


def cases_needed(drop: float, sd: float, *, level: float, power: float) -> int | None:
    """The fewest units at which `suite_drop` is at most `drop`; None beyond MOST_UNITS."""
    _check(level, power)
    if not 0 < drop <= 1:
        raise ValueError(f"drop is {drop!r}; it must lie in (0, 1]")
    if not _detected(drop, MOST_UNITS, sd, level, power):
        return None
    low, high = 0, MOST_UNITS  # both conditions only get easier with more units
    while high - low > 1:
        middle = (low + high) // 2
        if _detected(drop, middle, sd, level, power):
            high = middle
        else:
            low = middle
    return high


def repeats_needed(drop: float, units: int, sd: float, repeats: int, *, level: float,
                   power: float) -> int | None:
    """The fewest repeats per call at which `units` units detect `drop`, taking the spread to be sampling noise
    that shrinks as 1/repeats (sd measured at `repeats`); None when more repeats cannot reach it (the drop may
    fall on a few units, which repeating cannot show) or it needs more than MOST_REPEATS."""
    _check(level, power)
    if units < 1 or not 0 < drop <= 1 or not _detected(drop, units, 0.0, level, power):
        return None
    if _detected(drop, units, sd, level, power):
        return repeats
    # the largest spread that still detects the drop (the shortfall grows with the spread), then the repeats
    low, high = 0.0, sd
    for _ in range(_STEPS):
        middle = (low + high) / 2
        if _detected(drop, units, middle, level, power):
            low = middle
        else:
            high = middle
    if low == 0.0:
        return None
    needed = math.ceil(repeats * (sd / low) ** 2 - 1e-9)
    return needed if needed <= MOST_REPEATS else None


@lru_cache(maxsize=4096)
def _critical_count(base_passed: int, base_runs: int, cand_runs: int, level: float) -> int | None:
    """The most candidate passes that the one-sided Fisher test still calls a drop at `level` (None: none)."""
    caught = None
    for passes in range(cand_runs + 1):  # the p-value grows with the candidate's passes
        if fisher_lower_p(base_passed, base_runs, passes, cand_runs) > level:
            break
        caught = passes
    return caught


def _binomial_cdf(count: int, runs: int, rate: float) -> float:
    """P(Binomial(runs, rate) <= count), as an exact sum."""
    return math.fsum(math.comb(runs, k) * rate ** k * (1 - rate) ** (runs - k) for k in range(count + 1))


@lru_cache(maxsize=4096)
def one_test_drop(base_passed: int, base_runs: int, cand_runs: int, *, level: float, power: float) -> float | None:
    """The smallest drop from the baseline's rate k/N that a one-sided Fisher test at `level` catches with
    `power` when the candidate takes `cand_runs` samples; None when no outcome is significant, or the baseline
    never passed (nothing to drop from)."""
    _check(level, power)
    if base_runs < 1 or cand_runs < 1 or base_passed == 0:
        return None
    caught = _critical_count(base_passed, base_runs, cand_runs, level)
    if caught is None:
        return None
    # P(caught) = P(K' <= caught) falls as the candidate's rate rises
    return _smallest_drop(lambda rate: _binomial_cdf(caught, cand_runs, rate), base_passed / base_runs, power,
                          _STEPS)


def _smallest_drop(caught: Callable[[float], float], rate: float, power: float, steps: int) -> float:
    """`rate` less the highest candidate rate still caught with `power`, by bisection over [0, rate]; `caught`
    (a rate's chance of being caught) must fall as the rate rises."""
    low, high = 0.0, rate
    if caught(high) >= power:
        return 0.0
    for _ in range(steps):
        middle = (low + high) / 2
        if caught(middle) >= power:
            low = middle
        else:
            high = middle
    return rate - low


@lru_cache(maxsize=4096)
def _looks(pool: tuple[int, int], choosing: tuple[int, int], most: int, batch: int, level: float, delta: float,
           futility: float) -> tuple[tuple[int, int, int], ...]:
    """Each look of the rounds as (samples, the most passes the drop's e-value over the `pool` (passes, runs)
    still catches at `level`, the fewest passes the no-worse side over `choosing` stops at): -1 for none caught,
    samples + 1 for none stopped."""
    looks = []
    caught_bar, stop_bar = math.log(1 / level), math.log(2 / futility)
    for runs in sorted({min(most, n) for n in range(batch, most + batch, batch)}):
        caught = -1
        while caught < runs and drop_evalue(Counts2(*pool, caught + 1, runs)) >= caught_bar:
            caught += 1
        stop = runs + 1
        while stop > caught + 1 and no_worse_evalue(Counts2(*choosing, stop - 1, runs), delta,
                                                    pool_level=futility / 2) >= stop_bar:
            stop -= 1
        looks.append((runs, caught, stop))
    return tuple(looks)


def _caught_in_rounds(looks: tuple[tuple[int, int, int], ...], rate: float) -> float:
    """The chance that a candidate passing at `rate` is caught at some look: the distribution of its passes among
    the paths still sampled, carried from look to look."""
    still, taken, caught = [1.0], 0, 0.0
    for runs, most_caught, fewest_stopped in looks:
        step = runs - taken
        grown = [0.0] * (runs + 1)
        for passes, chance in enumerate(still):
            if chance:
                for more in range(step + 1):
                    grown[passes + more] += chance * math.comb(step, more) * rate ** more * (1 - rate) ** (step - more)
        caught += math.fsum(grown[:most_caught + 1])
        still = [0.0 if passes <= most_caught or passes >= fewest_stopped else chance
                 for passes, chance in enumerate(grown)]
        taken = runs
    return caught


@lru_cache(maxsize=4096)
def sequential_test_drop(base_passed: int, base_runs: int, most: int, batch: int, *, level: float, power: float,
                         delta: float, futility: float, choosing: tuple[int, int] | None = None) -> float | None:
    """The smallest drop from the pool's rate k/N that the sequential rule catches with `power`, sampling in
    rounds of `batch` up to `most` (see the module), its no-worse side reading `choosing` (passes, runs: the pool
    samples the rounds choose by, evalkit.gate.sequential_rule.unpaired; the whole pool when None); None when
    even a candidate that never passes is not caught that often, or the pool never passed."""
    _check(level, power)
    if base_runs < 1 or base_passed == 0 or most < 1:
        return None
    looks = _looks((base_passed, base_runs), choosing or (base_passed, base_runs), most, batch, level, delta,
                   futility)
    if _caught_in_rounds(looks, 0.0) < power:
        return None
    # 2**-30 of the rate: still far below a point, in half the passes of the rounds' sums
    return _smallest_drop(lambda rate: _caught_in_rounds(looks, rate), base_passed / base_runs, power, _STEPS // 2)


def one_test_repeats(drop: float, base_rate: float, *, level: float, power: float) -> int | None:
    """The fewest samples per side (N on both) at which a test passing at `base_rate` on the baseline, falling by
    `drop`, is caught with `power` at `level`: the baseline taken at its expected count round(rate * N). None
    beyond MOST_REPEATS."""
    _check(level, power)
    if not 0 < drop <= base_rate <= 1:
        return None

    def caught(runs: int) -> bool:
        found = one_test_drop(round(base_rate * runs), runs, runs, level=level, power=power)
        return found is not None and found <= drop + 1e-12

    # doubling, then bisection (power is not exactly monotone in N for a discrete test: the bisection gives
    # a size that reaches it, the smallest up to that wobble)
    high = 1
    while not caught(high):
        if high >= MOST_REPEATS:
            return None
        high = min(MOST_REPEATS, high * 2)
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        if caught(middle):
            high = middle
        else:
            low = middle
    return high


def _check(level: float, power: float) -> None:
    if not 0 < level < 0.5:
        raise ValueError(f"level is {level!r}; a one-sided level lies in (0, 0.5)")
    if not 0.5 <= power < 1:
        raise ValueError(f"power is {power!r}; it lies in [0.5, 1)")
