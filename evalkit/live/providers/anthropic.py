"""Anthropic's Messages API (`POST /v1/messages`) through the official `anthropic` client (extra `anthropic`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.core.provider_specs import ProviderSpec, StopKindName, ToolChoiceName
from evalkit.live.providers.base import MISSHAPEN, CallFailure, excerpt, timed_call
from evalkit.live.providers.credentials import api_key, masked
from evalkit.live.providers.dialects import schema_name
from evalkit.live.providers.install import missing_client
from evalkit.live.providers.jsonhttp import Bounds
from evalkit.live.providers.media import base64_data, refuse_untaken
from evalkit.live.providers.sdkwire import httpx_client, httpx_module
from evalkit.live.providers.toolcalls import object_arguments, refuse_unsendable, unsupported
from evalkit.records.call import ContentPart, ImagePart, Message, NamedTool, Reply, Request, TextPart, ToolCall, Usage

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicProvider", "create", "STOP_REASONS", "TOOL_STOP_REASONS", "TOOL_CHOICES", "SPEC", "NOT_SENT",
           "RESERVED"]

DEFAULT_BASE_URL = "https://api.anthropic.com"

RESERVED = frozenset({"model", "messages", "system", "tools", "tool_choice", "stream"})
"""Request fields the request itself sets; an option may not replace them."""
NOT_SENT = frozenset({"seed"})
"""The Messages API takes no seed: `options.seed` (set by repeated samples) keeps each sample its own request
and recording entry, and is not sent."""

STOP_REASONS: dict[str, StopKindName] = {
    "end_turn": "finished", "stop_sequence": "finished", "max_tokens": "truncated",
    "model_context_window_exceeded": "truncated", "refusal": "filtered", "tool_use": "other", "pause_turn": "other",
}
"""The Messages API's `stop_reason`s. A structured reply ends with `tool_use`: the forced tool was called."""
TOOL_STOP_REASONS = frozenset({"tool_use"})
TOOL_CHOICES: tuple[ToolChoiceName, ...] = ("auto", "none", "required", "named")
"""`auto`, `none`, `any` (required) and `tool` (named)."""


