"""The call contract: a provider-neutral request, the messages it carries, and what came back.

These are the values every provider speaks, every recording stores and every replay matches, so everything in a
`Request` is part of a call's identity (evalkit.run.recording.request_fingerprint).

The contract grows without moving old identities: a field added for agents (tools, tool choice, tool calls, tool
messages, content parts) is left out of the serialised form while it holds its default, so a request that uses none
of them dumps, and so fingerprints, exactly as it did before it existed. Recordings, baselines and eval keys made
before the fields existed read and match unchanged.

A message's `content` is text, or a tuple of parts: a discriminated union on `kind`, text, images and audio. A media
part holds what identifies its file (its media type, SHA-256, size and path relative to the dataset), never its bytes:
a recording keeps the hash and the size, and the request fingerprint covers the bytes through the hash. The bytes
are read from the file when the request is sent (ImagePart.data, AudioPart.data), and checked against the hash then.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evalkit.core.errors import InputError

__all__ = ["AUDIO_TYPES", "IMAGE_TYPES", "AudioPart", "ContentPart", "ImagePart", "MediaPart", "Message", "NamedTool",
           "Reply", "Request", "TextPart", "Tool", "ToolCall", "ToolChoice", "Usage", "parse_arguments"]

TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
"""A tool's name: what every provider accepts (OpenAI's and Anthropic's rule, Gemini's and Bedrock's too)."""


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _without_defaults(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """`data` less the named fields that hold their default (None, False or empty): see the module's docstring."""
    for name in names:
        if name in data and data[name] in (None, False, (), []):
            del data[name]
    return data


class TextPart(_Call):
    """A piece of a message's text."""

    kind: Literal["text"] = "text"
    text: str


IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
"""The image media types a part may carry (what every provider that takes images accepts)."""
AUDIO_TYPES = ("audio/wav", "audio/mpeg")
"""The audio media types a part may carry: WAV and MP3 (what OpenAI's and Gemini's audio input both take)."""

ImageType = Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
AudioType = Literal["audio/wav", "audio/mpeg"]


class _MediaPart(_Call):
    """A file in a message, an image or audio: what identifies it, not its bytes (see the module's docstring).

    `media_type` is what the bytes are (sniffed from them by evalkit.core.media), whatever the file's name says."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The SHA-256 of the bytes: the request's fingerprint covers the file through it."""
    size: int = Field(ge=0)
    """The bytes' length."""
    path: str = Field(min_length=1)
    """The file, relative to the dataset's folder (POSIX separators): where a reviewer finds it."""
    _source: Path | None = PrivateAttr(default=None)

    def _identity(self) -> tuple[str, str, str, int, str]:
        # each subclass declares its own `kind` and `media_type` (Literals the discriminated union reads)
        kind: str = getattr(self, "kind")  # noqa: B009
        media_type: str = getattr(self, "media_type")  # noqa: B009
        return kind, media_type, self.sha256, self.size, self.path

    def __eq__(self, other: object) -> bool:
        # where the file lies on this machine is no part of it: a part read back from a recording equals the part
        # the dataset gave
        return self._identity() == other._identity() if isinstance(other, _MediaPart) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._identity())

    def located(self, source: Path) -> Self:
        """This part, read from `source` (the file on this machine) when it is sent."""
        part = self.model_copy()
        part._source = source
        return part

    def data(self) -> bytes:
        """The bytes, read now from the file and checked against `sha256` and `size`: a file changed since the
        dataset was read is refused, never sent under the old hash."""
        kind = self._identity()[0]
        if self._source is None:
            raise InputError(f"{kind} {self.path}: no file to read it from (a part rebuilt from a recording "
                             "cannot be sent; build the request from the dataset's case)")
        try:
            data = self._source.read_bytes()
        except OSError as error:
            raise InputError(f"{kind} {self.path}: cannot read {self._source} ({error.strerror or error})") from None
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            raise InputError(f"{kind} {self.path}: the file changed since the dataset was read (SHA-256 "
                             f"{self.sha256[:12]}...); run again")
        return data


class ImagePart(_MediaPart):
    """An image in a message (PNG, JPEG, WebP, GIF)."""

    kind: Literal["image"] = "image"
    media_type: ImageType


class AudioPart(_MediaPart):
    """Audio in a message (WAV, MP3)."""

    kind: Literal["audio"] = "audio"
    media_type: AudioType


MediaPart = ImagePart | AudioPart
"""A part that carries a file."""


ContentPart = Annotated[TextPart | ImagePart | AudioPart, Field(discriminator="kind")]
"""One part of a message's content, told apart by its `kind`: text, an image or audio."""


def parse_arguments(text: str) -> JsonValue:
    """A tool call's arguments as the model wrote them, parsed: JSON when it is JSON, else the text itself, so a
    malformed call is kept as evidence and fails its case instead of crashing the reader."""
    try:
        value: JsonValue = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value


