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
from evalkit.core.provider_specs import ProviderSpec
from evalkit.core.version import __version__
from evalkit.live.providers.base import CallFailure, excerpt, service_ms, timed_call
from evalkit.live.providers.credentials import api_key, masked
from evalkit.live.providers.jsonhttp import Answer, Bounds, JsonHttp, parse_target
from evalkit.records.call import Reply, Request, Usage

__all__ = ["OllamaProvider", "create", "SPEC"]

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434


class _Message(msgspec.Struct):
    content: str | None = None


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
        payload: dict[str, Any] = {"model": request.model,
                                   "messages": [{"role": m.role, "content": m.text} for m in request.messages],
                                   "stream": False}
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
        return Reply(
            text=response.message.content,
            stop_reason=response.done_reason,
            usage=Usage(input_tokens=response.prompt_eval_count, output_tokens=response.eval_count),
            latency_ms=latency_ms,
            service_ms=service_ms(response.total_duration / 1e6 if response.total_duration is not None else None,
                                  latency_ms),
        )

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


SPEC = ProviderSpec(name="ollama", factory=create, stop_reasons={"stop": "finished", "length": "truncated"})
"""`format` is Ollama's one way to send a schema; `done_reason` is `stop` or `length`."""
