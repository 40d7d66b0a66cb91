"""evalkit/judging/agreement.py: Fleiss' kappa, a judge's self-agreement, and weighted kappa, each checked against
a computation written out here from the textbook formulas (never read back from evalkit)."""

from __future__ import annotations

import numpy as np
import pytest

from evalkit.judging.agreement import fleiss_kappa, self_agreement, weighted_kappa


def _sklearn_weighted_kappa(a: list[int], b: list[int], weights: str) -> float:
    """scikit-learn's cohen_kappa_score, recomputed by hand: the confusion matrix over the sorted labels, the
    expected matrix from the outer product of its marginals, weights by label index distance."""
    labels = sorted(set(a) | set(b))
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    confusion = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        confusion[index[x], index[y]] += 1
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    grid = np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
    w = grid if weights == "linear" else grid**2
    return float(1 - (w * confusion).sum() / (w * expected).sum())


# every level from the lowest to the highest rated appears, so label index distance is level distance
CASES = [
    ([1, 2, 3, 4, 5, 5, 4, 3], [1, 2, 4, 4, 5, 3, 4, 2]),
    ([5, 4, 4, 3, 2, 1, 1, 3, 5], [4, 4, 5, 3, 1, 1, 2, 3, 5]),
    ([2, 3, 4, 2, 3, 4], [4, 3, 2, 4, 3, 2]),
]


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
@pytest.mark.parametrize(("said", "truth"), CASES)
def test_weighted_kappa_is_sklearns_formula(said: list[int], truth: list[int], weights: str) -> None:
    assert weighted_kappa(said, truth, weights) == pytest.approx(_sklearn_weighted_kappa(said, truth, weights),
                                                                 abs=1e-6)


def test_weighted_kappa_counts_distance_in_levels_and_refuses_nonsense() -> None:
    assert weighted_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    # one level off costs less than two levels off, and more so under quadratic weights
    near, far = weighted_kappa([1, 2, 3, 4], [2, 2, 3, 4]), weighted_kappa([1, 2, 3, 4], [3, 2, 3, 4])
    assert near is not None and far is not None and near > far
    assert weighted_kappa([3, 3], [3, 3]) is None  # every rating one level: chance agreement is total
    assert weighted_kappa([], []) is None
    with pytest.raises(ValueError, match="weights 'cubic'"):
        weighted_kappa([1], [1], "cubic")  # type: ignore[arg-type]


def test_fleiss_kappa_is_the_textbook_example() -> None:
    # Fleiss (1971) as Wikipedia works it: 10 subjects, 14 raters, 5 categories, kappa 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    rows = [[category for category, count in enumerate(row) for _ in range(count)] for row in table]
    assert fleiss_kappa(rows) == pytest.approx(0.2099, abs=1e-4)


def test_fleiss_kappa_needs_equal_raters_and_variety() -> None:
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([["pass", "pass"], ["pass"]])
    assert fleiss_kappa([["pass", "pass"], ["pass", "pass"]]) is None
    assert fleiss_kappa([["pass", "pass"], ["fail", "fail"]]) == 1.0


def test_self_agreement_counts_replies_whose_verdicts_agree() -> None:
    rows = [["score 4", "score 4", "score 4"], ["score 2", "score 4", "score 2"], ["score 5", "score 5", "score 5"],
            ["score 3", None, "score 3"]]
    found = self_agreement(rows)
    assert found is not None
    assert (found.repeats, found.replies, found.agreeing, found.unread) == (3, 3, 2, 1)
    assert found.agreement == pytest.approx(2 / 3, abs=1e-6)
    assert found.kappa == fleiss_kappa(rows[:3])
    assert found.levels == ("score 2", "score 4", "score 5")
    assert self_agreement([["pass"], ["fail"]]) is None  # judged once: nothing to agree with
