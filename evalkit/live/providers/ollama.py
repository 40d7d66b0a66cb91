"""Ollama's /api/chat, spoken directly over HTTP (evalkit.live.providers.jsonhttp): no client library needed.

The official `ollama` client (over httpx) cost about 1 ms of CPU per call, more than a concurrent run can spend
(see jsonhttp); the API is one JSON request and one JSON reply, which this module writes and reads as the client
did: `POST {base_url}/api/chat` with `model`, `messages`, `stream: false`, and `format` (the JSON schema),
`options` and `think` when set. The reply is checked for the fields read (`message.content`, `done_reason`, the
two token counts) and nothing else.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import msgspec

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError
from evalkit.core.provider_specs import ProviderSpec, ToolChoiceName
from evalkit.core.version import __version__
from evalkit.live.providers.base import CallFailure, excerpt, service_ms, timed_call
from evalkit.live.providers.credentials import api_key, masked
from evalkit.live.providers.jsonhttp import Answer, Bounds, JsonHttp, parse_target
from evalkit.live.providers.media import base64_data, refuse_untaken
from evalkit.live.providers.toolcalls import answered_tools, made_up_id, object_arguments, refuse_unsendable
from evalkit.records.call import Message, Reply, Request, ToolCall, Usage

__all__ = ["OllamaProvider", "create", "TOOL_CHOICES", "SPEC"]

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434


class _Function(msgspec.Struct):
    name: str
    arguments: dict[str, Any] | None = None


class _ToolCall(msgspec.Struct):
    function: _Function
    id: str | None = None
    """Newer servers number their calls; older ones give no id."""


class _Message(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


_Count = Annotated[int, msgspec.Meta(ge=0)]


class _ChatResponse(msgspec.Struct):
    """The part of Ollama's ChatResponse evalkit reads; other fields are ignored."""

    message: _Message
    done_reason: str | None = None
    prompt_eval_count: _Count | None = None
    eval_count: _Count | None = None
    total_duration: int | None = None
    """Nanoseconds the server spent on the request (loading, prompt and generation), not counting its queue."""


_REPLY = msgspec.json.Decoder(_ChatResponse)


class OllamaProvider:
    """Chat completions from an Ollama server, with the JSON schema as `format`. Safe to call from many threads:
    each keeps its own connection."""

    def __init__(self, config: ModelConfig) -> None:
        self._name = config.name
        self._host = config.base_url or DEFAULT_HOST
        self._secret = api_key(config)  # e.g. a hosted Ollama behind a token; never leaves this object
        self._bounds = Bounds(config.name, self._host, config.timeout_s, config.max_reply_bytes, self._clean)
        try:
            target = parse_target(self._host, DEFAULT_PORT)
        except ValueError as error:
            raise ConfigError(f"model {config.name}: base_url {self._host!r} is not an http(s) URL ({error}); "
                              "give one like http://127.0.0.1:11434") from None
        headers = {"User-Agent": f"evalkit/{__version__}"}
        if self._secret is not None:
            headers["Authorization"] = f"Bearer {self._secret}"
        try:
            self._http = JsonHttp(target, timeout_s=config.timeout_s, max_reply_bytes=config.max_reply_bytes,
                                  headers=headers)
        except ValueError as error:  # a header or path that could split a request; the message holds no value
            raise ConfigError(f"model {config.name}: {error}; fix model.base_url, or the key variable the "
                              "Authorization header is built from") from None

    def complete(self, request: Request) -> Reply:
        refuse_unsendable(self._name, "ollama", TOOL_CHOICES, request)
        refuse_untaken(self._name, "ollama", ("image",), request)
        payload: dict[str, Any] = {"model": request.model, "messages": self._messages(request), "stream": False}
        if request.tools:
            payload["tools"] = [{"type": "function", "function": {
                "name": tool.name, **({"description": tool.description} if tool.description else {}),
                "parameters": tool.parameters}} for tool in request.tools]
        options: dict[str, Any] = dict(request.options)
        think = options.pop("think", None)  # a request flag in Ollama's API, not a sampling option
        if request.response_schema is not None:
            payload["format"] = request.response_schema
        if options:
            payload["options"] = options
        if think is not None:
            payload["think"] = think
        answer, latency_ms = timed_call(lambda: self._http.post("/api/chat", payload), self._bounds.failure)
        if answer.status >= 300:
            raise self._refused(answer)
        try:
            response = _REPLY.decode(answer.body)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise CallFailure(self._clean(f"{self._name}: the server answered {answer.status} with a body that is "
                                          f"not a chat response: {excerpt(str(error))}"),
                              retryable=True, status=answer.status) from None
        calls = response.message.tool_calls or []
        return Reply(
            # an assistant turn that only calls tools has content "": no text, as other providers say it
            text=response.message.content if response.message.content or not calls else None,
            tool_calls=tuple(ToolCall(id=call.id or made_up_id(request, i), tool=call.function.name,
                                      arguments=call.function.arguments if call.function.arguments is not None
                                      else {})
                             for i, call in enumerate(calls)),
            stop_reason=response.done_reason,
            usage=Usage(input_tokens=response.prompt_eval_count, output_tokens=response.eval_count),
            latency_ms=latency_ms,
            service_ms=service_ms(response.total_duration / 1e6 if response.total_duration is not None else None,
                                  latency_ms),
        )

    def _messages(self, request: Request) -> list[dict[str, Any]]:
        """The conversation as /api/chat messages: an assistant turn's tool calls with their arguments as an
        object; a tool result as role `tool` with `tool_name`, the tool of the call it answers (the API has no
        error flag: the content says what failed)."""
        tools = answered_tools(self._name, "ollama", request.messages)
        return [self._message(m, tools) for m in request.messages]

    def _message(self, message: Message, tools: dict[str, str]) -> dict[str, Any]:
        wire: dict[str, Any] = {"role": message.role, "content": message.text}
        if message.tool_calls:
            wire["tool_calls"] = [{"function": {
                "name": call.tool, "arguments": object_arguments(self._name, "ollama", call.arguments, call.id)}}
                for call in message.tool_calls]
        if message.tool_call_id is not None:
            wire["tool_name"] = tools[message.tool_call_id]
        if message.images:  # /api/chat takes a message's images apart from its text, base64, in their order
            wire["images"] = [base64_data(part) for part in message.images]
        return wire

    def _refused(self, answer: Answer) -> CallFailure:
        """The CallFailure an error status means; a redirect is not followed (the base URL should name the server)."""
        if answer.status < 400:
            return self._bounds.redirected(answer)
        text = answer.body.decode("utf-8", errors="replace")
        return CallFailure.for_status(
            answer.status, self._clean(f"{self._name}: HTTP {answer.status}: {excerpt(_server_message(text))}"),
            retry_after=answer.retry_after)

    def _clean(self, message: str) -> str:
        return masked(message, self._secret)


def _server_message(body: str) -> str:
    """Ollama's `{"error": message}`, or the body as it came."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return body


def create(config: ModelConfig) -> OllamaProvider:
    return OllamaProvider(config)


TOOL_CHOICES: tuple[ToolChoiceName, ...] = ("auto",)
"""/api/chat has no tool choice: the model decides (`none`, `required` and a named tool are refused)."""

SPEC = ProviderSpec(name="ollama", factory=create, stop_reasons={"stop": "finished", "length": "truncated"},
                    tool_choices=TOOL_CHOICES, media=("image",))  # /api/chat's `images`; no audio
"""`format` is Ollama's one way to send a schema; `done_reason` is `stop` or `length` (`stop` after tool calls
too: Ollama has no stop reason of its own for them)."""
