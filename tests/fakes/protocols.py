"""The wire protocols a fake server speaks: what a call looks like, what a reply and an error look like.

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

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FakeCall", "FakeReply", "Protocol", "Ollama", "OpenAI", "Gemini", "AzureOpenAI", "Anthropic", "BedrockConverse",
           "PROTOCOLS", "word_count"]

CREATED = 1767225600  # 2026-01-01T00:00:00Z: replies are the same on every run


@dataclass(frozen=True)
class FakeCall:
    """A tool call a fake server's model makes, written in each protocol's own shape."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    """The arguments object; a string is sent as it is where the protocol carries arguments as JSON text
    (OpenAI's), so a malformed call can be served."""
    id: str | None = None
    """The call's id; None: the protocol's own (`call_fake<n>_<i>`), or none where the protocol has none (Gemini,
    Ollama)."""
    signature: str | None = None
    """Gemini 3's `thoughtSignature` on the call's part (base64)."""


@dataclass(frozen=True)
class FakeReply:
    """A reply with more than its content: a stop reason, token counts or tool calls of the test's choosing."""

    content: str
    stop_reason: str | None = None
    """As the protocol spells it ("stop", "length"; Gemini: "STOP", "MAX_TOKENS"); None: the protocol's normal stop."""
    input_tokens: int | None = None
    """None: count the words of the request's messages."""
    output_tokens: int | None = None
    """None: count the words of the content."""
    cache_read_tokens: int = 0
    """Anthropic: input tokens read from the prompt cache (`cache_read_input_tokens`, counted apart from input)."""
    cache_write_tokens: int = 0
    """Anthropic: input tokens written to the prompt cache (`cache_creation_input_tokens`)."""
    tool_calls: tuple[FakeCall, ...] = ()
    """Tool calls the model makes beside its content (content "" for none); the stop reason is then the
    protocol's tool-use one unless `stop_reason` says otherwise."""

    def call_id(self, n: int, i: int, protocol: str) -> str | None:
        """The id of call `i` of reply `n`: the test's, else the protocol's made-up one (None where it has none)."""
        call = self.tool_calls[i]
        if call.id is not None or protocol in ("gemini", "ollama"):
            return call.id
        return f"call_fake{n}_{i}"


def _object(arguments: dict[str, Any] | str) -> Any:
    """Arguments for a protocol that carries them as an object: a string is parsed (kept when not JSON)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


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
        for m in body.get("messages") or []:
            for call in (m.get("tool_calls") or []) if isinstance(m, dict) else []:
                if not isinstance((call.get("function") or {}).get("arguments"), dict):
                    return ("json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls."
                            "function.arguments of type api.ToolCallFunctionArguments")
        return None

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        input_tokens, output_tokens = self.counts(body, reply)
        return {
            "model": body["model"],
            "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": reply.content,
                        **({"tool_calls": [{"function": {"name": c.name, "arguments": _object(c.arguments)},
                                            **({"id": c.id} if c.id else {})} for c in reply.tool_calls]}
                           if reply.tool_calls else {})},
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
        return _openai_tool_problem(body)

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
                "message": {"role": "assistant", "content": (reply.content or None) if reply.tool_calls
                            else reply.content, "refusal": None,
                            **({"tool_calls": [{"id": reply.call_id(n, i, self.name), "type": "function",
                                                "function": {"name": c.name, "arguments": _text(c.arguments)}}
                                               for i, c in enumerate(reply.tool_calls)]}
                               if reply.tool_calls else {})},
                "logprobs": None,
                "finish_reason": reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop"),
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
        return _gemini_tool_problem(body)

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
                "content": {"role": "model", "parts": ([{"text": reply.content}] if reply.content or not
                                                       reply.tool_calls else []) + [
                    {"functionCall": {"name": c.name, "args": _object(c.arguments), **({"id": c.id} if c.id else {})},
                     **({"thoughtSignature": c.signature} if c.signature else {})}
                    for c in reply.tool_calls]},
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


class AzureOpenAI(OpenAI):
    """Azure OpenAI: OpenAI's chat completions under `/openai/deployments/{deployment}/chat/completions`, with the
    API version as the `api-version` query parameter (refused without one, as Azure does) and the key in the
    `api-key` header (or an Entra ID token as `Authorization: Bearer`). The client's base URL is the endpoint."""

    name = "azure"
    base_path = ""
    _call = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")

    def is_call(self, method: str, path: str) -> bool:
        return method == "POST" and self._call.match(_path(path)) is not None

    def refuse(self, path: str, body: Any) -> str | None:
        if "api-version=" not in path.partition("?")[2]:
            return "Missing required query parameter: api-version"
        return super().refuse(path, body)


class Anthropic(Protocol):
    """Anthropic's Messages API, `POST /v1/messages`. The reply shapes are those of Anthropic's documented examples
    (a `message` with `text` or `tool_use` content blocks, `stop_reason`, `usage` with the cache counts), and errors
    are `{"type": "error", "error": {"type": "overloaded_error" | "rate_limit_error" | ..., "message"}}`. A call
    that forces a tool (`tool_choice: {type: tool, name}`) is answered with that tool's `tool_use` block, whose
    input is the reply content parsed as JSON (content that is not a JSON object comes back as text instead)."""

    name = "anthropic"
    _error_types = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                    529: "overloaded_error"}

    def is_call(self, method: str, path: str) -> bool:
        return method == "POST" and _path(path) == "/v1/messages"

    def refuse(self, path: str, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "There was an issue with the format or content of your request."
        for required in ("model", "max_tokens", "messages"):
            if required not in body:
                return f"{required}: Field required"
        if any(isinstance(m, dict) and m.get("role") == "system" for m in body["messages"]):
            return "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter"
        if body.get("stream"):
            return "this fake server only answers non-streaming requests"
        return _anthropic_tool_problem(body)

    def texts(self, body: dict[str, Any]) -> list[object]:
        system = body.get("system")
        return [system, *super().texts(body)]

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        input_tokens, output_tokens = self.counts(body, reply)
        forced = body.get("tool_choice") if isinstance(body.get("tool_choice"), dict) else {}
        tool_input = _json_object(reply.content) if forced.get("type") == "tool" else None
        if tool_input is not None:
            content: list[dict[str, Any]] = [{"type": "tool_use", "id": f"toolu_fake{n:08d}", "name": forced["name"],
                                              "input": tool_input}]
        else:
            content = [{"type": "text", "text": reply.content}] if reply.content or not reply.tool_calls else []
            content += [{"type": "tool_use", "id": reply.call_id(n, i, self.name), "name": c.name,
                         "input": _object(c.arguments)} for i, c in enumerate(reply.tool_calls)]
        return {
            "id": f"msg_fake{n:08d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": reply.stop_reason or ("tool_use" if tool_input is not None or reply.tool_calls
                                                 else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": reply.cache_write_tokens,
                      "cache_read_input_tokens": reply.cache_read_tokens},
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = self._error_types.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


class BedrockConverse(Protocol):
    """Amazon Bedrock's Converse API, `POST /model/{modelId}/converse`, as botocore's service model describes it
    and the API reference's examples show it: `output.message.content` with `text` or `toolUse` blocks,
    `stopReason`, `usage` and `metrics`; errors are `{"__type": "ThrottlingException", "message"}` (botocore reads
    the code from `__type`). A call that forces a tool (`toolConfig.toolChoice.tool.name`) is answered with that
    tool's `toolUse` block. Every call must carry a SigV4 signature (checked in evalkit's tests by `sigv4`)."""

    name = "bedrock"
    _call = re.compile(r"^/model/([^/]+)/converse$")
    _codes = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
              408: "ModelTimeoutException", 424: "ModelErrorException", 429: "ThrottlingException",
              500: "InternalServerException", 503: "ServiceUnavailableException"}

    def is_call(self, method: str, path: str) -> bool:
        return method == "POST" and self._call.match(_path(path)) is not None

    def refuse(self, path: str, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "Malformed input request, please reformat your input and try again."
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return "A conversation must start with a user message."
        return _bedrock_tool_problem(body)

    def texts(self, body: dict[str, Any]) -> list[object]:
        blocks = [*(body.get("system") or []),
                  *(c for m in body.get("messages") or [] if isinstance(m, dict) for c in m.get("content") or [])]
        return [b.get("text") for b in blocks if isinstance(b, dict)]

    def reply(self, path: str, body: dict[str, Any], reply: FakeReply, n: int) -> dict[str, Any]:
        input_tokens, output_tokens = self.counts(body, reply)
        choice = ((body.get("toolConfig") or {}).get("toolChoice") or {}).get("tool") or {}
        tool_input = _json_object(reply.content) if choice.get("name") else None
        if tool_input is not None:
            content: list[dict[str, Any]] = [{"toolUse": {"toolUseId": f"tooluse_fake{n:08d}",
                                                          "name": choice["name"], "input": tool_input}}]
        else:
            content = [{"text": reply.content}] if reply.content or not reply.tool_calls else []
            content += [{"toolUse": {"toolUseId": reply.call_id(n, i, self.name), "name": c.name,
                                     "input": _object(c.arguments)}} for i, c in enumerate(reply.tool_calls)]
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": reply.stop_reason or ("tool_use" if tool_input is not None or reply.tool_calls
                                                else "end_turn"),
            "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens,
                      "totalTokens": input_tokens + output_tokens},
            "metrics": {"latencyMs": 120},
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        code = self._codes.get(status, "InternalServerException" if status >= 500 else "ValidationException")
        return {"__type": code, "message": message}


