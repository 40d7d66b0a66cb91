"""Comparison detail: per case and per metric, with a drop to 'not measurable' counted as a drop."""

from __future__ import annotations

import pytest

from evalkit.core.errors import InputError
from evalkit.gate.compare import Comparison, MetricChange, compare_cases, compare_metrics
from evalkit.records.report_reader import report_from_mapping


def test_metric_changes():
    changes = compare_metrics({"a": 0.5, "b": 1.0, "c": 0.7, "gone": 0.2},
                              {"a": 0.75, "b": None, "c": 0.7, "new": 0.1})
    assert changes["a"] == MetricChange(0.5, 0.75, 0.25, "improved")
    assert changes["b"] == MetricChange(1.0, None, None, "regressed")  # no longer measurable is a drop
    assert changes["c"].status == "unchanged" and changes["c"].delta == 0
    assert changes["gone"].status == "regressed" and changes["new"].status == "improved"


def test_none_to_none_is_unchanged_and_none_to_a_number_improves():
    changes = compare_metrics({"x": None, "y": None}, {"x": None, "y": 0.0})
    assert changes["x"].status == "unchanged" and changes["y"].status == "improved"


def test_case_changes():
    before = ({"id": "a", "passed": True}, {"id": "b", "passed": False}, {"id": "c", "passed": True},
              {"id": "d", "passed": True})
    after = ({"id": "a", "passed": False}, {"id": "b", "passed": True}, {"id": "c", "passed": True},
             {"id": "e", "passed": False})
    assert compare_cases(before, after) == {"a": "regressed", "b": "improved", "c": "unchanged", "d": "missing",
                                            "e": "new"}


def test_a_comparison_of_two_reports_reads_their_cases_and_metrics():
    key = {"dataset_sha": "a", "judge_model": "j"}
    base = report_from_mapping({"eval": key, "tests": [{"nodeid": "t", "outcome": "passed"}],
                                "cases": [{"id": "x", "passed": True}], "metrics": {"m": {"mean": 0.9, "count": 3}}}, "b")
    cand = report_from_mapping({"eval": key, "tests": [{"nodeid": "t", "outcome": "failed"}],
                                "cases": [{"id": "x", "passed": False}], "metrics": {"m": 0.8}}, "c")
    comparison = Comparison(compare_cases(base.cases, cand.cases), compare_metrics(base.metrics, cand.metrics))
    assert comparison.regressed == ["x"] and comparison.improved == []
    assert comparison.metrics["m"].status == "regressed" and comparison.metrics["m"].delta == pytest.approx(-0.1)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "0.5", True])
def test_report_metrics_must_be_finite_numbers_or_null(value):
    with pytest.raises(InputError, match=r"r\.json: metric 'm' is .*; a metric is a finite number, or null"):
        report_from_mapping({"eval": {}, "tests": [{"nodeid": "t", "outcome": "passed"}],
                             "metrics": {"m": {"mean": value}}}, "r.json")
