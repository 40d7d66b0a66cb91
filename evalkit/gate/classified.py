"""Paired intervals for classification metrics: how sure the change in accuracy, macro-F1 and each label's
precision, recall and F1 is, from the cases both runs labelled. Pure.

A classification metric is not a mean of per-case differences (macro-F1 averages ratios), so the interval comes
from a paired cluster bootstrap that recomputes each metric on both sides of every resample: resample the case
groups (each case its own group unless the suite clusters them with `group`), count each side's confusion matrix
from the same drawn cases, and take the percentile interval of candidate minus baseline. Pairing matters: the
same hard cases are drawn on both sides, so the interval is as narrow as the paired design allows.

Every resample's confusion counts are one matrix product (resamples x groups, times groups x label pairs), so a
20-case suite and a 10,000-case one cost about the same. A metric undefined on a resample (a label never
predicted there: its precision) is left out of that resample's share of the interval, never counted as 0; the
macro-F1 follows evalkit.judging.classification's rule (an undefined precision gives F1 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evalkit.judging.classification import NO_LABEL
from evalkit.records.report_reader import json_object
from evalkit.records.values import Json

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["ClassifiedPairs", "classified_pairs", "paired_intervals"]

ClassifiedPairs = Mapping[str, Sequence[Json]]
"""case id -> [expected label, predicted label or None], as a run report's classification block keeps them."""


def classified_pairs(block: Json) -> ClassifiedPairs:
    """A report's block for one classification check (RunReport.classification) narrowed to its `pairs`: the
    entries that are [expected, predicted] arrays; {} when the report kept none (reports before pairs were kept)."""
    return {case: pair for case, pair in json_object(json_object(block).get("pairs")).items()
            if isinstance(pair, list)}


def paired_intervals(before: ClassifiedPairs, after: ClassifiedPairs, groups: Mapping[str, str], *,
                     seed: int = 17, resamples: int = 2000,
                     confidence: float = 0.95) -> dict[str, tuple[float, float]]:
    """The `confidence` interval of candidate minus baseline for accuracy, macro_f1 and each expected label's
    precision, recall and F1 (named as the run's metrics: `recall.billing`), over the cases both sides labelled
    with the same expected label; {} when there are none. `groups` maps a case id to its cluster."""
    import numpy as np

    paired = sorted(cid for cid in before.keys() & after.keys() if before[cid][0] == after[cid][0])
    if not paired:
        return {}
    expected = sorted({str(before[cid][0]) for cid in paired})
    labels = [*expected, *sorted({str(side[cid][1]) for side in (before, after) for cid in paired
                                  if side[cid][1] is not None} - set(expected)), NO_LABEL]
    index = {label: n for n, label in enumerate(labels)}
    cluster_of = [groups.get(cid, cid) for cid in paired]
    clusters = sorted(set(cluster_of))
    cluster_index = {name: n for n, name in enumerate(clusters)}
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(clusters), np.full(len(clusters), 1 / len(clusters)), size=resamples)
    sides = []
    for side in (before, after):
        cells = np.zeros((len(clusters), len(labels) * len(labels)))
        for cid, cluster in zip(paired, cluster_of, strict=True):
            predicted = side[cid][1]
            cell = index[str(side[cid][0])] * len(labels) + index[NO_LABEL if predicted is None else str(predicted)]
            cells[cluster_index[cluster], cell] += 1
        counts = (draws @ cells).reshape(resamples, len(labels), len(labels))
        sides.append(_metrics(counts, len(expected)))
    tail = (1 - confidence) / 2
    out: dict[str, tuple[float, float]] = {}
    for name, values in sides[1].items():
        change = values - sides[0][name]
        kept = change[~np.isnan(change)]
        if len(kept):
            low, high = np.quantile(kept, [tail, 1 - tail])
            out[_name(name, expected)] = (round(float(low), 6), round(float(high), 6))
    return out


def _metrics(counts: npt.NDArray[np.float64], expected: int) -> dict[tuple[str, int], npt.NDArray[np.float64]]:
    """Each metric per resample from (resamples, labels, labels) confusion counts; NaN where undefined."""
    import numpy as np

    hits = np.einsum("rii->ri", counts)[:, :expected]
    support = counts.sum(axis=2)[:, :expected]
    called = counts.sum(axis=1)[:, :expected]
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = hits / support
        precision = hits / called
        f1 = np.where(np.isnan(precision), 0.0, 2 * hits / (support + called))
        f1 = np.where(support > 0, f1, np.nan)
        accuracy = hits.sum(axis=1) / support.sum(axis=1)
        macro = np.nanmean(np.where(support > 0, f1, np.nan), axis=1)
    out: dict[tuple[str, int], npt.NDArray[np.float64]] = {("accuracy", -1): accuracy, ("macro_f1", -1): macro}
    for label in range(expected):
        out[("precision", label)] = precision[:, label]
        out[("recall", label)] = recall[:, label]
        out[("f1", label)] = f1[:, label]
    return out


def _name(key: tuple[str, int], expected: Sequence[str]) -> str:
    metric, label = key
    return metric if label < 0 else f"{metric}.{expected[label]}"
