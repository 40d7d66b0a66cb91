"""The `decision.json` saved beside a run's report, read for what it says of that run (its decision, the baseline
it was gated against, the policy it was decided under) by the commands that list or re-decide runs. A file that is
missing or cannot be read says nothing; it never fails the command that asked."""

from __future__ import annotations

from pathlib import Path

from evalkit.core.errors import EvalkitError
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_json
from evalkit.records.decision import DecisionFile, read_decision

__all__ = ["saved_decision_field", "saved_decision_policy"]


def saved_decision_field(report_path: Path, name: str) -> str | None:
    """A text field (`decision`, `baseline`) of the `decision.json` saved beside a run's report; None when there is
    none, it cannot be read, or the field is not a non-empty text (callers show what they can, never fail on it)."""
    decision = _saved_decision(report_path)
    value = getattr(decision, name, None)
    return value if isinstance(value, str) and value else None


def saved_decision_policy(report_path: Path) -> tuple[str, str] | None:
    """The name and SHA-256 of the policy the `decision.json` beside a run's report was decided under (its
    `evidence.policy`); None when there is no such file, it cannot be read, or it does not say (an older one)."""
    decision = _saved_decision(report_path)
    if decision is None or decision.evidence is None:
        return None
    policy = decision.evidence.policy
    return (policy.name, policy.sha256) if policy.name and policy.sha256 else None


def _saved_decision(report_path: Path) -> DecisionFile | None:
    path = report_path.with_name("decision.json")
    if not path.is_file():
        return None
    try:
        return read_decision(parse_json(read_text(path, "decision"), str(path), "decision"), str(path))
    except (EvalkitError, ValueError):
        return None
