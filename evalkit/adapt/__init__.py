"""Adapters: reports written by other eval tools, turned into run reports the gate can compare.

`python -m evalkit.adapt docs-stage BASELINE CANDIDATE --out RESULT` gates two saved documentation
stage reports (evalkit/adapt/docs_stage.py holds the rules; evalkit/adapt/__main__.py the command).
"""

from __future__ import annotations

from evalkit.adapt.docs_stage import (
    DOCS_STAGE_POLICY,
    DocsStageComparison,
    adapt_docs_stage,
    compare_docs_stages,
    parse_docs_stage,
)

__all__ = ["DOCS_STAGE_POLICY", "DocsStageComparison", "adapt_docs_stage", "compare_docs_stages", "parse_docs_stage"]