# -- what each server refuses in a conversation with tools (the rules its API reference states) -----------------


def _openai_tool_problem(body: dict[str, Any]) -> str | None:
    """Function tools with a name; a tool message answers a call of an earlier assistant turn; arguments are
    JSON text; a named tool choice names an offered tool."""
    names = set()
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or not isinstance((tool.get("function") or {}).get("name"), str):
            return "Missing required parameter: 'tools[0].function.name'."
        names.add(tool["function"]["name"])
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and (choice.get("function") or {}).get("name") not in names:
        return "Invalid value for 'tool_choice': the named function is not among the tools."
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return f"Invalid value for 'tool_choice': {choice!r}."
    called: set[str] = set()
    for m in body["messages"]:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or []:
            if not isinstance(call.get("function", {}).get("arguments"), str):
                return "Invalid type for 'messages[].tool_calls[].function.arguments': expected a string."
            called.add(call["id"])
        if m.get("role") == "tool" and m.get("tool_call_id") not in called:
            return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                    "'tool_calls'.")
    return None


def _anthropic_tool_problem(body: dict[str, Any]) -> str | None:
    """Tools with a name and an input schema; every `tool_use` is answered by a `tool_result` in the user turn right
    after it, the results first; a tool choice of a known type."""
    for tool in body.get("tools") or []:
        if "name" not in tool or "input_schema" not in tool:
            return "tools.0.input_schema: Field required"
    choice = body.get("tool_choice")
    if choice is not None and choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice.type: Input tag does not match any of the expected tags"
    messages = [m for m in body["messages"] if isinstance(m, dict)]
    for i, m in enumerate(messages):
        blocks = [b for b in m["content"] if isinstance(b, dict)] if isinstance(m.get("content"), list) else []
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if any(b.get("type") == "tool_result" for b in blocks) and m.get("role") != "user":
            return f"messages.{i}: tool_result blocks belong in a user turn"
        if uses:
            after = messages[i + 1]["content"] if i + 1 < len(messages) else []
            after = [b for b in after if isinstance(b, dict)] if isinstance(after, list) else []
            results = []
            for block in after:
                if block.get("type") != "tool_result":
                    break  # the results come first
                results.append(block.get("tool_use_id"))
            missing = [u for u in uses if u not in results]
            if missing:
                return (f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                        f"after: {', '.join(missing)}")
    return None


