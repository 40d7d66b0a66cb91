"""Where the project's own files live, so that shipped paths do not depend on the caller's cwd."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROJECT_ROOT", "conf_dirs", "project_path"]

# evalkit is installed editable from its repository (conf/, suites/, recordings/ sit beside it).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def project_path(value: str | Path) -> Path:
    """A path from a shipped config file: absolute as given, else relative to the project root."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else PROJECT_ROOT / path


def conf_dirs() -> list[Path]:
    """The config folders whose options can be named, in the order they are searched."""
    return [PROJECT_ROOT / "conf"]
