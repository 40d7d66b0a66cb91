"""Media files a dataset names: what the bytes are (sniffed, never taken from the file's name), read under limits.

A case field may name an image or audio file relative to the dataset (dataset.images, dataset.audio). The bytes
decide its media type by their magic numbers: a PNG named .jpg is a PNG, and an HTML page named .png is no image at
all and is refused in one line. The reader is confined to the dataset's folder, so a dataset cannot make evalkit send
/etc/passwd or another user's file to a model provider.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evalkit.core.errors import InputError
from evalkit.core.files import read_bytes

__all__ = ["MediaFile", "read_media", "sniff_audio", "sniff_image"]

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image(data: bytes) -> str | None:
    """The image media type the bytes' magic numbers say (PNG, JPEG, WebP, GIF), or None for anything else."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff_audio(data: bytes) -> str | None:
    """The audio media type the bytes' magic numbers say (WAV, MP3), or None for anything else."""
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    # an ID3 tag, or an MPEG audio frame's sync (11 set bits) with layer III (bits 01 after the version)
    if data.startswith(b"ID3") or (len(data) >= 2 and data[0] == 0xFF and data[1] & 0xE6 == 0xE2):
        return "audio/mpeg"
    return None


_KINDS = {"image": (sniff_image, "a PNG, JPEG, WebP or GIF image"), "audio": (sniff_audio, "WAV or MP3 audio")}


@dataclass(frozen=True)
class MediaFile:
    """An image or audio file as read: what identifies it, and where it lives on this machine (read again when
    sent)."""

    path: str
    """Relative to the dataset's folder, with POSIX separators (what reports and recordings show)."""
    media_type: str
    sha256: str
    size: int
    source: Path


def read_media(value: object, folder: Path, where: str, *, kind: str, limit: int, setting: str) -> MediaFile:
    """Read the file a case field names (`value`, relative to `folder`, the dataset's folder), an `image` or
    `audio` by `kind`, under `limit` bytes; anything else is one InputError at `where` saying what to do."""
    sniff, what = _KINDS[kind]
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: expected the path of an {kind} file relative to the dataset, got "
                         f"{type(value).__name__}")
    relative = PurePosixPath(value.replace("\\", "/"))
    if relative.is_absolute() or ".." in relative.parts:
        raise InputError(f"{where}: {kind} path {value!r} must stay inside the dataset's folder (no absolute path, "
                         "no '..')")
    source = folder / relative
    try:
        inside = source.resolve().is_relative_to(folder.resolve())
    except OSError as error:
        raise InputError(f"{where}: cannot read {kind} {value!r} ({error.strerror or error})") from None
    if not inside:  # a link out of the folder
        raise InputError(f"{where}: {kind} {value!r} leads outside the dataset's folder through a link; copy the "
                         "file in")
    data = read_bytes(source, kind, limit=limit, setting=setting)
    media_type = sniff(data)
    if media_type is None:
        raise InputError(f"{where}: {value!r} is not {what} (its first bytes are {data[:8]!r}, whatever its name "
                         "says); replace the file")
    return MediaFile(relative.as_posix(), media_type, hashlib.sha256(data).hexdigest(), len(data), source)
