"""`evalkit compare BASELINE CANDIDATE [--json]`: what changed between two run reports, per case and per
metric, without a policy or a decision (that is `evalkit gate`).

Exit codes: 0 compared, 2 incomparable (the eval keys differ in suite, dataset or judge: per-case results would
compare different things, so none are shown), 3 input or usage error, 4 internal error.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say
from evalkit.cli.main import epilog
from evalkit.core.files import read_text
from evalkit.gate.compare import Comparison, compare_cases, compare_metrics
from evalkit.gate.decide import changed_components, incomparability
from evalkit.gate.decision import ExitCode
from evalkit.records.report_reader import PASSING, RunReport, parse_report
from evalkit.render.comparison import comparison_json, render_comparison

__all__ = ["main", "compare_reports"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit compare", epilog=epilog("compare"),
        description="Compare two run reports: per case improved, regressed, unchanged, new and missing, and each "
                    "metric's before, after and delta. No policy, no decision (see evalkit gate). "
                    "Exit code: 0 compared, 2 incomparable (another suite, dataset or judge), 3 input or usage "
                    "error, 4 internal error.")
    parser.add_argument("baseline", type=Path, help="run report of the baseline")
    parser.add_argument("candidate", type=Path, help="run report of the candidate")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of text")
    return parser


def compare_reports(baseline: RunReport, candidate: RunReport) -> tuple[Comparison, str]:
    """Per case when either report has cases, else per test (a plain pytest-json-report); and per metric."""
    if baseline.cases or candidate.cases:
        return Comparison(compare_cases(baseline.cases, candidate.cases),
                          compare_metrics(baseline.metrics, candidate.metrics)), "case"
    as_cases = [tuple({"id": nodeid, "passed": outcome in PASSING} for nodeid, outcome in report.outcomes.items())
                for report in (baseline, candidate)]
    return Comparison(compare_cases(*as_cases), compare_metrics(baseline.metrics, candidate.metrics)), "test"


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    baseline = parse_report(read_text(args.baseline, "report"), str(args.baseline))
    candidate = parse_report(read_text(args.candidate, "report"), str(args.candidate))
    reasons = incomparability(baseline.eval, candidate.eval)
    comparison, unit = (Comparison(), "case") if reasons else compare_reports(baseline, candidate)
    data = comparison_json(comparison, unit, changed_components(baseline.eval, candidate.eval), reasons)
    if args.json:
        say(json.dumps({"baseline": str(args.baseline), "candidate": str(args.candidate), **data}, indent=2,
                       allow_nan=False, ensure_ascii=False), machine=True)
    else:
        say(render_comparison(data, str(args.baseline), str(args.candidate)))
    return ExitCode.INCOMPARABLE if reasons else ExitCode.GO
