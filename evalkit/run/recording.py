"""Recordings: the stored calls of one eval key, replayed without a model.

A recording maps call ids (`task/<case-id>`, `judge/<metric>/<case-id>`, with `#<i>` for sample i > 0 of a run
with `run.repeats`) to the request's
fingerprint, the request itself (so a reviewer can read it) and the reply. Lookup is pure;
load and save are the only I/O.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError, RecordingError, describe_validation
from evalkit.core.files import read_text
from evalkit.core.fingerprint import fingerprint
from evalkit.core.key import EvalKey
from evalkit.core.parsing import parse_json
from evalkit.live.providers.base import Reply, Request

__all__ = ["FORMAT", "Provenance", "Failure", "FailureKind", "Entry", "Recording", "Hit", "Miss", "lookup",
           "load_recording", "save_recording", "request_fingerprint"]

FORMAT: Final = "evalkit-recording/1"
RERECORD = "run with mode=record-missing (only missing or stale calls) or mode=live (all calls) to re-record"


class Provenance(BaseModel):
    """Where the replies came from. Authored fixtures are never presented as a model's output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["recorded", "authored"]
    """`recorded` by a live run, or `authored` by hand (a fixture, not a model's output)."""
    note: str | None = None
    evalkit_version: str | None = None
    recorded_at: str | None = None
    producer: dict[str, dict[str, Any]] | None = None
    """By role (`model`, `judge`): what produced the live replies, as the provider describes it (for `llamacpp`:
    the model file's name and SHA-256, the runtime and its version, the dialect and settings); None where the
    provider describes nothing or the replies were authored."""
    samples: int | None = None
    """The most samples of one call the file holds (`task/<case>`, `task/<case>#1` ...: `run.repeats`, see
    evalkit.run.samples); None when it holds one sample per call, as every recording made with N = 1."""


FailureKind = Literal["failed", "budget_denied"]


class Failure(BaseModel):
    """A call that ended without a reply; recorded so that replay reproduces the live run's outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FailureKind
    """`failed`: no reply after the allowed retries; `budget_denied`: never sent, the budget was spent."""
    reason: str


class Entry(BaseModel):
    """One call: what was asked and what came back (a reply, or the failure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_sha: str
    request: Request
    reply: Reply | None = None
    failure: Failure | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Entry:
        if (self.reply is None) == (self.failure is None):
            raise ValueError("an entry holds exactly one of 'reply' and 'failure'")
        return self


class Recording(BaseModel):
    """All calls of one eval key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["evalkit-recording/1"] = FORMAT
    key: EvalKey
    provenance: Provenance
    calls: dict[str, Entry] = {}


def request_fingerprint(request: Request) -> str:
    return fingerprint(request.model_dump(mode="json"))


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


def lookup(recording: Recording, where: str, call_id: str, request: Request) -> Hit | Miss:
    """Find the reply to `request` under `call_id`; a miss says which matcher failed and how to fix it."""
    entry = recording.calls.get(call_id)
    if entry is None:
        close = difflib.get_close_matches(call_id, list(recording.calls), n=1)
        hint = f" (closest recorded call: {close[0]})" if close else ""
        return Miss("missing", f"no recording for {call_id} in {where}{hint}; {RERECORD}")
    if entry.request_sha != request_fingerprint(request):
        fields = _differing_fields(entry.request, request)
        return Miss("stale", f"recording of {call_id} in {where} was made for another request "
                             f"(differs in: {', '.join(fields) or 'request'}); {RERECORD}")
    return Hit(entry)


def _differing_fields(old: Request, new: Request) -> list[str]:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    out = []
    for name in a:
        if name == "messages" and a[name] != b[name]:
            out += [f"messages[{i}]" for i, (x, y) in enumerate(zip(a[name], b[name], strict=False)) if x != y]
            if len(a[name]) != len(b[name]):
                out.append("messages (count)")
        elif a[name] != b[name]:
            out.append(name)
    return out


def load_recording(path: Path, expected: EvalKey | None = None) -> Recording:
    """Read a recording; refuse a missing, malformed or foreign one (another key at this path)."""
    if not os.path.lexists(path):
        raise RecordingError(f"{path}: no recording for this eval key; {RERECORD}")
    try:
        data: Any = parse_json(read_text(path, "recording"), str(path), "recording")
    except InputError as error:
        raise RecordingError(f"{error}; restore it from git or re-record") from None
    try:
        recording = Recording.model_validate(data)
    except ValidationError as error:
        raise RecordingError(describe_validation(error, Recording, str(path))) from None
    if expected is not None and recording.key != expected:
        have, want = recording.key.model_dump(), expected.model_dump()
        diff = ", ".join(f"{k} {have[k]!r} != {want[k]!r}" for k in want if have.get(k) != want[k])
        raise RecordingError(f"{path}: this recording belongs to another eval key ({diff}); "
                             f"move it back or {RERECORD}")
    return recording


def save_recording(recording: Recording, path: Path, scrub: Callable[[Any], Any] = lambda data: data) -> None:
    """Write atomically, calls sorted by id, so re-recording gives a reviewable diff; `scrub` redacts the data
    before it is serialised (a redaction can never break the JSON)."""
    data = recording.model_dump(mode="json", exclude_none=True)
    data["calls"] = dict(sorted(data["calls"].items()))
    write_atomic(path, json.dumps(scrub(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n")
