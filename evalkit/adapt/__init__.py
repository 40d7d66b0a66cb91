"""Adapters: reports written by other eval tools, turned into run reports the gate can compare.

`evalkit adapt SOURCE BASELINE CANDIDATE [--policy P] [--out DIR]` reads another tool's output with
the SOURCE's adapter (evalkit/adapt/<source>.py) into a neutral run (evalkit/adapt/neutral.py) and gates it
(evalkit/adapt/framework.py, whose docstring says how a source plugs in). `evalkit adapt docs-stage
BASELINE CANDIDATE --out RESULT` gates two saved documentation stage reports (evalkit/adapt/docs_stage.py).
The command itself is evalkit/cli/adapt.py.
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
