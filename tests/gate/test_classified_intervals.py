"""Paired intervals of classification metrics (evalkit.gate.classified), checked against a direct bootstrap that
recomputes each resample with evalkit.judging.classification.classify, one resample at a time."""

from __future__ import annotations

import numpy as np
import pytest

from evalkit.gate.classified import paired_intervals
from evalkit.judging.classification import classify

LABELS = ("billing", "bug", "account", "feature")
# 24 cases in 8 clusters of 3 (a ticket thread each); the baseline gets one wrong, the candidate five more
EXPECTED = {f"t{n}": LABELS[n % 4] for n in range(24)}
GROUPS = {case: f"thread{n // 3}" for n, case in enumerate(EXPECTED)}
BEFORE = {case: [label, label if n != 19 else "bug"] for n, (case, label) in enumerate(EXPECTED.items())}
AFTER = {case: [label, label if n not in (2, 3, 11, 14, 19, 21) else None if n == 21 else "billing"]
         for n, (case, label) in enumerate(EXPECTED.items())}


def direct(before, after, groups, *, seed=17, resamples=400, confidence=0.95):
    """The same bootstrap written plainly: draw the clusters, list the drawn cases, classify each side."""
    cases = sorted(before)
    clusters = sorted({groups[c] for c in cases})
    members = {g: [c for c in cases if groups[c] == g] for g in clusters}
    draws = np.random.default_rng(seed).multinomial(len(clusters), np.full(len(clusters), 1 / len(clusters)),
                                                    size=resamples)
    changes: dict[str, list[float]] = {}
    for row in draws:
        drawn = [c for g, times in zip(clusters, row, strict=True) for _ in range(times) for c in members[g]]
        sides = [classify((side[c][0], side[c][1]) for c in drawn) for side in (before, after)]
        metrics = [side.metrics() for side in sides if side is not None]
        for name in metrics[1].keys() & metrics[0].keys():
            b, a = metrics[0][name], metrics[1][name]
            if a is not None and b is not None:
                changes.setdefault(name, []).append(a - b)
    tail = (1 - confidence) / 2
    return {name: tuple(np.quantile(values, [tail, 1 - tail])) for name, values in changes.items()}


def test_intervals_match_a_direct_bootstrap_over_clusters():
    fast = paired_intervals(BEFORE, AFTER, GROUPS, resamples=400)
    slow = direct(BEFORE, AFTER, GROUPS)
    assert set(fast) == set(slow) >= {"accuracy", "macro_f1", "recall.bug", "precision.billing", "f1.feature"}
    for name, (low, high) in slow.items():
        assert fast[name] == pytest.approx((low, high), abs=2e-6), name  # classify rounds to 6 places


def test_the_observed_change_lies_in_its_interval_and_a_clear_drop_excludes_zero():
    intervals = paired_intervals(BEFORE, AFTER, GROUPS)
    observed = (sum(a[0] == a[1] for a in AFTER.values()) - sum(b[0] == b[1] for b in BEFORE.values())) / 24
    low, high = intervals["accuracy"]
    assert low <= observed <= high and observed == pytest.approx(-5 / 24)
    assert high < 0  # five more wrong over five threads, none fixed


def test_identical_runs_have_a_zero_interval_and_unpaired_cases_are_left_out():
    same = paired_intervals(BEFORE, BEFORE, GROUPS)
    assert all(interval == (0.0, 0.0) for interval in same.values())
    # a case whose expected label changed between the runs is not a pair; no pair at all gives no interval
    relabelled = {case: ["other", predicted] for case, (_, predicted) in AFTER.items()}
    assert paired_intervals(BEFORE, relabelled, GROUPS) == {}


def test_the_gate_reads_each_reports_pairs_into_the_metric_changes_interval():
    from conftest import report

    from evalkit.core.policy import Policy
    from evalkit.gate.compared import Compared
    from evalkit.records.report_reader import report_from_mapping

    def run(pairs, accuracy):
        cases = [{"id": case, "group": GROUPS[case]} for case in pairs]
        return report_from_mapping(report({"test_a": "passed"}) | {
            "cases": cases, "metrics": {"accuracy": accuracy},
            "classification": {"label_matches": {"labels": list(LABELS), "pairs": pairs}}}, "r")

    compared = Compared(Policy(), run(BEFORE, 23 / 24), run(AFTER, 18 / 24))
    assert compared.metrics["accuracy"].interval == paired_intervals(BEFORE, AFTER, GROUPS)["accuracy"]
