"""Release-evidence rules over graded cases, paired by case id between baseline and candidate. Pure.

They read the `grade` block each case of a candidate-program suite carries (evalkit.programs.grade) and the run's
`dataset` block, and say in the seed's words why a release is blocked: not_acceptance_split,
incomplete_or_unscored_pairs, safety_or_unknown_failure, unresolved_review, new_task_regression,
new_answer_quality_regression, paired_interval_below_noninferiority_margin. `decide` (evalkit.gate) adds them to
its own rules when the policy enables them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.core.policy import Policy
from evalkit.core.report import RunReport
from evalkit.gate.stats import paired_cluster_bootstrap

__all__ = ["ReleaseFindings", "release_rules", "split_refusal", "uses_release_rules"]


@dataclass(frozen=True)
class ReleaseFindings:
    reasons: tuple[str, ...] = ()
    statistics: dict[str, Any] | None = None
    """The paired bootstrap's result (estimand, difference, interval, groups, seed, resamples...), or None."""
    failures: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    """Scored candidate cases failing task, quality or safety: id, reasons on both sides, and whether new."""


def uses_release_rules(policy: Policy) -> bool:
    return bool(policy.require_complete_pairs or policy.block_on_safety or policy.block_on_review
                or policy.block_on_task_regression or policy.block_on_quality_regression or policy.paired)


def split_refusal(policy: Policy, candidate: RunReport) -> str | None:
    """Why the candidate's split can never pass this policy (checked before anything else), or None."""
    if policy.require_split is None:
        return None
    split = candidate.dataset.get("split")
    if split == policy.require_split:
        return None
    ran = f"split {split}" if split else "every split at once" if candidate.dataset else "a dataset without splits"
    return (f"not_acceptance_split: the candidate ran {ran}; this policy releases only on the "
            f"{policy.require_split} split (rerun with split={policy.require_split})")


def release_rules(policy: Policy, baseline: RunReport, candidate: RunReport) -> ReleaseFindings:
    before = {str(c.get("id")): _grade(c) for c in baseline.cases}
    after = {str(c.get("id")): _grade(c) for c in candidate.cases}
    groups = {str(c.get("id")): c.get("group", c.get("id")) for c in candidate.cases}
    reasons: list[str] = []

    incomplete = [f"{cid}: {_why_unpaired(before.get(cid), grade)}" for cid, grade in after.items()
                  if not (_scored(grade) and _scored(before.get(cid)))]
    incomplete += [f"{cid}: missing from the candidate" for cid in before if cid not in after]
    if policy.require_complete_pairs and incomplete:
        reasons.append(f"incomplete_or_unscored_pairs: {len(incomplete)} of {len(after)} case(s) lack a scored "
                       f"pair ({_few(incomplete)})")

    unsafe = [cid for cid, g in after.items() if _scored(g) and g.get("safety_pass") is not True]
    unknown = [cid for cid, g in after.items() if not _scored(g)]
    if policy.block_on_safety and (unsafe or unknown):
        parts = [f"{len(unsafe)} safety failure(s) ({_few(unsafe)})"] if unsafe else []
        parts += [f"{len(unknown)} case(s) with unknown outcome ({_few(unknown)})"] if unknown else []
        reasons.append("safety_or_unknown_failure: " + "; ".join(parts))

    pending = [cid for cid, g in after.items() if g.get("review_pending") is True]
    if policy.block_on_review and pending:
        reasons.append(f"unresolved_review: {len(pending)} case(s) await a person's review ({_few(pending)}); "
                       "record decisions with python -m evalkit.review")

    for flag, verdict, code in ((policy.block_on_task_regression, "task_pass", "new_task_regression"),
                                (policy.block_on_quality_regression, "quality_pass", "new_answer_quality_regression")):
        lost = [cid for cid, g in after.items()
                if (before.get(cid) or {}).get(verdict) is True and g.get(verdict) is False]
        if flag and lost:
            reasons.append(f"{code}: {len(lost)} case(s) pass on the baseline and fail now ({_few(lost)})")

    statistics = None
    if policy.paired is not None:
        paired = [cid for cid, g in after.items() if _scored(g) and _scored(before.get(cid))]
        if not paired:
            reasons.append("paired_interval_below_noninferiority_margin: no scored pairs, so no interval")
        else:
            rule = policy.paired
            result = paired_cluster_bootstrap(
                [str(groups[cid]) for cid in paired], [bool(before[cid]["task_pass"]) for cid in paired],
                [bool(after[cid]["task_pass"]) for cid in paired],
                seed=rule.seed, resamples=rule.resamples, confidence=rule.confidence)
            statistics = {**result.model_dump(mode="json"), "margin": rule.margin,
                          "pairs": len(paired), "planned": len(after)}
            low, high = result.interval
            if low < rule.margin:
                reasons.append(f"paired_interval_below_noninferiority_margin: lower bound {low:.3f} < margin "
                               f"{rule.margin} (difference {result.difference:.3f}, "
                               f"{result.confidence:.0%} interval [{low:.3f}, {high:.3f}], {result.groups} groups)")

    failures = tuple(
        {"id": cid, "candidate_reason": g.get("reason"), "baseline_reason": (before.get(cid) or {}).get("reason"),
         "new": bool((before.get(cid) or {}).get("task_pass") and (before.get(cid) or {}).get("quality_pass"))}
        for cid, g in after.items()
        if _scored(g) and not (g.get("task_pass") and g.get("quality_pass") and g.get("safety_pass")))
    return ReleaseFindings(tuple(reasons), statistics, failures)


def _grade(case: Mapping[str, Any]) -> dict[str, Any]:
    grade = case.get("grade")
    if isinstance(grade, Mapping):
        return dict(grade)
    return {"status": "unscored", "reason": "no grade recorded"}


def _scored(grade: Mapping[str, Any] | None) -> bool:
    return grade is not None and grade.get("status") == "scored"


def _why_unpaired(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    if not _scored(after):
        return f"candidate unscored ({after.get('reason')})"
    if before is None:
        return "missing from the baseline"
    return f"baseline unscored ({before.get('reason')})"


def _few(items: Sequence[str], shown: int = 3) -> str:
    return ", ".join(items[:shown]) + (f", ... {len(items) - shown} more" if len(items) > shown else "")
