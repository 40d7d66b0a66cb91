"""`evalkit review --report R.json (--decisions D.json | --labels L.jsonl) --out R2.json`: apply human review,
decisions on presentation or labels exported from the run explorer.

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
from evalkit.programs.review import PresentationVerdict, apply_labels, apply_review
from evalkit.records.labels import read_labels

__all__ = ["main"]


def _read_json(path: Path, what: str) -> tuple[Any, bytes]:
    raw = read_bytes(path, what)
    return parse_json(decode(raw, path, what), str(path), what), raw


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit review", epilog=epilog("review"),
        description="Apply human review to a run report and write the reviewed copy: decisions on presentation, "
                    "or the labels a reviewer exported from the run explorer (evalkit view), recorded as a review "
                    "round. The source report is never modified; a review made on another report is refused. "
                    "Exit code: 0 written, 3 input or usage error.")
    parser.add_argument("--report", type=Path, required=True, help="run report that was reviewed")
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--decisions", type=Path,
                       help="JSON file: {report_sha256, decisions: [{sample_id, decision, reviewer, rationale}]}")
    given.add_argument("--labels", type=Path,
                       help="labels file (JSON Lines) exported from the run explorer: a header naming the "
                            "report's SHA-256 and the reviewer, then one label per line")
    parser.add_argument("--out", type=Path, required=True, help="where to write the reviewed report (not --report)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        given = ("the labels file (--labels)", args.labels) if args.labels else (
            "the decisions file (--decisions)", args.decisions)
        inputs = {"the report itself (--report)": args.report, given[0]: given[1]}
        refuse_input(args.out, inputs, "reviewed report")  # checked first: a refused run reads nothing
        report, raw = _read_json(args.report, "report")
        if args.labels:
            labels = read_labels(decode(read_bytes(args.labels, "labels file"), args.labels, "labels file"),
                                 str(args.labels))
            reviewed = apply_labels(report, raw, labels, report_name=str(args.report), labels_name=str(args.labels))
        else:
            decisions, _ = _read_json(args.decisions, "decisions")
            reviewed = apply_review(report, raw, decisions, report_name=str(args.report),
                                    decisions_name=str(args.decisions))
        write_output(args.out, json.dumps(reviewed, indent=1, ensure_ascii=False) + "\n", "reviewed report",
                     inputs=inputs)
    except EvalkitError as error:
        print(f"evalkit.review: error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    gate = f"gate it: evalkit gate BASELINE {shlex.quote(str(args.out))} --policy POLICY"
    if args.labels:
        labelled = reviewed["review_audit"][-1]
        cases = len({label["case_id"] for label in labelled["labels"]})
        print(f"recorded {len(labelled['labels'])} label(s) on {cases} case(s) of {args.report} (sha256 "
              f"{fingerprint(raw)}) by {labelled['reviewer']!r}; no result changed; wrote {args.out}; {gate}")
        return 0
    given = reviewed["review_audit"][-1]["decisions"]
    rejected = sum(1 for d in given if d["decision"] == PresentationVerdict.REJECT)
    print(f"reviewed {len(given)} case(s) of {args.report} (sha256 {fingerprint(raw)}): "
          f"{len(given) - rejected} accepted, {rejected} rejected; wrote {args.out}; {gate}")
    return 0

