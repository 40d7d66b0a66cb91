"""The three wire protocols a fake server speaks: what a call looks like, what a reply and an error look like.

Each is written against what the official client sends and parses (read from the installed SDKs):

- Ollama (`ollama` 0.4+): `POST /api/chat` with `{"model", "messages", "stream": false, "format",
  "options", "think"}`; a reply is a `ChatResponse`; an error is `{"error": message}`.
- OpenAI (`openai` chat completions): `POST {base_url}/chat/completions`, base_url ending in `/v1`;
  a reply is a `chat.completion` object; an error is `{"error": {"message", "type", "param", "code"}}`.
- Gemini (`google-genai`): `POST {base_url}/{version}/models/{model}:generateContent`, key in the
  `x-goog-api-key` header, camelCase JSON (`contents`, `systemInstruction`, `generationConfig`);
  an error is `{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["FakeReply", "Protocol", "Ollama", "OpenAI", "Gemini", "PROTOCOLS", "word_count"]

CREATED = 1767225600  # 2026-01-01T00:00:00Z: replies are the same on every run


@dataclass(frozen=True)
class FakeReply:
    """A reply with more than its content: a stop reason or token counts of the test's choosing."""

    content: str
    stop_reason: str | None = None
    """As the protocol spells it ("stop", "length"; Gemini: "STOP", "MAX_TOKENS"); None: the protocol's normal stop."""
    input_tokens: int | None = None
    """None: count the words of the request's messages."""
    output_tokens: int | None = None
    """None: count the words of the content."""


def word_count(text: object) -> int:
    return len(text.split()) if isinstance(text, str) else 0


class Protocol:
    """One protocol: which requests are calls, and the JSON of a reply or an error."""

    name = ""
    base_path = ""
    """What the client's base URL adds to the server's root URL."""

    def is_call(self, method: str, path: str) -> bool:
        raise NotImplementedError

    def refuse(self, path: str, body: Any) -> str | None:
        """Why the server would answer 400 to this call (the client sent something wrong), or None."""
        raise NotImplementedError

    def texts(self, body: dict[str, Any]) -> list[object]:
        """The message texts of a call, for the default input token count (chat-style `messages` by default)."""
        return [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        raise NotImplementedError

    def error(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def other(self, method: str, path: str) -> tuple[int, Any] | None:
        """The answer to a request that is not a call (e.g. a health check), or None for 404."""
        return None

    def counts(self, body: dict[str, Any], reply: FakeReply) -> tuple[int, int]:
        input_tokens = reply.input_tokens
        if input_tokens is None:
            input_tokens = sum(word_count(t) for t in self.texts(body))
        output_tokens = reply.output_tokens if reply.output_tokens is not None else word_count(reply.content)
        return input_tokens, output_tokens


def _path(path: str) -> str:
    return path.split("?", 1)[0]


class Ollama(Protocol):
    name = "ollama"

    def is_call(self, method: str, path: str) -> bool:
        return method == "POST" and _path(path) == "/api/chat"

    def refuse(self, path: str, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "invalid request body"
        if not body.get("model"):
            return "model is required"
        if body.get("stream", True) is not False:
            # The client always sends `stream` explicitly; evalkit must never ask for a stream.
            return "this fake server only answers non-streaming requests (stream: false)"
        return None

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        input_tokens, output_tokens = self.counts(body, reply)
        return {
            "model": body["model"],
            "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": reply.content},
            "done": True,
            "done_reason": reply.stop_reason or "stop",
            "total_duration": 1_500_000,
            "load_duration": 100_000,
            "prompt_eval_count": input_tokens,
            "prompt_eval_duration": 400_000,
            "eval_count": output_tokens,
            "eval_duration": 1_000_000,
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": message}

    def other(self, method: str, path: str) -> tuple[int, Any] | None:
        if method == "GET" and _path(path) == "/":
            return 200, "Ollama is running"
        if method == "GET" and _path(path) == "/api/version":
            return 200, {"version": "0.0.0-fake"}
        return None


class OpenAI(Protocol):
    name = "openai"
    base_path = "/v1"
    _error_types = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 429: "rate_limit_error"}

    def is_call(self, method: str, path: str) -> bool:
        return method == "POST" and _path(path) == "/v1/chat/completions"

    def refuse(self, path: str, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "We could not parse the JSON body of your request."
        if not body.get("model"):
            return "you must provide a model parameter"
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return "'messages' must be a non-empty array"
        if body.get("stream"):
            return "this fake server only answers non-streaming requests"
        return None

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        input_tokens, output_tokens = self.counts(body, reply)
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": CREATED,
            "model": body["model"],
            "system_fingerprint": "fp_fake",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": None},
                "logprobs": None,
                "finish_reason": reply.stop_reason or "stop",
            }],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens},
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = self._error_types.get(status, "server_error" if status >= 500 else "invalid_request_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class Gemini(Protocol):
    name = "gemini"
    _call = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+):generateContent$")
    _statuses = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

    def is_call(self, method: str, path: str) -> bool:
        return method == "POST" and self._call.match(_path(path)) is not None

    @classmethod
    def model_of(cls, path: str) -> str:
        found = cls._call.match(_path(path))
        return found.group(2) if found else ""

    def refuse(self, path: str, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "Invalid JSON payload received."
        if not isinstance(body.get("contents"), list) or not body["contents"]:
            return "* GenerateContentRequest.contents: contents is not specified"
        return None

    def texts(self, body: dict[str, Any]) -> list[object]:
        blocks = list(body.get("contents") or [])
        if isinstance(body.get("systemInstruction"), dict):
            blocks.append(body["systemInstruction"])
        return [part.get("text") for block in blocks if isinstance(block, dict)
                for part in block.get("parts") or [] if isinstance(part, dict)]

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        input_tokens, output_tokens = self.counts(body, reply)
        return {
            "candidates": [{
                "content": {"role": "model", "parts": [{"text": reply.content}]},
                "finishReason": reply.stop_reason or "STOP",
                "index": 0,
            }],
            "usageMetadata": {"promptTokenCount": input_tokens, "candidatesTokenCount": output_tokens,
                              "totalTokenCount": input_tokens + output_tokens},
            "modelVersion": self.model_of(path),
            "responseId": f"fake-{n}",
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": self._statuses.get(status, "UNKNOWN")}}


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (Ollama(), OpenAI(), Gemini())}
