"""Calibrating judged checks against human labels (evalkit.programs.calibrate.calibrate_judges): each check's
verdicts in a run report set against the labels, counted here independently."""

from __future__ import annotations

import pytest

from evalkit.core.errors import InputError
from evalkit.programs.calibrate import calibrate_judges, cohen_kappa, parse_labels, render_judges

OUTCOMES = {"checks.yaml::faithful[a]": "passed", "checks.yaml::faithful[b]": "passed",
            "checks.yaml::faithful[c]": "failed", "checks.yaml::faithful[d]": "failed",
            "checks.yaml::faithful[e]": "skipped", "test_suite.py::test_judged[a]": "passed"}
MESSAGES = {"checks.yaml::faithful[c]": "expected faithfulness ... came 2: adds a date",
            "checks.yaml::faithful[d]": "expected faithfulness ... came 1: contradicts"}


def test_verdicts_against_labels_with_agreement_and_kappa():
    labels = {"faithful": {"a": True, "b": False, "c": False, "d": True, "e": True}, "test_judged": {"a": True}}
    result = calibrate_judges(OUTCOMES, MESSAGES, {}, labels)
    faithful = result["checks"]["faithful"]
    # a: pass/pass TP, b: pass/fail FP, c: fail/fail TN, d: fail/pass FN; e skipped: not judged
    assert {k: faithful[k] for k in ("tp", "fp", "tn", "fn", "judged")} == {"tp": 1, "fp": 1, "tn": 1, "fn": 1,
                                                                            "judged": 4}
    assert faithful["agreement"] == 0.5 and faithful["kappa"] == 0.0  # 50 % agreement is what chance gives here
    assert faithful["false_positive_rate"] == 0.5
    assert faithful["disagreements"] == [
        {"case": "b", "label": "fail", "check": "passed", "message": None},
        {"case": "d", "label": "pass", "check": "failed", "message": "expected faithfulness ... came 1: contradicts"}]
    assert faithful["not_judged"] == [{"case": "e", "outcome": "skipped"}]
    assert result["checks"]["test_judged"]["kappa"] is None  # one case, both say pass: chance agreement is total
    text = render_judges(result)
    assert "faithful               4   1   1   1   1       0.50   0.00  0.50" in text
    assert "  - faithful[d]: labelled pass, the check failed: expected faithfulness ... came 1: contradicts" in text
    assert "  - faithful[e]: not judged (skipped), left out of the counts" in text


@pytest.mark.parametrize(("said", "truth"), [
    ([True, True, False, False, True], [True, False, False, False, True]),
    ([True, False, True, False], [False, True, False, True]),
    ([True, True, True, False], [True, True, False, False]),
])
def test_kappa_is_the_textbook_one(said, truth):
    n = len(said)
    po = sum(a == b for a, b in zip(said, truth, strict=True)) / n
    pe = (said.count(True) * truth.count(True) + said.count(False) * truth.count(False)) / n / n
    assert cohen_kappa(said, truth) == pytest.approx((po - pe) / (1 - pe), abs=1e-6)


@pytest.mark.parametrize(("labels", "repeats", "message"), [
    ({"nothing": {"a": True}}, {}, "check nothing has no test in the run report"),
    ({"faithful": {"z": True}}, {}, r"faithful\[z\] is not in the run report"),
    ({"faithful": {"a": True}}, {"checks.yaml::faithful[a]": object()},
     "ran several samples and the report keeps no verdicts per sample"),
])
def test_labels_the_report_cannot_answer_are_refused(labels, repeats, message):
    with pytest.raises(InputError, match=message):
        calibrate_judges(OUTCOMES, MESSAGES, repeats, labels)


@pytest.mark.parametrize(("data", "message"), [
    ({"faithful": {"a": "pass"}}, "a labels file holds `labels:"),
    ({"labels": {"faithful": {"a": "yes"}}}, "labels.faithful.a is 'yes'; label each case pass or fail"),
    ({"labels": {"faithful": []}}, "labels.faithful must map case ids to pass or fail"),
    ({"labels": {"faithful": {"a": "pass"}}, "recording": 3}, "recording must be"),
])
def test_a_bad_labels_file_is_one_line(data, message):
    with pytest.raises(InputError, match=message):
        parse_labels(data, "judge_labels.yaml")


def test_labels_read_pass_fail_and_booleans():
    assert parse_labels({"labels": {"c": {"a": "pass", "b": "fail", "d": True}}, "recording": "r.json"}, "f") == (
        {"c": {"a": True, "b": False, "d": True}}, "r.json")


