"""Config options named on a command line outside Hydra (`--policy triage`): found by name in the project's
config group folder, or taken as a path to a YAML or JSON file."""

from __future__ import annotations

from pathlib import Path

from evalkit.core.errors import InputError
from evalkit.project.paths import conf_dirs

__all__ = ["find_option"]


def find_option(group: str, spec: str | Path) -> Path:
    """`spec` as a path when it names a .yaml/.json file, else the option `<group>/<spec>.yaml` of the first
    config folder that has it (the project's before evalkit's own)."""
    path = Path(spec)
    if path.suffix in (".yaml", ".yml", ".json"):
        return path
    if not isinstance(spec, str) or "/" in spec or "\\" in spec or spec.startswith(".") or "\0" in spec:
        raise InputError(f"{group} {str(spec)[:200]!r}: an option is named by its file name in conf/{group}/ "
                         "(letters, digits, '_', '-'), not by a path")
    folders = [folder / group for folder in conf_dirs()]
    for folder in folders:
        candidate = folder / f"{spec}.yaml"
        if candidate.is_file():
            return candidate
    names = sorted({p.stem for folder in folders for p in folder.glob("*.yaml")})
    where = " or ".join(str(f) for f in folders)
    raise InputError(f"{group} '{spec}': no such {group} in {where} (available: {', '.join(names) or 'none'}) "
                     "and not a .yaml/.json path")
