"""A scripted tool-calling model behind an OpenAI-compatible chat completions server, for the SQL agent
(suites/sql_agent), and a minimal provider that speaks tool calls to it.

`shop_model` answers a chat completions body as a careful SQL agent's model would, by the conversation so far: with no
tool result yet it calls `list_tables`; after the schema it calls `run_sql` with the query the question needs; after
the rows it answers with the first value. It is a deterministic fake, not a language model: recordings made with it
are authored fixtures.

`ToolChatProvider` is the live side of the tests until evalkit's own `openai` provider speaks tool calls (issue 37,
the providers' part): it sends a records.call.Request as chat completions JSON (tools, tool calls and tool messages
included) and reads the reply's tool calls. It is registered in a test through `installed_entry_points` as provider
`openai-tools`, so the runner calls it exactly as it calls any provider.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from typing import Any

from evalkit.core.config import ModelConfig
from evalkit.core.provider_specs import ProviderSpec
from evalkit.live.providers.base import CallFailure
from evalkit.records.call import NamedTool, Reply, Request, ToolCall, Usage

from .server import RawReply

__all__ = ["QUERIES", "SPEC", "ToolChatProvider", "shop_model"]

QUERIES = [
    (re.compile(r"how many orders did (\w+)", re.I),
     "SELECT COUNT(*) FROM orders JOIN customers ON customers.id = orders.customer_id WHERE customers.name = '{}'"),
    (re.compile(r"total (\w+) spent", re.I),
     "SELECT SUM(total) FROM orders JOIN customers ON customers.id = orders.customer_id WHERE customers.name = '{}'"),
    (re.compile(r"city does (\w+) live", re.I), "SELECT city FROM customers WHERE name = '{}'"),
]


def _completion(n: int, content: str | None, calls: list[dict[str, Any]], body: dict[str, Any]) -> RawReply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    data = {"id": f"chatcmpl-shop-{n}", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": words, "completion_tokens": 5, "total_tokens": words + 5}}
    return RawReply(200, json.dumps(data).encode())


def _call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{n}_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def shop_model(body: dict[str, Any]) -> RawReply:
    """The next turn of the scripted SQL agent's model (see the module's docstring)."""
    messages = body.get("messages", [])
    question = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    results = [m for m in messages if m.get("role") == "tool"]
    step = len(results)
    if step == 0:
        return _completion(step, None, [_call(step, "list_tables", {})], body)
    if step == 1:
        for pattern, query in QUERIES:
            found = pattern.search(question)
            if found:
                return _completion(step, None, [_call(step, "run_sql", {"query": query.format(found.group(1))})], body)
        return _completion(step, "I cannot answer that from the shop's data.", [], body)
    rows = json.loads(str(results[-1].get("content") or "[]"))
    value = rows[0][0] if isinstance(rows, list) and rows and rows[0] else None
    return _completion(step, f"{value}", [], body)


class ToolChatProvider:
    """Chat completions with tool calls over plain HTTP (see the module's docstring)."""

    def __init__(self, config: ModelConfig) -> None:
        self._url = (config.base_url or "").rstrip("/") + "/chat/completions"
        self._timeout_s = config.timeout_s

    def complete(self, request: Request) -> Reply:
        body: dict[str, Any] = {"model": request.model, "messages": [_wire(m) for m in request.messages],
                                **request.options}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}} for t in request.tools]
        if isinstance(request.tool_choice, NamedTool):
            body["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice.name}}
        elif request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        started = time.monotonic()
        sent = urllib.request.Request(self._url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(sent, timeout=self._timeout_s) as answer:
                data = json.loads(answer.read())
        except urllib.error.HTTPError as error:
            raise CallFailure.for_status(error.code, f"HTTP {error.code}") from None
        except OSError as error:
            raise CallFailure(f"connection to {self._url} failed: {error}", retryable=True) from None
        choice = data["choices"][0]
        calls = tuple(ToolCall(id=c["id"], tool=c["function"]["name"],
                               arguments=json.loads(c["function"]["arguments"] or "{}"))
                      for c in choice["message"].get("tool_calls") or [])
        usage = data.get("usage") or {}
        return Reply(text=choice["message"].get("content"), stop_reason=choice.get("finish_reason"),
                     usage=Usage(input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens")),
                     latency_ms=round((time.monotonic() - started) * 1000, 3), tool_calls=calls)


def _wire(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.tool, "arguments": json.dumps(c.arguments)}}
                             for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


SPEC = ProviderSpec(name="openai-tools", factory=ToolChatProvider,
                    stop_reasons={"stop": "finished", "tool_calls": "other", "length": "truncated"})
