"""Judges earn their vote at the gate: a judged check whose judge flips on its own repeats is reviewed, never a
regression on its own (`judge_flips`), and a policy's `min_judge_kappa` caps the findings of a check without a
calibration at its floor for this judge (evalkit.gate.calibration). Reports and calibrations are built here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import KEY

from evalkit.core.errors import InputError
from evalkit.core.policy import Policy, policy_from_mapping, policy_sha256
from evalkit.gate.calibration import Calibration
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict
from evalkit.gate.findings import Effect, Finding
from evalkit.records.calibration import JudgeCalibration, read_calibration
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.run.baseline import calibration_beside

JUDGE = {"judge_model": "fake-judge", "judge_sha": "j1"}
CASES = ("refund", "zip", "hours")


def _report(outcomes: dict[str, str], flips: dict[str, list[list[str]]] | None = None,
            other: dict[str, str] | None = None, **key: str) -> RunReport:
    """A run report with a judged check `faithful` over CASES (its outcome per case), `flips`: case -> per sample
    the judge's verdicts where they flipped, and `other` a plain check's outcomes."""
    tests = [{"nodeid": f"checks.yaml::faithful[{case}]", "outcome": o} for case, o in outcomes.items()]
    tests += [{"nodeid": f"checks.yaml::label[{case}]", "outcome": o} for case, o in (other or {}).items()]
    flipped = [{"case": case, "test": f"checks.yaml::faithful[{case}]", "samples": [0],
                "verdicts": {"0": levels[0]}} for case, levels in (flips or {}).items()]
    judges = {"faithful": {"kind": "faithfulness", "repeats": 3, "self_agreement": None, "flips": flipped,
                           "verdicts": {case: {"0": ["score 4"] * 3} for case in outcomes}}}
    return report_from_mapping({"eval": {**KEY, **JUDGE, **key}, "tests": tests, "judges": judges}, "report")


def _rule(findings: tuple[Finding, ...], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


PASSING = dict.fromkeys(CASES, "passed")


def test_a_flipping_judge_calls_for_review_naming_check_and_case_and_is_no_regression() -> None:
    flips = {"zip": [["score 4", "score 2", "score 4"]]}
    candidate = _report(PASSING | {"zip": "failed"}, flips)
    decision = decide(Policy(), _report(PASSING), candidate)
    assert decision.decision is Verdict.REVIEW
    assert _rule(decision.findings, "regression") == [] and decision.regressed == ()
    [flip] = _rule(decision.findings, "judge_flips")
    assert flip.effect is Effect.REVIEW and flip.tests == ("checks.yaml::faithful[zip]",)
    assert flip.figures["cases"] == ["zip"] and flip.subject == "faithful"
    assert "check faithful" in flip.message and "zip: score 4/score 2/score 4" in flip.message
    # a flip on a passing case is reviewed too: the judge is not sure of it either
    assert decide(Policy(), _report(PASSING), _report(PASSING, flips)).decision is Verdict.REVIEW


def test_judge_flips_block_or_ignore() -> None:
    flips = {"zip": [["pass", "fail", "fail"]]}
    base, candidate = _report(PASSING), _report(PASSING | {"zip": "failed"}, flips)
    blocked = decide(Policy(judge_flips="block"), base, candidate)
    assert blocked.decision is Verdict.BLOCK and _rule(blocked.findings, "regression") == []
    assert _rule(blocked.findings, "judge_flips")[0].effect is Effect.BLOCK
    ignored = decide(Policy(judge_flips="ignore"), base, candidate)  # gated on its majority, like any test
    assert ignored.decision is Verdict.BLOCK and _rule(ignored.findings, "judge_flips") == []
    assert _rule(ignored.findings, "regression")[0].tests == ("checks.yaml::faithful[zip]",)


def _calibration(kappa: float | None, judge: dict[str, str] | None = None, check: str = "faithful") -> Calibration:
    found = JudgeCalibration.model_validate({
        "kind": "human labels", "positive_class": "labelled pass",
        "judge": judge if judge is not None else {"model": JUDGE["judge_model"], "sha": JUDGE["judge_sha"]},
        "checks": {check: {"judged": 40, "agreement": 0.8, "kappa": kappa, "kappa_kind": "weighted-quadratic"}}})
    return Calibration("runs/judge_calibration.json", found)


REGRESSED = PASSING | {"zip": "failed"}


@pytest.mark.parametrize(("calibration", "why", "said"), [
    (None, "missing", "has no calibration against people (this command reads no calibration)"),
    (Calibration("runs/judge_calibration.json"), "missing",
     "has no calibration against people (runs/judge_calibration.json not found)"),
    (_calibration(0.8, check="other"), "missing", "runs/judge_calibration.json calibrates other"),
    (_calibration(0.41), "below_floor", "its calibrated kappa (weighted-quadratic, 40 verdicts) is 0.410, below "
                                        "the policy's min_judge_kappa 0.6"),
    (_calibration(None), "below_floor", "is not measurable"),
    (_calibration(0.9, {"model": "fake-judge", "sha": "j0"}), "other_judge",
     "calibrates judge fake-judge@j0, and this run's judge is fake-judge@j1"),
])
def test_an_uncalibrated_judge_is_capped_at_review_and_named(calibration: Calibration | None, why: str,
                                                             said: str) -> None:
    policy = Policy(min_judge_kappa=0.6, critical=("faithful",))
    decision = decide(policy, _report(PASSING), _report(REGRESSED), calibration)
    assert decision.decision is Verdict.REVIEW
    [named] = _rule(decision.findings, "judge_calibration")
    assert named.effect is Effect.REVIEW and named.subject == "faithful" and named.figures["why"] == why
    assert said in named.message
    assert {f.rule: f.effect for f in decision.findings} == {
        "regression": Effect.REVIEW, "critical": Effect.REVIEW, "judge_calibration": Effect.REVIEW}
    assert "capped at review" in _rule(decision.findings, "critical")[0].message


def test_a_calibration_at_the_floor_for_this_judge_lets_the_check_block() -> None:
    policy = Policy(min_judge_kappa={"faithful": 0.6})
    decision = decide(policy, _report(PASSING), _report(REGRESSED), _calibration(0.6))
    assert decision.decision is Verdict.BLOCK
    assert _rule(decision.findings, "judge_calibration") == []
    assert _rule(decision.findings, "regression")[0].effect is Effect.BLOCK


def test_the_cap_leaves_other_checks_blocking() -> None:
    base, candidate = _report(PASSING, other=PASSING), _report(REGRESSED, other=REGRESSED)
    # two regressions, faithful[zip] (uncalibrated) and label[zip]: only the uncalibrated one is capped, so with
    # none allowed label[zip] alone blocks ...
    strict = decide(Policy(min_judge_kappa=0.6), base, candidate)
    assert strict.decision is Verdict.BLOCK and _rule(strict.findings, "regression")[0].effect is Effect.BLOCK
    # ... and with one allowed, only the capped regression is beyond it: review, naming how many were capped
    lenient = decide(Policy(min_judge_kappa=0.6, max_regressions=1), base, candidate)
    assert lenient.decision is Verdict.REVIEW
    regression = _rule(lenient.findings, "regression")[0]
    assert regression.effect is Effect.REVIEW and regression.figures["capped"] == 1
    assert "1 of them are of faithful, whose judge is not calibrated" in regression.message


def test_floors_per_check_and_the_policys_identity() -> None:
    assert Policy(min_judge_kappa={"faithful": 0.7}).kappa_floor("faithful") == 0.7
    assert Policy(min_judge_kappa={"faithful": 0.7}).kappa_floor("other") is None
    assert Policy(min_judge_kappa=0.5).kappa_floor("any") == 0.5
    with pytest.raises(Exception, match="a kappa floor is a number from -1 to 1"):
        policy_from_mapping({"min_judge_kappa": {"faithful": 1.5}}, "p.yaml")
    # policies that leave the new fields alone keep their identity
    assert policy_sha256(Policy()) == policy_sha256(policy_from_mapping({"judge_flips": "review"}, "p"))
    assert policy_sha256(Policy()) != policy_sha256(Policy(min_judge_kappa=0.6))


def test_the_calibration_is_read_beside_the_baseline(tmp_path: Path) -> None:
    baseline = tmp_path / "runs/baseline.json"
    assert calibration_beside(baseline) == Calibration(str(tmp_path / "runs/judge_calibration.json"))
    (tmp_path / "runs").mkdir()
    written: dict[str, Any] = {"kind": "k", "positive_class": "p", "judge": {"model": "m", "sha": "s"},
                               "checks": {"faithful": {"judged": 3, "agreement": 1.0, "kappa": 1.0}}}
    import json

    (tmp_path / "runs/judge_calibration.json").write_text(json.dumps(written))
    found = calibration_beside(baseline).found
    assert found is not None and found.checks["faithful"].kappa == 1.0
    (tmp_path / "runs/judge_calibration.json").write_text(json.dumps({**written, "checks": {"f": {"kappa": 1}}}))
    with pytest.raises(InputError, match=r"judge_calibration.json: .*missing key 'checks.f.judged'.*evalkit "
                                         "calibrate"):
        read_calibration(tmp_path / "runs/judge_calibration.json")


def test_policy_diff_decides_each_pair_with_the_calibration_beside_its_baseline() -> None:
    from evalkit.gate.policy_change import Pair, decide_again
    from evalkit.render.policy_diff import render_policy_diff

    base, candidate = _report(PASSING), _report(REGRESSED)
    pairs = [Pair("runs/baseline.json", "a.json", base, candidate, _calibration(0.9)),
             Pair("runs/baseline.json", "b.json", base, candidate, _calibration(0.3))]
    old, new = Policy(), Policy(min_judge_kappa=0.6)
    text = render_policy_diff("old", old, "new", new, decide_again(old, new, pairs), "two pairs", [])
    # calibrated at 0.9: still a block under the new policy; at 0.3: capped to review, and said why
    assert "**1 decision(s) change**" in text
    assert "b.json" in text and "below the policy's min_judge_kappa 0.6" in text


@pytest.mark.parametrize("floor", [0, 0.0, {"faithful": 0}])
def test_a_kappa_floor_of_zero_is_a_floor_not_off(floor: float | dict[str, float]) -> None:
    """0 is a kappa floor (better than chance), so a check with no calibration is still named: `min_judge_kappa`
    is off only when it is left out."""
    decision = decide(Policy(min_judge_kappa=floor), _report(PASSING), _report(REGRESSED), None)
    [named] = _rule(decision.findings, "judge_calibration")
    assert named.subject == "faithful" and decision.decision is Verdict.REVIEW
