"""Classification metrics of a run: accuracy, per-label precision, recall and F1, macro-F1 and the confusion
matrix, from each case's expected label and the label its reply gave.

Pure. A reply that gave no label (it did not parse, or had no such field) is predicted as NO_LABEL: it counts
against the expected label's recall and is a column of the confusion matrix, never a dropped case.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["NO_LABEL", "Classification", "classify"]

NO_LABEL = "(none)"
"""The confusion matrix's column for replies that gave no label."""


@dataclass(frozen=True)
class Classification:
    """The metrics of one classification check over a run's cases."""

    labels: tuple[str, ...]
    """The expected labels and any other predicted label, sorted; NO_LABEL last when some reply gave none."""
    confusion: dict[str, dict[str, int]]
    """expected label -> predicted label -> cases: a row per expected label, a column per label of `labels`."""
    cases: int
    accuracy: float
    precision: dict[str, float | None]
    """Per expected label: None when the label was never predicted (precision is undefined then)."""
    recall: dict[str, float]
    f1: dict[str, float]
    macro_f1: float
    """The mean F1 over the expected labels (an undefined precision counts as F1 0)."""

    def metrics(self) -> dict[str, float | None]:
        """The run metrics a policy can name: accuracy, macro_f1, precision.L, recall.L, f1.L."""
        out: dict[str, float | None] = {"accuracy": self.accuracy, "macro_f1": self.macro_f1}
        for label in self.recall:
            out[f"precision.{label}"] = self.precision[label]
            out[f"recall.{label}"] = self.recall[label]
            out[f"f1.{label}"] = self.f1[label]
        return out


def classify(pairs: Iterable[tuple[str, str | None]]) -> Classification | None:
    """The metrics of (expected, predicted) pairs, one per case; None for no cases."""
    seen = [(expected, NO_LABEL if predicted is None else predicted) for expected, predicted in pairs]
    if not seen:
        return None
    expected_labels = sorted({e for e, _ in seen})
    others = sorted({p for _, p in seen} - set(expected_labels) - {NO_LABEL})
    labels = (*expected_labels, *others, *((NO_LABEL,) if any(p == NO_LABEL for _, p in seen) else ()))
    confusion = {e: dict.fromkeys(labels, 0) for e in expected_labels}
    for expected, predicted in seen:
        confusion[expected][predicted] += 1
    precision: dict[str, float | None] = {}
    recall: dict[str, float] = {}
    f1: dict[str, float] = {}
    for label in expected_labels:
        true_positive = confusion[label][label]
        predicted_as = sum(row[label] for row in confusion.values())
        actual = sum(confusion[label].values())
        p = true_positive / predicted_as if predicted_as else None
        r = true_positive / actual
        precision[label] = None if p is None else round(p, 6)
        recall[label] = round(r, 6)
        f1[label] = round(2 * p * r / (p + r), 6) if p is not None and p + r > 0 else 0.0
    correct = sum(confusion[label][label] for label in expected_labels)
    return Classification(labels, confusion, len(seen), round(correct / len(seen), 6), precision, recall, f1,
                          round(sum(f1.values()) / len(f1), 6))
