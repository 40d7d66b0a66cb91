"""Tests for evalkit.gate.stats: the estimand, determinism, pairing, a table of expected figures, refusals."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evalkit.gate.stats import (
    ESTIMAND,
    FEW_GROUPS_WARNING,
    METHOD,
    PairedStatistics,
    StatisticsInputError,
    meets_margin,
    paired_cluster_bootstrap,
)

Rows = list[tuple[str, int, int]]  # (group, baseline, candidate)


def run(rows: Rows, **options: object) -> PairedStatistics:
    groups, baseline, candidate = zip(*rows, strict=True)
    return paired_cluster_bootstrap(list(groups), list(baseline), list(candidate), **options)  # type: ignore[arg-type]


def acceptance(variant: str) -> Rows:
    """An authored fixture: 6 projects x (one file task, one answer task). The baseline gets the file task
    wrong in p1-p3 and every answer right."""
    rows: Rows = []
    for number in range(1, 7):
        group = f"p{number}"
        file_base, answer_base = int(number > 3), 1
        file_cand, answer_cand = {
            "prompt_v2": (1, 1),  # fixes the three file tasks, breaks nothing: +0.5 in p1-p3
            "retrieval_v2": (file_base, 0),  # every answer lost: -0.5 everywhere
            "model_v2": (0, 0),  # everything fails: -0.5 in p1-p3, -1 in p4-p6
        }[variant]
        rows += [(group, file_base, file_cand), (group, answer_base, answer_cand)]
    return rows


def test_estimate_weights_groups_equally_not_rows() -> None:
    # group a: 4 rows, all improved (+1); group b: 1 row, regressed (-1).
    rows: Rows = [("a", 0, 1)] * 4 + [("b", 1, 0)]
    stats = run(rows)
    assert stats.difference == 0.0  # (1 + -1) / 2
    assert stats.difference != pytest.approx((4 - 1) / 5)  # the row mean would be 0.6
    assert (stats.groups, stats.cases) == (2, 5)
    assert stats.estimand == ESTIMAND and stats.method == METHOD


def test_row_order_does_not_change_the_result() -> None:
    rows: Rows = [(f"g{i % 7}", (i * 3) % 2, (i * 5 // 3) % 2) for i in range(40)]
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert shuffled != rows
    assert run(shuffled) == run(rows)


def test_interval_contains_the_estimate() -> None:
    rows: Rows = [(f"g{i % 12}", i % 2, (i // 2) % 3 != 0) for i in range(60)]
    stats = run(rows)
    low, high = stats.interval
    assert low < stats.difference < high


def test_same_seed_same_result_other_seed_other_interval() -> None:
    rows: Rows = [(f"g{i % 10}", i % 2, (i * 7 // 4) % 2) for i in range(50)]
    assert run(rows, seed=5) == run(rows, seed=5)
    other = run(rows, seed=6)
    assert other.interval != run(rows, seed=5).interval
    assert other.seed == 6 and other.difference == run(rows, seed=5).difference


def test_identical_group_effects_give_a_point_interval() -> None:
    # Each group: 3 rows, one fixed: effect 1/3 everywhere. Ten floats of 1/3 average to 0.33333333333333337,
    # so a naive mean would put the whole interval one ulp off the group effect.
    rows: Rows = [(f"g{g}", 0, int(r == 0)) for g in range(10) for r in range(3)]
    stats = run(rows)
    assert stats.interval == (1 / 3, 1 / 3)
    assert stats.difference == 1 / 3


def unpaired_interval(rows: Rows, seed: int, resamples: int = 2000) -> tuple[float, float]:
    """What breaking the pairing gives: baseline and candidate group rates resampled independently."""
    labels = sorted({g for g, _, _ in rows})
    base = np.array([np.mean([b for g, b, _ in rows if g == label]) for label in labels])
    cand = np.array([np.mean([c for g, _, c in rows if g == label]) for label in labels])
    rng = np.random.default_rng(seed)
    n = len(labels)
    distribution = cand[rng.integers(0, n, (resamples, n))].mean(1) - base[rng.integers(0, n, (resamples, n))].mean(1)
    low, high = np.quantile(distribution, [0.025, 0.975])
    return float(low), float(high)


def test_pairing_narrows_the_interval_when_the_sides_move_together() -> None:
    # Hard groups fail on both sides, easy ones pass on both; the candidate fixes one row in a few groups.
    rows: Rows = []
    for g in range(20):
        easy = g % 2
        rows += [(f"g{g}", easy, easy), (f"g{g}", easy, easy), (f"g{g}", 0, int(g % 4 == 0))]
    paired = run(rows, seed=11)
    low, high = unpaired_interval(rows, seed=11)
    assert paired.interval[1] - paired.interval[0] < 0.5 * (high - low)
    assert low < paired.interval[0] and paired.interval[1] < high


def test_the_seeds_table() -> None:
    # The seed (Python's random module) printed [0.0833, 0.4167], [-0.5, -0.5], [-0.9167, -0.5833].
    prompt, retrieval, model = (run(acceptance(v)) for v in ("prompt_v2", "retrieval_v2", "model_v2"))
    assert (prompt.groups, prompt.cases, prompt.seed, prompt.resamples) == (6, 12, 17, 2000)
    assert prompt.difference == 0.25
    assert retrieval.difference == -0.5
    assert model.difference == -0.75
    assert retrieval.interval == (-0.5, -0.5)  # every group moved by -0.5: exactly a point
    # Exact bounds depend on the generator; a resample mean of these effects lies in [0, 0.5] / [-1, -0.5].
    assert 0 <= prompt.interval[0] <= 0.25 <= prompt.interval[1] <= 0.5
    assert -1 <= model.interval[0] <= -0.75 <= model.interval[1] <= -0.5
    assert prompt.warning == FEW_GROUPS_WARNING


def test_thirty_groups_carry_no_warning() -> None:
    assert run([(f"g{g}", 0, 1) for g in range(30)]).warning is None


def test_meets_margin_reads_the_lower_bound() -> None:
    retrieval = run(acceptance("retrieval_v2"))  # interval [-0.5, -0.5]
    assert meets_margin(retrieval, -0.5)
    assert not meets_margin(retrieval, -0.05)
    assert meets_margin(run(acceptance("prompt_v2")), -0.05)


def test_bools_are_accepted_like_integers() -> None:
    rows = acceptance("model_v2")
    as_bools = [(g, bool(b), bool(c)) for g, b, c in rows]
    assert run(as_bools) == run(rows)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("groups", "baseline", "candidate", "options", "message"),
    [
        ([], [], [], {}, r"^no rows"),
        (["a", "b"], [0, 1], [1], {}, r"^lengths differ: groups 2, baseline 2, candidate 1"),
        (["a"], [0], [2], {}, r"^candidate\[0\] is 2; task success must be 0/1"),
        (["a"], [0.5], [1], {}, r"^baseline\[0\] is 0\.5; task success must be 0/1"),
        (["a"], [None], [1], {}, r"^baseline\[0\] is None"),
        (["a"], [0], [1], {"resamples": 0}, r"^resamples is 0; it must be an integer >= 1"),
        (["a"], [0], [1], {"confidence": 1.0}, r"^confidence is 1\.0; it must lie strictly between 0 and 1"),
        (["a"], [0], [1], {"confidence": 0}, r"^confidence is 0;"),
    ],
)
def test_bad_input_is_refused(groups: list[str], baseline: list[object], candidate: list[object],
                              options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        paired_cluster_bootstrap(groups, baseline, candidate, **options)  # type: ignore[arg-type]
    assert isinstance(caught.value, StatisticsInputError)
    assert "\n" not in str(caught.value)


def test_resampling_by_counts_of_distinct_effects_gives_the_index_resampling_s_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Few distinct group effects (0/1 outcomes in groups of 1-4 rows) are resampled as multinomial counts; forcing
    the index path on the same rows must give the same interval within Monte Carlo error, not the same draws."""
    rows: Rows = [(f"g{i // 3:04d}", int(i % 5 != 0), int(i % 7 != 0)) for i in range(6000)]
    rows += [(f"h{i:04d}", i % 2, 1) for i in range(400)]  # 400 one-row groups: effects 0 and 1
    by_counts = run(rows, resamples=6000, seed=3)
    monkeypatch.setattr("evalkit.gate.stats._FEW_VALUES", 10**9)  # every input takes the index path
    by_indices = run(rows, resamples=6000, seed=3)
    assert by_counts.difference == pytest.approx(by_indices.difference, abs=1e-12)
    assert by_counts.interval != by_indices.interval  # two different draws ...
    width = by_indices.interval[1] - by_indices.interval[0]
    for ours, theirs in zip(by_counts.interval, by_indices.interval, strict=True):
        assert ours == pytest.approx(theirs, abs=0.05 * width)  # ... of one distribution


def test_numpy_arrays_of_outcomes_are_read_like_lists() -> None:
    rows = acceptance("prompt_v2")
    groups = [g for g, _, _ in rows]
    baseline = np.array([b for _, b, _ in rows], dtype=np.int64)
    candidate = np.array([c for _, _, c in rows], dtype=bool)
    assert paired_cluster_bootstrap(groups, baseline, candidate) == run(rows)  # type: ignore[arg-type]
