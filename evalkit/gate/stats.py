"""Paired cluster bootstrap of a candidate-minus-baseline task success difference, groups weighted equally.

The estimand is the mean, over groups (projects, suites, users...), of each group's mean candidate-minus-baseline
task success. A group is the independent unit: its rows and both sides' results travel together when the
bootstrap resamples groups with replacement, so neither the within-group dependence nor the pairing of baseline
and candidate is thrown away. The interval is the plain percentile interval (no BCa correction).

Pure: no I/O, no clock, no global randomness; the seed is an argument and is returned in the result.
With few groups the interval describes the sample at hand, not a population.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from evalkit.core.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ESTIMAND", "FEW_GROUPS", "FEW_GROUPS_WARNING", "FRACTION_ESTIMAND", "METHOD", "PairedStatistics",
           "StatisticsInputError", "meets_margin", "paired_cluster_bootstrap", "paired_fraction_bootstrap"]

ESTIMAND = "equal_weight_mean_of_group_task_success_differences"
FRACTION_ESTIMAND = "equal_weight_mean_of_group_pass_fraction_differences"
METHOD = "paired cluster percentile bootstrap"
FEW_GROUPS = 30
FEW_GROUPS_WARNING = "few groups: a method demonstration, not population evidence"

# Resample means are computed this many resamples at a time, so the float64 gather stays small.
_CHUNK = 256
# Resample by counts of distinct group effects when there are at most 1/_FEW_VALUES as many of them as groups: a
# binomial draw costs about as much as several index draws and gathers.
_FEW_VALUES = 8


class StatisticsInputError(InputError, ValueError):
    """Input the bootstrap cannot use; a ValueError too, as numeric code expects."""


class PairedStatistics(BaseModel):
    """The difference between candidate and baseline task success, with its bootstrap interval and provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    estimand: str = ESTIMAND
    """What `difference` estimates: groups weighted equally, not rows."""
    difference: float
    """Mean over groups of (candidate - baseline) task success averaged within each group."""
    interval: tuple[float, float]
    """Percentile interval (low, high) of the bootstrap distribution of `difference`."""
    groups: int
    """Independent units resampled."""
    cases: int
    """Rows (paired cases) across all groups."""
    seed: int
    """Seed of the numpy.random.Generator; the same seed and inputs give the same interval."""
    resamples: int
    """Bootstrap resamples drawn."""
    confidence: float
    """Nominal coverage of `interval`, e.g. 0.95 for the 2.5 % and 97.5 % percentiles."""
    method: str = METHOD
    """How `interval` was computed."""
    warning: str | None = None
    """Set when there are fewer than 30 groups: the interval then demonstrates the method only."""


def _outcomes(values: Sequence[object], side: str) -> npt.NDArray[np.int8]:
    import numpy as np  # here, not at the top: the gate imports this module, and most gates never resample

    array = np.asarray(values)
    if array.ndim == 1 and (array.dtype == np.bool_ or (array.dtype.kind in "iu" and bool(((array == 0) | (array == 1))
                                                                                           .all()))):
        return array.astype(np.int8)  # bools and integers 0/1 (the usual input), checked at C speed
    for position, value in enumerate(values):  # the offending value, named
        if not isinstance(value, bool | int | np.integer) or value not in (0, 1):
            raise StatisticsInputError(f"{side}[{position}] is {value!r}; task success must be 0/1 or a bool")
    return np.asarray(values, dtype=np.int8)


