"""OpenAI-compatible chat completions (vLLM, llama.cpp server, LM Studio, OpenAI) through the official
`openai` client (extra `openai`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evalkit.core.config import ModelConfig
from evalkit.core.provider_specs import ProviderSpec, StopKindName, ToolChoiceName
from evalkit.live.providers.base import MISSHAPEN, CallFailure, excerpt, service_ms, timed_call
from evalkit.live.providers.credentials import api_key, masked
from evalkit.live.providers.dialects import response_format, schema_message
from evalkit.live.providers.install import missing_client
from evalkit.live.providers.jsonhttp import Bounds
from evalkit.live.providers.media import base64_data, data_uri, refuse_untaken
from evalkit.live.providers.sdkwire import httpx_client, httpx_module
from evalkit.live.providers.toolcalls import refuse_unsendable
from evalkit.records.call import (
    AudioPart,
    ContentPart,
    ImagePart,
    Message,
    NamedTool,
    Reply,
    Request,
    ToolCall,
    Usage,
    parse_arguments,
)

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIProvider", "create", "NAMED_OPTIONS", "DIALECTS", "STOP_REASONS", "TOOL_STOP_REASONS",
           "TOOL_CHOICES", "SPEC", "wire_message", "wire_tool_choice", "wire_tools"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "not-needed"
"""Sent when the config names no credential: local servers ignore it, and the client insists on one."""

NAMED_OPTIONS = frozenset({"temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "stop",
                           "presence_penalty", "frequency_penalty", "reasoning_effort", "logit_bias"})
"""Options that are parameters of the chat completions API. Any other option (vLLM's `top_k`,
`min_p`, `repetition_penalty` ...) goes into the request body as given, for the server to accept or refuse."""
RESERVED = frozenset({"model", "messages", "response_format", "stream", "tools", "tool_choice"})
"""Body fields the request itself sets; an option may not replace them."""


DEFAULT_DIALECT = "json_schema"
"""What OpenAI, vLLM and llama.cpp's `llama-server` take; llama-cpp-python's server needs `json_object`."""
DIALECTS = (DEFAULT_DIALECT, "json_object", "prompt")
STOP_REASONS: dict[str, StopKindName] = {"stop": "finished", "length": "truncated", "content_filter": "filtered",
                                         "tool_calls": "other", "function_call": "other"}
"""Chat completions' `finish_reason`s (`function_call`: the deprecated form of `tool_calls`)."""
TOOL_STOP_REASONS = frozenset({"tool_calls", "function_call"})
"""The model stopped to call tools."""
TOOL_CHOICES: tuple[ToolChoiceName, ...] = ("auto", "none", "required", "named")
"""Chat completions take every tool choice (an OpenAI-compatible server may still refuse one it lacks)."""


