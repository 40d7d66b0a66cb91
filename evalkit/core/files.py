"""Reading the files evalkit is given, with one-line errors that name the file and what it was meant to be."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evalkit.core.errors import InputError

__all__ = ["read_text", "read_text_sha256"]


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of `path`; a missing or unreadable file is an InputError naming it as `what`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the {what} ({error})") from None


def read_text_sha256(path: Path, what: str) -> tuple[str, str]:
    """The UTF-8 text of `path` and the SHA-256 of its bytes, read once, so the hash names what was parsed."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: {what} file not found") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what} ({error})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: cannot read the {what} ({error})") from None
    return text, hashlib.sha256(data).hexdigest()

