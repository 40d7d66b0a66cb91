"""`evalkit new project [DIR]` / `suite NAME [--kind KIND]` / `ci`: scaffold a project, a suite or a CI workflow.

The files come from templates in the package (evalkit/project/templates/); nothing that exists is overwritten.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command
from evalkit.cli.main import epilog
from evalkit.core.atomic import write_atomic
from evalkit.core.errors import InputError
from evalkit.gate.decision import ExitCode
from evalkit.project.ci import (
    COMMENT_PATH,
    PLACEHOLDER,
    WORKFLOW_PATH,
    comment_workflow_text,
    install_requirement,
    repository_top,
    workflow_text,
)
from evalkit.project.paths import MARKER, project_root
from evalkit.project.scaffold import (
    check_suite_name,
    parse_labels,
    project_files,
    set_default_suite,
    suite_files,
    write_new,
)
from evalkit.project.suite_kinds import DEFAULT_KIND, check_labels, kind_names, suite_kind

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="evalkit new", epilog=epilog("new"),
                            description="Scaffold an evalkit project or a suite in it. Nothing that exists is "
                                        "overwritten. Exit code: 0 written, 3 input or usage error.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    project = commands.add_parser("project", help="conf/config.yaml, the policy schema, .gitignore, suites/, "
                                                  "recordings/",
                                  description="Make DIR (default: the working directory) an evalkit project.")
    project.add_argument("dir", nargs="?", type=Path, default=Path("."), metavar="DIR")
    # pre-wrapped: the raw formatter keeps the kinds one paragraph each (argparse would run them together)
    kinds = "\n".join(textwrap.fill(f"{kind.name}: {kind.summary}", 79, initial_indent="  ", subsequent_indent="    ")
                      for kind in map(suite_kind, kind_names()))
    suite = commands.add_parser("suite", help="a runnable suite of a kind (--kind: " + ", ".join(kind_names())
                                              + "): task, declared checks (one critical), dataset, prompt, "
                                              "policy and its config option",
                                description=textwrap.fill(
                                    "Add suite NAME of a kind to the current project (found like python -m evalkit "
                                    "finds it) and make it the default suite if none is set. The suite's README.md "
                                    "(every kind but classification) says what each file is.", 79),
                                epilog=f"kinds:\n{kinds}", formatter_class=argparse.RawDescriptionHelpFormatter)
    suite.add_argument("name", metavar="NAME", help="lower-case letters, digits and _")
    suite.add_argument("--kind", default=DEFAULT_KIND, metavar="KIND",
                       help=f"what the suite measures: {' | '.join(kind_names())} (default: {DEFAULT_KIND}; each "
                            "is described below)")
    suite.add_argument("--labels", metavar="A,B,C", help="classification only: the labels a reply chooses from "
                                                         "(default: the example suite's positive,negative,neutral, "
                                                         "with five real cases); the dataset then holds one "
                                                         "placeholder case per label")
    ci = commands.add_parser("ci", help="GitHub Actions workflows: replay, gate against main's baseline under "
                                        "main's policy, summary, annotations, a pull-request comment",
                             description="Write .github/workflows/evalkit.yml and evalkit-comment.yml at the top of "
                                         "the git repository that holds the current project.")
    ci.add_argument("--pages", action="store_true",
                    help="also publish the run explorer (evalkit view) of main's suites to GitHub Pages on each "
                         "push to main, with the run folders beside it (opt-in: the site shows every input and "
                         "reply in the reports)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "project":
        return _project(args.dir)
    return _suite(args.name, args.kind, args.labels) if args.command == "suite" else _ci(args.pages)


def _project(folder: Path) -> int:
    if (folder / MARKER).exists():
        raise InputError(f"{folder / MARKER}: already an evalkit project; add a suite with "
                         "`evalkit new suite NAME`")
    written = write_new(project_files(folder))
    print(f"wrote an evalkit project in {folder.resolve()}:")
    print("\n".join(f"  {path.relative_to(folder)}" for path in written))
    print("next: evalkit new suite NAME   (run it from anywhere inside the project)")
    return ExitCode.GO


def _suite(name: str, kind_name: str, labels_text: str | None) -> int:
    check_suite_name(name)  # before looking for the project: a bad name, kind or label list is wrong anywhere
    kind = suite_kind(kind_name)
    labels = parse_labels(labels_text) if labels_text is not None else None
    check_labels(kind, labels)
    root = project_root()
    written = write_new(suite_files(root, name, labels, kind.name))
    config = root / MARKER
    updated = set_default_suite(config.read_text(encoding="utf-8"), name)
    if updated is not None:
        write_atomic(config, updated)
    print(f"wrote suite {name} in {root}:")
    print("\n".join(f"  {path.relative_to(root)}" for path in written))
    if updated is not None:
        print(f"  {MARKER} now picks suite {name} by default")
    print(kind.next_steps(name))
    return ExitCode.GO


def _ci(pages: bool = False) -> int:
    project_root()  # a workflow gates a project: refuse outside one
    install = install_requirement()
    top = repository_top()
    written = write_new({top / WORKFLOW_PATH: workflow_text(install, pages),
                         top / COMMENT_PATH: comment_workflow_text()})
    print(f"wrote {written[0]}: on pull requests it replays the suite, gates it against the base branch's "
          "baseline under the base branch's policy, writes decision.md to the job summary and annotates regressed "
          "tests")
    if pages:
        print("  and on each push to main it publishes the run explorer of main's suites to GitHub Pages (turn "
              "Pages on first: Settings > Pages > Source: GitHub Actions; the site shows every input and reply)")
    print(f"wrote {written[1]}: posts each decision as one comment on its pull request, updated on each push "
          "(fork-safe: it runs from the base branch and never runs the pull request's code)")
    if install == PLACEHOLDER:
        print(f"edit EVALKIT_REQUIREMENT in it: evalkit was not installed from git or from this repository, so "
              f"the workflow cannot know where to install it from (it says {PLACEHOLDER!r})")
    return ExitCode.GO
