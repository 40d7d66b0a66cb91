"""The Gemini API's generateContent through the official `google-genai` client
(extra `gemini`)."""

from __future__ import annotations

import base64
import importlib
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError, unknown_keys
from evalkit.core.provider_specs import ProviderSpec, StopKindName, ToolChoiceName
from evalkit.live.contract import BLOCKED_PREFIX
from evalkit.live.providers.base import MISSHAPEN, CallFailure, excerpt, timed_call
from evalkit.live.providers.credentials import api_key, masked
from evalkit.live.providers.install import missing_client
from evalkit.live.providers.jsonhttp import Bounds
from evalkit.live.providers.media import refuse_untaken
from evalkit.live.providers.sdkwire import httpx_client, httpx_module
from evalkit.live.providers.toolcalls import (
    answered_tools,
    made_up_id,
    object_arguments,
    refuse_unsendable,
    unsupported,
)
from evalkit.records.call import Message, NamedTool, Reply, Request, TextPart, ToolCall, Usage

if TYPE_CHECKING:
    from google import genai
    from google.genai import types

__all__ = ["GeminiOptions", "GeminiProvider", "create", "GENERATION_OPTIONS", "THINKING_OPTIONS", "STOP_REASONS",
           "TOOL_CHOICES", "SPEC"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
API_VERSION = "v1beta"
"""Pinned: the SDK's default moved between releases, and v1beta carries JSON schemas and thinking levels."""
NO_KEY = "not-needed"
"""Sent to a base_url gateway that holds the credential itself (the client insists on a key)."""


class GeminiOptions(BaseModel):
    """`model.options` for Gemini: the generation config's fields and its thinking config's, under their Gemini
    names (an OpenAI name such as `max_tokens` is refused with the Gemini one closest to it)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling's probability mass."""
    top_k: int | None = None
    """Sample from this many most likely tokens."""
    seed: int | None = None
    """The sampling seed (repeated samples and judge repeats vary it)."""
    max_output_tokens: int | None = None
    """The most tokens of a reply."""
    stop_sequences: list[str] | None = None
    """Texts that end the reply."""
    presence_penalty: float | None = None
    """Penalty on tokens already present."""
    frequency_penalty: float | None = None
    """Penalty by how often a token has come."""
    thinking_level: str | None = None
    """How hard the model thinks (`low`, `high` ...): the thinking config's."""
    thinking_budget: int | None = None
    """The most thinking tokens: the thinking config's."""
    include_thoughts: bool | None = None
    """Whether the reply carries the model's thoughts: the thinking config's."""


THINKING_OPTIONS = frozenset({"thinking_level", "thinking_budget", "include_thoughts"})
"""Options that go into the generation config's `thinking_config`."""
GENERATION_OPTIONS = frozenset(GeminiOptions.model_fields) - THINKING_OPTIONS
"""Options that are fields of Gemini's generation config, under their Gemini names."""


class GeminiProvider:
    """Gemini replies, with the JSON schema as `response_json_schema` and system messages as the system instruction.

    One client serves all threads: the SDK's sync client keeps no per-call state, and its
    connection pool (httpx2 since google-genai 3.0) is safe to share. Its own retries are off:
    the runner owns retries.
    """

    def __init__(self, config: ModelConfig) -> None:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise missing_client("gemini") from None
        self._types = types
        self._api_error = errors.APIError
        # A 200 whose body is not JSON, or not shaped like a response (JSON's and pydantic's errors are ValueErrors).
        self._unreadable: tuple[type[Exception], ...] = (errors.UnknownApiResponseError, *MISSHAPEN)
        self._name = config.name
        self._base_url = config.base_url or DEFAULT_BASE_URL
        self._timeout_s = config.timeout_s
        self._secret = api_key(config)  # the value never leaves this object
        if self._secret is None and not config.base_url:
            raise ProviderError(f"model '{config.name}': the Gemini API needs a key; set api_key_env to the name "
                                "of the environment variable that holds it (e.g. GOOGLE_API_KEY)")
        self._timeouts, self._dropped, self._transport = _httpx_errors()
        bounds = Bounds(config.name, self._base_url, config.timeout_s, config.max_reply_bytes, self._clean)
        http_options = types.HttpOptions(
            base_url=self._base_url, api_version=API_VERSION,
            timeout=max(1, round(config.timeout_s * 1000)),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
            httpx_client=httpx_client(httpx_module(), self._base_url, bounds))  # evalkit's bounded transport
        # vertexai=False and an explicit key: GOOGLE_GENAI_USE_VERTEXAI and GOOGLE_API_KEY in the
        # environment do not change where calls go or which key they carry; the config does.
        self._client: genai.Client = genai.Client(vertexai=False, api_key=self._secret or NO_KEY,
                                                  http_options=http_options)

    def complete(self, request: Request) -> Reply:
        refuse_unsendable(self._name, "gemini", TOOL_CHOICES, request)
        refuse_untaken(self._name, "gemini", MEDIA, request)
        config = self._generation_config(request)
        contents = self._contents(request)
        response, latency_ms = timed_call(
            lambda: self._client.models.generate_content(model=request.model, contents=contents, config=config),
            self._failure)
        try:
            return _reply(response, latency_ms, request)
        except MISSHAPEN as error:  # the client built its types leniently from what came
            raise self._misshapen(error) from None

    def _contents(self, request: Request) -> list[types.Content]:
        """The conversation as Gemini contents. An assistant turn is a `model` content, its tool calls
        `functionCall` parts after its text; tool results are `functionResponse` parts of one `user` content,
        named by the tool of the call they answer (Gemini matches a result to its call by name and order, not by
        an id) with the text as `output`, or as `error` for a failed tool; a user message that follows them joins
        that content as a text part."""
        sdk = self._types
        tools = answered_tools(self._name, "gemini", request.messages)
        turns: list[tuple[str, list[Any]]] = []  # (role, parts), made into Contents once complete
        answering = False  # the last turn holds tool results
        for message in request.messages:
            if message.role == "system":
                continue
            if message.role == "tool":
                assert message.tool_call_id is not None
                part = sdk.Part(function_response=sdk.FunctionResponse(
                    name=tools[message.tool_call_id],
                    response={"error" if message.error else "output": message.text}))
                if answering:
                    turns[-1][1].append(part)
                else:
                    turns.append(("user", [part]))
                answering = True
                continue
            if message.role == "user" and answering:
                turns[-1][1].extend(self._parts(message) if message.media else [sdk.Part(text=message.text)])
                continue
            answering = False
            if message.media:
                turns.append(("user", self._parts(message)))
                continue
            parts = [sdk.Part(text=message.text)] if message.text or not message.tool_calls else []
            parts += [sdk.Part(function_call=sdk.FunctionCall(
                name=call.tool, args=object_arguments(self._name, "gemini", call.arguments, call.id)),
                thought_signature=self._signature(call))
                for call in message.tool_calls]
            turns.append(("model" if message.role == "assistant" else "user", parts))
        return [sdk.Content(role=role, parts=parts) for role, parts in turns]

    def _parts(self, message: Message) -> list[Any]:
        """A user message with images or audio as parts in their order, each file `inline_data` (its bytes and MIME
        type; MP3 as `audio/mp3`, the type Gemini's documentation lists)."""
        sdk = self._types
        assert not isinstance(message.content, str)  # a message with media has parts
        return [sdk.Part(text=part.text) if isinstance(part, TextPart) else sdk.Part(inline_data=sdk.Blob(
                    mime_type=_GEMINI_TYPES.get(part.media_type, part.media_type), data=part.data()))
                for part in message.content if not isinstance(part, TextPart) or part.text]

    def _signature(self, call: ToolCall) -> bytes | None:
        """A call's thought signature as Gemini sent it (bytes); refused when the recorded text is not base64."""
        if call.signature is None:
            return None
        try:
            return base64.b64decode(call.signature, validate=True)
        except ValueError:
            raise unsupported(self._name, "gemini", f"the signature of tool call {call.id!r}",
                              "it is not base64, as Gemini's thoughtSignature is; it was changed after it came "
                              "back, so record the conversation again") from None

    def _tools(self, request: Request) -> dict[str, Any]:
        """The offered tools as function declarations (their schema as JSON Schema, `parametersJsonSchema`, as
        the response schema is sent) and the tool choice as the function-calling mode: AUTO, NONE, or ANY
        (required), with the one allowed name for a named tool."""
        sdk = self._types
        fields: dict[str, Any] = {}
        if request.tools:
            fields["tools"] = [sdk.Tool(function_declarations=[
                sdk.FunctionDeclaration(name=tool.name, description=tool.description or None,
                                          parameters_json_schema=tool.parameters) for tool in request.tools])]
        choice = request.tool_choice
        if choice is not None:
            named = isinstance(choice, NamedTool)
            mode = "ANY" if named or choice == "required" else str(choice).upper()
            fields["tool_config"] = sdk.ToolConfig(function_calling_config=sdk.FunctionCallingConfig(
                mode=mode, allowed_function_names=[choice.name] if isinstance(choice, NamedTool) else None))
        return fields

    def _generation_config(self, request: Request) -> types.GenerateContentConfig:
        options = dict(request.options)
        unknown = sorted(set(options) - GENERATION_OPTIONS - THINKING_OPTIONS)
        if unknown:
            raise CallFailure(f"{self._name}: unknown Gemini option(s): "
                              + unknown_keys("options.", unknown, GENERATION_OPTIONS | THINKING_OPTIONS)
                              + "; fix the model's options", retryable=False)
        fields: dict[str, Any] = {k: v for k, v in options.items() if k in GENERATION_OPTIONS}
        thinking = {k: v for k, v in options.items() if k in THINKING_OPTIONS}
        if thinking:
            fields["thinking_config"] = thinking
        system = "\n\n".join(m.text for m in request.messages if m.role == "system")
        if system:
            fields["system_instruction"] = system
        if request.response_schema is not None:
            fields["response_mime_type"] = "application/json"
            fields["response_json_schema"] = request.response_schema
        fields |= self._tools(request)
        try:
            return self._types.GenerateContentConfig(**fields)
        except ValidationError as error:  # e.g. thinking_level "loud"
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
            raise CallFailure(f"{self._name}: invalid Gemini option: {problems}", retryable=False) from None

    def _failure(self, error: Exception) -> CallFailure | None:
        """The CallFailure an SDK error means; None for anything else (a bug, a bad argument)."""
        if isinstance(error, self._api_error):
            status = int(error.code)
            headers = getattr(error.response, "headers", None)
            retry_after = headers.get("retry-after") if headers is not None else None
            detail = error.message or str(error)
            return CallFailure.for_status(status, self._clean(f"{self._name}: HTTP {status}: {excerpt(detail)}"),
                                          retry_after=retry_after)
        if isinstance(error, self._timeouts):
            return CallFailure(self._clean(f"{self._name}: no reply within {self._timeout_s:g} s"), retryable=True)
        if isinstance(error, self._transport):
            return CallFailure(self._clean(f"{self._name}: connection to {self._base_url} failed: "
                                           f"{type(error).__name__}: {error}"),
                               retryable=isinstance(error, self._dropped))
        if isinstance(error, self._unreadable):
            return self._misshapen(error)
        return None

    def _misshapen(self, error: Exception) -> CallFailure:
        return CallFailure(self._clean(f"{self._name}: the server answered 200 with a body that is not a Gemini "
                                       f"response: {type(error).__name__}: {excerpt(str(error))}"),
                           retryable=True, status=200)

    def _clean(self, message: str) -> str:
        return masked(message, self._secret)


def _reply(response: types.GenerateContentResponse, latency_ms: float, request: Request) -> Reply:
    candidates = response.candidates or []
    parts = (candidates[0].content.parts or []) if candidates and candidates[0].content else []
    # Gemini 3 signs a call (`thoughtSignature`, on the first of parallel calls) and refuses a later turn without it
    calls = [(part.function_call, part.thought_signature) for part in parts if part.function_call is not None]
    # response.text, Gemini's own joining of the text parts, warns of the calls beside them: joined here then
    text = ("".join(p.text for p in parts if p.text is not None and not p.thought) or None) if calls else response.text
    stop_reason = _lower(candidates[0].finish_reason) if candidates else None
    feedback = response.prompt_feedback
    if not candidates and feedback is not None and feedback.block_reason is not None:
        stop_reason = f"{BLOCKED_PREFIX}{_lower(feedback.block_reason)}"  # the spelling the contract checks read
    usage = response.usage_metadata
    output = None
    if usage is not None and usage.candidates_token_count is not None:
        # Thinking tokens are billed as output: budgets must count them, though no text shows them.
        output = usage.candidates_token_count + (usage.thoughts_token_count or 0)
    return Reply(
        text=text,
        # Gemini's calls carry no id (or, on some models, one of its own): made up where missing, the same for
        # the same request, so a tool result can name its call and a replay matches
        tool_calls=tuple(ToolCall(id=call.id or made_up_id(request, i), tool=call.name or "",
                                  arguments=call.args if call.args is not None else {},
                                  signature=base64.b64encode(signature).decode("ascii") if signature else None)
                         for i, (call, signature) in enumerate(calls)),
        stop_reason=stop_reason,
        usage=Usage(input_tokens=usage.prompt_token_count if usage else None, output_tokens=output),
        latency_ms=latency_ms,
    )


def _lower(reason: Any) -> str | None:
    """An SDK enum (FinishReason.STOP) or a string the SDK did not know, as "stop"."""
    if reason is None:
        return None
    return str(getattr(reason, "value", reason)).lower()


def _httpx_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeouts, dropped connections, all transport errors) of httpx2 and httpx, whichever the SDK uses."""
    timeouts: list[type[Exception]] = []
    dropped: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        dropped += [module.NetworkError, module.RemoteProtocolError, module.ProxyError]
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(dropped), tuple(transport)


MEDIA = ("image", "audio")
"""The kinds of media part Gemini takes, as `inline_data`."""
_GEMINI_TYPES = {"audio/mpeg": "audio/mp3"}
"""Media types Gemini's documentation names otherwise."""