def _bedrock_tool_problem(body: dict[str, Any]) -> str | None:
    """toolConfig whenever the conversation holds toolUse or toolResult blocks; results answer earlier uses, in a
    user turn; a toolChoice of one known kind; no empty text block."""
    config = body.get("toolConfig")
    blocks = [(m.get("role"), b) for m in body["messages"] if isinstance(m, dict) for b in m.get("content") or []
              if isinstance(b, dict)]
    if any("toolUse" in b or "toolResult" in b for _, b in blocks) and not config:
        return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
    if config is not None:
        for tool in config.get("tools") or []:
            if "json" not in ((tool.get("toolSpec") or {}).get("inputSchema") or {}):
                return "1 validation error detected: Value at 'toolConfig.tools.1.member.toolSpec.inputSchema' failed"
        choice = config.get("toolChoice")
        if choice is not None and (len(choice) != 1 or next(iter(choice)) not in ("auto", "any", "tool")):
            return "Value at 'toolConfig.toolChoice' failed to satisfy constraint"
    used: set[str] = set()
    for role, block in blocks:
        if block.get("text") == "":
            return "The text field in the ContentBlock object is blank. Add text to the text field, and try again."
        if "toolUse" in block:
            used.add(block["toolUse"]["toolUseId"])
        if "toolResult" in block and (role != "user" or block["toolResult"].get("toolUseId") not in used):
            return "The toolResult blocks must answer toolUse blocks of the previous assistant turn."
    return None


def _gemini_tool_problem(body: dict[str, Any]) -> str | None:
    """A user turn of function responses answers the model turn before it, one response per call, by name."""
    contents = [c if isinstance(c, dict) else {} for c in body["contents"]]
    for i, content in enumerate(contents):
        responses = [p["functionResponse"] for p in content.get("parts") or [] if isinstance(p, dict)
                     and "functionResponse" in p]
        if not responses:
            continue
        before = contents[i - 1].get("parts") or [] if i > 0 else []
        calls = [p["functionCall"].get("name") for p in before if "functionCall" in p]
        if len(calls) != len(responses) or sorted(calls) != sorted(r.get("name") for r in responses):
            return ("Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn.")
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (Ollama(), OpenAI(), Gemini(), AzureOpenAI(), Anthropic(),
                                                      BedrockConverse())}
