"""A scripted tool-calling model behind an OpenAI-compatible chat completions server, for the SQL agent
(suites/sql_agent); evalkit's own `openai` provider speaks tool calls to it in a live run.

`shop_model` answers a chat completions body as a careful SQL agent's model would, by the conversation so far: with no
tool result yet it calls `list_tables`; after the schema it calls `run_sql` with the query the question needs; after
the rows it answers with the first value. It is a deterministic fake, not a language model: recordings made with it
are authored fixtures.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .server import RawReply

__all__ = ["QUERIES", "shop_model"]

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
