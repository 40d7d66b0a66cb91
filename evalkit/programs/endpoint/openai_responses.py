"""The OpenAI Responses API (`POST /v1/responses`) as the endpoint reads and answers it.

`instructions` becomes a system message; `input` (text, or a list of items) becomes the messages: a `message` item is a
message (`developer` is the system role), a `function_call` item is a tool call of the assistant turn before it (or
of a new one), a `function_call_output` item is a tool message. Function tools and the tool choice map to the call's
tools; `text.format` of type `json_schema` is the response schema; `max_output_tokens` is the `max_tokens` option
(the name evalkit's providers read); every other body field that is not transport is an option, so it is
fingerprinted. A Reply becomes a `response` with an output `message` (its text) and a `function_call` item per tool
call; with `stream=True`, the same as the Server-Sent Events the `openai` SDK's stream reader accumulates
(`response.created` ... `response.completed`, the whole text in one delta).

The endpoint keeps no state between calls: a call that points at an earlier response (`previous_response_id`,
`conversation`) or runs in the background is refused naming the field; send the whole input, as `store=False`
programs do. Item kinds evalkit cannot express (reasoning, built-in tools, files) are refused the same way.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

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

PATH = "/v1/responses"
# Body fields that say how to deliver or keep the reply, not what to reply: never options, never fingerprinted.
_TRANSPORT = frozenset({"model", "input", "instructions", "tools", "tool_choice", "text", "stream", "stream_options",
                        "store", "metadata", "user", "include", "safety_identifier", "prompt_cache_key"})
_STATEFUL = ("previous_response_id", "conversation", "prompt")
_ROLES = {"developer": "system", "system": "system", "user": "user", "assistant": "assistant"}
_TEXT_PARTS = frozenset({"input_text", "output_text"})


def streamed(body: dict[str, Any]) -> bool:
    return body.get("stream") is True


def read_request(body: Any, model: str, media: MediaStore | None = None) -> Request:
    """The call a Responses body asks for, sent to `model` (the run's model, whatever name the program gives);
    images and audio are read through `media` (None: refused)."""
    data = object_at(body, "body")
    for name in _STATEFUL:
        if data.get(name) is not None:
            raise WireError(f"body.{name}: evalkit's endpoint keeps no state between calls (a replay must serve each "
                            "call from what it carries); send the whole input instead")
    if data.get("background") is True:
        raise WireError("body.background: evalkit's endpoint answers each call whole; call without background=True")
    messages: list[Message] = []
    instructions = data.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise WireError("body.instructions: expected text")
        if instructions:
            messages.append(Message(role="system", content=instructions))
    given = data.get("input")
    if isinstance(given, str):
        messages.append(Message(role="user", content=given))
    else:
        for i, item in enumerate(field(data, "input", list, "body", [])):
            _item(item, f"input[{i}]", messages, media)
    tools = [_tool(t, f"tools[{i}]") for i, t in enumerate(field(data, "tools", list, "body", []))]
    options = {k: v for k, v in data.items() if k not in _TRANSPORT and v is not None}
    if "max_output_tokens" in options:
        options["max_tokens"] = options.pop("max_output_tokens")
    schema, text_options = _text(data.get("text"))
    options |= text_options
    try:
        request = Request(model=model, messages=tuple(messages), tools=tuple(tools),
                          tool_choice=_tool_choice(data.get("tool_choice")), options=options, response_schema=schema)
    except ValidationError as error:
        raise WireError(described(error)) from None
    if media is not None and request.media:
        media.check_total(request.media)
    return request


def _item(value: Any, where: str, messages: list[Message], media: MediaStore | None) -> None:
    """Append what one input item says to `messages`."""
    data = object_at(value, where)
    kind = data.get("type", "message")
    try:
        if kind == "message":
            role = _ROLES.get(data.get("role"))  # type: ignore[arg-type]
            if role is None:
                raise WireError(f"{where}.role: expected system, developer, user or assistant")
            content = _content(data.get("content"), f"{where}.content", media)
            messages.append(Message(role=role, content=content))
        elif kind == "function_call":
            call_id, name, arguments = data.get("call_id"), data.get("name"), data.get("arguments", "")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
                raise WireError(f"{where}: a function_call item needs call_id, name and arguments as text")
            call = ToolCall(id=call_id, tool=name, arguments=parse_arguments(arguments))
            last = messages[-1] if messages else None
            # a turn's text and its calls are separate items here, one assistant message in the call contract
            if last is not None and last.role == "assistant":
                messages[-1] = last.model_copy(update={"tool_calls": (*last.tool_calls, call)})
            else:
                messages.append(Message(role="assistant", content="", tool_calls=(call,)))
        elif kind == "function_call_output":
            call_id = data.get("call_id")
            if not isinstance(call_id, str):
                raise WireError(f"{where}: a function_call_output item needs call_id")
            output = data.get("output")
            text = output if isinstance(output, str) else _only_text(output, f"{where}.output")
            messages.append(Message(role="tool", tool_call_id=call_id, content=text))
        else:
            raise WireError(f"{where}: item type {str(kind)[:40]!r} is not served (message, function_call and "
                            "function_call_output are)")
    except ValidationError as error:
        raise WireError(f"{where}: {described(error)}") from None


def _content(value: Any, where: str, media: MediaStore | None) -> str | tuple[ContentPart, ...]:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise WireError(f"{where}: expected text or a list of parts")
    parts: list[ContentPart] = []
    for i, part in enumerate(value):
        at = f"{where}[{i}]"
        part = object_at(part, at)
        kind = part.get("type")
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            parts.append(TextPart(text=part["text"]))
        elif kind == "input_image" and media is not None:
            if part.get("file_id") is not None:
                raise WireError(f"{at}.file_id: evalkit's endpoint takes images inline as data: URLs, not uploaded "
                                "files")
            if part.get("detail", "auto") not in ("auto", None):
                raise WireError(f"{at}.detail: only detail=auto is served (the providers behind the endpoint "
                                "cannot all be told another)")
            parts.append(media.image_url(part.get("image_url"), f"{at}.image_url"))
        elif kind == "input_audio" and media is not None:
            audio = object_at(part.get("input_audio"), f"{at}.input_audio")
            parts.append(media.audio(audio.get("data"), f"{at}.input_audio.data"))
        else:
            raise WireError(f"{at}: part type {str(kind)[:40]!r} is not served here")
    return tuple(parts)


def _only_text(value: Any, where: str) -> str:
    if isinstance(value, list) and all(isinstance(p, dict) and p.get("type") in _TEXT_PARTS
                                       and isinstance(p.get("text"), str) for p in value):
        return "".join(p["text"] for p in value)
    raise WireError(f"{where}: expected text or a list of text parts")


def _tool(value: Any, where: str) -> Tool:
    data = object_at(value, where)
    if data.get("type") != "function":
        raise WireError(f"{where}.type: only function tools are served (built-in tools run at OpenAI, where a "
                        "replay cannot reach)")
    try:
        return Tool(name=data.get("name"), description=data.get("description") or "",
                    parameters=data.get("parameters") or {"type": "object", "properties": {}})
    except ValidationError as error:
        raise WireError(f"{where}: {described(error)}") from None


def _tool_choice(value: Any) -> str | NamedTool | None:
    if value is None or value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, dict) and value.get("type") == "function" and isinstance(value.get("name"), str):
        return NamedTool(name=value["name"])
    raise WireError("body.tool_choice: expected auto, none, required or {type: function, name}")


def _text(value: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the response schema, the options) `text` says: its `format`, and anything else it holds (`verbosity`)."""
    if value is None:
        return None, {}
    data = object_at(value, "body.text")
    rest = {k: v for k, v in data.items() if k != "format" and v is not None}
    options = {"text": rest} if rest else {}
    form = data.get("format")
    if form is None or (isinstance(form, dict) and form.get("type") == "text"):
        return None, options
    if isinstance(form, dict) and form.get("type") == "json_schema" and isinstance(form.get("schema"), dict):
        return form["schema"], options
    raise WireError("body.text.format: expected {type: text} or {type: json_schema, name, schema}")


def _output(reply: Reply, call_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append({"id": f"msg_evalkit_{call_id}", "type": "message", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
    for i, call in enumerate(reply.tool_calls):
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        items.append({"id": f"fc_evalkit_{call_id}_{i}", "type": "function_call", "call_id": call.id,
                      "name": call.tool, "arguments": arguments, "status": "completed"})
    return items


def _response(reply: Reply, call_id: str, model: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    given, made = reply.usage.input_tokens or 0, reply.usage.output_tokens or 0
    truncated = finish_kind(reply) == "length"
    return {"id": f"resp_evalkit_{call_id}", "object": "response", "created_at": 0, "model": model,
            "status": "incomplete" if truncated and status == "completed" else status,
            "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
            "error": None, "instructions": None, "metadata": {}, "output": output, "parallel_tool_calls": True,
            "temperature": None, "top_p": None, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": given,
                      "input_tokens_details": {"cached_tokens": reply.usage.cache_read_tokens or 0,
                                               "cache_write_tokens": reply.usage.cache_write_tokens or 0},
                      "output_tokens": made, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": given + made}}


def reply_body(reply: Reply, call_id: str, model: str) -> dict[str, Any]:
    """The `response` the SDK parses."""
    return _response(reply, call_id, model, _output(reply, call_id), "completed")


def reply_events(reply: Reply, call_id: str, model: str, body: dict[str, Any]) -> list[bytes]:
    """The reply as the Server-Sent Events of a streamed response, in the order the SDK's accumulator checks:
    created, then per output item added, its content (text in one delta, or the arguments), done, then completed."""
    output = _output(reply, call_id)
    events: list[dict[str, Any]] = [{"type": "response.created",
                                     "response": _response(reply, call_id, model, [], "in_progress")}]
    for index, item in enumerate(output):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events += [{"type": "response.output_item.added", "output_index": index,
                        "item": {**item, "status": "in_progress", "content": []}},
                       {"type": "response.content_part.added", **where,
                        "part": {"type": "output_text", "text": "", "annotations": []}},
                       {"type": "response.output_text.delta", **where, "delta": text, "logprobs": []},
                       {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
                       {"type": "response.content_part.done", **where, "part": item["content"][0]}]
        else:
            where = {"item_id": item["id"], "output_index": index}
            events += [{"type": "response.output_item.added", "output_index": index,
                        "item": {**item, "status": "in_progress", "arguments": ""}},
                       {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]},
                       {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"],
                        "name": item["name"]}]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": _response(reply, call_id, model, output, "completed")})
    return [f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
            for n, event in enumerate(events)]


def error_body(message: str, kind: str) -> dict[str, Any]:
    """An error as the OpenAI API sends one; the SDK raises it with this message."""
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