class AnthropicProvider:
    """Messages from Anthropic's API. System messages become the `system` prompt; a response schema becomes the
    input schema of one tool the model is forced to call (`tool_choice: {type: tool}`), and that call's input is
    the reply's text, as JSON. Options are the API's own parameters under its names (`max_tokens`,
    `temperature`, `top_p`, `top_k`, `stop_sequences`, `metadata`, `thinking` ...), sent in the body as given.

    One client serves all threads (an httpx connection pool); its own retries are off: the runner owns retries.
    """

    def __init__(self, config: ModelConfig) -> None:
        try:
            import anthropic
            from anthropic.types import Message
        except ImportError:
            raise missing_client("anthropic") from None
        if "max_tokens" not in config.options:
            # the API refuses a request without it; refused here, before any call, rather than 400 on every one
            raise ProviderError(f"model '{config.name}': the Messages API requires max_tokens; set "
                                "model.options.max_tokens (the most output tokens a reply may have)")
        self._anthropic = anthropic
        self._message_type = Message
        self._name = config.name
        self._base_url = config.base_url or DEFAULT_BASE_URL
        self._timeout_s = config.timeout_s
        self._secret = api_key(config)  # the value never leaves this object
        if self._secret is None:
            raise ProviderError(f"model '{config.name}': the Messages API needs a key; set api_key_env to the name "
                                "of the environment variable that holds it (e.g. ANTHROPIC_API_KEY)")
        # An explicit base URL and key: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY in the environment do not change
        # where calls go or which key they carry; the config does.
        bounds = Bounds(config.name, self._base_url, config.timeout_s, config.max_reply_bytes, self._clean)
        self._client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=self._secret, base_url=self._base_url, timeout=config.timeout_s, max_retries=0,
            http_client=httpx_client(httpx_module(getattr(anthropic, "DefaultHttpxClient", None)), self._base_url,
                                     bounds))  # evalkit's bounded transport (evalkit.live.providers.sdkwire)

    def complete(self, request: Request) -> Reply:
        refuse_untaken(self._name, "anthropic", MEDIA, request)
        reserved = sorted(RESERVED & set(request.options))
        if reserved:
            raise CallFailure(f"{self._name}: option(s) {', '.join(reserved)} are set from the request itself, "
                              "not from options; remove them from the model's options", retryable=False)
        options = {k: v for k, v in request.options.items() if k not in NOT_SENT}
        if "max_tokens" not in options:
            raise CallFailure(f"{self._name}: the Messages API requires max_tokens; set model.options.max_tokens",
                              retryable=False)
        refuse_unsendable(self._name, "anthropic", TOOL_CHOICES, request)
        thinking = options.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") != "disabled" and any(
                m.tool_calls for m in request.messages):
            raise unsupported(self._name, "anthropic", "options.thinking in a conversation with tool calls",
                              "the API wants each calling turn's thinking blocks sent back with its calls, and "
                              "evalkit does not keep them; set thinking to {type: disabled} for agent runs")
        arguments: dict[str, Any] = {
            "model": request.model,
            "max_tokens": options.pop("max_tokens"),
            "messages": self._turns(request),
        }
        system = "\n\n".join(m.text for m in request.messages if m.role == "system")
        if system:
            arguments["system"] = system
        if request.response_schema is not None and (request.tools or request.tool_choice is not None):
            raise unsupported(self._name, "anthropic", "response_schema with tools",
                              "its schema is a tool the model is forced to call, which would take away the "
                              "model's choice among the offered tools; send one or the other")
        if request.tools:
            arguments["tools"] = [{"name": tool.name, **_described(tool.description), "input_schema": tool.parameters}
                                  for tool in request.tools]
        if request.tool_choice is not None:
            arguments["tool_choice"] = _tool_choice(request)
        if request.response_schema is not None:
            name = schema_name(request.response_schema)
            arguments["tools"] = [{"name": name, "description": "Record the answer, following the schema.",
                                   "input_schema": request.response_schema}]
            arguments["tool_choice"] = {"type": "tool", "name": name}
        if options:
            # `temperature`, `top_k` ... are not keyword arguments of every client release; the body takes them
            arguments["extra_body"] = options
        message, latency_ms = timed_call(lambda: self._client.messages.create(**arguments), self._failure)
        try:
            return self._reply(message, latency_ms, schema=request.response_schema is not None)
        except MISSHAPEN as error:  # the client built its types leniently from what came
            raise self._misshapen(error) from None

    def describe(self) -> dict[str, Any]:
        """What a recording's provenance says about the replies' source (nothing secret, no address)."""
        return {"provider": "anthropic", "structured_output": "tool_use"}

    def _turns(self, request: Request) -> list[dict[str, Any]]:
        """The conversation as Messages API turns. A message without tools keeps plain text content (the wire of
        a request made before tools existed is unchanged); an assistant turn's tool calls are `tool_use` blocks
        after its text; tool results are `tool_result` blocks (`is_error` on a failed tool) of one user turn, the
        API's rule, with a user message that follows them joining that turn as a text block after them."""
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                continue
            if message.role == "assistant" and message.tool_calls:
                blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
                blocks += [{"type": "tool_use", "id": call.id, "name": call.tool,
                            "input": object_arguments(self._name, "anthropic", call.arguments, call.id)}
                           for call in message.tool_calls]
                turns.append({"role": "assistant", "content": blocks})
                continue
            if message.role == "tool":
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                                         "content": message.text}
                if message.error:
                    block["is_error"] = True
                if turns and turns[-1]["role"] == "user" and _has_results(turns[-1]):
                    turns[-1]["content"].append(block)
                else:
                    turns.append({"role": "user", "content": [block]})
                continue
            if message.role == "user" and turns and _has_results(turns[-1]):
                turns[-1]["content"].extend(_blocks(message) if message.images
                                            else [{"type": "text", "text": message.text}])
                continue
            turns.append({"role": message.role, "content": _blocks(message) if message.images else message.text})
        return turns

    def _reply(self, message: Any, latency_ms: float, *, schema: bool) -> Reply:
        """The reply; with a response schema, the forced tool's input is its text (and no tool was called)."""
        if not isinstance(message, self._message_type):
            raise CallFailure(self._clean(f"{self._name}: the server answered 200 without a message: "
                                          f"{excerpt(str(message))}"), retryable=True, status=200)
        uses = [block for block in message.content if block.type == "tool_use"]
        texts = [block.text for block in message.content if block.type == "text"]
        calls: tuple[ToolCall, ...] = ()
        if uses and schema:
            text: str | None = json.dumps(uses[0].input, ensure_ascii=False)
        else:
            text = "".join(texts) if texts else None
            calls = tuple(ToolCall(id=use.id, tool=use.name, arguments=use.input) for use in uses)
        usage = message.usage
        return Reply(
            text=text,
            tool_calls=calls,
            stop_reason=message.stop_reason,
            usage=Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                        cache_read_tokens=usage.cache_read_input_tokens,
                        cache_write_tokens=usage.cache_creation_input_tokens),
            latency_ms=latency_ms,
        )

    def _failure(self, error: Exception) -> CallFailure | None:
        """The CallFailure an SDK error means (529 `overloaded_error` is a 5xx: retryable); None for a bug."""
        anthropic = self._anthropic
        if isinstance(error, anthropic.APIStatusError):
            status = error.status_code
            return CallFailure.for_status(
                status, self._clean(f"{self._name}: HTTP {status}: {excerpt(_server_message(error))}"),
                retry_after=error.response.headers.get("retry-after"))
        if isinstance(error, anthropic.APITimeoutError):
            return CallFailure(self._clean(f"{self._name}: no reply within {self._timeout_s:g} s"), retryable=True)
        if isinstance(error, anthropic.APIConnectionError):
            cause = error.__cause__ or error
            return CallFailure(self._clean(f"{self._name}: connection to {self._base_url} failed: "
                                           f"{type(cause).__name__}: {cause}"), retryable=True)
        if isinstance(error, (anthropic.APIResponseValidationError, *MISSHAPEN)):
            return self._misshapen(error)
        return None

    def _misshapen(self, error: Exception) -> CallFailure:
        return CallFailure(self._clean(f"{self._name}: the server answered 200 with a body that is not a message: "
                                       f"{type(error).__name__}: {excerpt(str(error))}"), retryable=True, status=200)

    def _clean(self, message: str) -> str:
        return masked(message, self._secret)


