"""Amazon Bedrock's Converse API through `boto3` (extra `bedrock`).

Credentials come from boto3's standard chain (environment, shared files, SSO, container or instance role), never
from anything evalkit writes; the values of AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN are
redacted from everything a run writes, like a key. `base_url` is boto3's `endpoint_url` (a VPC endpoint, a proxy),
`region` its `region_name`.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.core.provider_specs import ProviderSpec, StopKindName, ToolChoiceName
from evalkit.live.providers.base import MISSHAPEN, CallFailure, excerpt, service_ms, timed_call
from evalkit.live.providers.credentials import masked
from evalkit.live.providers.dialects import schema_name
from evalkit.live.providers.install import missing_client
from evalkit.live.providers.jsonhttp import Bounds
from evalkit.live.providers.media import refuse_untaken
from evalkit.live.providers.sdkwire import send_with
from evalkit.live.providers.toolcalls import object_arguments, refuse_unsendable, unsupported
from evalkit.records.call import ContentPart, ImagePart, Message, NamedTool, Reply, Request, TextPart, ToolCall, Usage

__all__ = ["BedrockProvider", "create", "INFERENCE_OPTIONS", "STOP_REASONS", "TOOL_STOP_REASONS", "TOOL_CHOICES",
           "CREDENTIAL_ENV", "SPEC"]

INFERENCE_OPTIONS = frozenset({"maxTokens", "temperature", "topP", "stopSequences"})
"""Options that are fields of Converse's `inferenceConfig`, under its names; any other option goes into
`additionalModelRequestFields` as given (the model's own parameters, such as Claude's `top_k`)."""
NOT_SENT = frozenset({"seed"})
"""Converse takes no seed: `options.seed` (set by repeated samples) keeps each sample its own request and
recording entry, and is not sent."""
CREDENTIAL_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")

STOP_REASONS: dict[str, StopKindName] = {
    "end_turn": "finished", "stop_sequence": "finished", "max_tokens": "truncated",
    "model_context_window_exceeded": "truncated", "guardrail_intervened": "filtered",
    "content_filtered": "filtered", "tool_use": "other", "malformed_model_output": "other",
    "malformed_tool_use": "other",
}
"""Converse's `stopReason`s. A structured reply ends with `tool_use`: the forced tool was called."""
TOOL_STOP_REASONS = frozenset({"tool_use"})
TOOL_CHOICES: tuple[ToolChoiceName, ...] = ("auto", "required", "named")
"""Converse's `toolChoice` is `auto`, `any` (required) or `tool` (named): it has no `none` (and `any` and `tool`
are taken by some models only, which the server says)."""

MAX_POOL = 64
"""Connections kept per client: botocore's default (10) would open and drop extra ones at higher concurrency."""


