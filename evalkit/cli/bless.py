"""`evalkit bless REPORT [--to PATH] [--dry-run]`: make a run report the baseline of its suite.

The target is the suite option's `baseline` path, which the runner records in the report
(`provenance.baseline`), or `--to PATH`. A run that cannot be a baseline is refused in one line (exit 3): unscored
cases, errored tests, or a pytest run that did not complete. What is written is the report's canonical form
(evalkit.run.canonical: no timings, commit or machine facts; sorted keys), atomically, so blessing an unchanged
run changes no byte; the command says what it replaced.

A run that its own suite's policy would block when gated against itself (a critical check failing, a floor not
met) would make every later change block too: bless names what fails and writes nothing unless `--yes` says to.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, write_output
from evalkit.cli.main import epilog
from evalkit.core.errors import EvalkitError, InputError
from evalkit.core.files import read_text, read_text_sha256
from evalkit.core.key import changed_settings
from evalkit.gate.decide import changed_components
from evalkit.gate.decision import ExitCode
from evalkit.project.paths import project_path
from evalkit.records.report_reader import RunReport, parse_report
from evalkit.render.text import render_changed, samples_spread
from evalkit.run.canonical import canonical_text
from evalkit.run.destinations import check_saved_report

__all__ = ["build_parser", "main", "refusal", "small_pool"]

def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit bless", epilog=epilog("bless"),
        description="Make a run report (a job's report.json) the baseline of its suite: write its canonical form "
                    "to the suite's baseline path and say what it replaced. Refuses (exit 3) a run with unscored "
                    "cases, errored tests, or a pytest run that did not complete.")
    parser.add_argument("report", type=Path, help="the run report to bless, e.g. outputs/DATE/TIME/report.json")
    parser.add_argument("--to", type=Path, help="write the baseline here instead of the suite's baseline path "
                                                "(the report's provenance.baseline)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be replaced; write nothing")
    parser.add_argument("--yes", "--force", action="store_true", dest="yes",
                        help="bless the run even though the policy it composed blocks it against itself")
    return parser


@command
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    text, _ = read_text_sha256(args.report, "report")
    report = parse_report(text, str(args.report))
    data: dict[str, Any] = json.loads(text)  # parse_report has refused anything but a JSON object
    refused = refusal(report, data)
    if refused:
        raise InputError(f"{args.report}: {refused}; a baseline must be a complete, fully scored run")
    target = args.to or _suite_baseline(report, args.report)
    note = None
    try:
        blocked = self_block(report)
    except EvalkitError as error:  # the policy it names cannot be read here (another project?): said, not fatal
        blocked, note = None, f"note: not checked against the policy the run composed: {error}"
    if blocked and not (args.yes or args.dry_run):  # a dry run writes nothing: it only warns
        raise InputError(f"{args.report}: {blocked}; every change gated against this baseline would block too. "
                         "Fix the run or the policy, or pass --yes to bless it anyway")
    # only a run report is ever replaced, never the report being blessed, a config or a link
    check_saved_report(target, "--to" if args.to else "the suite's baseline path", {"the report being blessed":
                                                                                    args.report})
    new = canonical_text(data)
    change = describe_change(target, new, report)
    if not args.dry_run:  # a new suite's runs/ folder is made; an unwritable place is one line, exit 3
        write_output(target, new, "baseline", make_folder=True)
    print(f"{'dry run, nothing written: would bless' if args.dry_run else 'blessed'} {args.report} -> {target}")
    print(change)
    if blocked:
        print(f"warning: {blocked}")
    if note:
        print(note)
    if (small := small_pool(report)) is not None:
        print(f"note: {small}")
    return ExitCode.GO


def small_pool(report: RunReport) -> str | None:
    """Why a run sampled in rounds against a baseline makes a weak pool, or None: it stopped each case as soon as
    the comparison was settled, so later sequential runs would be compared against a few samples per case."""
    rounds = report.sequential
    if rounds is None or rounds.baseline is None or not rounds.samples:
        return None
    spread = samples_spread(rounds.samples)
    return (f"this run was sampled in rounds ({spread} samples per case), so as a baseline it is a small pool: "
            "later run.repeats=auto runs can show only large drops against it; for a pool, record main with "
            "run.repeats=auto baseline=none (run.pool_repeats samples of every case)")


def self_block(report: RunReport) -> str | None:
    """Why the policy the run composed (`provenance.policy`) blocks the run gated against itself, or None: only
    what needs no baseline can fail then (critical checks, floors, critical cases)."""
    name = report.provenance.get("policy")
    if not isinstance(name, str) or not name:
        return None  # a report from elsewhere names no policy: nothing to check it against
    from evalkit.cli.policy_diff import read_policy  # the same reading of an option as `policy_diff` and the gate
    from evalkit.gate.decide import decide
    from evalkit.gate.decision import Verdict

    decision = decide(read_policy(name), report, report)
    if decision.decision != Verdict.BLOCK:
        return None
    return f"its own policy {name!r} blocks it: {'; '.join(decision.reasons)}"


def refusal(report: RunReport, data: dict[str, Any]) -> str | None:
    """Why this run cannot be a baseline, or None. Failed tests are allowed: a baseline records what main does."""
    if report.unscored:
        return f"{len(report.unscored)} unscored case(s) ({_few(report.unscored)})"
    errored = [nodeid for nodeid, outcome in report.outcomes.items() if outcome == "error"]
    if errored:
        return f"{len(errored)} test(s) errored ({_few(errored)})"
    if report.problems:  # read from pytest's exitcode, collectors and summary, as the gate reads them
        return f"the run did not complete cleanly: {'; '.join(report.problems)}"
    if data.get("exitcode") is None:
        return "no pytest exit code ('exitcode'), so nothing shows that the run completed"
    return None


def describe_change(target: Path, new: str, report: RunReport) -> str:
    """What blessing does to `target`: a new file, no change, or old -> new pass rate, tests and eval key."""
    now = f"pass rate {_rate(report)}, {len(report.outcomes)} tests"
    if not os.path.lexists(target):
        return f"new baseline: {now}"
    old_text = read_text(target, "baseline")  # check_saved_report has refused anything but a run report here
    if old_text == new:
        return f"no change: {target} is byte-identical"
    old = parse_report(old_text, str(target))
    gone = [n for n in old.outcomes if n not in report.outcomes]
    added = [n for n in report.outcomes if n not in old.outcomes]
    flipped = [n for n, o in report.outcomes.items() if n in old.outcomes and old.outcomes[n] != o]
    changed = changed_components(old.eval, report.eval)
    lines = [f"pass rate {_rate(old)} -> {_rate(report)}",
             f"tests {len(old.outcomes)} -> {len(report.outcomes)} ({len(added)} new, {len(gone)} gone, "
             f"{len(flipped)} with another outcome{': ' + _few(flipped) if flipped else ''})",
             f"eval key: {render_changed(changed, changed_settings(old.eval, report.eval))}" if changed
             else "eval key: unchanged"]
    if not (added or gone or flipped or changed):
        lines.append("same outcomes and key; other content differs (see git diff)")
    return "replaced: " + "; ".join(lines)


def _suite_baseline(report: RunReport, where: Path) -> Path:
    named = report.provenance.get("baseline")
    if not isinstance(named, str) or not named:
        raise InputError(f"{where}: the report names no baseline of its suite (provenance.baseline: written by "
                         "`evalkit run` for a suite with a `baseline` path); pass --to PATH")
    return project_path(named)


def _rate(report: RunReport) -> str:
    return f"{report.passed / len(report.outcomes):.3f}"


def _few(items: Sequence[str], shown: int = 3) -> str:
    return ", ".join(items[:shown]) + (f", ... {len(items) - shown} more" if len(items) > shown else "")
