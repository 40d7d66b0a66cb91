"""A judge calibration: how far a run's judged checks agree with people's labels of the same replies, bound to the
judge that made those verdicts (its name and `judge_sha`, the fingerprint of its settings).

`evalkit calibrate suite=NAME --report REPORT --out FILE` writes it (evalkit.programs.calibrate); the gate reads it
for a policy's `min_judge_kappa` (evalkit.gate.calibration). Where the gate looks for it: CALIBRATION_FILE beside
the baseline report, so the calibration travels with the baseline it was blessed with and is reviewed like it.
A calibration is about one judge: another judge model, prompt options or `judge.repeats` is another fingerprint,
and its verdicts are not calibrated by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from evalkit.core.errors import InputError, describe_validation
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_json

__all__ = ["CALIBRATION_FILE", "CheckCalibration", "JudgeCalibration", "JudgeFingerprint", "KappaKind",
           "read_calibration"]

CALIBRATION_FILE = "judge_calibration.json"
"""The name the gate looks for beside the baseline report."""

KappaKind = Literal["cohen", "weighted-linear", "weighted-quadratic"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class JudgeFingerprint(_Record):
    """The judge whose verdicts were calibrated, as the run report's eval key names it."""

    model: str | None
    """`judge_model` of the calibrated run."""
    sha: str | None
    """`judge_sha` of the calibrated run: its options, structured-output dialect and `judge.repeats` above 1."""

    def shown(self) -> str:
        return f"{self.model}@{self.sha}"


class CheckCalibration(_Record):
    """One judged check against the labels."""

    judged: int
    """Labelled verdicts set against a label (with `judge.repeats=K`, K per labelled reply)."""
    agreement: float | None
    """Exact agreement: the share of verdicts equal to their label (pass/fail, or the level)."""
    kappa: float | None
    """Agreement beyond chance: Cohen's kappa over pass/fail, or weighted kappa over levels (`kappa_kind`);
    None where chance agreement is total."""
    kappa_kind: KappaKind = "cohen"
    tp: int | None = None
    fp: int | None = None
    tn: int | None = None
    fn: int | None = None
    false_positive_rate: float | None = None
    disagreements: list[dict[str, JsonValue]] = []
    not_judged: list[dict[str, JsonValue]] = []


class JudgeCalibration(_Record):
    """A calibration file: the judge it is about and each labelled check's agreement with people."""

    kind: str
    positive_class: str
    judge: JudgeFingerprint | None = None
    """None in calibrations written before evalkit recorded the judge: they are bound to no judge, and the gate
    treats them as another judge's."""
    report: str | None = None
    """The run report whose verdicts were calibrated."""
    report_sha256: str | None = None
    weights: str | None = None
    """How weighted kappa weighed level disagreements (`linear`, `quadratic`); pass/fail checks use Cohen's."""
    checks: dict[str, CheckCalibration]


def read_calibration(path: Path) -> JudgeCalibration:
    """The calibration at `path`; a file that is not one is refused in one line naming it."""
    data = parse_json(read_text(path, "judge calibration"), str(path), "judge calibration")
    try:
        return JudgeCalibration.model_validate(data)
    except ValidationError as error:
        raise InputError(describe_validation(error, JudgeCalibration, str(path)) + "; a judge calibration is "
                         "written by evalkit calibrate suite=NAME --report REPORT --out FILE") from None