def create(config: ModelConfig) -> GeminiProvider:
    return GeminiProvider(config)


STOP_REASONS: dict[str, StopKindName] = {
    "stop": "finished", "max_tokens": "truncated",
    "safety": "filtered", "recitation": "filtered", "blocklist": "filtered", "prohibited_content": "filtered",
    "spii": "filtered", "image_safety": "filtered", "image_prohibited_content": "filtered",
    "image_recitation": "filtered", "model_armor": "filtered",
    "other": "other", "language": "other", "malformed_function_call": "other", "unexpected_tool_call": "other",
    "too_many_tool_calls": "other",
}
"""Gemini's FinishReason values, lower-cased; `finish_reason_unspecified` is deliberately absent (it says nothing).
A prompt Gemini refused to answer is reported as `blocked: <reason>` (evalkit.live.contract.BLOCKED_PREFIX)."""

TOOL_CHOICES: tuple[ToolChoiceName, ...] = ("auto", "none", "required", "named")
"""The function-calling modes AUTO, NONE and ANY (required; named: ANY with one allowed function name)."""

SPEC = ProviderSpec(name="gemini", factory=create, stop_reasons=STOP_REASONS, extra="gemini",
                    requirements=("google-genai",), tool_choices=TOOL_CHOICES, media=MEDIA,
                    options=GeminiOptions)
"""Gemini stops with `stop` after calling a function: it has no stop reason of its own for tool use."""
