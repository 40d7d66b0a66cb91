"""A small agent traced by the real OpenTelemetry SDK, for the `evalkit adapt otel` tests: traces not made by hand.

`export_agent_traces(path, cases)` runs, for each case, a three-step agent with the real `openai` SDK,
instrumented by `opentelemetry-instrumentation-openai-v2`, against the loopback OpenAI fake (tests/fakes, whose
replies here are raw `chat.completion` bodies): the model asks for `search`, then for `fetch`, then answers. The
agent executes each tool inside an `execute_tool` span of its own, made with the SDK's tracer and the GenAI
semantic conventions' attributes (as application code is told to instrument its tools), under a root span
`invoke_agent` carrying `evalkit.case_id`. The spans go to the SDK's in-memory exporter, then through
`opentelemetry.exporter.otlp.proto.common`'s `encode_spans` into the OTLP protobuf request, then through protobuf's
`MessageToDict` into JSON, with the ids turned from protobuf's base64 into the hex the OTLP/JSON spec writes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fakes import FakeOpenAI, RawReply

TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} the web",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                                          "required": ["q"]}}}
         for name in ("search", "fetch")]


def _reply(body: dict[str, Any]) -> RawReply:
    """Tool calls on the first two requests of a conversation, the final answer on the third (stateless: the
    step is read from how many tool results the request carries)."""
    done = sum(1 for message in body["messages"] if message.get("role") == "tool")
    question = body["messages"][0]["content"]
    if done < 2:
        name = ("search", "fetch")[done]
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{name}", "type": "function",
             "function": {"name": name, "arguments": json.dumps({"q": question})}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": f"The answer to {question!r}."}, "stop"
    return RawReply(200, json.dumps({
        "id": f"chatcmpl-{done}", "object": "chat.completion", "created": 1767225600, "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20 + 10 * done, "completion_tokens": 7, "total_tokens": 27 + 10 * done},
    }).encode())


def export_agent_traces(path: Path, cases: Iterable[str], *, failing_tool: str | None = None,
                        protobuf: Path | None = None) -> dict[str, Any]:
    """Run the agent once per case, write the trace export (OTLP JSON) to `path` and return it; the same export
    as OTLP protobuf (the encoder's message, serialized) goes to `protobuf` when given. `failing_tool`'s
    executions raise, so its spans end with status ERROR."""
    import pytest

    pytest.importorskip("opentelemetry.instrumentation.openai_v2", reason="install evalkit's [test] extra")
    import openai
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("tests.helpers.traced_agent")
    try:
        with FakeOpenAI(_reply) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
            for case in cases:
                with tracer.start_as_current_span("invoke_agent", attributes={"evalkit.case_id": case,
                                                                               "gen_ai.operation.name":
                                                                                   "invoke_agent"}):
                    messages: list[dict[str, Any]] = [{"role": "user", "content": case}]
                    for _ in range(3):
                        reply = client.chat.completions.create(model="agent-model", messages=messages,  # type: ignore[arg-type]
                                                               tools=TOOLS)  # type: ignore[arg-type]
                        message = reply.choices[0].message
                        if not message.tool_calls:
                            break
                        messages.append(message.model_dump(exclude_none=True))
                        for call in message.tool_calls:
                            result = _execute(tracer, call.id, call.function.name, call.function.arguments,
                                              failing_tool, Status, StatusCode)
                            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    finally:
        instrumentor.uninstrument()
    request = encode_spans(exporter.get_finished_spans())
    if protobuf is not None:
        protobuf.write_bytes(request.SerializeToString())
    export = MessageToDict(request)
    for resource_spans in export["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    path.write_text(json.dumps(export), encoding="utf-8")
    return export


def _execute(tracer: Any, call_id: str, name: str, arguments: str, failing_tool: str | None, status: Any,
             code: Any) -> str:
    """Execute one tool inside its `execute_tool` span (GenAI semantic conventions)."""
    with tracer.start_as_current_span(f"execute_tool {name}", record_exception=False,
                                      set_status_on_exception=False,
                                      attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                                  "gen_ai.tool.call.id": call_id,
                                                  "gen_ai.tool.call.arguments": arguments,
                                                  "gen_ai.tool.type": "function"}) as span:
        if name == failing_tool:
            error = TimeoutError(f"{name} timed out")
            span.record_exception(error)
            span.set_attribute("error.type", "TimeoutError")
            span.set_status(status(code.ERROR, str(error)))
            return f"error: {error}"
        result = f"{name} result for {json.loads(arguments)['q']}"
        span.set_attribute("gen_ai.tool.call.result", result)
        return result
