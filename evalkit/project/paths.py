"""Where the user's project is, and how paths in its configs resolve.

A project is a folder holding `conf/config.yaml` (beside it, usually, `suites/` and `recordings/`). evalkit
uses the folder named by the environment variable EVALKIT_PROJECT, else the nearest folder from the working
directory upward that holds `conf/config.yaml`, as git finds its repository. Relative paths in the project's
configs (`suites/x`, `recordings`) are relative to that folder, whatever the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalkit.core.errors import InputError

__all__ = ["MARKER", "PACKAGE_CONF", "PROJECT_ENV", "conf_dirs", "find_project", "path_within", "project_path",
           "project_root",
           "shown"]

PROJECT_ENV = "EVALKIT_PROJECT"
PACKAGE_CONF = Path(__file__).resolve().parents[1] / "conf"
"""evalkit's base configuration, shipped in the package (`pkg://evalkit.conf` in Hydra's search path)."""
MARKER = Path("conf") / "config.yaml"


def find_project(start: Path | None = None) -> Path | None:
    """The project root for `start` (default: the working directory), or None when there is none."""
    named = os.environ.get(PROJECT_ENV)
    if named:
        return Path(named).expanduser().resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return None


def project_root() -> Path:
    """The project root; no project is an input error that says how to make or name one."""
    root = find_project()
    if root is None:
        raise InputError(f"no evalkit project here: no {MARKER} in {Path.cwd()} or any folder above it; "
                         "create one with `evalkit new project`, or name one with "
                         f"{PROJECT_ENV}=/path/to/project")
    if not (root / MARKER).is_file():
        raise InputError(f"{PROJECT_ENV}={root}: not an evalkit project (no {MARKER} there); "
                         "create one with `evalkit new project`")
    return root


def project_path(value: str | Path) -> Path:
    """A path from a project's config file: absolute as given, else relative to the project root."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else project_root() / path


def path_within(value: str | Path, folder: Path, what: str, where: str) -> Path:
    """`value` resolved like `project_path`, refused unless it lies inside `folder` once links are followed: a
    config or report must not make evalkit read (or import) a file from anywhere on the machine."""
    path = project_path(value)
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        raise InputError(f"{where}: the {what} {str(value)[:200]!r} is outside {folder}; "
                         f"keep the {what} inside that folder") from None
    except (OSError, RuntimeError) as error:  # a symlink loop
        raise InputError(f"{where}: cannot resolve the {what} {str(value)[:200]!r} ({error})") from None
    return path


def conf_dirs() -> list[Path]:
    """The config folders whose options can be named, in Hydra's search order: the project's, then evalkit's."""
    root = find_project()
    return ([root / "conf"] if root is not None else []) + [PACKAGE_CONF]


def shown(path: Path) -> str:
    """A project file named relative to the project root, as a reviewer sees it in git; others as they are."""
    root = find_project()
    try:
        return str(path.resolve().relative_to(root)) if root is not None else str(path)
    except ValueError:
        return str(path)
