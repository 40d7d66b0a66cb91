"""What a case can be labelled on, and how unsure its judge was (evalkit.programs.labelling): margins computed here
by hand from the rule in the module's docstring."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.programs.labelling import Unsure, label_targets, unsure
from evalkit.records.report_reader import report_from_mapping

KEY = {"key_version": 1, "suite": "s", "dataset": "d@1", "dataset_sha": "d1", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "j"}


def test_every_check_takes_pass_or_fail_and_a_rated_number_its_levels():
    case = {"checks": {"test_a": "passed", "faithful": "failed"},
            "metrics": {"faithful.score": 3.0, "rubric.relevance": 1.0, "recall_at_k": 0.5, "other.score": 2.0,
                        "rubric.": 1.0}}
    assert label_targets(case) == {"test_a": ("pass", "fail"), "faithful": ("pass", "fail"),
                                   "faithful.score": (1, 2, 3, 4, 5), "rubric.relevance": (0, 1, 2)}
    assert label_targets({"id": "x"}) == {}  # a case no check ran on has nothing to label


def _report(cases: list[dict[str, Any]], repeats: dict[str, tuple[int, int]] | None = None) -> Any:
    tests = []
    for case in cases:
        for check, outcome in case["checks"].items():
            test: dict[str, Any] = {"nodeid": f"t.py::{check}[{case['id']}]", "outcome": outcome, "case": case["id"]}
            if (case["id"], check) in (repeats or {}):
                passed, runs = (repeats or {})[(case["id"], check)]
                test["repeats"] = {"passed": passed, "runs": runs}
            tests.append(test)
    return report_from_mapping({"eval": KEY, "tests": tests, "cases": cases}, "authored")


def _scored(case_id: str, score: float, outcome: str) -> dict[str, Any]:
    return {"id": case_id, "status": "scored", "passed": outcome == "passed", "checks": {"j": outcome},
            "metrics": {"j.score": score}}


def test_a_score_is_measured_from_the_boundary_the_runs_verdicts_show():
    # failed at 2 and 3, passed at 4 and 5: the boundary is (3 + 4) / 2 = 3.5; half the 1-5 span is 2
    report = _report([_scored("s2", 2, "failed"), _scored("s3", 3, "failed"), _scored("s4", 4, "passed"),
                      _scored("s5", 5, "passed")])
    found = unsure(report)
    assert {case: doubt.margin for case, doubt in found.items()} == {"s2": 0.75, "s3": 0.25, "s4": 0.25, "s5": 0.75}
    assert found["s3"].why == "j.score 3, the run's pass/fail boundary 3.5"


def test_with_one_side_only_the_boundary_is_half_a_level_beyond_it():
    found = unsure(_report([_scored("s4", 4, "passed"), _scored("s5", 5, "passed")]))
    assert (found["s4"].margin, found["s5"].margin) == (0.25, 0.75)  # boundary 3.5
    found = unsure(_report([_scored("s1", 1, "failed"), _scored("s2", 2, "failed")]))
    assert (found["s1"].margin, found["s2"].margin) == (0.75, 0.25)  # boundary 2.5


@pytest.mark.parametrize(("passed", "runs", "margin"), [(3, 6, 0.0), (1, 4, 0.5), (5, 6, 0.666667)])
def test_samples_that_disagreed_measure_their_distance_from_a_coin_toss(passed, runs, margin):
    case = {"id": "c", "status": "scored", "passed": False, "checks": {"test_a": "failed"}}
    assert unsure(_report([case], {("c", "test_a"): (passed, runs)})) == {
        "c": Unsure(margin, f"test_a: samples disagreed, {passed} of {runs} passed")}


def test_agreeing_samples_and_unscored_checks_are_no_sign_and_the_smallest_margin_wins():
    agreed = {"id": "agreed", "status": "scored", "passed": False, "checks": {"test_a": "failed"}}
    both = {**_scored("both", 5, "passed"), "checks": {"j": "passed", "test_a": "failed"}}
    found = unsure(_report([agreed, both, _scored("s2", 2, "failed")],
                           {("agreed", "test_a"): (0, 5), ("both", "test_a"): (2, 4)}))
    assert "agreed" not in found  # every sample failed: the judge was sure
    assert found["both"] == Unsure(0.0, "test_a: samples disagreed, 2 of 4 passed")  # not the score's 0.75


def test_where_tests_name_no_case_the_cases_own_samples_are_the_sign():
    split = {"id": "split", "status": "scored", "passed": False, "checks": {"test_a": "failed"},
             "repeats": {"passed": 1, "runs": 4}}
    agreed = {**split, "id": "agreed", "repeats": {"passed": 4, "runs": 4}, "passed": True,
              "checks": {"test_a": "passed"}}
    report = report_from_mapping({"eval": KEY, "cases": [split, agreed], "tests": [
        {"nodeid": "t.py::test_a[split]", "outcome": "failed"}, {"nodeid": "t.py::test_a[agreed]", "outcome": "passed"}]},
        "authored")
    assert unsure(report) == {"split": Unsure(0.5, "the case's samples disagreed, 1 of 4 passed")}
