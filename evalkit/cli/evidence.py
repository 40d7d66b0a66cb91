"""What a decision was made from, for `decision.json` and `decision.md`: the policy's identity, the SHA-256 and
eval key of both reports, and evalkit's version. Computed at the command's edge; `decide()` never sees it.

A reader can check every part: `sha256sum` of each report file, and the policy's hash is
`evalkit.core.policy.policy_sha256` (SHA-256 of the validated policy as canonical JSON, defaults filled in), so
the same rules hash alike whether they came from a file, a composed config option or command-line overrides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.core.errors import EvalkitError
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_json
from evalkit.core.policy import Policy, policy_sha256
from evalkit.core.report import RunReport
from evalkit.core.version import __version__
from evalkit.gate.decision_format import DecisionFile, read_decision

__all__ = ["evidence", "policy_identity", "report_identity", "saved_decision_field", "saved_decision_policy"]


def policy_identity(policy: Policy, *, fallback_name: str, source: str, chosen_by: str,
                    overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The policy's name (its own `name`, else the option or file it came from), `version`, where it was read
    from (a file, or `conf/policy/<name>.yaml` plus command-line `policy.*` overrides), why it was the one
    used, and the SHA-256 of its content."""
    return {"name": policy.name or fallback_name, "version": policy.version, "source": source,
            "overrides": list(overrides), "chosen_by": chosen_by, "sha256": policy_sha256(policy)}


def report_identity(where: str, sha256: str, report: RunReport) -> dict[str, Any]:
    """A compared report: where it was read or written, the SHA-256 of its bytes, its eval key."""
    return {"path": where, "sha256": sha256, "eval": dict(sorted(report.eval.items()))}


def evidence(policy: Mapping[str, Any], baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, Any]:
    return {"policy": dict(policy), "baseline": dict(baseline), "candidate": dict(candidate),
            "evalkit_version": __version__}


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
    policy = decision.evidence.get("policy") if decision is not None else None
    if not isinstance(policy, Mapping):
        return None
    name, sha = policy.get("name"), policy.get("sha256")
    return (name, sha) if isinstance(name, str) and isinstance(sha, str) and name and sha else None


def _saved_decision(report_path: Path) -> DecisionFile | None:
    path = report_path.with_name("decision.json")
    if not path.is_file():
        return None
    try:
        return read_decision(parse_json(read_text(path, "decision"), str(path), "decision"), str(path))
    except (EvalkitError, ValueError):
        return None
