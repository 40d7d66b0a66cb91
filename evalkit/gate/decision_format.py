"""`decision.json`'s format, as one typed model: the gate's decision with its findings and evidence.

Written by `evalkit gate --out`, `evalkit adapt --out` and `evalkit run` (beside the run's report), from
Decision.to_json and the evidence (evalkit.cli.evidence); read back by `history`, `policy-diff` and the run's own
pages through `read_decision`. The JSON Schema in docs/reference/schemas.md is generated from here.

Versioned by `format`. The files written before the field existed (version 0) hold the same fields without it;
`read_decision` reads them as version 1, which is their migration: nothing else changed between the two.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

__all__ = ["FORMAT", "DecisionFile", "FindingEntry", "decision_schema", "read_decision"]

FORMAT: Final = "evalkit-decision/1"


class FindingEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One rule's finding (evalkit.gate.findings.Finding)."""

    rule: str
    effect: Literal["block", "review", "warn"]
    message: str
    tests: list[str] = []
    figures: dict[str, Any] = {}
    subject: str = ""


class DecisionFile(msgspec.Struct, kw_only=True):
    """A decision as `decision.json` holds it. Fields beyond these (a newer evalkit's) are kept unread."""

    format: Literal["evalkit-decision/1"] = FORMAT
    decision: Literal["go", "review", "block", "incomparable"]
    findings: list[FindingEntry] = []
    reasons: list[str] = []
    review_reasons: list[str] = []
    warnings: list[str] = []
    changed: dict[str, list[Any]] = {}
    pass_rate: float | None = None
    ran_pass_rate: float | None = None
    tests: int = 0
    passed: int = 0
    regressed: list[str] = []
    fixed: list[str] = []
    new_failing: list[str] = []
    critical_failures: list[str] = []
    missing_critical: list[str] = []
    outcomes: dict[str, int] = {}
    messages: dict[str, str] = {}
    metrics: dict[str, Any] = {}
    statistics: dict[str, Any] | None = None
    failures: list[dict[str, Any]] = []
    repeats: dict[str, Any] | None = None
    detectable: dict[str, Any] | None = None
    """The smallest drops the comparison could have detected (evalkit.gate.headline): `suite`, the headline
    metric's, and with repeats `tests`, each repeated test's; absent for runs that were not compared."""
    baseline: str | None = None
    """The baseline a run's own decision was made against (`evalkit run`'s decision.json)."""
    evidence: dict[str, Any] = {}
    """What the decision was made from: the policy's identity, each report's SHA-256, evalkit's version."""


def read_decision(data: Any, where: str) -> DecisionFile:
    """The decision in parsed `decision.json` data, of any version; ValueError naming `where` when it is none."""
    if isinstance(data, dict) and "format" not in data:
        data = {**data, "format": FORMAT}  # version 0: the same fields, before they carried a format
    try:
        return msgspec.convert(data, DecisionFile)
    except msgspec.ValidationError as error:
        raise ValueError(f"{where}: not a decision of format {FORMAT} ({error})") from None


def decision_schema() -> dict[str, Any]:
    """The JSON Schema of `decision.json` (docs/reference/schemas.md)."""
    return msgspec.json.schema(DecisionFile)
