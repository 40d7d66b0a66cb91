"""Ollama's /api/chat through the official `ollama` client (extra `ollama`)."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalkit.core.config import ModelConfig
from evalkit.core.provider_specs import ProviderSpec
from evalkit.live.providers.base import CallFailure, Reply, Request, Usage, excerpt, timed_call
from evalkit.live.providers.credentials import api_key, masked
from evalkit.live.providers.install import missing_client

if TYPE_CHECKING:
    import httpx
    import ollama

__all__ = ["OllamaProvider", "create", "SPEC"]

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaProvider:
    """Chat completions from an Ollama server, with the JSON schema as `format`.

    Safe to call from many threads: each thread gets its own client (see `_client`).
    """

    def __init__(self, config: ModelConfig) -> None:
        try:
            import httpx
            import ollama
        except ImportError:
            raise missing_client("ollama") from None
        self._name = config.name
        self._host = config.base_url or DEFAULT_HOST
        self._timeout_s = config.timeout_s
        self._secret = api_key(config)  # e.g. a hosted Ollama behind a token; never leaves this object
        self._httpx = httpx
        self._response_error = ollama.ResponseError
        headers = {}
        if self._secret is not None:
            headers["Authorization"] = f"Bearer {self._secret}"
        # The client keeps only the body of an error reply; the response hook sees the whole reply
        # first, so a 429's Retry-After header reaches the CallFailure. The client does not retry.
        hooks: dict[str, list[Any]] = {"response": [self._refuse_error_status]}
        if self._secret is None:  # the client would send OLLAMA_API_KEY; the config names no credential
            hooks["request"] = [_without_credential]
        # One TLS context for all the clients (building one costs ~15 ms).
        self._settings: dict[str, Any] = {"host": self._host, "timeout": config.timeout_s, "headers": headers,
                                          "event_hooks": hooks, "verify": httpx.create_ssl_context()}
        self._ollama = ollama
        self._local = threading.local()

    def _client(self) -> ollama.Client:
        """This thread's client. httpcore 1.0's shared pool can close a connection it already handed to
        another thread's request (encode/httpcore#1110: a failed call or a hang), so each thread gets
        its own pool."""
        client: ollama.Client | None = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = self._ollama.Client(**self._settings)
        return client

    def complete(self, request: Request) -> Reply:
        options: dict[str, Any] = dict(request.options)
        think = options.pop("think", None)  # a request flag in Ollama's API, not a sampling option
        response, latency_ms = timed_call(lambda: self._client().chat(
            model=request.model,
            messages=[m.model_dump() for m in request.messages],
            format=request.response_schema,
            options=options or None,
            think=think,
        ), self._failure)
        return Reply(
            text=response.message.content,
            stop_reason=response.done_reason,
            usage=Usage(input_tokens=response.prompt_eval_count, output_tokens=response.eval_count),
            latency_ms=latency_ms,
        )

    def _refuse_error_status(self, response: httpx.Response) -> None:
        """An httpx response hook: an error status becomes a CallFailure, headers and all."""
        if response.status_code < 400:
            return
        response.read()
        raise CallFailure.for_status(
            response.status_code,
            self._clean(f"{self._name}: HTTP {response.status_code}: {excerpt(_server_message(response.text))}"),
            retry_after=response.headers.get("retry-after"))

    def _failure(self, error: Exception) -> CallFailure | None:
        """The CallFailure a client error means; None for anything else (a bug, a bad argument)."""
        httpx = self._httpx
        if isinstance(error, self._response_error):  # only when the hook did not see the reply
            return CallFailure.for_status(error.status_code,
                                          self._clean(f"{self._name}: HTTP {error.status_code}: {error.error}"))
        if isinstance(error, httpx.TimeoutException):
            return CallFailure(self._clean(f"{self._name}: no reply within {self._timeout_s:g} s"), retryable=True)
        if isinstance(error, ConnectionError):  # the client's own "Failed to connect to Ollama ..."
            return CallFailure(self._clean(f"{self._name}: connection to {self._host} failed: {error}"),
                               retryable=True)
        if isinstance(error, httpx.TransportError):
            dropped = isinstance(error, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError)
            return CallFailure(self._clean(f"{self._name}: connection to {self._host} failed: "
                                           f"{type(error).__name__}: {error}"), retryable=dropped)
        if isinstance(error, json.JSONDecodeError | ValidationError):
            return CallFailure(self._clean(f"{self._name}: the server answered 200 with a body that is not a chat "
                                           f"response: {excerpt(str(error))}"), retryable=True, status=200)
        return None

    def _clean(self, message: str) -> str:
        return masked(message, self._secret)


def _without_credential(request: httpx.Request) -> None:
    request.headers.pop("authorization", None)


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


SPEC = ProviderSpec(name="ollama", factory=create, stop_reasons={"stop": "finished", "length": "truncated"},
                    extra="ollama", requirements=("ollama",))
"""`format` is Ollama's one way to send a schema; `done_reason` is `stop` or `length`."""
