"""OTLP JSON trace exports read into spans, with the bounds a hostile trace would break.

The file is the OTLP/HTTP JSON body of a trace export (`{"resourceSpans": [{"resource", "scopeSpans": [{"scope",
"spans": [...]}]}]}`), or JSON Lines of them, one export per line (what the OpenTelemetry Collector's file
exporter writes), or an OTLP protobuf `ExportTraceServiceRequest` (a `.pb` or `.binpb` file, read with the `otel`
extra). Each span keeps its ids, parent, name, times, attributes (OTLP's `AnyValue`s as plain JSON
values), status and events. Ids are read as the text the file gives: the OTLP spec writes them in hex, protobuf's
generic JSON mapping in base64; a parent is found by the same text within its trace either way.

Refused in one line naming the file: text that is not UTF-8, a truncated or malformed export, a span without an
id, the same span id twice in a trace, a parent chain that cycles or nests deeper than MAX_SPAN_DEPTH, an
attribute string longer than MAX_ATTRIBUTE_CHARS, a name longer than MAX_NAME_CHARS. Pure: bytes in, spans out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.core.errors import InputError, brief
from evalkit.core.files import decode
from evalkit.core.parsing import json_type, parse_json, refuse_lone_surrogates

__all__ = ["MAX_ATTRIBUTE_CHARS", "MAX_NAME_CHARS", "MAX_SPAN_DEPTH", "Span", "depths", "read_otlp"]

MAX_SPAN_DEPTH = 256
"""The deepest a span may sit below its root: an agent's spans nest a few levels (agent, model call, tool, the
tool's own HTTP call); a chain of thousands is a broken or hostile file, and every walk of it would be long."""
MAX_ATTRIBUTE_CHARS = 1 << 20
"""The longest attribute string read (1 MiB): a tool's arguments or result is kilobytes; OpenTelemetry's SDKs
cut attributes far shorter when told to, and a trace of 50 MB strings is not one an agent's steps need."""
MAX_NAME_CHARS = 1000
"""The longest span name read (names are low-cardinality words like `chat gpt-4o` or `execute_tool search`)."""

STATUS_ERROR = 2
"""OTLP's `Status.code` for an error (`STATUS_CODE_ERROR`)."""


@dataclass(frozen=True)
class Span:
    """One span of a trace export."""

    trace_id: str
    span_id: str
    parent_id: str | None
    """The parent's span id (None for a root: OTLP writes no `parentSpanId`, or an empty one)."""
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    error: bool
    """The span's status is ERROR."""
    status_message: str
    events: tuple[tuple[str, Mapping[str, Any]], ...]
    """(name, attributes) of each event, in the file's order."""
    resource: Mapping[str, Any]
    """The attributes of the resource that emitted the span (`service.name`, `telemetry.sdk.version`, ...)."""


def read_otlp(data: bytes, where: str, *, protobuf: bool = False) -> list[Span]:
    """The spans of an OTLP JSON trace export (or JSON Lines of them), or with `protobuf` of an OTLP protobuf
    `ExportTraceServiceRequest`, in the file's order."""
    exports = [(0, _from_protobuf(data, where))] if protobuf else _exports(decode(data, where, "trace export"), where)
    spans: list[Span] = []
    seen: set[tuple[str, str]] = set()
    for line, export in exports:
        at = f"{where}{f' line {line}' if line else ''}"
        refuse_lone_surrogates(export, at)
        for span in _spans(export, at):
            if (span.trace_id, span.span_id) in seen:
                raise InputError(f"{at}: span id {span.span_id!r} appears twice in trace {span.trace_id!r}; each "
                                 "span is exported once (was the file concatenated with itself?)")
            seen.add((span.trace_id, span.span_id))
            spans.append(span)
    depths(spans, where)
    return spans