class BedrockProvider:
    """Converse replies. System messages become `system` blocks; a response schema becomes the input schema of one
    tool the model is forced to call (`toolChoice: {tool: {name}}`), and that call's input is the reply's text, as
    JSON.

    One client serves all threads (boto3 clients are thread-safe; sessions are not, so the session is used only
    here). botocore's own retries are off: the runner owns retries.
    """

    def __init__(self, config: ModelConfig) -> None:
        try:
            import boto3
            import botocore.config
            import botocore.exceptions
            import botocore.httpsession
            import botocore.parsers
        except ImportError:
            raise missing_client("bedrock") from None
        self._errors = botocore.exceptions
        self._unparsed = botocore.parsers.ResponseParserError
        self._name = config.name
        self._timeout_s = config.timeout_s
        if config.api_key_env:
            raise ProviderError(f"model '{config.name}': Bedrock reads its credentials from boto3's standard chain "
                                "(AWS_ACCESS_KEY_ID ..., AWS_PROFILE, a role); remove api_key_env")
        session = boto3.session.Session(region_name=config.region)
        try:
            credentials = session.get_credentials()
        except botocore.exceptions.BotoCoreError as error:  # e.g. a key id without its secret
            raise ProviderError(f"model '{config.name}': AWS credentials cannot be read: {error}; set "
                                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY together (or AWS_PROFILE)") from None
        if credentials is None:
            raise ProviderError(f"model '{config.name}': no AWS credentials in boto3's standard chain; set "
                                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), AWS_PROFILE, "
                                "or run where a role provides them")
        if session.region_name is None:
            raise ProviderError(f"model '{config.name}': no AWS region; set model.region (or AWS_REGION)")
        frozen = credentials.get_frozen_credentials()
        self._secrets = [s for s in (frozen.access_key, frozen.secret_key, frozen.token) if s]
        self._endpoint = config.base_url or f"bedrock-runtime.{session.region_name}.amazonaws.com"
        settings = botocore.config.Config(
            retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=config.timeout_s,
            read_timeout=config.timeout_s, max_pool_connections=MAX_POOL)
        self._client: Any = session.client("bedrock-runtime", endpoint_url=config.base_url, config=settings)
        # botocore's HTTP reads with a timeout per read and a body of any length: evalkit's bounded transport
        # sends instead (evalkit.live.providers.sdkwire), trusting what botocore trusts (AWS_CA_BUNDLE, or its own)
        # (boto3 keeps the botocore session, which reads AWS_CA_BUNDLE and the config file's ca_bundle, as _session)
        trusted = session._session.get_config_variable("ca_bundle") or botocore.httpsession.get_cert_path(True)
        send_with(self._client, Bounds(config.name, self._endpoint, config.timeout_s, config.max_reply_bytes,
                                       self._clean), ssl.create_default_context(cafile=trusted))

    def complete(self, request: Request) -> Reply:
        refuse_untaken(self._name, "bedrock", MEDIA, request)
        arguments = self._arguments(request)
        response, latency_ms = timed_call(lambda: self._client.converse(**arguments), self._failure)
        try:
            return self._reply(response, latency_ms, schema=request.response_schema is not None)
        except MISSHAPEN as error:  # botocore checks a reply's fields against nothing
            raise self._misshapen(error) from None

    def describe(self) -> dict[str, Any]:
        """What a recording's provenance says about the replies' source (nothing secret, no address)."""
        return {"provider": "bedrock", "structured_output": "tool_use"}

    def _arguments(self, request: Request) -> dict[str, Any]:
        options = {k: v for k, v in request.options.items() if k not in NOT_SENT}
        refuse_unsendable(self._name, "bedrock", TOOL_CHOICES, request)
        arguments: dict[str, Any] = {"modelId": request.model, "messages": self._turns(request)}
        system = [{"text": m.text} for m in request.messages if m.role == "system"]
        if system:
            arguments["system"] = system
        inference = {k: v for k, v in options.items() if k in INFERENCE_OPTIONS}
        if inference:
            arguments["inferenceConfig"] = inference
        extra = {k: v for k, v in options.items() if k not in INFERENCE_OPTIONS}
        if extra:
            arguments["additionalModelRequestFields"] = extra
        if request.response_schema is not None and (request.tools or request.tool_choice is not None):
            raise unsupported(self._name, "bedrock", "response_schema with tools",
                              "its schema is a tool the model is forced to call, which would take away the "
                              "model's choice among the offered tools; send one or the other")
        if request.tools:
            arguments["toolConfig"] = {"tools": [
                {"toolSpec": {"name": tool.name, **({"description": tool.description} if tool.description else {}),
                              "inputSchema": {"json": tool.parameters}}} for tool in request.tools]}
            if request.tool_choice is not None:
                arguments["toolConfig"]["toolChoice"] = _tool_choice(request)
        elif request.tool_choice is not None:
            raise unsupported(self._name, "bedrock", "a tool_choice without tools",
                              "Converse sets the choice inside toolConfig, which needs the tools; offer them")
        if request.response_schema is not None:
            name = schema_name(request.response_schema)
            arguments["toolConfig"] = {
                "tools": [{"toolSpec": {"name": name, "description": "Record the answer, following the schema.",
                                        "inputSchema": {"json": request.response_schema}}}],
                "toolChoice": {"tool": {"name": name}}}
        return arguments

    def _turns(self, request: Request) -> list[dict[str, Any]]:
        """The conversation as Converse messages: content blocks, text and `toolUse` in an assistant turn (an
        empty text block, which Converse refuses, left out), `toolResult` blocks (`status: error` on a failed
        tool) in one user turn, with a user message that follows them joining it as a text block after them."""
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                continue
            if message.role == "tool":
                result: dict[str, Any] = {"toolUseId": message.tool_call_id, "content": [{"text": message.text}]}
                if message.error:
                    result["status"] = "error"
                if turns and _has_results(turns[-1]):
                    turns[-1]["content"].append({"toolResult": result})
                else:
                    turns.append({"role": "user", "content": [{"toolResult": result}]})
                continue
            if message.role == "user" and turns and _has_results(turns[-1]):
                turns[-1]["content"].extend(_blocks(message) if message.images else [{"text": message.text}])
                continue
            if message.images:
                turns.append({"role": message.role, "content": _blocks(message)})
                continue
            blocks: list[dict[str, Any]] = [{"text": message.text}] if message.text or not message.tool_calls else []
            blocks += [{"toolUse": {"toolUseId": call.id, "name": call.tool,
                                    "input": object_arguments(self._name, "bedrock", call.arguments, call.id)}}
                       for call in message.tool_calls]
            turns.append({"role": message.role, "content": blocks})
        return turns

    def _reply(self, response: dict[str, Any], latency_ms: float, *, schema: bool) -> Reply:
        """The reply; with a response schema, the forced tool's input is its text (and no tool was called)."""
        message = response.get("output", {}).get("message")
        if not isinstance(message, dict):
            # botocore hands back an unreadable body as an empty response, not as an error
            raise CallFailure(self._clean(f"{self._name}: the server answered 200 with a body that is not a Converse "
                                          "response (no output message)"), retryable=True, status=200)
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        uses = [b["toolUse"] for b in blocks if isinstance(b.get("toolUse"), dict)]
        texts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
        calls: tuple[ToolCall, ...] = ()
        if uses and schema:
            text: str | None = json.dumps(uses[0].get("input"), ensure_ascii=False)
        else:
            text = "".join(texts) if texts else None
            calls = tuple(ToolCall(id=use["toolUseId"], tool=use["name"], arguments=use.get("input"))
                          for use in uses)
        usage = response.get("usage") or {}
        return Reply(
            text=text,
            tool_calls=calls,
            stop_reason=response.get("stopReason"),
            usage=Usage(input_tokens=usage.get("inputTokens"), output_tokens=usage.get("outputTokens"),
                        cache_read_tokens=usage.get("cacheReadInputTokens"),
                        cache_write_tokens=usage.get("cacheWriteInputTokens")),
            latency_ms=latency_ms,
            service_ms=service_ms(metrics.get("latencyMs") if isinstance(metrics := response.get("metrics"), dict)
                                  else None, latency_ms),
        )

    def _failure(self, error: Exception) -> CallFailure | None:
        """The CallFailure a botocore error means (ThrottlingException is a 429); None for anything else."""
        errors = self._errors
        if isinstance(error, errors.ClientError):
            meta = error.response.get("ResponseMetadata", {})
            status = int(meta.get("HTTPStatusCode") or 0)
            detail = error.response.get("Error", {})
            text = f"{detail.get('Message', '')} ({detail.get('Code', 'error')})"
            headers = meta.get("HTTPHeaders") or {}
            return CallFailure.for_status(status, self._clean(f"{self._name}: HTTP {status}: {excerpt(text)}"),
                                          retry_after=headers.get("retry-after"))
        if isinstance(error, errors.ReadTimeoutError | errors.ConnectTimeoutError):
            return CallFailure(self._clean(f"{self._name}: no reply within {self._timeout_s:g} s"), retryable=True)
        if isinstance(error, errors.EndpointConnectionError | errors.ConnectionClosedError | errors.HTTPClientError):
            return CallFailure(self._clean(f"{self._name}: connection to {self._endpoint} failed: "
                                           f"{type(error).__name__}: {error}"), retryable=True)
        if isinstance(error, (self._unparsed, *MISSHAPEN)):
            return self._misshapen(error)
        return None

    def _misshapen(self, error: Exception) -> CallFailure:
        return CallFailure(self._clean(f"{self._name}: the server answered 200 with a body that is not a Converse "
                                       f"response: {type(error).__name__}: {excerpt(str(error))}"),
                           retryable=True, status=200)

    def _clean(self, message: str) -> str:
        for secret in self._secrets:
            message = masked(message, secret)
        return message


