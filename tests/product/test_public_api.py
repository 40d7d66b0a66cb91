"""`from evalkit import ...`: everything a suite needs, typed for mypy, and the only evalkit import of the shipped
suites."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import evalkit

PROJECT_ROOT = Path(__file__).resolve().parents[2]
INIT = Path(evalkit.__file__)


def _typed_names() -> set[str]:
    """The names evalkit/__init__.py imports for type checkers (under `if TYPE_CHECKING:`)."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_every_public_name_is_typed_listed_and_resolves() -> None:
    assert set(evalkit.__all__) == _typed_names()
    for name in evalkit.__all__:
        assert getattr(evalkit, name) is not None, name
    with pytest.raises(AttributeError, match="module 'evalkit' has no attribute 'compare_pairs'"):
        getattr(evalkit, "compare_pairs")  # noqa: B009  (a name that is not public is not offered)


def test_importing_evalkit_imports_none_of_its_modules() -> None:
    code = "import sys, evalkit; print(sorted(m for m in sys.modules if m.startswith('evalkit.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def _suite_modules() -> list[Path]:
    """What a shipped suite runs: its task, checks, conftest and the modules they import. The authoring scripts
    (`author_recordings.py`, which write recordings by hand) are tools beside the suite, not the suite."""
    return sorted(p for p in PROJECT_ROOT.glob("suites/*/*.py") if p.name != "author_recordings.py")


def test_the_shipped_suites_import_only_the_public_api() -> None:
    private = []
    for path in _suite_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            # the public faces: evalkit, evalkit.plugins and evalkit.records (the typed records a suite builds)
            private += [f"{path.relative_to(PROJECT_ROOT)}: {n}" for n in names
                        if n.startswith("evalkit.") and n not in ("evalkit.plugins", "evalkit.records")]
    assert len(_suite_modules()) > 10
    assert private == []


@pytest.mark.slow
def test_a_scaffolded_suite_passes_mypy_strict_and_sees_evalkits_types(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "MYPYPATH")}
    for args, cwd in ((["project"], tmp_path), (["suite", "reviews"], tmp_path)):
        done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "new", *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    suite = tmp_path / "suites" / "reviews"
    files = sorted(p.name for p in suite.glob("*.py"))
    assert files == ["task.py"]  # its checks are declared in checks.yaml
    # were the public names Any to mypy, this mistake would pass unnoticed
    (suite / "probe.py").write_text("from evalkit import Case, Request\n\n"
                                    "def wrong(case: Case) -> int:\n"
                                    "    return Request(model='m', messages=())\n", encoding="utf-8")
    # evalkit is installed editable here (an import hook mypy cannot follow), so its source is given by MYPYPATH;
    # its own modules are checked by evalkit's mypy run, and only the suite's files are reported here
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
                           "--cache-dir", str(tmp_path / ".mypy_cache"), *files, "probe.py"], cwd=suite,
                          env={**env, "MYPYPATH": str(PROJECT_ROOT)}, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith("probe.py:4: error: Incompatible return value type "
                                                     '(got "Request", expected "int")'), done.stdout + done.stderr
