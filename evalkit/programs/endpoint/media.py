"""Images and audio a candidate program sends through the endpoint, read into the call contract's media parts.

A program sends a file's bytes inline, base64 (a `data:` URL, Anthropic's `source.data`, OpenAI's
`input_audio.data`). The bytes decide the media type by their magic numbers (evalkit.core.media), as a dataset's
files do: a PNG labelled image/jpeg is a PNG, and an HTML page labelled image/png is refused naming the field. A part
keeps the bytes' SHA-256 and size, so the call's fingerprint covers them and a replay of a changed image is stale;
the recording keeps the hash, never the bytes.

A remote URL (`https://...`) or an uploaded file's id is refused with one line and never fetched: the endpoint does
not reach the network for a program, and what a URL serves today is no evidence of what it served when recorded.

For a live call the bytes must reach the provider, and a part holds no bytes (records.call): each file is written
once, under its hash, into the case's media folder (outside the sandbox's view), and the part reads it from there
when the provider sends it. Its `path` is `endpoint/<first 16 hex digits of the hash>.<suffix>`: the same bytes are
the same part, in every run.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.core.dataset import DatasetLimits
from evalkit.core.media import sniff_audio, sniff_image
from evalkit.programs.endpoint.wire import WireError
from evalkit.records.call import AudioPart, ImagePart

__all__ = ["MediaStore"]

_DATA_URL = re.compile(r"^data:([A-Za-z0-9.+/-]*)((?:;[^;,]*)*?);base64,", re.ASCII)
_SUFFIX = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif", "audio/wav": "wav",
           "audio/mpeg": "mp3"}
_DEFAULTS = DatasetLimits()


@dataclass
class MediaStore:
    """The media folder of one case's endpoint and its limits (a dataset's defaults: 5 MiB an image, 20 MiB an
    audio file, 20 MiB of media a call)."""

    folder: Path
    max_image_bytes: int = _DEFAULTS.max_image_bytes
    max_audio_bytes: int = _DEFAULTS.max_audio_bytes
    max_request_bytes: int = _DEFAULTS.max_request_media_bytes
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def image_url(self, url: object, where: str) -> ImagePart:
        """An image given as a URL (OpenAI's `image_url.url`, the Responses API's `input_image.image_url`)."""
        if not isinstance(url, str):
            raise WireError(f"{where}: expected the image as a data: URL")
        match = _DATA_URL.match(url)
        if match is None:
            scheme = url.split(":", 1)[0][:20] if ":" in url else "a URL"
            raise WireError(f"{where}: evalkit's endpoint takes images inline as data: URLs (base64) and never "
                            f"fetches a {scheme} URL; send the bytes")
        return self.image(url[match.end():], where)

    def image(self, encoded: object, where: str) -> ImagePart:
        data, media_type, sha, source = self._read(encoded, where, "image", self.max_image_bytes, sniff_image,
                                                   "a PNG, JPEG, WebP or GIF image", "label")
        return ImagePart(media_type=media_type, sha256=sha, size=len(data),
                         path=f"endpoint/{source.name}").located(source)

    def audio(self, encoded: object, where: str) -> AudioPart:
        """Audio given as base64 (OpenAI's `input_audio.data`); the declared format is read from the bytes."""
        data, media_type, sha, source = self._read(encoded, where, "audio", self.max_audio_bytes, sniff_audio,
                                                   "WAV or MP3 audio", "format")
        return AudioPart(media_type=media_type, sha256=sha, size=len(data),
                         path=f"endpoint/{source.name}").located(source)

    def _read(self, encoded: object, where: str, what: str, limit: int, sniff: Callable[[bytes], str | None],
              kinds: str, declared: str) -> tuple[bytes, str, str, Path]:
        """A part's bytes decoded, held to `limit`, typed by their first bytes (never by what the request declares)
        and kept: the bytes, their media type, their SHA-256 and the file that holds them."""
        data = _decoded(encoded, where)
        if len(data) > limit:
            raise WireError(f"{where}: the {what} is {len(data)} bytes, over the endpoint's limit of {limit}")
        media_type = sniff(data)
        if media_type is None:
            raise WireError(f"{where}: not {kinds} (its first bytes are {data[:8]!r}, whatever its {declared} says)")
        return (data, media_type, *self._kept(data, media_type))

    def check_total(self, parts: tuple[ImagePart | AudioPart, ...]) -> None:
        total = sum(part.size for part in parts)
        if total > self.max_request_bytes:
            raise WireError(f"the call carries {total} bytes of images and audio, over the endpoint's limit of "
                            f"{self.max_request_bytes} per call")

    def _kept(self, data: bytes, media_type: str) -> tuple[str, Path]:
        """The bytes' SHA-256 and the file that holds them (named by the hash: the part's `path`, so its identity
        never depends on where or when the program sent it)."""
        sha = hashlib.sha256(data).hexdigest()
        source = self.folder / f"{sha[:16]}.{_SUFFIX[media_type]}"
        with self._lock:
            if not source.exists():
                self.folder.mkdir(mode=0o700, exist_ok=True)
                partial = source.with_suffix(".partial")
                partial.write_bytes(data)
                os.replace(partial, source)
        return sha, source


def _decoded(encoded: object, where: str) -> bytes:
    if not isinstance(encoded, str):
        raise WireError(f"{where}: expected the bytes as base64 text")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise WireError(f"{where}: the bytes are not valid base64") from None
