"""What judges a program suite, and whether a candidate program changed it while it ran.

Two different sets, for two different questions:
- `judging_files`: the files whose code decides the scores, i.e. what pytest runs from the suite folder: its
  conftest.py, test files (test_*.py, *_test.py, in any subfolder), declared checks (checks.yaml) and the suite's
  own modules they import, transitively (`import graders`, `from helpers import x`, relative imports). Never the
  program under test, wherever it lives, nor scripts nobody imports (make_data.py, calibration.py). Their
  fingerprint plays the judge's part in the eval key: a change makes runs incomparable, as a new judge model would.
- `snapshot`: every file under the suite folder (the checks' process runs there, with it first on sys.path, so a
  new `pytest.py` or `json.py` would judge too) and evalkit's own Python code (its pytest plugin grades). The
  runner takes it before the candidates run and compares after: the candidate runs as the same OS user and could
  rewrite a grader, and that must never turn into a decision.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from evalkit.core.errors import InputError
from evalkit.core.fingerprint import fingerprint, sha256

__all__ = ["changes", "checks_fingerprint", "judging_files", "refuse_changes", "snapshot"]

_SKIP_DIRS = ("__pycache__",)
_EVALKIT = Path(__file__).resolve().parents[1]


def judging_files(suite_dir: Path, program: Path) -> dict[str, str]:
    """Path relative to the suite folder -> SHA-256, for every file that judges (see the module docstring)."""
    root = suite_dir.resolve()
    skip = program.resolve()
    pending = [p for p in _files(root) if _collected(p.name)]
    found: dict[str, str] = {}
    while pending:
        path = pending.pop()
        rel = path.relative_to(root).as_posix()
        if rel in found or path == skip:
            continue
        data = path.read_bytes()
        found[rel] = sha256(data)
        if path.suffix == ".py":  # checks.yaml imports nothing itself
            pending.extend(p for p in _local_imports(data, path, root) if p != skip)
    return dict(sorted(found.items()))


def checks_fingerprint(suite_dir: Path, program: Path) -> str:
    """The eval key's judge for a program suite: `checks@` and the fingerprint of `judging_files`."""
    return "checks@" + fingerprint(judging_files(suite_dir, program))


def snapshot(suite_dir: Path) -> dict[str, str]:
    """Every file of the suite folder (relative path) and of evalkit's code (`evalkit/...`) -> SHA-256."""
    root = suite_dir.resolve()
    out = {p.relative_to(root).as_posix(): sha256(p.read_bytes()) for p in _files(root)}
    out.update({"evalkit/" + p.relative_to(_EVALKIT).as_posix(): sha256(p.read_bytes())
                for p in _files(_EVALKIT) if p.suffix == ".py"})
    return out


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """`NAME changed`, `NAME added`, `NAME removed`, sorted by name."""
    out = []
    for name in sorted({*before, *after}):
        if name not in after:
            out.append(f"{name} removed")
        elif name not in before:
            out.append(f"{name} added")
        elif before[name] != after[name]:
            out.append(f"{name} changed")
    return out


def refuse_changes(before: Mapping[str, str], after: Mapping[str, str], suite_dir: Path, program: Path,
                   when: str) -> None:
    """Raise the run's one-line refusal (exit 3) if anything in `before` and `after` differs."""
    found = changes(before, after)
    if found:
        shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
        raise InputError(f"{suite_dir}: the suite's checks or evalkit's code changed {when} (candidate program "
                         f"{program}): {shown}; the run is refused, as its evidence cannot be trusted: restore "
                         "them (git status shows what changed) and do not run that program again unreviewed")


def _files(root: Path) -> Iterator[Path]:
    """Regular files under root, not through symlinks and not in __pycache__, in a stable order."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in rel.parts) or not path.is_file() or path.is_symlink():
            continue
        if any(parent.is_symlink() for parent in _between(root, path)):
            continue
        yield path


def _between(root: Path, path: Path) -> Iterable[Path]:
    parent = path.parent
    while parent != root and root in parent.parents:
        yield parent
        parent = parent.parent


def _collected(name: str) -> bool:
    """What pytest collects under its default settings (the runner gives it an empty ini file), and the suite's
    declared checks (evalkit.run.declared)."""
    return name in ("conftest.py", "checks.yaml") or (
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))


def _local_imports(data: bytes, path: Path, root: Path) -> list[Path]:
    """The suite's own files that `path` imports: modules or packages found in its folder or the suite folder (as
    pytest's rootdir-relative imports find them); anything else (the standard library, evalkit) is not the suite's."""
    try:
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError):
        return []  # pytest will fail to import it; it is judged (and hashed) all the same
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _resolve(alias.name.split("."), (path.parent, root), root)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                bases: tuple[Path, ...] = (base,)
            else:
                bases = (path.parent, root)
            module = node.module.split(".") if node.module else []
            found += _resolve(module, bases, root)
            for alias in node.names:
                found += _resolve([*module, alias.name], bases, root)
    return found


def _resolve(parts: list[str], bases: tuple[Path, ...], root: Path) -> list[Path]:
    """The files inside root that importing the dotted `parts` from one of `bases` runs: each package's
    __init__.py on the way and the module itself."""
    out: list[Path] = []
    for base in bases:
        for depth in range(1, len(parts) + 1):
            stem = base.joinpath(*parts[:depth])
            for candidate in (stem / "__init__.py", stem.with_name(stem.name + ".py")):
                resolved = candidate.resolve()
                if candidate.is_file() and (resolved == root or root in resolved.parents):
                    out.append(resolved)
    return out
