"""The tests mirror the package: each test module sits in tests/<package>/ for the evalkit package it tests, or in
one of a few named folders, and never flat in tests/ (CONTRIBUTING.md, "Where the tests go", has the rule).

Fast and file-only: it reads the tree and imports nothing, so a new flat test or a folder named for a package that
does not exist fails here before anything else runs.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
PACKAGE = ROOT / "evalkit"

# The folders under tests/ that are not named for an evalkit package, and why each is one.
NOT_A_PACKAGE = {
    "product": "tests of the whole product: docs, the CI workflow, the walkthrough, shipped suites end to end, "
               "corpora of other tools' files, benchmarks, lint and layers, the public face",
    "fuzz": "the fuzz harness over every reader, with the workers it runs in child processes",
    "helpers": "shared test helpers (and the tests of the test machinery itself)",
    "fakes": "loopback fake servers, one package (and their own tests)",
    "corpus": "real files other tools wrote, read by the tests (data, no test modules)",
}
# Folders that hold test modules; corpus holds data only.
HOLDS_TESTS = set(NOT_A_PACKAGE) - {"corpus"}


def evalkit_packages(package: Path = PACKAGE) -> set[str]:
    """The subpackages of evalkit: folders with an __init__.py."""
    return {p.parent.name for p in package.glob("*/__init__.py")}


def collected_modules(tests: Path = TESTS) -> list[Path]:
    """Every file pytest would collect as a test module under tests/ (its default `test_*.py` and `*_test.py`)."""
    found = set(tests.rglob("test_*.py")) | set(tests.rglob("*_test.py"))
    return sorted(p for p in found if "__pycache__" not in p.parts)



def layout_problems(tests: Path, packages: set[str]) -> list[str]:
    """What breaks the layout, one line per problem naming the file and where it should go."""
    problems = []
    for path in sorted(tests.iterdir()):
        name = path.name
        if path.is_dir():
            if name == "__pycache__" or name in packages or name in NOT_A_PACKAGE:
                continue
            problems.append(f"tests/{name}/: no evalkit package is named {name!r} (packages: {sorted(packages)}); "
                            f"name the folder for the package its tests test, or add it to NOT_A_PACKAGE with why")
        elif name != "conftest.py":
            problems.append(f"tests/{name}: only conftest.py sits flat in tests/; a test module goes to "
                            f"tests/<package>/, a helper or its data to tests/helpers/")
    allowed = packages | HOLDS_TESTS
    for module in collected_modules(tests):
        relative = module.relative_to(tests)
        if len(relative.parts) != 2 or relative.parts[0] not in allowed:
            problems.append(f"tests/{relative.as_posix()}: a test module sits in tests/<package>/ (one of "
                            f"{sorted(packages)}) or tests/{{{','.join(sorted(HOLDS_TESTS))}}}/, one level down")
    # pytest's default `prepend` import mode imports a test module by its basename (the folders have no
    # __init__.py), so two test_x.py in two folders would collide: basenames stay unique across the tree
    for basename, count in sorted(Counter(m.name for m in collected_modules(tests)).items()):
        if count > 1:
            places = sorted(m.relative_to(tests).as_posix() for m in collected_modules(tests) if m.name == basename)
            problems.append(f"{basename}: {count} test modules share this name ({', '.join(places)}); "
                            f"basenames must be unique under tests/")
    # `from conftest import ...` in the tests means tests/conftest.py; a second conftest.py would also be imported
    # as `conftest` and replace it for every module imported after it
    for conftest in sorted(tests.rglob("conftest.py")):
        if conftest.parent != tests:
            problems.append(f"tests/{conftest.relative_to(tests).as_posix()}: the only conftest.py is "
                            f"tests/conftest.py; put fixtures in a tests/helpers/ module it loads as a plugin")
    return problems


def test_the_tests_mirror_the_package() -> None:
    assert layout_problems(TESTS, evalkit_packages()) == []


def test_every_folder_named_for_a_package_is_one() -> None:
    packages = evalkit_packages()
    assert {"gate", "run", "live", "core", "records"} <= packages  # the reading of the package tree works
    named = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"} - set(NOT_A_PACKAGE)
    assert named and named <= packages
    assert not set(NOT_A_PACKAGE) & packages, "a reserved folder name is now a package: its tests would mix"


# Where the project names a test file by its path: the docs, the scripts CI runs, the package's comments, the
# benchmarks and the shipped suites (CHANGELOG.md is history, and names paths as they were).
NAMING_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml", "mkdocs.yml", "docs/**/*.md", "docs/**/*.py",
                "scripts/*", ".ci/*", ".github/**/*.yml", "evalkit/**/*.py", "benchmarks/**/*.py", "benchmarks/*.md",
                "conf/**/*.yaml", "suites/**/*.py", "suites/**/*.yaml", "suites/**/*.md")
TEST_PATH = re.compile(r"(?<![\w/.])tests/[\w./-]*[\w/]")


def named_test_paths(root: Path = ROOT) -> dict[str, set[str]]:
    """Each `tests/...` path the project's files name, and the files that name it."""
    named: dict[str, set[str]] = {}
    for pattern in NAMING_FILES:
        for path in root.glob(pattern):
            if path.is_file() and "__pycache__" not in path.parts:
                for match in TEST_PATH.finditer(path.read_text(encoding="utf-8", errors="replace")):
                    named.setdefault(match.group(0).rstrip("."), set()).add(path.relative_to(root).as_posix())
    return named


