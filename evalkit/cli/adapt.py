"""`python -m evalkit.adapt docs-stage BASELINE CANDIDATE --out RESULT`: adapt two saved reports and gate them.

The files are read and written here; the rules live in evalkit/adapt/docs_stage.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from evalkit.adapt.docs_stage import DOCS_STAGE_POLICY, DocsStageComparison, compare_docs_stages, parse_docs_stage
from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, write_output
from evalkit.core.errors import EvalkitError, InputError
from evalkit.core.files import read_text
from evalkit.gate.decision import ExitCode, exit_code

__all__ = ["main"]



def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m evalkit.adapt",
        description="Adapt reports written by other eval tools into run reports and gate them. "
                    "Exit code: 0 go, 1 block, 2 incomparable, 3 input or usage error.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    docs = commands.add_parser(  # subparsers are built with the parent's class, so they exit 3 too
        "docs-stage", help="gate two saved documentation stage reports",
        description="Map each applicable tools, retrieval, faithfulness, contextual-recall and answer-relevancy "
                    "check of two saved docs-stage reports to a test outcome, then gate the candidate against "
                    "the baseline (critical: test_tools, test_faithfulness; no regressions; pass rate >= 0.9). "
                    "No model or judge runs. Exit code: 0 go, 1 block, 2 incomparable, 3 input or usage error.")
    docs.add_argument("baseline", type=Path, metavar="BASELINE", help="saved stage report of the baseline")
    docs.add_argument("candidate", type=Path, metavar="CANDIDATE", help="saved stage report of the candidate")
    docs.add_argument("--out", type=Path, required=True, metavar="RESULT",
                      help="new file for the result: both adapted run reports and the decision (never overwritten)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = _docs_stage(args.baseline, args.candidate, args.out)
    except EvalkitError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    print(json.dumps(result.decision.to_json(), indent=2))
    return exit_code(result.decision.decision, DOCS_STAGE_POLICY.review_fails)


def _docs_stage(baseline: Path, candidate: Path, out: Path) -> DocsStageComparison:
    if os.path.lexists(out):  # checked first, so a refused run reads nothing and writes nothing
        raise InputError(f"{out}: already exists; a result is evidence and is never overwritten: "
                         "choose a new --out path")
    result = compare_docs_stages(_load(baseline), _load(candidate),
                                 baseline_where=str(baseline), candidate_where=str(candidate))
    write_output(out, json.dumps(result.to_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n", "result",
                 make_folder=True)
    return result


def _load(path: Path) -> object:
    return parse_docs_stage(read_text(path, "stage report"), str(path))