def _group_effects(groups: Sequence[Hashable], differences: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """Each group's mean difference, groups in sorted label order so row order cannot change the result."""
    import numpy as np  # here, not at the top: the gate imports this module, and most gates never resample

    labels = sorted(set(groups), key=repr)
    index = {label: number for number, label in enumerate(labels)}
    codes = np.fromiter(map(index.__getitem__, groups), dtype=np.int64, count=len(groups))
    sums = np.bincount(codes, weights=differences, minlength=len(labels))
    sizes = np.bincount(codes, minlength=len(labels))
    return sums / sizes


def paired_cluster_bootstrap(
    groups: Sequence[Hashable],
    baseline: Sequence[bool | int],
    candidate: Sequence[bool | int],
    *,
    seed: int = 17,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> PairedStatistics:
    """Estimate candidate-minus-baseline task success (groups weighted equally) with a paired cluster bootstrap.

    Row i is one case: `groups[i]` its group label, `baseline[i]` and `candidate[i]` whether each side passed it.
    """
    _check_rows(groups, baseline, candidate, resamples, confidence)
    differences = _outcomes(candidate, "candidate") - _outcomes(baseline, "baseline")
    return _bootstrap(groups, differences, seed=seed, resamples=resamples, confidence=confidence)


def _check_rows(groups: Sequence[Hashable], baseline: Sequence[Any], candidate: Sequence[Any], resamples: int,
                confidence: float) -> None:
    """One value per row on each side, at least one row, and settings the bootstrap can use."""
    if not len(groups):
        raise StatisticsInputError("no rows: the bootstrap needs at least one group")
    if not len(groups) == len(baseline) == len(candidate):
        raise StatisticsInputError(f"lengths differ: groups {len(groups)}, baseline {len(baseline)}, "
                                   f"candidate {len(candidate)}; give one value per row on each")
    _check_settings(resamples, confidence)


def paired_fraction_bootstrap(
    groups: Sequence[Hashable],
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    seed: int = 17,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> PairedStatistics:
    """The same paired cluster bootstrap over pass fractions (k/N of repeated samples) instead of 0/1 outcomes:
    row i is one test, `groups[i]` its case, so the mean per-case change in pass fraction is the estimand."""
    import numpy as np

    _check_rows(groups, baseline, candidate, resamples, confidence)
    before = np.asarray(baseline, dtype=np.float64)
    after = np.asarray(candidate, dtype=np.float64)
    if not (np.all((before >= 0) & (before <= 1)) and np.all((after >= 0) & (after <= 1))):
        raise StatisticsInputError("pass fractions must lie between 0 and 1")
    return _bootstrap(groups, after - before, seed=seed, resamples=resamples, confidence=confidence,
                      estimand=FRACTION_ESTIMAND)


def _check_settings(resamples: int, confidence: float) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise StatisticsInputError(f"resamples is {resamples!r}; it must be an integer >= 1")
    if not 0 < confidence < 1:
        raise StatisticsInputError(f"confidence is {confidence!r}; it must lie strictly between 0 and 1")


def _bootstrap(groups: Sequence[Hashable], differences: npt.NDArray[Any], *, seed: int, resamples: int,
               confidence: float, estimand: str = ESTIMAND) -> PairedStatistics:
    """Resample the groups' mean differences with replacement; the percentile interval of their mean."""
    import numpy as np

    effects = _group_effects(groups, differences)
    n_groups = len(effects)

    rng = np.random.default_rng(seed)
    values, counts = np.unique(effects, return_counts=True)
    if len(values) * _FEW_VALUES <= n_groups:
        # A resample's mean depends only on how many of its n draws fall on each distinct group effect, and those
        # counts are multinomial(n, share of groups with that effect): the same distribution as resampling the
        # groups, drawn with one binomial per distinct effect instead of one index per group. 0/1 outcomes in
        # small groups have few distinct effects (fractions with small denominators), so this is the usual path.
        hits = rng.multinomial(n_groups, counts / n_groups, size=resamples)
        distribution = hits @ values / n_groups
    else:
        # int32 halves the index matrix (2,000 x 10,000 is 80 MB rather than 160 MB as int64) and still
        # addresses 2**31 - 1 groups; the draws differ from int64's, so the dtype is part of the method.
        dtype = np.int32 if n_groups <= np.iinfo(np.int32).max else np.int64
        draws = rng.integers(0, n_groups, size=(resamples, n_groups), dtype=dtype)
        distribution = np.empty(resamples, dtype=np.float64)
        for start in range(0, resamples, _CHUNK):
            distribution[start:start + _CHUNK] = effects[draws[start:start + _CHUNK]].mean(axis=1)

    tail = (1 - confidence) / 2
    low, high = np.quantile(distribution, [tail, 1 - tail])
    # Every resample mean lies between the smallest and largest group effect; clipping removes only
    # rounding noise, so identical group effects give an exact point interval.
    floor, ceiling = float(effects.min()), float(effects.max())
    difference = min(max(float(effects.mean()), floor), ceiling)
    interval = (min(max(float(low), floor), ceiling), min(max(float(high), floor), ceiling))
    return PairedStatistics(
        estimand=estimand, difference=difference, interval=interval, groups=n_groups, cases=len(groups), seed=seed,
        resamples=resamples, confidence=confidence, warning=FEW_GROUPS_WARNING if n_groups < FEW_GROUPS else None,
    )


def meets_margin(stats: PairedStatistics, margin: float) -> bool:
    """Whether the interval's lower bound clears a non-inferiority margin (e.g. -0.05), fixed before the run."""
    return stats.interval[0] >= margin
