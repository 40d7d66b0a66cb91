"""`python -m evalkit.gate BASELINE CANDIDATE [--policy NAME|FILE] [--out FILE]`: gate two reports."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.core.atomic import write_atomic
from evalkit.core.errors import EvalkitError
from evalkit.core.policy import load_policy
from evalkit.core.report import load_report
from evalkit.gate.decide import decide
from evalkit.gate.decision import ExitCode, exit_code
from evalkit.project.options import find_option
from evalkit.render.markdown import render_markdown
from evalkit.render.text import render_decision

__all__ = ["main"]



def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m evalkit.gate",
        description="Gate a candidate run report against a baseline run report under a policy. "
                    "Exit code: 0 go (or review), 1 block, 2 incomparable, 3 input or usage error.")
    parser.add_argument("baseline", type=Path, help="run report of the baseline (what is on main)")
    parser.add_argument("candidate", type=Path, help="run report of the candidate")
    parser.add_argument("--policy", default="triage",
                        help="a policy name from conf/policy/ or a path to a YAML or JSON file (default: triage)")
    parser.add_argument("--out", type=Path, help="also write the decision as JSON to this file")
    parser.add_argument("--markdown", type=Path, help="also write the decision as Markdown (a pull-request comment)")
    parser.add_argument("--require-pass", action=argparse.BooleanOptionalAction, default=True,
                        help="exit with the decision's code (default); --no-require-pass writes the same files "
                             "and exits 0 whatever the decision")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # A short-lived process parsing reports of up to millions of tests: the cyclic garbage collector
    # would rescan every parsed object again and again while nothing here forms cycles.
    gc.disable()
    try:
        policy = load_policy(find_option("policy", args.policy))
        baseline = load_report(args.baseline)
        candidate = load_report(args.candidate)
    except EvalkitError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    decision = decide(policy, baseline, candidate)
    if args.out:
        write_atomic(args.out, json.dumps(decision.to_json(), indent=2) + "\n")
    if args.markdown:
        write_atomic(args.markdown, render_markdown(decision, candidate, policy.critical, baseline))
    print(render_decision(decision, policy.critical))
    if not args.require_pass:
        return ExitCode.GO
    return exit_code(decision.decision, policy.review_fails)