def _described(description: str) -> dict[str, str]:
    """A tool's description where it has one (an empty one is left out, as the API's optional field)."""
    return {"description": description} if description else {}


def _blocks(message: Message) -> list[dict[str, Any]]:
    """A message with images as content blocks in their order, each image a base64 `image` block."""
    assert not isinstance(message.content, str)  # a message with images has parts
    return [_block(part) for part in message.content if not isinstance(part, TextPart) or part.text]


def _block(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    # audio never comes here: the spec takes none, so make_provider's WithoutMedia refuses it before the call
    assert isinstance(part, ImagePart), part.kind
    return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": base64_data(part)}}


def _has_results(turn: dict[str, Any]) -> bool:
    content = turn["content"]
    return isinstance(content, list) and any(block.get("type") == "tool_result" for block in content)


def _tool_choice(request: Request) -> dict[str, Any]:
    """`auto`, `none`, `any` (the API's word for required), or `tool` with the name."""
    choice = request.tool_choice
    if isinstance(choice, NamedTool):
        return {"type": "tool", "name": choice.name}
    return {"type": "any" if choice == "required" else choice}


def _server_message(error: anthropic.APIStatusError) -> str:
    """`{"type": "error", "error": {"type": "overloaded_error", "message": ...}}` as `... (overloaded_error)`."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            kind = inner.get("type")
            return f"{inner['message']} ({kind})" if isinstance(kind, str) else str(inner["message"])
    return str(error.message)


MEDIA = ("image",)
"""The kinds of media part the Messages API takes here (no audio)."""


def create(config: ModelConfig) -> AnthropicProvider:
    return AnthropicProvider(config)


SPEC = ProviderSpec(name="anthropic", factory=create, stop_reasons=STOP_REASONS, extra="anthropic",
                    requirements=("anthropic",), honours_seed=False, tool_stop_reasons=TOOL_STOP_REASONS,
                    tool_choices=TOOL_CHOICES, media=MEDIA)
"""A schema has one way in, a forced tool: no `structured_output` setting."""
