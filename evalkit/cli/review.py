"""`evalkit review --report R.json --decisions D.json --out R2.json`: apply human review.

The rules (what a decision may change, the hash binding) live in evalkit.programs.review; this module reads
and writes the files.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, write_output
from evalkit.cli.main import epilog
from evalkit.core.errors import EvalkitError, one_line
from evalkit.core.files import decode, read_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.outputs import refuse_input
from evalkit.core.parsing import parse_json
from evalkit.gate.decision import ExitCode
from evalkit.programs.review import PresentationVerdict, apply_review

__all__ = ["main"]


def _read_json(path: Path, what: str) -> tuple[Any, bytes]:
    raw = read_bytes(path, what)
    return parse_json(decode(raw, path, what), str(path), what), raw


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit review", epilog=epilog("review"),
        description="Apply human review decisions on presentation to a run report and write the reviewed "
                    "copy; the source report is never modified. Exit code: 0 written, 3 input or usage error.")
    parser.add_argument("--report", type=Path, required=True, help="run report whose pending cases were reviewed")
    parser.add_argument("--decisions", type=Path, required=True,
                        help="JSON file: {report_sha256, decisions: [{sample_id, decision, reviewer, rationale}]}")
    parser.add_argument("--out", type=Path, required=True, help="where to write the reviewed report (not --report)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        inputs = {"the report itself (--report)": args.report, "the decisions file (--decisions)": args.decisions}
        refuse_input(args.out, inputs, "reviewed report")  # checked first: a refused run reads nothing
        report, raw = _read_json(args.report, "report")
        decisions, _ = _read_json(args.decisions, "decisions")
        reviewed = apply_review(report, raw, decisions, report_name=str(args.report),
                                decisions_name=str(args.decisions))
        write_output(args.out, json.dumps(reviewed, indent=1, ensure_ascii=False) + "\n", "reviewed report",
                     inputs=inputs)
    except EvalkitError as error:
        print(f"evalkit.review: error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    given = reviewed["review_audit"][-1]["decisions"]
    rejected = sum(1 for d in given if d["decision"] == PresentationVerdict.REJECT)
    print(f"reviewed {len(given)} case(s) of {args.report} (sha256 {fingerprint(raw)}): "
          f"{len(given) - rejected} accepted, {rejected} rejected; wrote {args.out}; "
          f"gate it: evalkit gate BASELINE {shlex.quote(str(args.out))} --policy POLICY")
    return 0

