"""Reading the files evalkit is given, safely: regular files only, under a size limit, in one-line errors.

Every loader (reports, policies, rubrics, datasets, manifests, prompts, recordings, journals, review decisions,
adapted reports, baselines) reads through `read_bytes`, so a FIFO cannot hang a run, `/dev/zero` cannot fill
memory, a folder is named as a folder, and a multi-gigabyte file is refused before a byte of it is read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from evalkit.core.errors import InputError

__all__ = ["DEFAULT_MAX_INPUT_BYTES", "MAX_INPUT_BYTES_ENV", "decode", "max_input_bytes", "read_bytes", "read_text",
           "read_text_sha256"]

DEFAULT_MAX_INPUT_BYTES = 1 << 30
"""The largest input file evalkit reads: 1 GiB (a run report of a million tests is a few hundred MB)."""
MAX_INPUT_BYTES_ENV = "EVALKIT_MAX_INPUT_BYTES"
"""Environment variable that sets another limit, in bytes."""

_BOM = b"\xef\xbb\xbf"


def max_input_bytes() -> int:
    """The size limit in force: EVALKIT_MAX_INPUT_BYTES when set to a positive integer, else 1 GiB."""
    given = os.environ.get(MAX_INPUT_BYTES_ENV, "").strip()
    if not given:
        return DEFAULT_MAX_INPUT_BYTES
    if not given.isdigit() or int(given) <= 0:
        raise InputError(f"{MAX_INPUT_BYTES_ENV}={given[:40]!r}: expected a positive number of bytes")
    return int(given)


def read_bytes(path: Path, what: str, *, limit: int | None = None, setting: str = MAX_INPUT_BYTES_ENV) -> bytes:
    """The bytes of the regular file `path`; anything else is an InputError naming it as `what`.

    A FIFO, device, socket or folder is refused without opening it for reading (opening a FIFO blocks until a
    writer comes), and so is a file over `max_input_bytes()`, or over `limit` where a reader has its own (a
    dataset's `dataset.limits.max_bytes`), which the refusal names as `setting`. The file is opened non-blocking
    and checked again on its descriptor, so a path swapped for a FIFO between the two checks still cannot hang
    the run.
    """
    if limit is None:
        limit = max_input_bytes()
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: {what} file not found") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what} ({error.strerror or error})") from None
    _check_kind(path, what, info, limit, setting)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what} ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        _check_kind(path, what, info, limit, setting)
        chunks: list[bytes] = []
        size = 0
        while True:  # read to the end, but never past the limit (a file can grow while it is read)
            # the whole file in one read where it can: one chunk is returned as it is, where several are
            # joined into a copy (twice the file's size in memory, for a report of hundreds of MB)
            chunk = os.read(fd, min(max(info.st_size + 1 - size, 1 << 24), limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise InputError(_too_big(path, what, size, limit, setting, grew=True))
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what} ({error.strerror or error})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def _check_kind(path: Path, what: str, info: os.stat_result, limit: int, setting: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path}: the {what} is a folder; name the {what} file")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise InputError(f"{path}: the {what} is {kind}; evalkit reads {what}s only from regular files: "
                         "save it to a file first")
    if info.st_size > limit:
        raise InputError(_too_big(path, what, info.st_size, limit, setting, grew=False))


def _too_big(path: Path, what: str, size: int, limit: int, setting: str, *, grew: bool) -> str:
    return (f"{path}: the {what} is {'over ' if grew else ''}{size:,} bytes, more than evalkit reads "
            f"({limit:,} bytes); check that it is the right file, or raise {setting}")


def decode(data: bytes, path: Path | str, what: str) -> str:
    """`data` as UTF-8 text; another encoding or a byte-order mark is an InputError naming the file."""
    if data.startswith(_BOM):
        raise InputError(f"{path}: the {what} starts with a byte-order mark (BOM); save it as UTF-8 without one")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: the {what} is not UTF-8 text (byte {error.start}: {error.reason}); "
                         "save it as UTF-8") from None


def read_text(path: Path, what: str, *, limit: int | None = None, setting: str = MAX_INPUT_BYTES_ENV) -> str:
    """The UTF-8 text of `path` (read by `read_bytes`); an unreadable file is an InputError naming it as `what`."""
    return decode(read_bytes(path, what, limit=limit, setting=setting), path, what)


def read_text_sha256(path: Path, what: str) -> tuple[str, str]:
    """The UTF-8 text of `path` and the SHA-256 of its bytes, read once, so the hash names what was parsed."""
    data = read_bytes(path, what)
    return decode(data, path, what), hashlib.sha256(data).hexdigest()