def _exports(text: str, where: str) -> Iterator[tuple[int, Any]]:
    """The exports of the file with their line numbers (0 for a file that is one export)."""
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InputError(f"{where}: the trace export is empty; export the traces as OTLP JSON")
    try:  # JSON Lines when the first non-empty line is a whole export on its own
        head = parse_json(lines[first], where, "trace export")
    except InputError:
        head = None
    if not isinstance(head, dict):
        yield 0, parse_json(text, where, "trace export")
        return
    yield first + 1, head
    for n in range(first + 1, len(lines)):
        if lines[n].strip():
            yield n + 1, parse_json(lines[n], f"{where} line {n + 1}", "trace export line")


def _from_protobuf(data: bytes, where: str) -> Any:
    """An OTLP protobuf export as the JSON value its OTLP JSON would be (ids in protobuf's base64), read with the
    `otel` extra's opentelemetry-proto; protobuf's own nesting limit refuses a deeply nested value."""
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise InputError(f"{where}: reading OTLP protobuf needs opentelemetry-proto: pip install 'evalkit[otel]', "
                         "or export the traces as OTLP JSON") from None
    try:
        message = ExportTraceServiceRequest.FromString(data)
    except DecodeError as error:
        raise InputError(f"{where}: not an OTLP protobuf trace export ({error}); check that the file is a whole "
                         "export (not truncated) of traces") from None
    return MessageToDict(message)


def _spans(export: Any, where: str) -> Iterator[Span]:
    if not isinstance(export, dict) or not isinstance(export.get("resourceSpans"), list):
        other = next((key for key in ("resourceLogs", "resourceMetrics") if isinstance(export, dict)
                      and key in export), None)
        what = f"a {other[8:].lower()} export, not traces" if other else f"{json_type(export)} without 'resourceSpans'"
        raise InputError(f"{where}: not an OTLP trace export ({what}); export traces as OTLP JSON "
                         "(resourceSpans[].scopeSpans[].spans[])")
    for r, resource_spans in enumerate(export["resourceSpans"]):
        resource_spans = _object(resource_spans, where, f"resourceSpans[{r}]")
        resource = _attributes(_object(resource_spans.get("resource", {}), where, "resource").get("attributes"),
                               where, f"resourceSpans[{r}].resource")
        for s, scope_spans in enumerate(_list(resource_spans.get("scopeSpans"), where, f"resourceSpans[{r}]"
                                              ".scopeSpans")):
            field = f"resourceSpans[{r}].scopeSpans[{s}].spans"
            for n, raw in enumerate(_list(_object(scope_spans, where, field).get("spans"), where, field)):
                yield _span(_object(raw, where, f"{field}[{n}]"), where, f"{field}[{n}]", resource)


def _span(raw: dict[str, Any], where: str, field: str, resource: Mapping[str, Any]) -> Span:
    trace_id, span_id = _id(raw.get("traceId"), where, f"{field}.traceId"), _id(raw.get("spanId"), where,
                                                                               f"{field}.spanId")
    parent = raw.get("parentSpanId")
    parent_id = None if parent in (None, "") else _id(parent, where, f"{field}.parentSpanId")
    name = raw.get("name")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
        raise InputError(f"{where}: {field}.name is {brief(name)}; expected a span name of at most "
                         f"{MAX_NAME_CHARS} characters")
    status = _object(raw.get("status") or {}, where, f"{field}.status")
    code = status.get("code")
    message = status.get("message")
    events = tuple((str(event.get("name", "")), _attributes(event.get("attributes"), where, f"{field}.events[{n}]"))
                   for n, event in enumerate(_object(e, where, f"{field}.events[]")
                                             for e in _list(raw.get("events"), where, f"{field}.events")))
    return Span(trace_id, span_id, parent_id, name, _nanos(raw.get("startTimeUnixNano"), where, field),
                _nanos(raw.get("endTimeUnixNano"), where, field),
                _attributes(raw.get("attributes"), where, field), code in (STATUS_ERROR, "STATUS_CODE_ERROR"),
                message if isinstance(message, str) else "", events, resource)