def _judges(verdicts: dict[str, list[str | None]], passed: dict[str, list[bool]], repeats: int) -> dict:
    import msgspec

    from evalkit.records.report import JudgedCheck

    block = {"kind": "faithfulness", "repeats": repeats, "self_agreement": None, "flips": [],
             "verdicts": {case: {"0": v} for case, v in verdicts.items()},
             "passed": {case: {"0": p} for case, p in passed.items()}}
    return {"faithful": msgspec.convert(block, JudgedCheck)}


def test_level_labels_get_weighted_kappa_over_every_repeat_of_sample_zero():
    from evalkit.judging.agreement import weighted_kappa

    verdicts = {"a": ["score 5", "score 5", "score 4"], "b": ["score 2", "score 3", "score 2"],
                "c": ["score 1", "score 1", "score 1"], "d": ["score 4", None, "score 4"]}
    passed = {case: [v is not None and int(v[-1]) >= 4 for v in levels] for case, levels in verdicts.items()}
    labels = {"faithful": {"a": 5, "b": 2, "c": 2, "d": 4}}
    outcomes = {**OUTCOMES, "checks.yaml::faithful[c]": "failed", "checks.yaml::faithful[d]": "passed"}
    result = calibrate_judges(outcomes, {}, {"checks.yaml::faithful[a]": object()}, labels,
                              judges=_judges(verdicts, passed, 3), weights="linear")
    faithful = result["checks"]["faithful"]
    said = [5, 5, 4, 2, 3, 2, 1, 1, 1, 4, 4]  # d's unread answer is left out of the pairs
    truth = [5, 5, 5, 2, 2, 2, 2, 2, 2, 4, 4]
    assert faithful["judged"] == len(said)
    assert faithful["kappa"] == weighted_kappa(said, truth, "linear")
    assert faithful["kappa_kind"] == "weighted-linear" and result["weights"] == "linear"
    same = sum(a == b for a, b in zip(said, truth, strict=True))
    assert faithful["agreement"] == pytest.approx(same / len(said), abs=1e-6)
    assert [d["case"] for d in faithful["disagreements"]] == ["a", "b", "c"]
    assert faithful["disagreements"][2]["verdicts"] == [1, 1, 1]
    assert "weighted-linear, over levels" in render_judges(result)


def test_pass_fail_labels_with_repeats_count_each_of_the_judges_verdicts():
    verdicts = {"a": ["score 5", "score 3"], "b": ["score 2", "score 2"]}
    passed = {"a": [True, False], "b": [False, False]}
    result = calibrate_judges(OUTCOMES, {}, {}, {"faithful": {"a": True, "b": False}},
                              judges=_judges(verdicts, passed, 2))
    faithful = result["checks"]["faithful"]
    # a: pass/pass TP and fail/pass FN; b: two fail/fail TN
    assert {k: faithful[k] for k in ("tp", "fp", "tn", "fn", "judged")} == {"tp": 1, "fp": 0, "tn": 2, "fn": 1,
                                                                            "judged": 4}
    assert faithful["kappa"] == cohen_kappa([True, False, False, False], [True, True, False, False])
    assert faithful["disagreements"] == [{"case": "a", "label": "pass", "check": "passed",
                                          "verdicts": ["pass", "fail"], "message": None}]


@pytest.mark.parametrize(("labels", "judges", "message"), [
    ({"faithful": {"a": 4}}, None, "labels.faithful are levels, and the run report keeps no verdicts"),
    ({"faithful": {"a": 4}}, {"a": ["pass"]}, "judge gives pass, not scores; label it pass or fail"),
])
def test_level_labels_the_report_cannot_answer_are_refused(labels, judges, message):
    block = _judges(judges, {case: [True] for case in judges}, 1) if judges else None
    with pytest.raises(InputError, match=message):
        calibrate_judges(OUTCOMES, {}, {}, labels, judges=block)


def test_labels_read_levels_and_refuse_a_check_mixing_both():
    labels, _ = parse_labels({"labels": {"faithful": {"a": 4, "b": 1}, "rubric": {"a": "pass"}}}, "l.yaml")
    assert labels == {"faithful": {"a": 4, "b": 1}, "rubric": {"a": True}}
    with pytest.raises(InputError, match="l.yaml: labels.faithful mixes pass/fail with levels"):
        parse_labels({"labels": {"faithful": {"a": 4, "b": "fail"}}}, "l.yaml")
