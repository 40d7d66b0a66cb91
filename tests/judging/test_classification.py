"""Classification metrics (evalkit.judging.classification) against counts made by hand and by a second,
independent computation."""

from __future__ import annotations

import itertools
import random

import pytest

from evalkit.judging.classification import NO_LABEL, classify


def test_a_small_run_by_hand():
    pairs = [("a", "a"), ("a", "b"), ("b", "b"), ("b", "b"), ("c", None)]
    result = classify(pairs)
    assert result is not None
    assert result.labels == ("a", "b", "c", NO_LABEL)
    assert result.confusion == {"a": {"a": 1, "b": 1, "c": 0, NO_LABEL: 0},
                                "b": {"a": 0, "b": 2, "c": 0, NO_LABEL: 0},
                                "c": {"a": 0, "b": 0, "c": 0, NO_LABEL: 1}}
    assert result.accuracy == 0.6
    # a: P 1/1, R 1/2, F1 2/3; b: P 2/3, R 1, F1 0.8; c: never predicted, R 0, F1 0
    assert result.precision == {"a": 1.0, "b": pytest.approx(2 / 3, abs=1e-6), "c": None}
    assert result.recall == {"a": 0.5, "b": 1.0, "c": 0.0}
    assert result.f1["a"] == pytest.approx(2 / 3, abs=1e-6)
    assert result.macro_f1 == pytest.approx((2 / 3 + 0.8 + 0) / 3, abs=1e-6)
    assert result.metrics()["recall.a"] == 0.5
    assert result.metrics()["precision.c"] is None


def test_no_cases_no_metrics():
    assert classify([]) is None


def _independent(pairs):
    """Per-label counts of true positives, false positives and false negatives, the textbook way."""
    labels = sorted({e for e, _ in pairs})
    f1s = []
    for label in labels:
        tp = sum(1 for e, p in pairs if e == label and p == label)
        fp = sum(1 for e, p in pairs if e != label and p == label)
        fn = sum(1 for e, p in pairs if e == label and p != label)
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(e == p for e, p in pairs) / len(pairs), sum(f1s) / len(f1s)


@pytest.mark.parametrize("seed", range(20))
def test_matches_an_independent_count(seed):
    rng = random.Random(seed)
    labels = ["billing", "bug", "account", "feature"]
    pairs = [(rng.choice(labels), rng.choice([*labels, "other", None])) for _ in range(rng.randint(1, 60))]
    result = classify(pairs)
    accuracy, macro = _independent(pairs)
    assert result.accuracy == pytest.approx(accuracy, abs=1e-6)
    assert result.macro_f1 == pytest.approx(macro, abs=1e-6)
    assert sum(itertools.chain.from_iterable(row.values() for row in result.confusion.values())) == len(pairs)
