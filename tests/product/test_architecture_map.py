"""docs/explanation/architecture.md names every module of the package, under its own package's entry.

A contributor looking for a feature reads that map first; a module it leaves out is a feature nobody finds. The
map is prose, so the rule is loose on purpose: a module's name must appear as a word in its package's entry (the
lines from `  <package>/` to the next package), and every package must have an entry.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "explanation" / "architecture.md"


def _entries() -> dict[str, set[str]]:
    """Package -> the words of its entry in the map's layout block."""
    block = MAP.read_text(encoding="utf-8").split("```")[1]
    entries: dict[str, set[str]] = {}
    current: str | None = None
    for line in block.splitlines():
        package = re.match(r"^  ([a-z_]+)/\s", line)
        if package:
            current = package.group(1)
            entries[current] = set()
        elif re.match(r"^\S", line):  # the next top-level folder (suites/, recordings/ ...) ends the package list
            current = "evalkit" if line.startswith("evalkit/") else None
            entries.setdefault("evalkit", set())
        if current is not None:
            entries[current] |= set(re.findall(r"[a-z_0-9]+", line))
    return entries


def _modules() -> list[Path]:
    package = ROOT / "evalkit"
    return sorted(path.relative_to(package) for path in package.rglob("*.py")
                  if "templates" not in path.parts and path.name != "__init__.py" or path.parent == package)


def test_the_map_names_every_module_under_its_package() -> None:
    entries = _entries()
    missing = []
    for module in _modules():
        package = module.parts[0] if len(module.parts) > 1 else "evalkit"
        if module.stem not in entries.get(package, set()):
            missing.append(f"evalkit/{module} (under {package}/)")
    assert not missing, "docs/explanation/architecture.md does not name: " + ", ".join(missing)


def test_every_package_has_an_entry() -> None:
    packages = {path.name for path in (ROOT / "evalkit").iterdir()
                if path.is_dir() and (path / "__init__.py").is_file()}
    assert packages <= set(_entries()), sorted(packages - set(_entries()))
