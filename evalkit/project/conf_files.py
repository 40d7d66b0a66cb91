"""The YAML files Hydra will compose, read once for alias bombs before it does.

Hydra reads a project's `conf/` (and every `hydra.searchpath` folder) with OmegaConf's own YAML loader, which has
no bound on aliases: a 386-byte file whose `*name`s stand for 9**9 values builds every one of them into a config
tree, and `python -m evalkit` hangs while its memory grows. evalkit's strict readers refuse such a file
(evalkit.core.parsing.MAX_ALIAS_VALUES); here every `.yaml` file of those folders is composed with the same bounded
loader first (composing counts aliases without building anything), and a bomb is refused in one line naming the
file. Anything else wrong with a file is left for Hydra to report as it always has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

from evalkit.core.errors import InputError
from evalkit.core.files import read_text
from evalkit.core.parsing import AliasBoundedLoader, TooManyAliases

__all__ = ["check_conf_aliases", "conf_folders", "searchpath_folders"]

_CONFIG_DIR_FLAGS = ("--config-dir", "-cd")


def searchpath_folders(argv: Sequence[str]) -> list[Path]:
    """The `file://` folders of a `hydra.searchpath=[...]` override (evalkit's own `pkg://` one is listed apart)."""
    folders = []
    for arg in argv:
        name, _, value = arg.partition("=")
        if name.lstrip("+~") == "hydra.searchpath":
            folders += [Path(m) for m in re.findall(r"file://([^,\]\s'\"]+)", value)]
    return folders


def conf_folders(conf_dir: Path, argv: Sequence[str]) -> list[Path]:
    """Every folder Hydra may read a config file from in this run, evalkit's own package configs aside: the
    project's conf/, a `--config-dir`, and the `file://` folders of the command line's and the primary config's
    `hydra.searchpath`."""
    folders = [conf_dir, *searchpath_folders(argv)]
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in _CONFIG_DIR_FLAGS:
            given = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if given:
                folders.append(Path(given))
    primary = conf_dir / "config.yaml"
    if primary.is_file():  # checked before it is read as data (conf_dir comes first)
        try:
            data = yaml.load(read_text(primary, "config"), Loader=AliasBoundedLoader)  # noqa: S506 - a SafeLoader
        except (InputError, yaml.YAMLError, RecursionError):
            data = None
        hydra = data.get("hydra") if isinstance(data, dict) else None
        paths = hydra.get("searchpath") if isinstance(hydra, dict) else None
        for entry in paths if isinstance(paths, list) else []:
            if isinstance(entry, str) and entry.startswith("file://"):
                folder = Path(entry.removeprefix("file://"))
                folders.append(folder if folder.is_absolute() else conf_dir.parent / folder)
    return list(dict.fromkeys(folders))


def check_conf_aliases(folders: Iterable[Path]) -> None:
    """Refuse (InputError, exit 3) the first `.yaml` file under `folders` whose aliases stand for more than
    MAX_ALIAS_VALUES values. Files that cannot be read or parsed are skipped: Hydra names them when it needs them."""
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.yaml")):
            if not path.is_file():  # a FIFO or a device is never opened here
                continue
            try:
                text = read_text(path, "config")
            except InputError:
                continue
            try:
                for _ in yaml.compose_all(text, Loader=AliasBoundedLoader):  # nodes only: nothing is built
                    pass
            except TooManyAliases as error:
                raise InputError(f"{path}: {error}") from None
            except (yaml.YAMLError, RecursionError):
                continue
