"""The OpenAI Chat Completions wire format (`POST /v1/chat/completions`) as the endpoint reads and answers it.

A request body becomes a records.call.Request: messages with their tool calls and tool results, image (`image_url`,
a data: URL) and audio (`input_audio`) parts (evalkit.programs.endpoint.media), the tools, the tool choice, a JSON
Schema response format, and every other body field as an option (they change the output, so they
are fingerprinted). A Reply becomes a `chat.completion`, or, when the program asked to stream, the same content as
Server-Sent Events chunks ending in `data: [DONE]`, as the `openai` SDK reads them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue, ValidationError

from evalkit.programs.endpoint.media import MediaStore
from evalkit.programs.endpoint.wire import WireError, described, field, finish_kind, object_at
from evalkit.records.call import (
    ContentPart,
    Message,
    NamedTool,
    Reply,
    Request,
    TextPart,
    Tool,
    ToolCall,
    parse_arguments,
)

__all__ = ["PATH", "error_body", "read_request", "reply_body", "reply_events", "streamed"]

PATH = "/v1/chat/completions"
# Body fields that say how to deliver the reply, not what to reply: never options, never fingerprinted.
_TRANSPORT = frozenset({"model", "messages", "tools", "tool_choice", "response_format", "stream", "stream_options",
                        "user", "metadata", "store"})
_FINISH = {"tool_calls": "tool_calls", "length": "length", "stop": "stop"}


def streamed(body: dict[str, Any]) -> bool:
    return body.get("stream") is True


def read_request(body: Any, model: str, media: MediaStore | None = None) -> Request:
    """The call a chat completions body asks for, sent to `model` (the run's model: the name the program gives is
    not the run's choice); image and audio parts are read through `media` (None: refused)."""
    data = object_at(body, "body")
    if field(data, "n", int, "body", 1) != 1:
        raise WireError("body.n: evalkit's endpoint answers one choice per call (n=1)")
    messages = [_message(m, f"messages[{i}]", media)
                for i, m in enumerate(field(data, "messages", list, "body", []))]
    tools = [_tool(t, f"tools[{i}]") for i, t in enumerate(field(data, "tools", list, "body", []))]
    options = {k: v for k, v in data.items() if k not in _TRANSPORT and k != "n" and v is not None}
    try:
        request = Request(model=model, messages=tuple(messages), tools=tuple(tools),
                          tool_choice=_tool_choice(data.get("tool_choice")), options=options,
                          response_schema=_schema(data.get("response_format")))
    except ValidationError as error:
        raise WireError(described(error)) from None
    if media is not None and request.media:
        media.check_total(request.media)
    return request


def _message(value: Any, where: str, media: MediaStore | None) -> Message:
    data = object_at(value, where)
    role = data.get("role")
    if role == "developer":  # the newer name of the system role
        role = "system"
    if role not in ("system", "user", "assistant", "tool"):
        raise WireError(f"{where}.role: expected system, developer, user, assistant or tool")
    calls = tuple(_tool_call(c, f"{where}.tool_calls[{i}]")
                  for i, c in enumerate(field(data, "tool_calls", list, where, [])))
    try:
        return Message(role=role, content=_content(data.get("content"), where, media), tool_calls=calls,
                       tool_call_id=field(data, "tool_call_id", str, where))
    except ValidationError as error:
        raise WireError(f"{where}: {described(error)}") from None


def _content(value: Any, where: str, media: MediaStore | None) -> str | tuple[ContentPart, ...]:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise WireError(f"{where}.content: expected text or a list of parts")
    parts: list[ContentPart] = []
    for i, part in enumerate(value):
        at = f"{where}.content[{i}]"
        part = object_at(part, at)
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextPart(text=part["text"]))
        elif kind == "image_url" and media is not None:
            image = object_at(part.get("image_url"), f"{at}.image_url")
            if image.get("detail", "auto") not in ("auto", None):
                raise WireError(f"{at}.image_url.detail: only detail=auto is served (the providers behind the "
                                "endpoint cannot all be told another)")
            parts.append(media.image_url(image.get("url"), f"{at}.image_url.url"))
        elif kind == "input_audio" and media is not None:
            audio = object_at(part.get("input_audio"), f"{at}.input_audio")
            parts.append(media.audio(audio.get("data"), f"{at}.input_audio.data"))
        else:
            raise WireError(f"{at}: part type {str(kind)[:40]!r} is not served (text, image_url and input_audio "
                            "are)")
    return tuple(parts)