class OpenAIProvider:
    """Chat completions from an OpenAI-compatible server, with the JSON schema sent in the configured dialect
    (`structured_output`): a strict `json_schema` format by default.

    One client serves all threads: the SDK's client (an httpx connection pool) is safe to share.
    """

    def __init__(self, config: ModelConfig) -> None:
        try:
            import openai
            from openai.types.chat import ChatCompletion
        except ImportError:
            raise missing_client("openai") from None
        self._openai = openai
        self._completion_type = ChatCompletion
        self._name = config.name
        self._provider = config.provider  # `openai`, or `azure` through the subclass
        self._base_url = config.base_url or DEFAULT_BASE_URL
        self._timeout_s = config.timeout_s
        self._secret = api_key(config)  # the value never leaves this object
        self._dialect = config.structured_output or DEFAULT_DIALECT
        self._client: openai.OpenAI = self._make_client(config)

    def _http_client(self, config: ModelConfig) -> Any:
        """The client's HTTP: evalkit's bounded transport to base_url (evalkit.live.providers.sdkwire)."""
        bounds = Bounds(config.name, self._base_url, config.timeout_s, config.max_reply_bytes, self._clean)
        return httpx_client(httpx_module(getattr(self._openai, "DefaultHttpxClient", None)), self._base_url, bounds)

    def _make_client(self, config: ModelConfig) -> openai.OpenAI:
        # An explicit base URL: the config, not OPENAI_BASE_URL in the environment, says where calls go.
        return self._openai.OpenAI(base_url=self._base_url, api_key=self._secret or NO_KEY,
                                   timeout=config.timeout_s, max_retries=0,  # the runner owns retries
                                   http_client=self._http_client(config))

    _media: tuple[str, ...] = ("image", "audio")
    """The kinds of media part this provider takes (its spec's `media`; Azure's deployments take no audio here)."""

    def complete(self, request: Request) -> Reply:
        refuse_untaken(self._name, self._provider, self._media, request)
        reserved = sorted(RESERVED & set(request.options))
        if reserved:
            raise CallFailure(f"{self._name}: option(s) {', '.join(reserved)} are set from the request itself, "
                              "not from options; remove them from the model's options", retryable=False)
        arguments: dict[str, Any] = {
            "model": request.model,
            "messages": [wire_message(m) for m in request.messages],
        }
        refuse_unsendable(self._name, self._provider, TOOL_CHOICES, request)
        if request.tools:
            arguments["tools"] = wire_tools(request)
        if request.tool_choice is not None:
            arguments["tool_choice"] = wire_tool_choice(request)
        if request.response_schema is not None:
            if self._dialect == "prompt":
                arguments["messages"] = [*arguments["messages"], schema_message(request.response_schema)]
            else:
                arguments["response_format"] = response_format(self._dialect, request.response_schema)
        extra = {k: v for k, v in request.options.items() if k not in NAMED_OPTIONS}
        arguments |= {k: v for k, v in request.options.items() if k in NAMED_OPTIONS}
        if extra:
            arguments["extra_body"] = extra
        completion, latency_ms = timed_call(lambda: self._client.chat.completions.create(**arguments), self._failure)
        try:
            return self._reply(completion, latency_ms)
        except MISSHAPEN as error:  # the client built its types leniently from what came
            raise self._misshapen(error) from None

    def describe(self) -> dict[str, Any]:
        """What a recording's provenance says about the replies' source (nothing secret, no address)."""
        return {"provider": self._provider, "structured_output": self._dialect}

    def _reply(self, completion: Any, latency_ms: float) -> Reply:
        # A 200 whose body is not a chat completion: the SDK hands back the raw text (non-JSON
        # content type) or a partially built object; either way there is no reply to record.
        if not isinstance(completion, self._completion_type) or not completion.choices:
            raise CallFailure(self._clean(f"{self._name}: the server answered 200 without a chat completion: "
                                          f"{excerpt(str(completion))}"), retryable=True, status=200)
        choice = completion.choices[0]
        usage = completion.usage
        return Reply(
            text=choice.message.content,
            tool_calls=tuple(_tool_call(call) for call in choice.message.tool_calls or ()),
            stop_reason=choice.finish_reason,
            usage=Usage(input_tokens=usage.prompt_tokens if usage else None,
                        output_tokens=usage.completion_tokens if usage else None),
            latency_ms=latency_ms,
            service_ms=_server_timings(completion, latency_ms),
        )

    def _failure(self, error: Exception) -> CallFailure | None:
        """The CallFailure an SDK error means; None for anything else (a bug, a bad argument)."""
        openai = self._openai
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            return CallFailure.for_status(
                status, self._clean(f"{self._name}: HTTP {status}: {excerpt(_server_message(error))}"),
                retry_after=error.response.headers.get("retry-after"))
        if isinstance(error, openai.APITimeoutError):
            return CallFailure(self._clean(f"{self._name}: no reply within {self._timeout_s:g} s"), retryable=True)
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__ or error
            return CallFailure(self._clean(f"{self._name}: connection to {self._base_url} failed: "
                                           f"{type(cause).__name__}: {cause}"), retryable=True)
        if isinstance(error, (openai.APIResponseValidationError, *MISSHAPEN)):
            return self._misshapen(error)
        return None

    def _misshapen(self, error: Exception) -> CallFailure:
        return CallFailure(self._clean(f"{self._name}: the server answered 200 with a body that is not a chat "
                                       f"completion: {type(error).__name__}: {excerpt(str(error))}"),
                           retryable=True, status=200)

    def _clean(self, message: str) -> str:
        return masked(message, self._secret)


