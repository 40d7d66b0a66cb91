"""Scaffolding: the files of a new project and of a new suite, from templates shipped in the package.

Pure planning (`project_files`, `suite_files`: path -> text) is kept apart from writing (`write_new`), which
refuses to overwrite anything: a scaffold never replaces a user's file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError
from evalkit.core.policy import policy_schema

__all__ = ["DEFAULT_LABELS", "LABEL", "SUITE_NAME", "check_suite_name", "parse_labels", "project_files",
           "set_default_suite", "suite_files", "write_new"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
SUITE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""Suite names become a folder, a config option and a test module name (`test_<name>.py`)."""
LABEL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
"""A label names metrics (`recall.<label>`) and a column of the confusion matrix: short, lower-case, no dots."""
DEFAULT_LABELS = ("positive", "negative", "neutral")
"""The labels of the example suite (customer messages by sentiment) when `--labels` gives none."""
_PLACEHOLDER = "__SUITE__"
_DEFAULT_SUITE_SLOT = re.compile(r"^  # - suite: NAME\b.*$", re.M)


def _template(relative: str, name: str = "") -> str:
    return (TEMPLATES / relative).read_text(encoding="utf-8").replace(_PLACEHOLDER, name)


def project_files(root: Path) -> dict[Path, str]:
    """A project's skeleton: conf/config.yaml composing evalkit's base settings, the policy schema for editors,
    a .gitignore for job folders, and empty suites/ and recordings/ (kept by .gitkeep)."""
    return {
        root / "conf" / "config.yaml": _template("project/config.yaml.tmpl"),
        root / "conf" / "policy" / "policy.schema.json": policy_schema(),
        root / ".gitignore": _template("project/gitignore.tmpl"),
        root / "suites" / ".gitkeep": "",
        root / "recordings" / ".gitkeep": "",
    }


def suite_files(root: Path, name: str, labels: Sequence[str] | None = None) -> dict[Path, str]:
    """A runnable classification suite NAME: a task, declared checks (one critical), a dataset, a prompt, its policy
    and option. Without `labels` it is the example (customer messages by sentiment, five real cases); with them,
    a dataset of one placeholder case per label, to be replaced."""
    check_suite_name(name)
    chosen = tuple(labels) if labels else DEFAULT_LABELS
    suite = root / "suites" / name
    listed = ", ".join(json.dumps(label) for label in chosen)
    metrics = ", ".join(["accuracy", "macro_f1", *(f"{kind}.{label}" for label in chosen
                                                   for kind in ("precision", "recall", "f1"))])

    def fill(relative: str) -> str:
        return _template(relative, name).replace("__LABEL_LIST__", listed).replace("__METRICS__", metrics)

    if labels:
        cases = ",\n".join("  " + json.dumps({"id": f"example-{label}", "label": label,
                                               "text": f"An example message labelled {label}: replace it with a "
                                                       "real one."}) for label in chosen)
        dataset = fill("suite/labelled-dataset.json.tmpl").replace("__CASES__", cases)
        prompt = (fill("suite/labelled-prompt.txt.tmpl").replace("__LABEL_TEXT__", ", ".join(chosen))
                  .replace("__LABEL_CHOICES__", " | ".join(json.dumps(label) for label in chosen)))
    else:
        dataset, prompt = fill("suite/dataset.json.tmpl"), fill("suite/prompt.txt.tmpl")
    return {
        root / "conf" / "suite" / f"{name}.yaml": fill("suite/suite.yaml.tmpl"),
        root / "conf" / "policy" / f"{name}.yaml": fill("suite/policy.yaml.tmpl"),
        suite / "task.py": fill("suite/task.py.tmpl"),
        suite / "checks.yaml": fill("suite/checks.yaml.tmpl"),
        suite / "datasets" / "v1.json": dataset,
        suite / "prompts" / "v1.txt": prompt,
    }


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
