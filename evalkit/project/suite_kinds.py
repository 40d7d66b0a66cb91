"""The kinds of suite `evalkit new suite --kind KIND` writes: classification, retrieval QA, structured extraction.

One extension point of evalkit's typed registry (evalkit.core.registry), built-ins included: each kind is a
`SuiteKind` value (what it measures, how it plans its files, what to do next) registered under its name in the
`evalkit.suite_kinds` entry-point group of a pyproject.toml. evalkit's three are registered so in its own; a later
kind (agent, conversation), evalkit's or another package's, is one more entry and one more planner, with no change
to the scaffold or the command. Planning is pure (path -> text); writing is evalkit.project.scaffold's `write_new`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalkit.core.errors import InputError
from evalkit.core.registry import Kind, entries, load

__all__ = ["CLASSIFICATION", "DEFAULT_KIND", "DEFAULT_LABELS", "EXTRACTION", "RETRIEVAL_QA", "SUITE_KINDS",
           "SuiteKind", "check_labels", "folder_kind", "kind_names", "suite_kind", "template"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
PLACEHOLDER = "__SUITE__"
DEFAULT_KIND = "classification"
"""The kind `evalkit new suite NAME` writes when `--kind` is not given (the scaffold's first and only kind before)."""
DEFAULT_LABELS = ("positive", "negative", "neutral")
"""The labels of the example classification suite (customer messages by sentiment) when `--labels` gives none."""

Planner = Callable[[Path, str, "tuple[str, ...] | None"], dict[Path, str]]
"""(project root, suite name, labels or None) -> every file of the suite, path -> text."""


@dataclass(frozen=True)
class SuiteKind:
    """One kind of scaffolded suite, registered under its `name` in the `evalkit.suite_kinds` entry points."""

    name: str
    """What `--kind` takes: lower-case words joined by '-'."""
    summary: str
    """One line: what a suite of this kind measures (the command's help lists it)."""
    plan: Planner
    """The suite's files; pure."""
    next_steps: Callable[[str], str]
    """What the command prints after writing suite NAME: the commands that record, bless and gate it."""
    takes_labels: bool = False
    """Whether `--labels a,b,c` applies (only a kind whose replies choose a label)."""


SUITE_KINDS: Kind[SuiteKind] = Kind("evalkit.suite_kinds", "suite kind", SuiteKind, lambda kind: kind.name)
"""The extension point: `[project.entry-points."evalkit.suite_kinds"] NAME = "package.module:KIND"`."""


def kind_names() -> tuple[str, ...]:
    """The registered kinds: the default first, then the others by name."""
    names = tuple(entries(SUITE_KINDS))
    return (DEFAULT_KIND, *(name for name in names if name != DEFAULT_KIND)) if DEFAULT_KIND in names else names


def suite_kind(name: str) -> SuiteKind:
    """The kind called `name`; an unknown name is refused in one line that lists the kinds."""
    if name not in entries(SUITE_KINDS):
        raise InputError(f"--kind {name!r}: not a suite kind; the kinds are {', '.join(kind_names())}")
    return load(SUITE_KINDS, name)


def template(relative: str, name: str = "") -> str:
    """A template of the package (evalkit/project/templates/RELATIVE) with the suite's name filled in."""
    return (TEMPLATES / relative).read_text(encoding="utf-8").replace(PLACEHOLDER, name)


# -- classification: the scaffold's first kind, its files and messages unchanged --------------------------------

def _classification(root: Path, name: str, labels: tuple[str, ...] | None) -> dict[Path, str]:
    """A runnable classification suite NAME: a task, declared checks (one critical), a dataset, a prompt, its policy
    and option. Without `labels` it is the example (customer messages by sentiment, five real cases); with them,
    a dataset of one placeholder case per label, to be replaced."""
    chosen = labels or DEFAULT_LABELS
    suite = root / "suites" / name
    listed = ", ".join(json.dumps(label) for label in chosen)
    metrics = ", ".join(["accuracy", "macro_f1", *(f"{kind}.{label}" for label in chosen
                                                   for kind in ("precision", "recall", "f1"))])

    def fill(relative: str) -> str:
        return template(relative, name).replace("__LABEL_LIST__", listed).replace("__METRICS__", metrics)

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


def _classification_next(name: str) -> str:
    return f"""next:
  1. name the model your OpenAI-compatible server serves in a preset, conf/model/served.yaml:
       defaults: [gpt-local, _self_]
       name: YOUR-MODEL-ID
       base_url: http://127.0.0.1:8080/v1
  2. record its replies:   evalkit run suite={name} model=served mode=live baseline=none
  3. make that run the suite's baseline:   evalkit bless outputs/.../report.json
  4. gate any change against it, replaying with no model:   evalkit run suite={name} model=served prompt=v2
     (or make model=served the suite's default in conf/suite/{name}.yaml)"""


# -- kinds whose files are one template folder each --------------------------------------------------------------

FOLDER_FILES: Mapping[str, str] = {
    "suite.yaml.tmpl": "conf/suite/{name}.yaml",
    "policy.yaml.tmpl": "conf/policy/{name}.yaml",
    "README.md.tmpl": "suites/{name}/README.md",
    "task.py.tmpl": "suites/{name}/task.py",
    "checks.yaml.tmpl": "suites/{name}/checks.yaml",
    "dataset.json.tmpl": "suites/{name}/datasets/v1.json",
    "prompt.txt.tmpl": "suites/{name}/prompts/v1.txt",
}
"""A template folder's files and where each goes in the project. `next.txt.tmpl` is the message after writing."""


def folder_kind(name: str, summary: str, templates: Path = TEMPLATES) -> SuiteKind:
    """A kind whose files are one template folder, `templates`/suite-NAME/: every file of FOLDER_FILES, and
    next.txt.tmpl (another package passes its own `templates`)."""
    folder = templates / f"suite-{name}"

    def fill(source: str, suite: str) -> str:
        return (folder / source).read_text(encoding="utf-8").replace(PLACEHOLDER, suite)

    def plan(root: Path, suite: str, labels: tuple[str, ...] | None) -> dict[Path, str]:
        return {root / target.format(name=suite): fill(source, suite) for source, target in FOLDER_FILES.items()}

    return SuiteKind(name=name, summary=summary, plan=plan,
                     next_steps=lambda suite: fill("next.txt.tmpl", suite).rstrip("\n"))


CLASSIFICATION = SuiteKind(
    name="classification", takes_labels=True, plan=_classification, next_steps=_classification_next,
    summary="a reply chooses one label (JSON label and reason): accuracy, macro-F1 and per-label recall; "
            "--labels a,b,c for your own labels")
RETRIEVAL_QA = folder_kind(
    "retrieval-qa",
    "a question answered from given passages: expected facts, faithfulness and answer relevancy by the judge, "
    "and \"does not know\" traps whose passages cannot answer")
EXTRACTION = folder_kind(
    "extraction",
    "fields extracted from a text as JSON: a JSON Schema check (critical) and one check per field against the "
    "case's expected value")


def check_labels(kind: SuiteKind, labels: Sequence[str] | None) -> None:
    """`--labels` only where the kind chooses labels: elsewhere it would be silently ignored."""
    if labels is not None and not kind.takes_labels:
        labelled = [name for name in kind_names() if suite_kind(name).takes_labels]
        raise InputError(f"--labels: the {kind.name} kind has no labels; --labels applies to --kind "
                         f"{', '.join(labelled)}")
