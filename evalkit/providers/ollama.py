"""Ollama's /api/chat through the official `ollama` client (extra: `pip install evalkit[ollama]`)."""

from __future__ import annotations

import os
import time
from typing import Any

from evalkit.config import ModelConfig
from evalkit.errors import ProviderError
from evalkit.providers.base import Reply, Request, Usage

__all__ = ["OllamaProvider", "create"]

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaProvider:
    """Chat completions from an Ollama server, with the JSON schema as `format`."""

    def __init__(self, config: ModelConfig) -> None:
        try:
            import ollama
        except ImportError:
            raise ProviderError("the ollama provider needs its client. Install with: "
                                "pip install 'evalkit[ollama]'") from None
        headers = {}
        if config.api_key_env:  # e.g. a hosted Ollama behind a token; the value never leaves this object
            key = os.environ.get(config.api_key_env)
            if not key:
                raise ProviderError(f"model '{config.name}' needs the environment variable "
                                    f"{config.api_key_env}; set it before a live run")
            headers["Authorization"] = f"Bearer {key}"
        self._client = ollama.Client(host=config.base_url or DEFAULT_HOST, timeout=config.timeout_s,
                                     headers=headers)

    def complete(self, request: Request) -> Reply:
        options: dict[str, Any] = dict(request.options)
        think = options.pop("think", None)  # a request flag in Ollama's API, not a sampling option
        started = time.perf_counter()
        response = self._client.chat(
            model=request.model,
            messages=[m.model_dump() for m in request.messages],
            format=request.response_schema,
            options=options or None,
            think=think,
        )
        latency_ms = (time.perf_counter() - started) * 1000
        return Reply(
            text=response.message.content,
            stop_reason=response.done_reason,
            usage=Usage(input_tokens=response.prompt_eval_count, output_tokens=response.eval_count),
            latency_ms=round(latency_ms, 1),
        )


def create(config: ModelConfig) -> OllamaProvider:
    return OllamaProvider(config)
