"""The Anthropic Messages wire format (`POST /v1/messages`) as the endpoint reads and answers it.

`system` becomes a system message; a user turn's `tool_result` blocks become tool messages (in their order, before
the turn's text); a user turn's `image` blocks (base64 sources only: evalkit.programs.endpoint.media) make its content
parts, text and images in their order; an assistant turn's `tool_use` blocks become its tool calls; `input_schema` is
a tool's parameters; `max_tokens` and the sampling fields are options. A Reply becomes a `message` with text and
`tool_use` blocks. Streaming is not served: the `anthropic` SDK's `messages.create` does not stream unless asked to.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evalkit.programs.endpoint.media import MediaStore
from evalkit.programs.endpoint.wire import WireError, described, field, finish_kind, object_at
from evalkit.records.call import ContentPart, Message, NamedTool, Reply, Request, TextPart, Tool, ToolCall

__all__ = ["PATH", "error_body", "read_request", "reply_body"]

PATH = "/v1/messages"
_TRANSPORT = frozenset({"model", "messages", "system", "tools", "tool_choice", "stream", "metadata"})
_STOP = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}


def read_request(body: Any, model: str, media: MediaStore | None = None) -> Request:
    """The call a Messages body asks for, sent to `model` (the run's model, whatever name the program gives);
    image blocks are read through `media` (None: refused)."""
    data = object_at(body, "body")
    if data.get("stream") is True:
        raise WireError("body.stream: evalkit's endpoint answers Anthropic Messages calls whole; call without "
                        "stream=True")
    messages: list[Message] = []
    system = data.get("system")
    if system:
        messages.append(Message(role="system", content=_text(system, "body.system")))
    for i, turn in enumerate(field(data, "messages", list, "body", [])):
        messages += _turn(turn, f"messages[{i}]", media)
    tools = [_tool(t, f"tools[{i}]") for i, t in enumerate(field(data, "tools", list, "body", []))]
    options = {k: v for k, v in data.items() if k not in _TRANSPORT and v is not None}
    try:
        request = Request(model=model, messages=tuple(messages), tools=tuple(tools),
                          tool_choice=_tool_choice(data.get("tool_choice")), options=options)
    except ValidationError as error:
        raise WireError(described(error)) from None
    if media is not None and request.media:
        media.check_total(request.media)
    return request


def _text(value: Any, where: str) -> str:
    """Text, or a list of text blocks joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and b.get("type") == "text"
                                       and isinstance(b.get("text"), str) for b in value):
        return "".join(b["text"] for b in value)
    raise WireError(f"{where}: only text (or text blocks) is served")


def _turn(value: Any, where: str, media: MediaStore | None) -> list[Message]:
    data = object_at(value, where)
    role, content = data.get("role"), data.get("content")
    if role not in ("user", "assistant"):
        raise WireError(f"{where}.role: expected user or assistant")
    if isinstance(content, str):
        return [Message(role=role, content=content)]
    if not isinstance(content, list):
        raise WireError(f"{where}.content: expected text or a list of blocks")
    text: list[str] = []
    parts: list[ContentPart] = []  # the user turn's text and images in their order
    calls, results = [], []
    for i, block in enumerate(content):
        block, at = object_at(block, f"{where}.content[{i}]"), f"{where}.content[{i}]"
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
            parts.append(TextPart(text=block["text"]))
        elif kind == "image" and role == "user" and media is not None:
            source = object_at(block.get("source"), f"{at}.source")
            if source.get("type") != "base64":
                raise WireError(f"{at}.source.type: evalkit's endpoint takes images inline (type base64) and never "
                                f"fetches a URL or a file; send the bytes")
            parts.append(media.image(source.get("data"), f"{at}.source.data"))
        elif kind == "tool_use" and role == "assistant":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise WireError(f"{at}: a tool_use block needs an id and a name")
            calls.append(ToolCall(id=block["id"], tool=block["name"], arguments=block.get("input")))
        elif kind == "tool_result" and role == "user":
            if not isinstance(block.get("tool_use_id"), str):
                raise WireError(f"{at}: a tool_result block needs tool_use_id")
            results.append(Message(role="tool", tool_call_id=block["tool_use_id"],
                                   content=_text(block.get("content") or "", f"{at}.content"),
                                   error=block.get("is_error") is True))
        else:
            raise WireError(f"{at}: block type {kind!r} is not served in a {role} turn")
    try:
        if role == "assistant":
            return [Message(role="assistant", content="".join(text), tool_calls=tuple(calls))]
        if any(not isinstance(part, TextPart) for part in parts):  # text alone stays one text, as it always was
            return [*results, Message(role="user", content=tuple(parts))]
        return [*results, *([Message(role="user", content="".join(text))] if text or not results else [])]
    except ValidationError as error:
        raise WireError(f"{where}: {described(error)}") from None


def _tool(value: Any, where: str) -> Tool:
    data = object_at(value, where)
    try:
        return Tool(name=data.get("name"), description=data.get("description") or "",
                    parameters=data.get("input_schema") or {"type": "object", "properties": {}})
    except ValidationError as error:
        raise WireError(f"{where}: {described(error)}") from None


def _tool_choice(value: Any) -> str | NamedTool | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in ("auto", "none"):
        return str(kind)
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(value.get("name"), str):
        return NamedTool(name=value["name"])
    raise WireError("body.tool_choice: expected {type: auto|any|none} or {type: tool, name}")


def reply_body(reply: Reply, call_id: str, model: str) -> dict[str, Any]:
    """The `message` the SDK parses."""
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [{"type": "tool_use", "id": call.id, "name": call.tool,
                 "input": call.arguments if isinstance(call.arguments, dict) else {}} for call in reply.tool_calls]
    return {"id": f"msg_evalkit_{call_id}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": _STOP[finish_kind(reply)], "stop_sequence": None,
            "usage": {"input_tokens": reply.usage.input_tokens or 0, "output_tokens": reply.usage.output_tokens or 0}}


def error_body(message: str, kind: str) -> dict[str, Any]:
    """An error as the Anthropic API sends one; the SDK raises it with this message."""
    return {"type": "error", "error": {"type": kind, "message": message}}