def _blocks(message: Message) -> list[dict[str, Any]]:
    """A message with images as Converse content blocks in their order, each image an `image` block of its bytes
    (the client encodes them) and its format (`png`, `jpeg`, `gif`, `webp`)."""
    assert not isinstance(message.content, str)  # a message with images has parts
    return [_block(part) for part in message.content if not isinstance(part, TextPart) or part.text]


def _block(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    # audio never comes here: the spec takes none, so make_provider's WithoutMedia refuses it before the call
    assert isinstance(part, ImagePart), part.kind
    return {"image": {"format": part.media_type.removeprefix("image/"), "source": {"bytes": part.data()}}}


def _has_results(turn: dict[str, Any]) -> bool:
    return turn["role"] == "user" and any("toolResult" in block for block in turn["content"])


def _tool_choice(request: Request) -> dict[str, Any]:
    """`auto`, `any` (the API's word for required), or `tool` with the name (`none` is refused before)."""
    choice = request.tool_choice
    if isinstance(choice, NamedTool):
        return {"tool": {"name": choice.name}}
    return {"any": {}} if choice == "required" else {"auto": {}}


MEDIA = ("image",)
"""The kinds of media part Converse takes here (its audio is for other operations)."""


def create(config: ModelConfig) -> BedrockProvider:
    return BedrockProvider(config)


SPEC = ProviderSpec(name="bedrock", factory=create, stop_reasons=STOP_REASONS, extra="bedrock",
                    requirements=("boto3",), settings=("region",), credential_env=CREDENTIAL_ENV,
                    honours_seed=False, tool_stop_reasons=TOOL_STOP_REASONS, tool_choices=TOOL_CHOICES,
                    media=MEDIA)
"""A schema has one way in, a forced tool: no `structured_output` setting."""
