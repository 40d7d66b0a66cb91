"""The package tree is the architecture: each subpackage is a layer, and imports run downward only."""

from __future__ import annotations

import ast
from pathlib import Path

import evalkit

PACKAGE = Path(evalkit.__file__).parent
# lower number = lower layer; a module may import its own layer or any lower one
LAYERS = {"conf": 0, "core": 0, "records": 1, "project": 2, "live": 3, "judging": 3, "agents": 3, "gate": 4,
          "programs": 4, "run": 5, "render": 6, "adapt": 6, "sweeps": 7, "cli": 8}
# `python -m evalkit`: the one thin module that only hands over to evalkit.cli
COMMAND_NAMES = {"__main__.py"}
# the public faces: what a suite or a plugin imports (`evalkit`, `evalkit.plugins`); they sit above every layer and
# re-export, lazily, names of the layers below
PUBLIC_FACES = {"__init__.py", "plugins.py"}


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "evalkit" and parts[1] in LAYERS else None


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return out


def test_every_module_belongs_to_a_layer_or_is_a_command_name():
    loose = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if _layer_of("evalkit." + ".".join(p.relative_to(PACKAGE).parts)) is None
                   and str(p.relative_to(PACKAGE)) not in COMMAND_NAMES | PUBLIC_FACES)
    assert loose == []


def test_imports_run_downward_only():
    upward = []
    checked = 0
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if str(relative) in COMMAND_NAMES or len(relative.parts) == 1:
            continue
        own = LAYERS[relative.parts[0]]
        for module in _imports(path):
            target = _layer_of(module)
            checked += 1
            if target is not None and LAYERS[target] > own:
                upward.append(f"{relative} imports {module}")
    assert checked > 100  # the walk found the package's imports
    assert upward == []


def test_command_names_only_hand_over_to_cli():
    for name in COMMAND_NAMES:
        imported = {m for m in _imports(PACKAGE / name) if m.startswith("evalkit")}
        assert imported and all(m.startswith("evalkit.cli.") for m in imported), name
