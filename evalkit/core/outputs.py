"""Where a command may write: never over one of its own inputs, never through a symbolic link.

Every file evalkit writes (decisions, reviewed reports, saved baselines, recordings, journals, locks) goes
through these checks, so an output path that names an input (`--out` = the candidate report, also through a
symbolic or hard link) or a committed link that points elsewhere is refused in one line before anything is
written, rather than silently replacing the input or writing wherever the link points.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from evalkit.core.errors import InputError

__all__ = ["same_file", "refuse_input", "refuse_link"]


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same resolved path, or the same device and inode (a hard link or a
    symbolic link to it). A path that does not exist yet is the same file only by its resolved path."""
    try:
        if a.resolve() == b.resolve():
            return True
        return os.path.samefile(a, b)
    except (OSError, RuntimeError):  # missing, unreadable or a link loop: not provably the same file
        return False


def refuse_input(path: Path, inputs: Mapping[str, Path], what: str) -> None:
    """Refuse writing the `what` to `path` when it is one of the command's `inputs` (named by what they are)."""
    for name, given in inputs.items():
        if same_file(path, given):
            raise InputError(f"{path}: cannot write the {what} there: it is {name} ({given}), an input of this "
                             "command, and evalkit never overwrites its inputs; choose another path")


def refuse_link(path: Path, what: str) -> None:
    """Refuse writing the `what` to `path` when `path` itself is a symbolic link (a committed link would send
    the write anywhere, or replace the link with a file nobody asked for). The folders above may be links."""
    if path.is_symlink():
        raise InputError(f"{path}: cannot write the {what}: it is a symbolic link (to {os.readlink(path)}), and "
                         "evalkit writes only regular files; remove the link or choose another path")
