"""`evalkit plan REPORT [--detect D] [--alpha A] [--power P] [--prices FILE]`: how many cases and repeats a run
needs to detect a drop of D, and what that run would cost, from a baseline's report or a pilot run's: in money at
the prices the report recorded, or at a price file's.

Exit codes: 0 planned, 3 input or usage error, 4 internal error."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say
from evalkit.cli.main import epilog
from evalkit.core.config import RunSettings
from evalkit.core.errors import InputError
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_yaml
from evalkit.core.prices import check_price_file
from evalkit.gate.decision import ExitCode
from evalkit.gate.plan import plan, recorded_pricing, table_pricing
from evalkit.records.report_reader import read_reports
from evalkit.render.plan import render_plan

__all__ = ["main"]

CONCURRENCY = int(RunSettings.model_fields["concurrency"].default)
"""run.concurrency's default: the calls in flight a run makes unless its config says otherwise."""


def _share(text: str) -> float:
    """A probability strictly between 0 and 1, for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must lie strictly between 0 and 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit plan", epilog=epilog("plan"),
        description="Plan a run that can detect a given drop: from a baseline's run report (or a pilot run's), "
                    "print what the suite detects as it is, the cases x repeats that would detect the target at "
                    "the gate's levels, and their calls, tokens, money (at the prices the report recorded, or a "
                    "--prices file's) and wall time "
                    "(from the report's measured latencies). Exit code: 0 planned, 3 input or usage error, "
                    "4 internal error.")
    parser.add_argument("report", type=Path, help="run report of the baseline, or of a pilot run (with "
                                                  "run.repeats=N, its samples measure how much results vary)")
    parser.add_argument("--detect", type=_share, default=0.05,
                        help="the drop to detect, as a fraction of the headline metric (default 0.05: 5 points)")
    parser.add_argument("--alpha", type=_share, default=0.05,
                        help="the decision's false-block rate on an unchanged system, as the policy's "
                             "repeats.alpha (default 0.05); the suite guard has half")
    parser.add_argument("--power", type=_share, default=0.8,
                        help="how often a drop of the target's size must be caught (default 0.8)")
    parser.add_argument("--prices", type=Path, metavar="FILE",
                        help="a price file (as conf/prices/*.yaml) to plan the money at; default: the prices the "
                             "report recorded, if any")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY,
                        help=f"live calls in flight, as run.concurrency (default {CONCURRENCY}, its default)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.power < 0.5:
        raise InputError(f"--power {args.power}: plan for a power of at least 0.5")
    if args.concurrency < 1:
        raise InputError(f"--concurrency {args.concurrency}: at least one call must be in flight")
    [(report, _)] = read_reports([args.report])
    try:
        pricing = recorded_pricing(report)
    except InputError as error:
        raise InputError(f"{args.report}: {error}") from None
    if args.prices is not None:
        where = str(args.prices)
        table = check_price_file(parse_yaml(read_text(args.prices, "price file"), where), where)
        pricing = table_pricing(report, table, f"the prices of {where}")
    try:
        found = plan(report, target=args.detect, alpha=args.alpha, power=args.power, concurrency=args.concurrency,
                     pricing=pricing)
    except InputError as error:  # the report's own refusal (a metric at its floor): name the file
        raise InputError(f"{args.report}: {error}") from None
    say(render_plan(found, str(args.report)))
    return ExitCode.GO
