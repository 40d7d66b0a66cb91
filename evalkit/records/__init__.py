"""evalkit's records: the typed models of what evalkit writes, one model per file format or part of one.

It holds the call contract (evalkit.records.call: messages, requests, replies, tools and tool calls), the
trajectory (evalkit.records.trajectory) and the labels file a reviewer exports from the run explorer
(evalkit.records.labels), decision.json (evalkit.records.decision), the recording (evalkit.records.recording),
its journal lines (evalkit.records.journal), the run input (evalkit.records.run_input) and the run report (its
format, evalkit.records.report; what the gate reads of it, evalkit.records.report_reader). Suites, adapters and
how-tos import these names from here. They are re-exported lazily, as in `evalkit/__init__.py`, so
`import evalkit.records` stays cheap; type checkers read them through the imports under TYPE_CHECKING.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalkit.records.call import (
        AudioPart,
        ContentPart,
        ImagePart,
        Message,
        NamedTool,
        Reply,
        Request,
        TextPart,
        Tool,
        ToolCall,
        ToolChoice,
        Usage,
    )
    from evalkit.records.decision import (
        DecisionFile,
        Evidence,
        FindingEntry,
        PolicyIdentity,
        ReportIdentity,
        read_decision,
    )
    from evalkit.records.journal import JournalLine
    from evalkit.records.labels import LABELS_FORMAT, Label, LabelsFile, LabelsHeader, read_labels
    from evalkit.records.recording import Entry, Failure, Provenance, Recording, ToolEntry
    from evalkit.records.report import Execution, RunReportFormat
    from evalkit.records.report_reader import RunReport
    from evalkit.records.run_input import CallInput, RunInput, SliceInput, SuiteInput
    from evalkit.records.trajectory import (
        MAX_TOOL_RESULT_CHARS,
        AssistantTurn,
        FinalAnswer,
        ModelCall,
        Step,
        ToolResult,
        Trajectory,
        UserTurn,
    )

__all__ = ["LABELS_FORMAT", "MAX_TOOL_RESULT_CHARS", "AssistantTurn", "AudioPart", "CallInput", "ContentPart",
           "DecisionFile", "Entry", "Evidence", "Execution", "Failure", "FinalAnswer", "FindingEntry", "ImagePart",
           "JournalLine", "Label", "LabelsFile", "LabelsHeader", "Message", "ModelCall", "NamedTool", "PolicyIdentity",
           "Provenance", "Recording", "Reply", "ReportIdentity", "Request", "RunInput", "RunReport", "RunReportFormat",
           "SliceInput", "Step", "SuiteInput", "TextPart", "Tool", "ToolCall", "ToolChoice", "ToolEntry", "ToolResult",
           "Trajectory", "Usage", "UserTurn", "read_decision", "read_labels"]

_MODULES = {
    "evalkit.records.call": ("AudioPart", "ContentPart", "ImagePart", "Message", "NamedTool", "Reply", "Request",
                             "TextPart", "Tool", "ToolCall", "ToolChoice", "Usage"),
    "evalkit.records.decision": ("DecisionFile", "Evidence", "FindingEntry", "PolicyIdentity", "ReportIdentity",
                                 "read_decision"),
    "evalkit.records.journal": ("JournalLine",),
    "evalkit.records.recording": ("Entry", "Failure", "Provenance", "Recording", "ToolEntry"),
    "evalkit.records.report": ("Execution", "RunReportFormat"),
    "evalkit.records.report_reader": ("RunReport",),
    "evalkit.records.run_input": ("CallInput", "RunInput", "SliceInput", "SuiteInput"),
    "evalkit.records.labels": ("LABELS_FORMAT", "Label", "LabelsFile", "LabelsHeader", "read_labels"),
    "evalkit.records.trajectory": ("MAX_TOOL_RESULT_CHARS", "AssistantTurn", "FinalAnswer", "ModelCall", "Step",
                                   "ToolResult", "Trajectory", "UserTurn"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit.records' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
