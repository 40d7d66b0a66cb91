"""Media parts on the wire: the bytes of an image part as each provider's format carries them, and the guard that
keeps images from a provider that cannot send them.

The bytes are read when the request is sent (ImagePart.data), never before and never from a recording.
"""

from __future__ import annotations

import base64

from evalkit.live.providers.base import Provider
from evalkit.live.providers.toolcalls import unsupported
from evalkit.records.call import ImagePart, Reply, Request

__all__ = ["WithoutImages", "base64_data", "data_uri"]


def base64_data(part: ImagePart) -> str:
    """The image's bytes in base64 (Anthropic's `source.data`, Ollama's `images`)."""
    return base64.b64encode(part.data()).decode("ascii")


def data_uri(part: ImagePart) -> str:
    """The image as a `data:` URI (OpenAI's and the compatible servers' `image_url.url`)."""
    return f"data:{part.media_type};base64,{base64_data(part)}"


class WithoutImages:
    """A provider that takes no images (its spec's `media` lacks `image`), kept from a request that carries one:
    it would send the text and leave the image out unsaid. The runner refuses such a run up front
    (evalkit.run.media); this guard covers requests a task builds otherwise (a judge's)."""

    def __init__(self, provider: Provider, name: str, kind: str) -> None:
        self._provider = provider
        self._name = name
        self._kind = kind

    def complete(self, request: Request) -> Reply:
        images = request.images
        if images:
            raise unsupported(self._name, self._kind, f"the image part {images[0].path!r}",
                              "it takes no images (its spec's media lacks 'image')")
        return self._provider.complete(request)

    def __getattr__(self, name: str) -> object:
        return getattr(self._provider, name)
