"""Recordings read, written and looked up: the stored calls of one eval key, replayed without a model.

The recording's model (its entries, failures, tool results and provenance) is evalkit.records.recording's; its
names stay importable from here. Lookup is pure; load, save and reading a folder's keys are the I/O.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError, RecordingError, describe_validation
from evalkit.core.files import read_text
from evalkit.core.fingerprint import fingerprint
from evalkit.core.json_text import compact_json, indented_json
from evalkit.core.key import LOAD_OPTIONS, EvalKey
from evalkit.core.parsing import parse_json
from evalkit.live.redact import Redactor
from evalkit.records.call import Reply, Request
from evalkit.records.recording import (
    FORMAT,
    OLD_FORMATS,
    Entry,
    Failure,
    FailureKind,
    Provenance,
    Recording,
    ToolEntry,
)
from evalkit.run.mismatch import first_difference

__all__ = ["FORMAT", "OLD_FORMATS", "Provenance", "Failure", "FailureKind", "Entry", "Recording", "Hit", "Miss",
           "ForeignRecording", "lookup", "load_recording", "save_recording", "request_fingerprint",
           "recorded_identities", "ToolEntry", "lookup_tool", "tool_key"]

RERECORD = "run with mode=record-missing (only missing or stale calls) or mode=live (all calls) to re-record"


class ForeignRecording(RecordingError):
    """The file at a recording's path is not a recording of this identity (another key, an older format): replay
    refuses it; a live or record-missing run records this identity afresh in its place."""


def tool_key(step_call_id: str, tool_call_id: str) -> str:
    """Where a tool result is kept in a recording: the model step that asked for it, and the call's own id."""
    return f"{step_call_id}|{tool_call_id}"


def lookup_tool(recording: Recording, key: str, tool: str, arguments: Any, implementation: str | None
                ) -> ToolEntry | Miss:
    """The recorded result of a tool call, or why it cannot be served (never recorded, another tool, changed
    arguments, or a changed implementation: the tool is named, so the refusal says which tool changed)."""
    entry = recording.tools.get(key)
    if entry is None:
        return Miss("missing", f"tool call {key} ({tool}) is not recorded", key)
    if entry.tool != tool:
        return Miss("stale", f"tool call {key} was recorded for tool {entry.tool}, not {tool}", key)
    if entry.fingerprint != implementation:
        return Miss("stale", f"tool {tool} changed since {key} was recorded (implementation fingerprint: recorded "
                             f"{entry.fingerprint}, now {implementation})", key)
    if fingerprint(entry.arguments) != fingerprint(arguments):
        return Miss("stale", f"tool call {key} ({tool}) was recorded with other arguments", key)
    return entry


def request_fingerprint(request: Request) -> str:
    """The identity of one call: everything the request asks, less a local runtime's load options (LOAD_OPTIONS),
    which change how the reply is computed, not what is asked."""
    data = request.model_dump(mode="json")
    data["options"] = {name: value for name, value in data["options"].items() if name not in LOAD_OPTIONS}
    return fingerprint(data)


@dataclass(frozen=True)
class Hit:
    """The recorded outcome of the call: a reply, or a failure (then `reply` is None)."""

    entry: Entry

    @property
    def reply(self) -> Reply | None:
        return self.entry.reply


@dataclass(frozen=True)
class Miss:
    """Why a call cannot be replayed: `missing` (never recorded) or `stale` (recorded for another request)."""

    kind: Literal["missing", "stale"]
    reason: str
    call_id: str


def lookup(recording: Recording, call_id: str, request: Request) -> Hit | Miss:
    """Find the reply to `request` under `call_id`; a miss says which matcher failed and how to fix it."""
    entry = recording.calls.get(call_id)
    if entry is None:
        close = difflib.get_close_matches(call_id, list(recording.calls), n=1)
        hint = f" (closest recorded call: {close[0]})" if close else ""
        return Miss("missing", f"{call_id} is not recorded{hint}", call_id)
    if entry.request_sha != request_fingerprint(request):
        asked, recorded = request.model_dump(mode="json"), entry.request.model_dump(mode="json")
        for side in (asked, recorded):
            side["options"] = {k: v for k, v in side["options"].items() if k not in LOAD_OPTIONS}
        differs = first_difference(recorded, asked) or "the request"
        return Miss("stale", f"{call_id} was recorded for another request: {differs}", call_id)
    return Hit(entry)


def load_recording(path: Path, expected: EvalKey | None = None, read: Recording | None = None) -> Recording:
    """Read a recording; refuse a missing, malformed or foreign one (another key at this path). `read` is the
    recording at this path as this process already read it: then only its key is checked."""
    if not os.path.lexists(path):
        raise RecordingError(f"{path}: no recording for this eval key; {RERECORD}")
    if read is not None:
        return _of_key(read, path, expected)
    try:
        data: Any = parse_json(read_text(path, "recording"), str(path), "recording")
    except InputError as error:
        raise RecordingError(f"{error}; restore it from git or re-record") from None
    if isinstance(data, dict) and data.get("format") in OLD_FORMATS:
        raise ForeignRecording(f"{path}: recording format {data['format']}, from before a recording's identity held "
                               f"the model's options; convert it with evalkit migrate {path}, or "
                               f"{RERECORD}")
    try:
        recording = Recording.model_validate(data)
    except ValidationError as error:
        raise RecordingError(describe_validation(error, Recording, str(path))) from None
    return _of_key(recording, path, expected)


def _of_key(recording: Recording, path: Path, expected: EvalKey | None) -> Recording:
    if expected is not None and recording.key != expected:
        differs = first_difference(recording.key.model_dump(mode="json"), expected.model_dump(mode="json"))
        raise ForeignRecording(f"{path}: this recording belongs to another eval key ({differs}); "
                               f"move it back or {RERECORD}")
    return recording


def recorded_identities(folder: Path) -> list[tuple[Path, EvalKey, dict[str, Any]]]:
    """(file, key, settings) of every current-format recording in `folder`, by file name; a file that is not one
    (unreadable, another format) is left out: this only finds the closest identity to name in a message."""
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.is_symlink():  # a recording is never read through a link
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("format") == FORMAT:
                settings = data.get("settings")
                found.append((path, EvalKey.model_validate(data.get("key")),
                              settings if isinstance(settings, dict) else {}))
        except (OSError, ValueError):  # ValidationError is a ValueError
            continue
    return found


def save_recording(recording: Recording, path: Path, redact: Redactor | None = None) -> None:
    """Write atomically, calls sorted by id, so re-recording gives a reviewable diff; `redact` masks the data
    before it is serialised (a redaction can never break the JSON; Redactor.masked)."""
    data = recording.model_dump(mode="json", exclude_none=True)
    data["calls"] = dict(sorted(data["calls"].items()))
    if data.get("tools"):
        data["tools"] = dict(sorted(data["tools"].items()))
    else:  # a recording without agents is written as it was before they existed
        data.pop("tools", None)
    data, compact = (data, compact_json(data)) if redact is None else redact.masked(data, compact_json)
    write_atomic(path, indented_json(data, compact=compact) + "\n")
