"""Atomic file writes: evidence files are either the old version or the new one, never torn.

A target that is a symbolic link is refused (evalkit.core.outputs.refuse_link): renaming over it would
replace the link with a file, and following it would write wherever it points.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from evalkit.core.outputs import refuse_link

__all__ = ["write_atomic", "write_atomic_set"]


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temp file beside `path`, fsync it, then rename it over `path` (never over a link)."""
    write_atomic_set({path: text})


def write_atomic_set(files: dict[Path, str]) -> None:
    """Write a set of files that belong together (a decision as JSON and as JUnit XML) all or nothing: every
    text is written and synced to a temp file first, and only when all are written (a full disk fails here) are
    they renamed into place."""
    temps: list[tuple[str, Path]] = []
    current = None
    try:
        for path, text in files.items():
            current = path
            refuse_link(path, "file")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; evidence files are for reading
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        for tmp, path in temps:
            current = path
            os.replace(tmp, path)
    except OSError as error:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        # named by the file it was to become (a temp file's name, or none, tells a reader nothing)
        raise OSError(error.errno, error.strerror, str(current)) from error
    except BaseException:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        raise
    for folder in {path.parent for path in files}:
        _sync_folder(folder)


def _sync_folder(folder: Path) -> None:
    try:  # make the renames themselves durable where the platform allows it
        dir_fd = os.open(folder, os.O_RDONLY)
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
