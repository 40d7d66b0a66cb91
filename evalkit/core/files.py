"""Reading the files evalkit is given, with one-line errors that name the file and what it was meant to be."""

from __future__ import annotations

from pathlib import Path

from evalkit.core.errors import InputError

__all__ = ["read_text"]


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of `path`; a missing or unreadable file is an InputError naming it as `what`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the {what} ({error})") from None

