"""Release evidence over graded cases, paired by case id between baseline and candidate. Pure.

Cases of a candidate-program suite carry a `grade` block (evalkit.programs.grade): task, quality and safety
verdicts, a pending review, or unscored with a reason. Here they are paired with the baseline's, and the paired
cluster bootstrap of task success is run; the rules that block on them are in evalkit.gate.rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.core.policy import PairedRule
from evalkit.gate.stats import PairedStatistics, paired_cluster_bootstrap
from evalkit.records.report_reader import RunReport

__all__ = ["Grades", "grades", "failures", "paired_bootstrap", "scored", "why_unpaired"]


@dataclass(frozen=True)
class Grades:
    """Each side's grade per case id (the candidate's in its case order) and each candidate case's group."""

    before: dict[str, dict[str, Any]]
    after: dict[str, dict[str, Any]]
    groups: dict[str, str]

    @property
    def paired(self) -> list[str]:
        """Candidate cases scored on both sides."""
        return [cid for cid, g in self.after.items() if scored(g) and scored(self.before.get(cid))]


def grades(baseline: RunReport, candidate: RunReport) -> Grades:
    return Grades({str(c.get("id")): _grade(c) for c in baseline.cases},
                  {str(c.get("id")): _grade(c) for c in candidate.cases},
                  {str(c.get("id")): str(c.get("group", c.get("id"))) for c in candidate.cases})


def paired_bootstrap(rule: PairedRule, graded: Grades) -> PairedStatistics | None:
    """The paired cluster bootstrap of candidate-minus-baseline task success, None without scored pairs."""
    paired = graded.paired
    if not paired:
        return None
    return paired_cluster_bootstrap(
        [graded.groups[cid] for cid in paired], [bool(graded.before[cid]["task_pass"]) for cid in paired],
        [bool(graded.after[cid]["task_pass"]) for cid in paired],
        seed=rule.seed, resamples=rule.resamples, confidence=rule.confidence)


def failures(graded: Grades) -> tuple[dict[str, Any], ...]:
    """Scored candidate cases failing task, quality or safety: id, reasons on both sides, and whether new."""
    before = graded.before
    return tuple(
        {"id": cid, "candidate_reason": g.get("reason"), "baseline_reason": (before.get(cid) or {}).get("reason"),
         "new": bool((before.get(cid) or {}).get("task_pass") and (before.get(cid) or {}).get("quality_pass"))}
        for cid, g in graded.after.items()
        if scored(g) and not (g.get("task_pass") and g.get("quality_pass") and g.get("safety_pass")))


def _grade(case: Mapping[str, Any]) -> dict[str, Any]:
    grade = case.get("grade")
    if isinstance(grade, Mapping):
        return dict(grade)
    return {"status": "unscored", "reason": "no grade recorded"}


def scored(grade: Mapping[str, Any] | None) -> bool:
    return grade is not None and grade.get("status") == "scored"


def why_unpaired(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    if not scored(after):
        return f"candidate unscored ({after.get('reason')})"
    if before is None:
        return "missing from the baseline"
    return f"baseline unscored ({before.get('reason')})"
