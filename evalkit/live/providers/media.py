"""Media parts on the wire: the bytes of an image or audio part as each provider's format carries them, and the
guard that keeps a kind of media from a provider that cannot send it.

The bytes are read when the request is sent (ImagePart.data), never before and never from a recording.
"""

from __future__ import annotations

import base64

from evalkit.live.providers.base import Provider
from evalkit.live.providers.toolcalls import unsupported
from evalkit.records.call import ImagePart, MediaPart, Reply, Request

__all__ = ["WithoutMedia", "base64_data", "data_uri", "refuse_untaken"]


def base64_data(part: MediaPart) -> str:
    """The part's bytes in base64 (Anthropic's `source.data`, Ollama's `images`, OpenAI's `input_audio.data`)."""
    return base64.b64encode(part.data()).decode("ascii")


def data_uri(part: ImagePart) -> str:
    """The image as a `data:` URI (OpenAI's and the compatible servers' `image_url.url`)."""
    return f"data:{part.media_type};base64,{base64_data(part)}"


def refuse_untaken(name: str, provider: str, takes: tuple[str, ...], request: Request) -> None:
    """Refuse a request with a media part of a kind the provider does not take (its spec's `media`): it would send
    the text and leave the file out unsaid. The runner refuses such a run up front (evalkit.run.media); this covers
    requests a task builds otherwise (a judge's)."""
    for part in request.media:
        if part.kind not in takes:
            raise unsupported(name, provider, f"the {part.kind} part {part.path!r}",
                              f"it takes no {part.kind} (its spec's media lacks {part.kind!r})")


class WithoutMedia:
    """A provider written before media parts existed (its spec's `media` is None), kept from every request that
    carries one. Everything else (its `describe`) is the provider's own."""

    def __init__(self, provider: Provider, name: str, kind: str) -> None:
        self._provider = provider
        self._name = name
        self._kind = kind

    def complete(self, request: Request) -> Reply:
        refuse_untaken(self._name, self._kind, (), request)
        return self._provider.complete(request)

    def __getattr__(self, name: str) -> object:
        return getattr(self._provider, name)
