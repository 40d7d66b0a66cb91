"""`decision.json`'s model moved to evalkit.records.decision; these names stay importable from here for the code
and tests written against them."""

from __future__ import annotations

from evalkit.records.decision import FORMAT, DecisionFile, FindingEntry, decision_schema, read_decision

__all__ = ["FORMAT", "DecisionFile", "FindingEntry", "decision_schema", "read_decision"]
