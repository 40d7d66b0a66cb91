"""Recordings read, written and looked up: the stored calls of one eval key, replayed without a model.

The recording's model (its entries, failures, tool results and provenance) is evalkit.records.recording's; its
names stay importable from here. Lookup is pure; load, save and reading a folder's keys are the I/O.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from json.encoder import c_make_encoder  # type: ignore[attr-defined]  # the C encoder JSONEncoder makes per call
from json.encoder import encode_basestring as _string  # the string escaping canonical_json's encoder uses
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError, RecordingError, describe_validation
from evalkit.core.files import read_text
from evalkit.core.fingerprint import SHA_LENGTH, canonical_json, fingerprint
from evalkit.core.json_text import compact_json, indented_json
from evalkit.core.key import LOAD_OPTIONS, EvalKey
from evalkit.core.parsing import parse_json
from evalkit.live.redact import Redactor
from evalkit.records.call import Message, Reply, Request, ToolCall
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
           "recorded_identities", "ToolEntry", "lookup_tool", "tool_key", "GrowingRequests",
           "check_tool"]

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
    return check_tool(recording.tools.get(key), key, tool, arguments, implementation)


def check_tool(entry: ToolEntry | None, key: str, tool: str, arguments: Any, implementation: str | None
               ) -> ToolEntry | Miss:
    """lookup_tool's rules for one kept result (a recording's, or a journal's on resume): served only to the same
    tool implementation asked with the same arguments."""
    if entry is None:
        return Miss("missing", f"tool call {key} ({tool}) is not recorded", key)
    if entry.tool != tool:
        return Miss("stale", f"tool call {key} was recorded for tool {entry.tool}, not {tool}", key)
    if entry.fingerprint != implementation:
        return Miss("stale", f"tool {tool} changed since {key} was recorded (implementation fingerprint: recorded "
                             f"{entry.fingerprint}, now {implementation})", key)
    # canonical JSON, not fingerprint(): that digests a string as its text, so "1" and 1 would read as the same
    if not _same_json(entry.arguments, arguments) and canonical_json(entry.arguments) != canonical_json(arguments):
        return Miss("stale", f"tool call {key} ({tool}) was recorded with other arguments", key)
    return entry


def _same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values have one canonical JSON, decided without writing it (a replay asks this of every
    tool call). Only a True is trusted: False sends lookup_tool to compare the canonical JSON. Types must match
    exactly (1, 1.0 and true are three spellings), floats by their JSON spelling (0.0 is not -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_json(value, b[name]) for name, value in a.items())
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return bool(a == b) if isinstance(a, str | int | bool) or a is None else False


def request_fingerprint(request: Request) -> str:
    """The identity of one call: everything the request asks, less a local runtime's load options (LOAD_OPTIONS),
    which change how the reply is computed, not what is asked."""
    data = request.model_dump(mode="json")
    data["options"] = {name: value for name, value in data["options"].items() if name not in LOAD_OPTIONS}
    return fingerprint(data)


class GrowingRequests:
    """request_fingerprint for requests that grow a message at a time (an agent's steps): the same digest, made
    from the last step's work plus the new messages only.

    Step n of an agent resends all n-1 earlier steps' messages; dumped whole, the run's fingerprinting grew with the
    square of its steps (most of an agent replay's time went there). The canonical JSON of a request is its sorted
    keys, and `messages` sorts first of a Request's fields, so it is `{"messages":[` + each message's canonical JSON,
    comma-joined + `],` + the rest of the request's canonical JSON: byte for byte what request_fingerprint digests
    (tests/run/test_recording.py compares the two). Per `line` (an agent's case) the messages' JSON of its last request
    is kept, and used only when the new request's messages begin with those very messages (a tuple compare, which
    is an identity check for the messages carried over); the rest of the request (model, options, tools) is made
    once for every request that carries the same options by value and the same schema and tools objects (a Request
    is frozen, and nothing changes its options or schema in place)."""

    def __init__(self) -> None:
        self._lines: dict[str, tuple[tuple[Message, ...], hashlib._Hash]] = {}
        """By line: its last request's messages, and the SHA-256 state after `{"messages":[` and their JSON."""
        self._rests: dict[tuple[Any, ...], tuple[tuple[Any, ...], str]] = {}
        self._same: dict[int, tuple[Any, ...]] = {}

    def fingerprint(self, request: Request, line: str) -> str:
        messages = request.messages
        held = self._lines.get(line)
        if held is not None and len(held[0]) < len(messages) and messages[:len(held[0])] == held[0]:
            digest = held[1].copy()  # the text so far is hashed already: only the new messages are added
            digest.update(("," + ",".join(map(_message_json, messages[len(held[0]):]))).encode("utf-8"))
        else:
            digest = hashlib.sha256(('{"messages":[' + ",".join(map(_message_json, messages))).encode("utf-8"))
        self._lines[line] = (messages, digest)
        whole = digest.copy()
        whole.update(("]," + self._rest(request)[1:]).encode("utf-8"))
        return str(whole.hexdigest()[:SHA_LENGTH])  # as fingerprint() cuts the digest of the whole text

    def _rest(self, request: Request) -> str:
        """The canonical JSON of the request less its messages ('{"model":...}': never empty, a request always
        names its model). The options are compared by their canonical JSON (equal text, equal JSON-mode dump:
        the text tells 1, 1.0 and true apart); options it cannot write are compared by identity."""
        same = self._same.get(id(request.options))
        if same is not None and same[0] is request.options and same[1] == (request.model, request.tool_choice) \
                and same[2] is request.response_schema and same[3] is request.tools:
            text: str = same[4]  # a case's later steps: its first step's very objects
            return text
        text = self._rest_of(request)
        self._same[id(request.options)] = (request.options, (request.model, request.tool_choice),
                                           request.response_schema, request.tools, text)
        return text

    def _rest_of(self, request: Request) -> str:
        held: tuple[Any, ...] = (request.response_schema, request.tools)
        try:
            options: Any = _canonical(request.options)
        except (TypeError, ValueError):  # not JSON as they are: pydantic's dump below writes them
            held += (request.options,)
            options = None
        key = (request.model, request.tool_choice, options, *map(id, held))
        known = self._rests.get(key)
        if known is not None and all(a is b for a, b in zip(known[0], held, strict=True)):
            return known[1]
        rest = request.model_dump(mode="json", exclude={"messages"})
        rest["options"] = {name: value for name, value in rest["options"].items() if name not in LOAD_OPTIONS}
        text = canonical_json(rest)
        self._rests[key] = (held, text)
        return text


# The fields _message_json writes out by hand; were either model to gain one, every message takes pydantic's way
_PLAIN = set(Message.model_fields) == {"role", "content", "tool_calls", "tool_call_id", "error"} and \
    set(ToolCall.model_fields) == {"kind", "id", "tool", "arguments", "signature"}


def _message_json(message: Message) -> str:
    """`canonical_json(message.model_dump(mode="json"))`, written directly for a text message and its tool calls
    (pydantic's wrap serializers and a JSON encoder per message cost more than the rest of a replayed agent step):
    the keys in sorted order, each field left out while it holds its default as records.call's serializers leave it
    out, strings escaped by the encoder canonical_json uses. Content parts (media), a tool call's signature and
    arguments holding a float (JSON mode writes a non-finite one as null) take pydantic's way; tests pin the two
    equal."""
    if not _PLAIN or type(message.content) is not str:
        return canonical_json(message.model_dump(mode="json"))
    text = '{"content":' + _string(message.content)
    if message.error:
        text += ',"error":true'
    text += ',"role":' + _string(message.role)
    if message.tool_call_id is not None:
        text += ',"tool_call_id":' + _string(message.tool_call_id)
    if message.tool_calls:
        calls = []
        for call in message.tool_calls:
            if call.signature is not None or not _floatless(call.arguments):
                return canonical_json(message.model_dump(mode="json"))
            calls.append(f'{{"arguments":{_arguments_json(call.arguments)},"id":{_string(call.id)},'
                         f'"kind":{_string(call.kind)},"tool":{_string(call.tool)}}}')
        text += ',"tool_calls":[' + ",".join(calls) + "]"
    return text + "}"


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_canonical = _ENCODER.encode
"""canonical_json's encoder, made once (json.dumps makes one per call with these settings)."""


def _arguments_json(value: Any) -> str:
    """`_canonical(value)` for a tool call's float-free arguments, with the C encoder made once: JSONEncoder.encode
    makes one per call, which cost more than the writing. Validated JSON values (JsonValue) cannot hold themselves,
    so the encoder keeps no circular-reference markers."""
    return _canonical(value) if _ARGUMENTS is None else "".join(_ARGUMENTS(value, 0))


_ARGUMENTS = None if c_make_encoder is None else c_make_encoder(
    None, _ENCODER.default, _string, None, ":", ",", True, False, True)
"""canonical_json's settings (sorted keys, compact separators, strings as they are, NaN allowed); None where Python
has no C encoder."""


def _floatless(value: Any) -> bool:
    """Whether a JSON value holds no float (JSON mode leaves every other value as it is)."""
    if isinstance(value, dict):
        return all(_floatless(v) for v in value.values())
    if isinstance(value, list):
        return all(_floatless(v) for v in value)
    return not isinstance(value, float)


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


def lookup(recording: Recording, call_id: str, request: Request, sha: str | None = None) -> Hit | Miss:
    """Find the reply to `request` under `call_id`; a miss says which matcher failed and how to fix it. `sha` is
    the request's fingerprint where the caller made it already (GrowingRequests), else it is made here."""
    entry = recording.calls.get(call_id)
    if entry is None:
        close = difflib.get_close_matches(call_id, list(recording.calls), n=1)
        hint = f" (closest recorded call: {close[0]})" if close else ""
        return Miss("missing", f"{call_id} is not recorded{hint}", call_id)
    if entry.request_sha != (sha or request_fingerprint(request)):
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
