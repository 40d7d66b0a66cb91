"""`evalkit history [RUN_DIRS or REPORTS ...] [--suite NAME] [--html PATH | --no-html]`: one suite over
many runs, as a terminal table and an HTML page with inline SVG charts.

What it reads: each argument is a run report, a run folder (holding `report.json`) or a folder searched for run
folders; by default the project's `outputs/` and `multirun/`. A run's time is its report's `created` (written by
pytest-json-report), else the file's modification time (said so); its decision, and the policy it was decided
under, are those of the `decision.json` beside it. One suite is shown: `--suite`, else the suite of the latest run
(the others are named in a note).
A run that replayed calls its recording could not serve (`missing` or `stale` calls, which evalkit before recording
identities scored as failures) measured nothing: it is left out, with a note, never plotted as quality 0.

Where the page goes: `--html PATH`, by default `history.html` in the project's `outputs/` (the current folder
outside a project). It is a view, not evidence: it replaces only a history page evalkit wrote before (recognised
by its seal: a digest of its own bytes, which a hand-written file cannot carry by accident), never another file, a
run's file, a link or one of its inputs.

Exit codes: 0 shown, 3 input or usage error (a path that does not exist, a file given that is not a run report,
no runs found, a suite with no runs), 4 internal error.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say, write_output
from evalkit.cli.main import epilog
from evalkit.core.errors import EvalkitError, InputError, one_line
from evalkit.core.files import decode, read_bytes
from evalkit.core.parsing import parse_json
from evalkit.core.run_index import INDEX_NAME, RunIndex, signature
from evalkit.project.paths import find_project, shown
from evalkit.records.report import Execution, read_execution
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.render.history import PAGE_KIND, HistoryRun, render_history_html, render_history_text
from evalkit.render.html import is_sealed_page
from evalkit.run.saved_decision import saved_decision_field, saved_decision_policy

__all__ = ["main", "collect_runs", "run_index"]

REPORT = "report.json"
RUN_FOLDERS = ("outputs", "multirun")
PAGE = "history.html"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit history", epilog=epilog("history"),
        description="One suite over many runs: pass rate, the suite's metrics, cost and latency per run, oldest "
                    "first, as a table and an HTML page with inline SVG charts. Runs of different eval keys are "
                    "marked. Exit code: 0 shown, 3 input or usage error, 4 internal error.")
    parser.add_argument("paths", nargs="*", type=Path, metavar="RUN",
                        help="run reports, run folders, or folders to search for them (default: the project's "
                             "outputs/ and multirun/)")
    parser.add_argument("--suite", help="the suite to show (default: the suite of the latest run)")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help=f"where to write the page (default: {PAGE} in the project's outputs/, or in the current "
                             "folder outside a project); it replaces only an earlier history page")
    parser.add_argument("--no-html", action="store_true", help="print the table only")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.html and args.no_html:
        raise InputError("--html and --no-html contradict each other; give one")
    root = find_project()
    searched = args.paths or [root / folder for folder in RUN_FOLDERS if root and (root / folder).is_dir()]
    if not searched:
        raise InputError("no run folders to read: no outputs/ or multirun/ in the project"
                         + ("" if root else " (and no evalkit project here)")
                         + "; run `evalkit run` first, or name run folders or reports")
    notes: list[str] = []
    with run_index(root) as index:
        runs = collect_runs(searched, notes, index)
    suite, runs = _one_suite(runs, args.suite, notes)
    say(render_history_text(suite, runs, notes))
    if not args.no_html:
        page = args.html or ((root / "outputs" if root else Path.cwd()) / PAGE)
        _refuse_foreign(page)
        inputs = {f"the run report {run.path}": run.file for run in runs if run.file is not None}
        # the default folder is made when missing (runs only under multirun/); a folder given with --html is not
        write_output(page, render_history_html(suite, runs, notes), "history page", inputs=inputs,
                     make_folder=args.html is None)
        say(f"page: {shown(page)}")
    return 0


def collect_runs(paths: list[Path], notes: list[str], index: RunIndex | None = None) -> list[HistoryRun]:
    """Every run report named or found, oldest first. A path that does not exist, or a file given by name that is
    not a run report, is refused; a report found by searching that cannot be read is skipped with a note. With an
    `index`, a report whose bytes were indexed before is not parsed again."""
    found: list[tuple[Path, bool]] = []
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder; name run reports, run folders or folders of runs")
        if path.is_file():
            found.append((path, True))
        elif (path / REPORT).is_file():
            found.append((path / REPORT, True))
        else:
            found += [(report, False) for report in sorted(path.rglob(REPORT))]
    runs: list[HistoryRun] = []
    seen: set[Path] = set()
    unserved: list[str] = []
    for report_path, named in found:
        if report_path.resolve() in seen:
            continue
        seen.add(report_path.resolve())
        try:
            run = _read_run(report_path, index)
        except EvalkitError as error:
            if named:
                raise
            notes.append(f"skipped {shown(report_path)}: {one_line(str(error), 300)}")
            continue
        if unserved_calls(run.report.execution):
            unserved.append(run.path)
        else:
            runs.append(run)
    if unserved:
        notes.append(f"left out {len(unserved)} run(s) replayed from a recording that could not serve them "
                     f"(missing or stale calls: nothing was measured): {', '.join(unserved[:3])}"
                     + (" ..." if len(unserved) > 3 else ""))
    if not runs:
        raise InputError(f"no run reports ({REPORT}) in {', '.join(str(p) for p in paths)}; run `evalkit run` "
                         "first, or name run folders or reports")
    return sorted(runs, key=lambda run: (run.time, run.path))


def unserved_calls(execution: Execution) -> int:
    """Calls a replay could not serve, as an older run report counted them (`execution.calls.missing|stale`)."""
    calls = execution.calls
    return sum(n for status in ("missing", "stale") if isinstance(n := calls.get(status), int)
               and not isinstance(n, bool))


def _read_run(path: Path, index: RunIndex | None = None) -> HistoryRun:
    """The run, from its report; with an index, from the summary indexed for the report's exact bytes (read and
    indexed again whenever the file may have changed: evalkit.core.run_index)."""
    decision = saved_decision_field(path, "decision")
    if index is None:
        return _from_report(path, read_bytes(path, "report"), decision)
    stat = signature(path.stat())  # taken before the bytes: a write after it leaves a signature that misses
    summary = _checked(index.get(path, stat))
    if summary is None:
        data = read_bytes(path, "report")
        sha = hashlib.sha256(data).hexdigest()
        summary = _checked(index.get_by_sha256(path, sha))
        if summary is None:
            summary = _summary(_from_report(path, data, decision))
        index.put(path, stat, sha, summary)
    report = RunReport(eval=summary["eval"], outcomes={}, metrics=summary["metrics"],
                       execution=read_execution(summary["execution"]), provenance=summary["provenance"])
    created = summary["created"]
    time = path.stat().st_mtime if created is None else float(created)
    return HistoryRun(shown(path), report, time, created is None, decision, path, saved_decision_policy(path),
                      counts=(summary["passed"], summary["tests"]))


def _from_report(path: Path, data: bytes, decision: str | None) -> HistoryRun:
    parsed = parse_json(decode(data, path, "report"), str(path), "report")
    report = report_from_mapping(parsed, str(path))
    created = parsed.get("created")
    from_file = not isinstance(created, int | float) or isinstance(created, bool)
    time = path.stat().st_mtime if from_file else float(created)
    return HistoryRun(shown(path), report, time, from_file, decision, path, saved_decision_policy(path))


def _summary(run: HistoryRun) -> dict[str, Any]:
    """What the history reads of a report, as the index keeps it: the tests only as counts."""
    report = run.report
    passed, tests = run.tests
    return {"eval": dict(report.eval), "metrics": dict(report.metrics),
            "execution": msgspec.to_builtins(report.execution), "provenance": dict(report.provenance),
            "created": None if run.time_from_file else run.time, "passed": passed, "tests": tests}


def _checked(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """An indexed summary of the shape _summary writes; anything else reads as none (the report is read again)."""
    if summary is None or set(summary) != {"eval", "metrics", "execution", "provenance", "created", "passed",
                                           "tests"}:
        return None
    counts_ok = all(isinstance(summary[n], int) and not isinstance(summary[n], bool) for n in ("passed", "tests"))
    blocks_ok = all(isinstance(summary[n], dict) for n in ("eval", "metrics", "execution", "provenance"))
    created_ok = summary["created"] is None or isinstance(summary["created"], int | float)
    if not (counts_ok and blocks_ok and created_ok):
        return None
    try:  # its execution section as the report's model reads one (an index written by another evalkit may differ)
        read_execution(summary["execution"])
    except ValueError:
        return None
    return summary




@contextmanager
def run_index(root: Path | None) -> Iterator[RunIndex | None]:
    """The project's run index, beside its runs (`outputs/.evalkit-runs.sqlite`); none outside a project or before
    its first run, and none where it cannot be opened (the reports are read, as without one)."""
    if root is None or not (root / "outputs").is_dir():
        yield None
        return
    try:
        index = RunIndex(root / "outputs" / INDEX_NAME)
    except (OSError, sqlite3.Error):
        yield None
        return
    try:
        yield index
    finally:
        try:
            index.close()
        except sqlite3.Error:
            pass  # an index that could not be saved is rebuilt next time; the history shown stands


def _one_suite(runs: list[HistoryRun], suite: str | None, notes: list[str]) -> tuple[str, list[HistoryRun]]:
    def suite_of(run: HistoryRun) -> str:
        return str(run.report.eval.get("suite") or run.report.provenance.get("suite") or "(unnamed)")

    counts = Counter(suite_of(run) for run in runs)
    chosen = suite or suite_of(runs[-1])
    if chosen not in counts:
        raise InputError(f"--suite {chosen}: no run of that suite among the {len(runs)} read (suites: "
                         + ", ".join(f"{name} ({n})" for name, n in sorted(counts.items())) + ")")
    others = {name: n for name, n in sorted(counts.items()) if name != chosen}
    if others:
        notes.append(f"left out: runs of other suites ({', '.join(f'{name}: {n}' for name, n in others.items())}); "
                     "--suite NAME shows one of them")
    if any(run.time_from_file for run in runs if suite_of(run) == chosen):
        notes.append("a time marked (file time) is the report file's modification time: the report has no "
                     "'created' (saved baselines drop it to stay diff-stable)")
    return chosen, [run for run in runs if suite_of(run) == chosen]


def _refuse_foreign(page: Path) -> None:
    """The page may replace an earlier history page, never another file (a run's evidence, someone's notes)."""
    if page.is_file() and not page.is_symlink():
        if not is_sealed_page(read_bytes(page, "existing file"), PAGE_KIND):
            raise InputError(f"{page}: exists and is not a history page evalkit wrote; evalkit replaces only its "
                             "own unedited pages: choose another path with --html")
