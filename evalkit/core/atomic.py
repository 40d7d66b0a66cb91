"""Atomic file writes: evidence files are either the old version or the new one, never torn.

A target that is a symbolic link is refused (evalkit.core.outputs.refuse_link): renaming over it would
replace the link with a file, and following it would write wherever it points.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from evalkit.core.outputs import refuse_link

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temp file beside `path`, fsync it, then rename it over `path` (never over a link)."""
    refuse_link(path, "file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; evidence files are for reading
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable where the platform allows it
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