def missing_test_paths(root: Path = ROOT) -> list[str]:
    """The named paths that are not there; one ending in `_` (`tests/adapt/test_adapt_<source>.py`) is a prefix."""
    missing = []
    for named, where in sorted(named_test_paths(root).items()):
        path = root / named
        there = (any(path.parent.glob(path.name + "*")) if named.endswith("_") else path.exists())
        if not there:
            missing.append(f"{named} (named in {', '.join(sorted(where))})")
    return missing


def test_every_test_path_the_project_names_is_there() -> None:
    """A moved or renamed test leaves no stale path in the docs, scripts or comments."""
    assert named_test_paths(), "no file names a test path: the scan is broken"
    assert missing_test_paths() == []


def test_a_stale_test_path_is_named_with_where_it_is_written(tmp_path: Path) -> None:
    _tree(tmp_path, {"tests/gate/test_gate.py": "", "tests/adapt/test_adapt_junit.py": "",
                     "README.md": "held by tests/gate/test_gate.py::test_x, tests/adapt/test_adapt_<source>.py and "
                                  "tests/test_gate.py.",
                     "docs/how-to/x.md": "see `tests/helpers/gone.py`"})
    assert missing_test_paths(tmp_path) == ["tests/helpers/gone.py (named in docs/how-to/x.md)",
                                            "tests/test_gate.py (named in README.md)"]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(("files", "words"), [
    ({"test_flat.py": ""}, "tests/test_flat.py: only conftest.py sits flat"),
    ({"docs_text.py": ""}, "tests/docs_text.py: only conftest.py sits flat"),
    ({"gates/test_x.py": ""}, "tests/gates/: no evalkit package is named 'gates'"),
    ({"gate/sub/test_x.py": ""}, "tests/gate/sub/test_x.py: a test module sits in tests/<package>/"),
    ({"corpus/test_x.py": ""}, "tests/corpus/test_x.py: a test module sits in tests/<package>/"),
    ({"gate/test_x.py": "", "run/test_x.py": ""}, "test_x.py: 2 test modules share this name"),
    ({"gate/x_test.py": "", "product/x_test.py": ""}, "x_test.py: 2 test modules share this name"),
    ({"gate/conftest.py": ""}, "tests/gate/conftest.py: the only conftest.py is tests/conftest.py"),
])
def test_each_break_of_the_layout_is_named(tmp_path: Path, files: dict[str, str], words: str) -> None:
    tests = _tree(tmp_path, {"conftest.py": "", "gate/test_ok.py": "", "product/test_docs.py": "", **files})
    problems = layout_problems(tests, {"gate", "run"})
    assert any(problem.startswith(words) for problem in problems), problems


def test_a_tree_in_the_layout_has_no_problems(tmp_path: Path) -> None:
    tests = _tree(tmp_path, {"conftest.py": "", "gate/test_gate.py": "", "run/test_execute.py": "",
                             "product/test_docs.py": "", "helpers/__init__.py": "", "helpers/live.py": "",
                             "helpers/test_no_hidden_skips.py": "", "fakes/test_fakes.py": "",
                             "corpus/pytest_reports/README.md": "", "fuzz/worker.py": ""})
    assert layout_problems(tests, {"gate", "run"}) == []


def test_the_packages_are_read_from_the_tree(tmp_path: Path) -> None:
    _tree(tmp_path, {"gate/__init__.py": "", "run/__init__.py": "", "templates/x.txt": "", "plugins.py": ""})
    assert evalkit_packages(tmp_path) == {"gate", "run"}
