"""A journal line (`recordings/SUITE/*.json.journal.jsonl`): one finished call of a live run and its recording
entry, or one tool result of an agent's step, appended as it ends so that a killed run loses at most the calls in
flight (evalkit.run.journal writes and reads the file). The JSON Schema in docs/reference/schemas.md is generated
from here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from evalkit.records.recording import Entry, ToolEntry

__all__ = ["JournalLine"]


class JournalLine(BaseModel):
    """One line of a journal: a finished call and its recording entry. A journal has no format of its own: its
    entries are its recording's (evalkit.records.recording.Entry), so it changes exactly when the recording's
    format does, and a journal left by an older format is refused line by line, never half read."""

    model_config = ConfigDict(extra="forbid")

    call_id: str
    """The call's id; for a tool result, its key in the recording's `tools` (`<step call id>|<tool call id>`)."""
    entry: Entry | None = None
    tool: ToolEntry | None = None
    """An agent's tool result (the recording's ToolEntry) in place of a call's `entry`; a call's line has no
    `tool`, so a journal of calls only reads, and is written, as before agents existed."""

    @model_validator(mode="after")
    def _one_kind(self) -> JournalLine:
        if (self.entry is None) == (self.tool is None):
            raise ValueError("a journal line holds exactly one of 'entry' and 'tool'")
        return self
