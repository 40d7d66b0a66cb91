"""A run's calls as an OpenTelemetry trace file (`run.otel_export=PATH`): OTLP JSON with the GenAI conventions.

So that a team's tracing backend shows evalkit's calls beside production's, and `evalkit adapt otel` reads them
back. The spans are made by the OpenTelemetry SDK and encoded by its OTLP encoder (the `otel` extra), then written
as OTLP JSON: one line holding one export (`{"resourceSpans": [...]}`; ids in hex, enums as integers, 64-bit
integers as text), the format the Collector's file exporter writes. Written atomically, after the checks ran, in
every mode: a live run's calls, and a replay's calls as the recording serves them (each call span says which).

- Each case is a root span `evalkit case` of a trace of its own, carrying `evalkit.case_id` (what `evalkit adapt
  otel` reads as the case), the suite, the mode, and `evalkit.case.passed` where the checks decided the case.
- Each call of the case (every sample, the task's and the judge's) is a child span `chat <model>` of kind CLIENT:
  `gen_ai.operation.name` chat, `gen_ai.provider.name`, `gen_ai.request.model` and the request options the
  conventions name (`gen_ai.request.temperature`, `max_tokens`, `top_p`, `seed`), `gen_ai.usage.input_tokens`,
  `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons`, and evalkit's own `evalkit.call_id`,
  `evalkit.call.role` (model or judge) and `evalkit.call.status` (recorded, replayed, resumed, reused ...). A call
  with no reply (failed, denied by the budget, blocked) ends with status ERROR and its status as `error.type`.
- Times: a live call starts when it was sent and lasts its measured latency; a call served without being sent
  (replayed, resumed, reused) starts where the case's previous call ended, a nanosecond later (the first at the
  run's start), and lasts its recorded latency (0 where none is recorded). Not the real times of a replay, which
  sent nothing: `evalkit.call.status` says so.
- Messages are opt-in, as the conventions make them (`run.otel_messages=true`): one event
  `gen_ai.client.inference.operation.details` per call, holding `gen_ai.input.messages` and
  `gen_ai.output.messages` as JSON text in the conventions' parts form. Off, no prompt or reply text is written.

Every string written passes the run's redactor whole (key values, credential shapes, `run.secret_patterns`), as
messages do in every file evalkit writes; ids and times are not text of the run's and are left alone.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.core.atomic import write_atomic
from evalkit.core.call_id import CallId
from evalkit.core.errors import ConfigError, InputError

if TYPE_CHECKING:  # `evalkit adapt otel` reads DETAILS_EVENT from here without loading the runner
    from evalkit.records.call import Request
    from evalkit.run.execute import CallResult

__all__ = ["DETAILS_EVENT", "CallSpan", "call_spans", "export_text", "require_sdk", "write_export"]

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
"""The GenAI conventions' opt-in event that carries a call's input and output messages."""
_PROVIDERS = {"openai": "openai", "azure": "azure.ai.openai", "anthropic": "anthropic", "gemini": "gcp.gemini",
              "bedrock": "aws.bedrock"}
"""evalkit's provider names as the conventions' `gen_ai.provider.name` values; others are written as evalkit
names them (`ollama`, `llamacpp`)."""
_OPTIONS: dict[str, tuple[str, type[float] | type[int]]] = {
    "temperature": ("gen_ai.request.temperature", float), "max_tokens": ("gen_ai.request.max_tokens", int),
    "top_p": ("gen_ai.request.top_p", float), "seed": ("gen_ai.request.seed", int)}
_INSTALL = "pip install 'evalkit[otel]'"


@dataclass(frozen=True)
class CallSpan:
    """One call as its span will show it (times in nanoseconds since the epoch)."""

    call_id: str
    role: str
    provider: str
    request: Request
    result: CallResult
    start_ns: int
    end_ns: int


def require_sdk() -> None:
    """Refuse `run.otel_export` before the run when the OpenTelemetry SDK and its OTLP encoder are missing."""
    try:
        import opentelemetry.exporter.otlp.proto.common.trace_encoder  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise ConfigError(f"run.otel_export needs the OpenTelemetry SDK and its OTLP encoder: {_INSTALL}") from None


def call_spans(calls: Mapping[str, CallResult], requests: Mapping[str, Request], providers: Mapping[str, str],
               started_ns: int) -> dict[str, list[CallSpan]]:
    """Each case's calls in the order they were made, timed as the module says; `providers` by role."""
    by_case: dict[str, list[tuple[CallId, str]]] = defaultdict(list)
    for call_id in calls:
        if call_id in requests:  # a call never planned (none today) has no request to describe
            by_case[CallId.parse(call_id).case].append((CallId.parse(call_id), call_id))
    out: dict[str, list[CallSpan]] = {}
    for case, ids in by_case.items():
        cursor, spans = started_ns, []
        # the task's samples first (a conversation's turns in order, the simulated user's before the reply to
        # it), then the judge's, as the run made them
        for parsed, call_id in sorted(ids, key=lambda item: (item[0].kind == "judge", item[0].metric,
                                                             item[0].sample, item[0].step, item[0].kind == "task")):
            result = calls[call_id]
            role = {"task": "model", "user": "simulator"}.get(parsed.kind, "judge")
            reply = result.reply
            lasted = int((reply.latency_ms or 0.0) * 1e6) if reply is not None else 0
            start = result.sent_ns if result.sent_ns is not None else cursor
            spans.append(CallSpan(call_id, role, providers.get(role, ""), requests[call_id], result, start,
                                  start + lasted))
            # a call not sent now follows the one before by at least a nanosecond: recordings often hold no
            # latency, and a tracing backend (or `evalkit adapt otel`) orders a case's calls by their start
            cursor = max(cursor, start + lasted + (1 if result.sent_ns is None else 0))
        out[case] = spans
    return out


