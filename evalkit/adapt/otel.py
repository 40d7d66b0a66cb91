"""OpenTelemetry traces of an agent, gated with evalkit's trajectory checks: `evalkit adapt otel --checks FILE`.

The file is an OTLP JSON trace export, or OTLP protobuf in a `.pb` / `.binpb` file (evalkit.adapt.otlp). Its
spans that follow OpenTelemetry's GenAI semantic conventions become each case's trajectory
(evalkit.records.trajectory):

- a span whose `gen_ai.operation.name` is `chat`, `text_completion` or `generate_content` is a model call:
  `gen_ai.request.model` (else `gen_ai.response.model`), `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`,
  its duration; the span id is the call id;
- a span whose `gen_ai.operation.name` is `execute_tool` is a tool call and its result: `gen_ai.tool.name`,
  `gen_ai.tool.call.id` (else the span id), `gen_ai.tool.call.arguments` (JSON text, or a structured value) and
  `gen_ai.tool.call.result`; the span's status ERROR, or an `error.type` attribute, makes the result an error,
  with the status message, the `exception.message` of an `exception` event, or the `error.type` as its reason;
- the text parts of the last model call's `gen_ai.output.messages` (recorded when content capture is on: on the
  span, or in its `gen_ai.client.inference.operation.details` event) are the final answer.

Which spans are cases: every span carrying the attribute `evalkit.case_id` (its value is the case id) when any
span does; otherwise every root span (no parent in the file) with GenAI spans below it, its name the case id. A
case's steps are the GenAI spans below it (itself included), in the order they started.

Each case x check of the `--checks` file (evalkit.judging.trajectory) is one test `otel::<check id>[<case id>]`,
passed or failed with the check's reason; the file's SHA-256 is in the run's contract, so runs checked with
different files are incomparable.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey, fingerprint_inputs
from evalkit.adapt.otlp import Span, read_otlp
from evalkit.core.errors import InputError
from evalkit.core.files import read_bytes
from evalkit.core.fingerprint import sha256
from evalkit.judging.trajectory import TrajectoryChecks, evaluate, load_trajectory_checks
from evalkit.records.trajectory import FinalAnswer, ModelCall, Step, ToolCall, ToolResult, Trajectory
from evalkit.run.otel_export import DETAILS_EVENT

__all__ = ["CASE_ID", "SOURCE", "read_otel", "trajectories"]

CASE_ID = "evalkit.case_id"
"""The span attribute that marks a span as a case and names it."""
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATION = "execute_tool"
PROTOBUF_SUFFIXES = frozenset({".pb", ".binpb"})
"""File name endings read as OTLP protobuf (`.binpb` is OTLP's own name for it); any other file is OTLP JSON."""
_MAX_CASES = 100_000
_TASK = "otel"


def read_otel(path: Path, checks_path: Path) -> NeutralRun:
    """Read a trace export and gate its cases with the checks file: one test per case x check."""
    checks = load_trajectory_checks(checks_path)
    data = read_bytes(path, "trace export")
    spans = read_otlp(data, str(path), protobuf=path.suffix in PROTOBUF_SUFFIXES)
    cases, notes = trajectories(spans, str(path))
    tests = _tests(checks, cases)
    models = sorted({step.model for t in cases.values() for step in t.steps
                     if isinstance(step, ModelCall) and step.model})
    sdk = next((span.resource for span in spans if span.resource.get("telemetry.sdk.name")), {})
    tool = " ".join(str(sdk[key]) for key in ("telemetry.sdk.name", "telemetry.sdk.language",
                                               "telemetry.sdk.version") if key in sdk) or "OpenTelemetry"
    key = SourceKey(task=_TASK, dataset="the case ids of the trace",
                    dataset_sha=fingerprint_inputs((case, case) for case in cases), dataset_sha_from="sample inputs",
                    scorer="trajectory checks: " + ", ".join(f"{c.id} ({c.kind})" for c in checks.checks),
                    model=", ".join(models) or None, contract={"checks_sha256": checks.sha256})
    return NeutralRun(source="otel", tool=f"{tool} (OTLP JSON)", key=key, tests=tests, notes=tuple(notes),
                      provenance={"source_sha256": sha256(data), "format_version": "OTLP/JSON",
                                  "spans": len(spans), "checks": checks.where, "checks_sha256": checks.sha256})


def _tests(checks: TrajectoryChecks, cases: Mapping[str, Trajectory]) -> tuple[AdaptedTest, ...]:
    tests = []
    for case, trajectory in sorted(cases.items()):
        for check in checks.checks:
            verdict = evaluate(check, trajectory)
            tests.append(AdaptedTest(nodeid=f"{_TASK}::{check.id}[{case}]",
                                     outcome="passed" if verdict.passed else "failed", case=case,
                                     message=None if verdict.passed else verdict.reason))
    return tuple(tests)


def trajectories(spans: list[Span], where: str) -> tuple[dict[str, Trajectory], list[str]]:
    """Each case's trajectory, by case id, and notes on what was not read; refuses a file with no GenAI spans."""
    genai = {(s.trace_id, s.span_id) for s in spans if _operation(s) in MODEL_OPERATIONS | {TOOL_OPERATION}}
    if not genai:
        raise InputError(f"{where}: no span follows OpenTelemetry's GenAI conventions (gen_ai.operation.name "
                         f"chat, text_completion, generate_content or execute_tool); instrument the agent's model "
                         "calls (e.g. opentelemetry-instrumentation-openai-v2) and tool executions")
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    children: dict[tuple[str, str], list[Span]] = defaultdict(list)
    for span in spans:
        if span.parent_id is not None and (span.trace_id, span.parent_id) in by_id:
            children[(span.trace_id, span.parent_id)].append(span)
    marked = [s for s in spans if CASE_ID in s.attributes]
    notes: list[str] = []
    if marked:
        heads = marked
    else:
        roots = [s for s in spans if s.parent_id is None or (s.trace_id, s.parent_id) not in by_id]
        heads = [s for s in roots if any((d.trace_id, d.span_id) in genai for d in _below(s, children))]
        if len(heads) < len(roots):
            notes.append(f"{len(roots) - len(heads)} root span(s) without GenAI spans below them are not cases")
    if len(heads) > _MAX_CASES:
        raise InputError(f"{where}: {len(heads):,} cases, more than {_MAX_CASES:,}")
    cases: dict[str, Trajectory] = {}
    inside: dict[tuple[str, str], str] = {}
    for head in heads:
        case = _case_id(head, where)
        if case in cases:
            hint = "" if marked else f" (root spans are named by their name; set the span attribute {CASE_ID})"
            raise InputError(f"{where}: case {case!r} appears twice{hint}; each case needs its own id")
        below = _below(head, children)
        for span in below:
            other = inside.setdefault((span.trace_id, span.span_id), case)
            if other != case:
                raise InputError(f"{where}: case {case!r} holds case {other!r}; mark only the outermost span "
                                 f"of each case with {CASE_ID}")
        steps = [s for s in below if (s.trace_id, s.span_id) in genai]
        cases[case] = _trajectory(sorted(steps, key=lambda s: s.start_ns))
    unread = sum(1 for s in spans if (s.trace_id, s.span_id) in genai and (s.trace_id, s.span_id) not in inside)
    if unread:
        notes.append(f"{unread} GenAI span(s) outside every case are not read")
    bare = sum(1 for t in cases.values() for _, call in t.tool_calls() if call.arguments is None)
    if bare:  # content capture is off by default in GenAI instrumentations: say why an argument check fails
        notes.append(f"{bare} tool call(s) record no arguments (gen_ai.tool.call.arguments): argument checks find "
                     "nothing to match on them; record arguments where the tools are traced")
    return cases, notes


def _below(head: Span, children: Mapping[tuple[str, str], list[Span]]) -> list[Span]:
    """`head` and every span below it (iterative: depth is bounded by the reader, breadth is not)."""
    out, stack = [], [head]
    while stack:
        span = stack.pop()
        out.append(span)
        stack.extend(children.get((span.trace_id, span.span_id), ()))
    return out


def _case_id(head: Span, where: str) -> str:
    value = head.attributes.get(CASE_ID, head.name)
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip() \
            or any(c in str(value) for c in "[]\n\r") or len(str(value)) > 200:
        raise InputError(f"{where}: span {head.span_id!r}: case id {str(value)[:80]!r} is not usable; give "
                         f"{CASE_ID} as text of at most 200 characters without brackets or line breaks")
    return str(value)


def _trajectory(spans: list[Span]) -> Trajectory:
    steps: list[Step] = []
    answer: str | None = None
    for span in spans:
        attributes = span.attributes
        if _operation(span) == TOOL_OPERATION:
            call_id = _text(attributes.get("gen_ai.tool.call.id")) or span.span_id
            steps.append(ToolCall(id=call_id, tool=_text(attributes.get("gen_ai.tool.name")) or "(unnamed tool)",
                                  arguments=_json(attributes.get("gen_ai.tool.call.arguments"))))
            result = attributes.get("gen_ai.tool.call.result")
            error_type = _text(attributes.get("error.type"))
            failed = span.error or bool(error_type)
            steps.append(ToolResult(call_id=call_id, content=result if isinstance(result, str) else
                                    ("" if result is None else json.dumps(result, ensure_ascii=False)),
                                    error=failed, error_message=_why(span, error_type) if failed else None))
        else:
            steps.append(ModelCall(
                call_id=span.span_id,
                model=_text(attributes.get("gen_ai.request.model")) or _text(attributes.get("gen_ai.response.model")),
                input_tokens=_count(attributes.get("gen_ai.usage.input_tokens")),
                output_tokens=_count(attributes.get("gen_ai.usage.output_tokens")),
                milliseconds=max(0, span.end_ns - span.start_ns) / 1e6 if span.end_ns else None))
            answer = _answer(attributes.get("gen_ai.output.messages", _details(span)))
    if answer:
        steps.append(FinalAnswer(text=answer))
    return Trajectory(steps=tuple(steps))


def _operation(span: Span) -> str | None:
    value = span.attributes.get("gen_ai.operation.name")
    return value if isinstance(value, str) else None


def _details(span: Span) -> Any:
    """`gen_ai.output.messages` of the conventions' opt-in event, where the messages were written there rather
    than on the span (evalkit's own `run.otel_export` does so)."""
    return next((attributes.get("gen_ai.output.messages") for name, attributes in span.events
                 if name == DETAILS_EVENT), None)


def _why(span: Span, error_type: str | None) -> str:
    for name, attributes in span.events:
        if name in ("exception", "gen_ai.execute_tool.exception") and isinstance(attributes.get("exception.message"),
                                                                                  str):
            return str(attributes["exception.message"])[:500]
    return (span.status_message or error_type or "the span's status is ERROR")[:500]


def _json(value: Any) -> Any:
    """Arguments as parsed JSON: semconv records them as JSON text on spans (structured where it can)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value  # not JSON: kept as the text the agent passed
    return value


def _answer(value: Any) -> str | None:
    """The text parts of the last output message (`gen_ai.output.messages`: JSON text or structured)."""
    messages = _json(value)
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    parts = messages[-1].get("parts")
    texts = [p["content"] for p in parts if isinstance(p, dict) and p.get("type") == "text"
             and isinstance(p.get("content"), str)] if isinstance(parts, list) else []
    return "".join(texts) or None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _needs_checks(path: Path) -> NeutralRun:
    raise InputError(f"{path}: the otel source gates traces with trajectory checks; give them with --checks FILE")


SOURCE = Source(
    name="otel", summary="gate agents' OpenTelemetry traces (OTLP JSON) with trajectory checks",
    read=_needs_checks, read_checked=read_otel,
    description="Each span carrying evalkit.case_id, else each root span, is a case; the GenAI spans below it "
                "(gen_ai.operation.name chat / text_completion / generate_content: a model call; execute_tool: a "
                "tool call and its result) are its trajectory. Each case x check of --checks FILE is a test "
                "otel::<check id>[<case id>]; the checks file's SHA-256 is part of the eval key.")
