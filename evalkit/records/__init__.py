"""evalkit's records: the typed models of what evalkit writes, one model per file format or part of one.

This package holds the trajectory (evalkit.records.trajectory) and the labels file a reviewer exports from the
run explorer (evalkit.records.labels); the run report and the decision move in later. Suites, adapters and
how-tos import these names from here. They are re-exported lazily, as in `evalkit/__init__.py`, so
`import evalkit.records` stays cheap; type checkers read them through the imports under TYPE_CHECKING.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.records.labels import LABELS_FORMAT, Label, LabelsFile, LabelsHeader, read_labels
    from evalkit.records.trajectory import (
        MAX_TOOL_RESULT_CHARS,
        FinalAnswer,
        ModelCall,
        Step,
        ToolCall,
        ToolResult,
        Trajectory,
    )

__all__ = ["LABELS_FORMAT", "MAX_TOOL_RESULT_CHARS", "FinalAnswer", "Label", "LabelsFile", "LabelsHeader", "ModelCall",
           "Step", "ToolCall", "ToolResult", "Trajectory", "read_labels"]

_LABELS = ("LABELS_FORMAT", "Label", "LabelsFile", "LabelsHeader", "read_labels")
_WHERE = {name: "evalkit.records.labels" if name in _LABELS else "evalkit.records.trajectory" for name in __all__}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit.records' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