def export_text(cases: Mapping[str, Sequence[CallSpan]], *, suite: str, mode: str, passed: Mapping[str, bool],
                version: str, redact: Callable[[str], str], messages: bool) -> str:
    """The OTLP JSON line of the run's spans, made and encoded by the OpenTelemetry SDK."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.context import Context
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON
    from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

    def text(value: str) -> str:
        return redact(value)

    exporter = InMemorySpanExporter()
    # its own provider, never the global one, and every span sampled whatever OTEL_TRACES_SAMPLER says: the file
    # is the run's evidence, not a sample of it
    provider = TracerProvider(resource=Resource.create({"service.name": "evalkit", "service.version": version}),
                              sampler=ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("evalkit", version)
    for case, spans in sorted(cases.items()):
        start = min((s.start_ns for s in spans), default=0)
        end = max((s.end_ns for s in spans), default=start)
        attributes: dict[str, Any] = {"evalkit.case_id": text(case), "evalkit.suite": text(suite),
                                      "evalkit.mode": mode}
        if case in passed:
            attributes["evalkit.case.passed"] = passed[case]
        root = tracer.start_span("evalkit case", context=Context(), attributes=attributes, start_time=start)
        inside = set_span_in_context(root)
        for call in spans:
            request, result = call.request, call.result
            span = tracer.start_span(text(f"chat {request.model}"), context=inside, kind=SpanKind.CLIENT,
                                     attributes=_call_attributes(call, text), start_time=call.start_ns)
            if messages:
                span.add_event(DETAILS_EVENT, attributes=_messages(request, result, text), timestamp=call.end_ns)
            if result.reply is None:
                span.set_attribute("error.type", result.status)
                span.set_status(Status(StatusCode.ERROR, text(result.reason or result.status)))
            span.end(end_time=call.end_ns)
        root.end(end_time=end)
    provider.shutdown()
    export = MessageToDict(encode_spans(exporter.get_finished_spans()), use_integers_for_enums=True)
    for resource_spans in export.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):  # protobuf's JSON writes bytes in base64
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(export, ensure_ascii=False, separators=(",", ":")) + "\n"


def _call_attributes(call: CallSpan, text: Callable[[str], str]) -> dict[str, Any]:
    request, result = call.request, call.result
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": _PROVIDERS.get(call.provider, call.provider),
        "gen_ai.request.model": text(request.model), "evalkit.call_id": text(call.call_id),
        "evalkit.call.role": call.role, "evalkit.call.status": result.status}
    for option, (name, kind) in _OPTIONS.items():
        value = request.options.get(option)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = kind(value)  # the conventions' types: a temperature is a double even when 0
    reply = result.reply
    if reply is not None:
        if reply.usage.input_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = reply.usage.input_tokens
        if reply.usage.output_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = reply.usage.output_tokens
        if reply.stop_reason:
            attributes["gen_ai.response.finish_reasons"] = [text(reply.stop_reason)]
    return attributes


def _messages(request: Request, result: CallResult, text: Callable[[str], str]) -> dict[str, str]:
    """The call's messages in the conventions' parts form, as JSON text (the event's attributes)."""
    given = [{"role": m.role, "parts": [{"type": "text", "content": text(m.text)}]} for m in request.messages]
    out: dict[str, str] = {"gen_ai.input.messages": json.dumps(given, ensure_ascii=False)}
    reply = result.reply
    if reply is not None and reply.text is not None:
        answer: dict[str, Any] = {"role": "assistant", "parts": [{"type": "text", "content": text(reply.text)}]}
        if reply.stop_reason:
            answer["finish_reason"] = text(reply.stop_reason)
        out["gen_ai.output.messages"] = json.dumps([answer], ensure_ascii=False)
    return out


def write_export(path: Path, text: str) -> None:
    """Write the export atomically: a reader (a collector tailing the folder) sees the old file or the whole new
    one, never a torn line."""
    try:
        write_atomic(path, text)
    except OSError as error:
        raise InputError(f"run.otel_export={path}: cannot write the trace export ({error.strerror or error}); "
                         "the run's report was written") from None
