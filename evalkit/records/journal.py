"""A journal line (`recordings/SUITE/*.json.journal.jsonl`): one finished call of a live run and its recording
entry, appended as the call ends so that a killed run loses at most the calls in flight (evalkit.run.journal
writes and reads the file). The JSON Schema in docs/reference/schemas.md is generated from here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from evalkit.records.recording import Entry

__all__ = ["JournalLine"]


class JournalLine(BaseModel):
    """One line of a journal: a finished call and its recording entry. A journal has no format of its own: its
    entries are its recording's (evalkit.records.recording.Entry), so it changes exactly when the recording's
    format does, and a journal left by an older format is refused line by line, never half read."""

    model_config = ConfigDict(extra="forbid")

    call_id: str
    entry: Entry
