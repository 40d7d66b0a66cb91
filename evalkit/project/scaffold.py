"""Scaffolding: the files of a new project and of a new suite, from templates shipped in the package.

Pure planning (`project_files`, `suite_files`: path -> text) is kept apart from writing (`write_new`), which
refuses to overwrite anything: a scaffold never replaces a user's file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError
from evalkit.core.policy import policy_schema
from evalkit.project.suite_kinds import DEFAULT_KIND, DEFAULT_LABELS, check_labels, suite_kind, template

__all__ = ["DEFAULT_LABELS", "LABEL", "SUITE_NAME", "check_suite_name", "parse_labels", "project_files",
           "set_default_suite", "suite_files", "write_new"]

SUITE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""Suite names become a folder, a config option and a test module name (`test_<name>.py`)."""
LABEL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
"""A label names metrics (`recall.<label>`) and a column of the confusion matrix: short, lower-case, no dots."""
_DEFAULT_SUITE_SLOT = re.compile(r"^  # - suite: NAME\b.*$", re.M)


def project_files(root: Path) -> dict[Path, str]:
    """A project's skeleton: conf/config.yaml composing evalkit's base settings, the policy schema for editors,
    a .gitignore for job folders, and empty suites/ and recordings/ (kept by .gitkeep)."""
    return {
        root / "conf" / "config.yaml": template("project/config.yaml.tmpl"),
        root / "conf" / "policy" / "policy.schema.json": policy_schema(),
        root / ".gitignore": template("project/gitignore.tmpl"),
        root / "suites" / ".gitkeep": "",
        root / "recordings" / ".gitkeep": "",
    }


def suite_files(root: Path, name: str, labels: Sequence[str] | None = None,
                kind: str = DEFAULT_KIND) -> dict[Path, str]:
    """A runnable suite NAME of `kind` (evalkit.project.suite_kinds): its task, declared checks, dataset, prompt,
    policy and option. `labels` applies to the classification kind only (one placeholder case per label)."""
    check_suite_name(name)
    chosen = suite_kind(kind)
    check_labels(chosen, labels)
    return chosen.plan(root, name, tuple(labels) if labels else None)


def parse_labels(text: str) -> tuple[str, ...]:
    """`--labels a,b,c`: two or more distinct labels, each lower-case letters, digits, '_' or '-'."""
    labels = tuple(part.strip() for part in text.split(","))
    bad = [label for label in labels if not LABEL.match(label)]
    if bad:
        raise InputError(f"--labels: {bad[0]!r} is not a label; use lower-case letters, digits, '_' and '-', "
                         "starting with a letter or digit, at most 40 characters (a label names metrics such as "
                         "recall.<label>)")
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise InputError(f"--labels {text!r}: give two or more distinct labels, separated by commas")
    return labels


MAX_SUITE_NAME = 64
"""The longest suite name: it names a folder, a file (test_<name>.py) and a config option, within every
filesystem's 255-byte name limit."""


def check_suite_name(name: str) -> None:
    if len(name) > MAX_SUITE_NAME:
        raise InputError(f"suite name {name[:40]!r}... has {len(name)} characters; use at most {MAX_SUITE_NAME}")
    if not SUITE_NAME.match(name):
        raise InputError(f"suite name {name!r}: use lower-case letters, digits and _ , starting with a letter "
                         "(it names a folder, a config option and the test module test_<name>.py)")


def set_default_suite(config_text: str, name: str) -> str | None:
    """config.yaml with `- suite: NAME` as its default suite, or None when it already names one (left as it is)."""
    if re.search(r"^\s*-\s*suite\s*:", config_text, re.M):
        return None
    if _DEFAULT_SUITE_SLOT.search(config_text):
        line = f"  - suite: {name}    # the default suite; suite=OTHER picks another"
        return _DEFAULT_SUITE_SLOT.sub(line, config_text, 1)
    if "  - _self_" in config_text:
        return config_text.replace("  - _self_", f"  - suite: {name}\n  - _self_", 1)
    return None


def write_new(files: dict[Path, str]) -> list[Path]:
    """Write every file, or none: a path that already exists is refused before anything is written."""
    existing = sorted(str(path) for path in files if path.exists())
    if existing:
        raise InputError(f"{existing[0]}: already exists; a scaffold never overwrites a file"
                         + (f" ({len(existing) - 1} more)" if len(existing) > 1 else "")
                         + ": choose another name or folder")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    return list(files)
