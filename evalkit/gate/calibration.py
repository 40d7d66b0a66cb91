"""Judges earn their vote: which judged checks a policy's `min_judge_kappa` finds uncalibrated, and the cap that
keeps their findings at review. Pure: the calibration file is read at the edge (evalkit.cli) and handed in.

A judged check is calibrated when the calibration beside the baseline (evalkit.records.calibration) was made
with the candidate's judge (the same `judge_model` and `judge_sha`), covers the check, and measured a kappa at or
above the check's floor. Otherwise the check is uncalibrated for one of three reasons, each worded for the
reviewer: no calibration of it (`missing`), one for another judge fingerprint (`other_judge`), or one below the
floor (`below_floor`). An uncalibrated check's findings cannot block (`cap`), and the rule `judge_calibration`
calls for review naming it: its verdicts, passes included, are not yet known to mean what people mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalkit.core.policy import Policy
from evalkit.gate.findings import Effect, Finding
from evalkit.records.calibration import JudgeCalibration
from evalkit.records.report_reader import RunReport

__all__ = ["Calibration", "Uncalibrated", "cap", "check_of", "uncalibrated"]

Why = Literal["missing", "other_judge", "below_floor"]
_CAPPED_BY_RULE = ("regression", "judge_calibration")
"""Rules the cap leaves alone: `regression` counts capped tests apart itself, and the calibration rule is the
reason."""
_METRIC_RULES = ("metric_floor", "metric_drop", "unmeasurable")


@dataclass(frozen=True)
class Calibration:
    """What the gate was given: where it looked for a calibration, and what it found there (None: nothing)."""

    where: str
    found: JudgeCalibration | None = None


@dataclass(frozen=True)
class Uncalibrated:
    """A judged check whose findings are capped at review, and why."""

    check: str
    why: Why
    message: str
    figures: Mapping[str, Any]


def check_of(test: str) -> str:
    """The check a test belongs to: `checks.yaml::faithful[refund]` -> `faithful` (a hand-written test: its name)."""
    return test.rsplit("::", 1)[-1].split("[", 1)[0]


def uncalibrated(policy: Policy, candidate: RunReport, calibration: Calibration | None) -> dict[str, Uncalibrated]:
    """The judged checks `min_judge_kappa` asks to be calibrated and that are not, by check name: every judged
    check of the candidate for one floor, the named checks for floors per check."""
    if policy.min_judge_kappa is None:
        return {}
    named = policy.min_judge_kappa.keys() if isinstance(policy.min_judge_kappa, dict) else candidate.judges.keys()
    judge = candidate.eval.get("judge_model"), candidate.eval.get("judge_sha")
    out = {}
    for check in sorted(named):
        floor = policy.kappa_floor(check)
        assert floor is not None
        found = _why(check, floor, judge, calibration)
        if found is not None:
            out[check] = found
    return out


def _why(check: str, floor: float, judge: tuple[Any, Any], calibration: Calibration | None) -> Uncalibrated | None:
    where = calibration.where if calibration is not None else ""
    found = calibration.found if calibration is not None else None
    base = {"check": check, "floor": floor, "calibration": where or None}
    then = (f"its findings are capped at review until its judge is measured against people at kappa >= {floor:g} "
            f"(evalkit calibrate suite=NAME --report REPORT --out {where or 'BASELINE_FOLDER/judge_calibration.json'})")
    if found is None:
        looked = f"{where} not found" if where else "this command reads no calibration"
        return Uncalibrated(check, "missing", f"judge_calibration: check {check} has no calibration against "
                            f"people ({looked}); {then}", {**base, "why": "missing"})
    model, sha = judge
    if found.judge is None or (found.judge.model, found.judge.sha) != (model, sha):
        made = "no judge (written before calibrations named theirs)" if found.judge is None \
            else f"judge {found.judge.shown()}"
        return Uncalibrated(check, "other_judge", f"judge_calibration: check {check}: {where} calibrates {made}, "
                            f"and this run's judge is {model}@{sha} (another judge model, its options or "
                            f"judge.repeats): a new judge needs a new calibration; {then}",
                            {**base, "why": "other_judge", "calibrated": found.judge.shown() if found.judge else None,
                             "judge": f"{model}@{sha}"})
    measured = found.checks.get(check)
    if measured is None:
        return Uncalibrated(check, "missing", f"judge_calibration: check {check} has no calibration against "
                            f"people ({where} calibrates {', '.join(sorted(found.checks)) or 'no check'}); {then}",
                            {**base, "why": "missing"})
    if measured.kappa is None or measured.kappa < floor:
        shown = "not measurable (every verdict and label one level)" if measured.kappa is None \
            else f"{measured.kappa:.3f}"
        return Uncalibrated(check, "below_floor", f"judge_calibration: check {check}: its calibrated kappa "
                            f"({measured.kappa_kind}, {measured.judged} verdicts) is {shown}, below the policy's "
                            f"min_judge_kappa {floor:g}; {then}",
                            {**base, "why": "below_floor", "kappa": measured.kappa,
                             "kappa_kind": measured.kappa_kind, "judged": measured.judged})
    return None


def cap(findings: Iterable[Finding], capped: Mapping[str, Uncalibrated]) -> list[Finding]:
    """The findings with every block that concerns only uncalibrated checks (its tests', its metric's, its case's
    failed checks) turned into a review that says so; a block that concerns any other check stands, as it would
    fire on that check alone."""
    out = []
    for finding in findings:
        concerned = _checks(finding)
        if (capped and finding.effect is Effect.BLOCK and finding.rule not in _CAPPED_BY_RULE and concerned
                and concerned <= capped.keys()):
            finding = dataclasses.replace(
                finding, effect=Effect.REVIEW,
                message=f"{finding.message} (capped at review: the judge of {', '.join(sorted(concerned))} is not "
                        "calibrated, see judge_calibration)")
        out.append(finding)
    return out


def _checks(finding: Finding) -> set[str]:
    if finding.tests:
        return {check_of(test) for test in finding.tests}
    if finding.rule in _METRIC_RULES and finding.subject:
        return {finding.subject.split(".", 1)[0]} if "." in finding.subject else set()
    failed = finding.figures.get("failed_checks")
    return set(failed) if isinstance(failed, list) and failed else set()