class ToolCall(_Call):
    """The model asking for a tool: in a reply, in an assistant message, and as a trajectory step (the same value)."""

    kind: Literal["tool_call"] = "tool_call"
    id: str
    """The call's id as the provider gave it (made up by the provider module where a wire format has none, as
    Gemini's and Ollama's); a tool message answers it by this id."""
    tool: str
    """The tool's name."""
    arguments: JsonValue = None
    """The arguments as parsed JSON (text that is not JSON is kept as the text: parse_arguments)."""
    signature: str | None = None
    """An opaque token the provider attached to the call and must be sent back with it when the conversation
    continues (Gemini 3's `thoughtSignature`, base64; its models refuse a later turn whose call lacks it); None for
    every other provider. Part of the identity, since the model reads it; left out of the serialised form while
    None, so calls made before the field existed dump as they did."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), ("signature",))


class Message(_Call):
    """One chat message: a system prompt, a user turn, an assistant turn (which may call tools), or a tool's result."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | tuple[ContentPart, ...]
    """The text, or its parts (an assistant turn that only calls tools has "")."""
    tool_calls: tuple[ToolCall, ...] = ()
    """An assistant turn's tool calls, in the order the model made them."""
    tool_call_id: str | None = None
    """A tool message: the id of the call it answers."""
    error: bool = False
    """A tool message: the tool failed, and `content` says how (Anthropic's `is_error`; others read it as text)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), ("tool_calls", "tool_call_id", "error"))

    @model_validator(mode="after")
    def _fits_role(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only an assistant message calls tools, not a {self.role} message")
        if (self.role == "tool") != (self.tool_call_id is not None):
            raise ValueError("a tool message needs tool_call_id, and only a tool message has one")
        if self.error and self.role != "tool":
            raise ValueError("only a tool message can be an error")
        return self

    @property
    def text(self) -> str:
        """The content as one text (the text parts joined)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if isinstance(part, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The content's image parts, in order (none for text)."""
        return tuple(part for part in self.media if isinstance(part, ImagePart))

    @property
    def media(self) -> tuple[MediaPart, ...]:
        """The content's parts that carry a file (images, audio), in order (none for text)."""
        if isinstance(self.content, str):
            return ()
        return tuple(part for part in self.content if isinstance(part, ImagePart | AudioPart))


_NO_ARGUMENTS: dict[str, JsonValue] = {"type": "object", "properties": {}}


class Tool(_Call):
    """A tool the model may call: its name, what it is for, and the JSON Schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=lambda: _NO_ARGUMENTS.copy())
    """The JSON Schema of the arguments object."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not TOOL_NAME.match(value):
            raise ValueError(f"tool name {value!r} must be 1 to 64 letters, digits, '_', '.' or '-', "
                             "starting with a letter or '_'")
        return value


class NamedTool(_Call):
    """A tool choice that forces one tool."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedTool
"""May the model call tools (`auto`, the providers' default), must it not (`none`), must it call one (`required`), or
must it call this one."""


class Request(_Call):
    """A provider-neutral model call. Everything here changes the output, so all of it is fingerprinted."""

    model: str
    messages: tuple[Message, ...] = Field(min_length=1)
    response_schema: dict[str, Any] | None = None
    """JSON schema the reply must follow (structured output), or None for free text."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Sampling options (temperature, seed, thinking level ...), passed through to the provider."""
    tools: tuple[Tool, ...] = ()
    """The tools the model may call, in the order offered."""
    tool_choice: ToolChoice | None = None
    """None: the provider's default (`auto` when tools are offered)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), ("tools", "tool_choice"))

    @model_validator(mode="after")
    def _tools_named_once(self) -> Request:
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tools named twice: {sorted({n for n in names if names.count(n) > 1})}")
        if isinstance(self.tool_choice, NamedTool) and self.tool_choice.name not in names:
            raise ValueError(f"tool_choice names {self.tool_choice.name!r}, which is not among the tools")
        return self

    def tool(self, name: str) -> Tool | None:
        """The offered tool of that name, if any."""
        return next((tool for tool in self.tools if tool.name == name), None)

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """Every image part the request carries, message by message."""
        return tuple(part for message in self.messages for part in message.images)

    @property
    def media(self) -> tuple[MediaPart, ...]:
        """Every part the request carries that holds a file (images, audio), message by message."""
        return tuple(part for message in self.messages for part in message.media)


class Usage(_Call):
    """Token counts as the provider reported them; None where it reported nothing."""

    input_tokens: int | None = Field(None, ge=0)
    """Input tokens as the provider counts them (Anthropic and Bedrock leave cache reads and writes out)."""
    output_tokens: int | None = Field(None, ge=0)
    cache_read_tokens: int | None = Field(None, ge=0)
    """Input tokens read from the provider's prompt cache, where it reports them apart (billed at a lower price)."""
    cache_write_tokens: int | None = Field(None, ge=0)
    """Input tokens written to the provider's prompt cache, where it reports them apart."""


class Reply(_Call):
    """What came back from one call."""

    text: str | None = None
    """None when the model gave no text (it only called tools, or a filter stopped it)."""
    stop_reason: str | None = None
    usage: Usage = Usage()
    latency_ms: float | None = Field(None, ge=0, allow_inf_nan=False)
    """Wall time of the call as measured by evalkit, from sending the request to its reply: the time in flight,
    which includes any queueing at the server. None for authored fixtures (a finite number: it reaches the report's
    latency section, and NaN is not JSON)."""
    service_ms: float | None = Field(None, ge=0, allow_inf_nan=False)
    """The server's own time spent on the call, where the server reports it (Ollama's `total_duration`, llama.cpp
    server's `timings`); None otherwise. In flight less service is the time the call queued at the server."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tools the model called, in its order (empty when it only answered)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(handler(self), ("tool_calls",))

    def as_message(self) -> Message:
        """This reply as the assistant turn a conversation continues from."""
        return Message(role="assistant", content=self.text or "", tool_calls=self.tool_calls)