def wire_message(message: Message) -> dict[str, Any]:
    """A message as chat completions take it: content parts as their text; an assistant turn's tool calls with
    their arguments as JSON text (`content` null when it only calls tools, as the API writes such a turn); a tool
    result as role `tool` with its `tool_call_id` (the API has no error flag: the content says what failed). A
    message with images or audio is a list of parts in their order, each image a `data:` URI in an `image_url` part,
    each audio file base64 in an `input_audio` part (`wav` or `mp3`)."""
    wire: dict[str, Any] = {"role": message.role, "content": _content(message) if message.media else message.text}
    if message.tool_calls:
        wire["content"] = message.text or None
        wire["tool_calls"] = [{"id": call.id, "type": "function",
                               "function": {"name": call.tool, "arguments": _arguments_text(call.arguments)}}
                              for call in message.tool_calls]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    return wire


def _content(message: Message) -> list[dict[str, Any]]:
    assert not isinstance(message.content, str)  # a message with media has parts
    return [_part(part) for part in message.content]


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        return {"type": "image_url", "image_url": {"url": data_uri(part)}}
    if isinstance(part, AudioPart):
        return {"type": "input_audio", "input_audio": {"data": base64_data(part),
                                                       "format": "wav" if part.media_type == "audio/wav" else "mp3"}}
    return {"type": "text", "text": part.text}


def _tool_call(call: Any) -> ToolCall:
    """A function tool call; a custom tool call (free text, for a kind of tool evalkit never offers) is a reply
    of the wrong shape."""
    if call.type != "function":
        raise ValueError(f"a tool call of type {call.type!r}, where only function tools were offered")
    return ToolCall(id=call.id, tool=call.function.name, arguments=parse_arguments(call.function.arguments))


def _arguments_text(arguments: Any) -> str:
    """Arguments as the API carries them, JSON text; malformed text kept from a reply goes back as it came."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def wire_tools(request: Request) -> list[dict[str, Any]]:
    """The offered tools as function tools (an empty description left out: the field is optional)."""
    return [{"type": "function", "function": {"name": tool.name,
                                              **({"description": tool.description} if tool.description else {}),
                                              "parameters": tool.parameters}}
            for tool in request.tools]


def wire_tool_choice(request: Request) -> str | dict[str, Any]:
    """`auto`, `none`, `required`, or the named function."""
    choice = request.tool_choice
    if isinstance(choice, NamedTool):
        return {"type": "function", "function": {"name": choice.name}}
    assert choice is not None
    return choice


def _server_message(error: openai.APIStatusError) -> str:
    """The server's own error message (`{"error": {"message": ...}}`), or the SDK's summary."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(error.message)


def create(config: ModelConfig) -> OpenAIProvider:
    return OpenAIProvider(config)


SPEC = ProviderSpec(name="openai", factory=create, dialects=DIALECTS, stop_reasons=STOP_REASONS, extra="openai",
                    requirements=("openai",), tool_stop_reasons=TOOL_STOP_REASONS,
                    tool_choices=TOOL_CHOICES, media=OpenAIProvider._media)


def _server_timings(completion: Any, latency_ms: float) -> float | None:
    """llama.cpp's server adds `timings` (prompt_ms, predicted_ms) to each completion: its own time on the call,
    without its queue. Other servers send nothing, and the reply then has no service time."""
    timings = (getattr(completion, "model_extra", None) or {}).get("timings")
    if not isinstance(timings, dict):
        return None
    parts = [timings.get("prompt_ms"), timings.get("predicted_ms")]
    numbers = [float(part) for part in parts if isinstance(part, int | float) and not isinstance(part, bool)]
    return service_ms(sum(numbers), latency_ms) if len(numbers) == 2 else None