def _tool_call(value: Any, where: str) -> ToolCall:
    data = object_at(value, where)
    function = object_at(data.get("function"), f"{where}.function")
    name, arguments = function.get("name"), function.get("arguments", "")
    if not isinstance(name, str) or not isinstance(arguments, str) or not isinstance(data.get("id"), str):
        raise WireError(f"{where}: needs an id, function.name and function.arguments as text")
    return ToolCall(id=data["id"], tool=name, arguments=parse_arguments(arguments))


def _tool(value: Any, where: str) -> Tool:
    data = object_at(value, where)
    if data.get("type", "function") != "function":
        raise WireError(f"{where}.type: only function tools are served")
    function = object_at(data.get("function"), f"{where}.function")
    try:
        return Tool(name=function.get("name"), description=function.get("description") or "",
                    parameters=function.get("parameters") or {"type": "object", "properties": {}})
    except ValidationError as error:
        raise WireError(f"{where}.function: {described(error)}") from None


def _tool_choice(value: Any) -> str | NamedTool | None:
    if value is None or value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        name = value["function"].get("name")
        if isinstance(name, str):
            return NamedTool(name=name)
    raise WireError("body.tool_choice: expected auto, none, required or {type: function, function: {name}}")


def _schema(value: Any) -> dict[str, Any] | None:
    if value is None or (isinstance(value, dict) and value.get("type") == "text"):
        return None
    if isinstance(value, dict) and value.get("type") == "json_schema" and isinstance(value.get("json_schema"), dict):
        schema = value["json_schema"].get("schema")
        if isinstance(schema, dict):
            return schema
    raise WireError("body.response_format: expected {type: text} or {type: json_schema, json_schema: {schema}}")


def _arguments_text(arguments: JsonValue) -> str:
    """The arguments as the wire carries them: JSON text (a malformed call kept as text goes back as it was)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _wire_calls(reply: Reply) -> list[dict[str, Any]]:
    return [{"id": call.id, "type": "function",
             "function": {"name": call.tool, "arguments": _arguments_text(call.arguments)}}
            for call in reply.tool_calls]


def _usage(reply: Reply) -> dict[str, int]:
    given, made = reply.usage.input_tokens or 0, reply.usage.output_tokens or 0
    return {"prompt_tokens": given, "completion_tokens": made, "total_tokens": given + made}


def reply_body(reply: Reply, call_id: str, model: str) -> dict[str, Any]:
    """The `chat.completion` the SDK parses."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = _wire_calls(reply)
    return {"id": f"chatcmpl-evalkit-{call_id}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": _FINISH[finish_kind(reply)],
                         "logprobs": None}],
            "usage": _usage(reply)}


def reply_events(reply: Reply, call_id: str, model: str, body: dict[str, Any]) -> list[bytes]:
    """The reply as Server-Sent Events: the whole content in one delta, the finish, usage when the program asked
    for it (`stream_options.include_usage`), then `[DONE]`."""
    head = {"id": f"chatcmpl-evalkit-{call_id}", "object": "chat.completion.chunk", "created": 0, "model": model}
    delta: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(_wire_calls(reply))]
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": _FINISH[finish_kind(reply)]}]}]
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        chunks.append({**head, "choices": [], "usage": _usage(reply)})
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


def error_body(message: str, kind: str) -> dict[str, Any]:
    """An error as the OpenAI API sends one; the SDK raises it with this message."""
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