def depths(spans: list[Span], where: str) -> dict[tuple[str, str], int]:
    """Each span's depth below its root (a parent missing from the file makes a root); refuses a parent chain
    that cycles or nests deeper than MAX_SPAN_DEPTH. Iterative, and each span is walked once, so a hostile chain
    can neither exhaust the stack nor take quadratic time."""
    parents = {(span.trace_id, span.span_id): span.parent_id for span in spans}
    depth: dict[tuple[str, str], int] = {}
    for span in spans:
        chain: list[tuple[str, str]] = []
        on_chain: set[tuple[str, str]] = set()
        node: tuple[str, str] | None = (span.trace_id, span.span_id)
        while node is not None and node not in depth:
            if node in on_chain:
                raise InputError(f"{where}: span {node[1]!r} of trace {node[0]!r} is its own ancestor (its parent "
                                 "chain cycles); a trace is a tree: check the exporter")
            chain.append(node)
            on_chain.add(node)
            parent = parents.get(node)
            node = (node[0], parent) if parent is not None and (node[0], parent) in parents else None
        below = -1 if node is None else depth[node]
        for known in reversed(chain):
            below += 1
            if below > MAX_SPAN_DEPTH:
                raise InputError(f"{where}: span {known[1]!r} nests more than {MAX_SPAN_DEPTH} spans deep; "
                                 "an agent's trace nests a few levels: check the exporter")
            depth[known] = below
    return depth


def _attributes(raw: Any, where: str, field: str) -> dict[str, Any]:
    """OTLP `KeyValue`s as a mapping of plain JSON values."""
    out: dict[str, Any] = {}
    for item in _list(raw, where, f"{field}.attributes"):
        item = _object(item, where, f"{field}.attributes[]")
        key = item.get("key")
        if not isinstance(key, str) or len(key) > MAX_NAME_CHARS:
            raise InputError(f"{where}: {field}.attributes: key {brief(key)} is not an attribute name")
        out[key] = _value(item.get("value"), where, f"{field}.attributes[{key[:80]!r}]")
    return out


def _value(raw: Any, where: str, field: str) -> Any:
    """An OTLP `AnyValue` as a plain JSON value (nesting is already bounded by parse_json)."""
    if raw is None or raw == {}:
        return None
    value = _object(raw, where, field)
    if "stringValue" in value or "bytesValue" in value:
        text = value.get("stringValue", value.get("bytesValue"))
        if not isinstance(text, str):
            raise InputError(f"{where}: {field} is {brief(text)}; expected text")
        if len(text) > MAX_ATTRIBUTE_CHARS:
            raise InputError(f"{where}: {field} holds {len(text):,} characters, more than {MAX_ATTRIBUTE_CHARS:,}; "
                             "cut long attributes where they are recorded (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT)")
        return text
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:  # int64 is a string in OTLP JSON
        number = value["intValue"]
        if isinstance(number, str) and number.lstrip("-").isdigit() and len(number) <= 20:
            return int(number)
        if isinstance(number, int) and not isinstance(number, bool):
            return number
        raise InputError(f"{where}: {field}.intValue is {brief(number)}; expected an integer")
    if "doubleValue" in value:
        number = value["doubleValue"]
        if not isinstance(number, int | float) or isinstance(number, bool):
            raise InputError(f"{where}: {field}.doubleValue is {brief(number)}; expected a number")
        return float(number)
    if "arrayValue" in value:
        items = _object(value["arrayValue"], where, field).get("values")
        return [_value(item, where, field) for item in _list(items, where, field)]
    if "kvlistValue" in value:
        return _attributes(_object(value["kvlistValue"], where, field).get("values"), where, field)
    raise InputError(f"{where}: {field} is {brief(value)}; expected an OTLP AnyValue (stringValue, intValue, ...)")


def _id(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 64:
        raise InputError(f"{where}: {field} is {brief(value)}; expected the id as hex text")
    return value


def _nanos(value: Any, where: str, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InputError(f"{where}: {field} has time {brief(value)}; expected nanoseconds since the epoch")


def _object(value: Any, where: str, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{where}: {field} is {json_type(value)}; expected an object (is the file truncated?)")
    return value


def _list(value: Any, where: str, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: {field} is {json_type(value)}; expected a list")
    return value
