"""`evalkit view RUN... --out DIR [--reference N] | --history --out DIR`: many runs in one folder of static files
(the run explorer, evalkit.render.explorer) to open from disk, keep as a CI artifact or publish as a static site.

What it reads: each RUN is a run report, a run folder (holding `report.json`) or a folder searched for run folders
(its runs in path order); the runs are the grid's columns in the order given. `--history` reads the runs
`evalkit history` finds (the project's outputs/ and multirun/, oldest first). A run's decision is the one in the
`decision.json` beside its report, if any.

Where it writes: `--out DIR`, a folder that must not exist yet. It is built beside it under a temporary name and
renamed when whole, so a folder named DIR is always a complete explorer, and evalkit never writes into an existing
folder (an earlier explorer, or anything else, is left as it is).

Exit codes: 0 written, 3 input or usage error (a run that does not exist or is not a run report, no runs, an
existing --out, a --reference that names no run), 4 internal error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say, write_output
from evalkit.cli.history import RUN_FOLDERS, collect_runs, run_index
from evalkit.cli.main import epilog
from evalkit.core.errors import InputError
from evalkit.project.paths import find_project, shown
from evalkit.records.report_reader import read_reports
from evalkit.render.explorer import ExplorerRun, explorer_files
from evalkit.run.saved_decision import saved_decision_field

__all__ = ["main"]

REPORT = "report.json"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit view", epilog=epilog("view"),
        description="Write a run explorer: one folder of static files (index.html, its script and style, each "
                    "run's data) with a grid of cases x runs, filters, and a case's outputs side by side with a "
                    "diff. Opens from disk; nothing is fetched. Exit code: 0 written, 3 input or usage error, "
                    "4 internal error.")
    parser.add_argument("paths", nargs="*", type=Path, metavar="RUN",
                        help="run reports, run folders, or folders to search for them; the grid's columns, in "
                             "this order")
    parser.add_argument("--history", action="store_true",
                        help="the runs `evalkit history` finds: the project's outputs/ and multirun/, oldest first")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the folder to write; it must not exist (evalkit never writes over a folder)")
    parser.add_argument("--reference", type=int, default=1, metavar="N",
                        help="the run (1 = the first column) others are diffed against and regressions are "
                             "counted from when the page opens (default: 1)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.history == bool(args.paths):
        raise InputError("name the runs to show, or give --history for the project's runs (not both)")
    if os.path.lexists(args.out):
        raise InputError(f"{args.out}: exists; evalkit view writes a new folder and never over an existing one: "
                         "choose another --out, or remove it first")
    notes: list[str] = []
    paths = _history_reports(notes) if args.history else _named_reports(args.paths)
    if not 1 <= args.reference <= len(paths):
        raise InputError(f"--reference {args.reference}: choose a run from 1 to {len(paths)}")
    runs = [ExplorerRun(report, shown(path), sha, saved_decision_field(path, "decision"))
            for path, (report, sha) in zip(paths, read_reports(paths), strict=True)]
    _write_folder(args.out, explorer_files(runs, args.reference - 1))
    for note in notes:
        say(f"note: {note}")
    say(f"explorer: {shown(args.out / 'index.html')} ({len(runs)} runs)")
    return 0


def _named_reports(paths: list[Path]) -> list[Path]:
    """Each named report, run folder, or the run folders under a folder (in path order); a path that does not
    exist, or a folder with no run under it, is refused."""
    out: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder; name run reports, run folders or folders of runs")
        if path.is_file():
            found = [path]
        elif (path / REPORT).is_file():
            found = [path / REPORT]
        else:
            found = sorted(path.rglob(REPORT))
            if not found:
                raise InputError(f"{path}: no run report ({REPORT}) under this folder")
        for report in found:
            if report.resolve() not in seen:
                seen.add(report.resolve())
                out.append(report)
    return out


def _history_reports(notes: list[str]) -> list[Path]:
    root = find_project()
    searched = [root / folder for folder in RUN_FOLDERS if root and (root / folder).is_dir()]
    if not searched:
        raise InputError("--history: no outputs/ or multirun/ in the project" + ("" if root else
                                                                                  " (and no evalkit project here)")
                         + "; run `evalkit run` first, or name run folders or reports")
    with run_index(root) as index:
        return [run.file for run in collect_runs(searched, notes, index) if run.file is not None]


def _write_folder(out: Path, texts: dict[str, str]) -> None:
    """Write the explorer whole or not at all: built beside `out` under a temporary name, then renamed."""
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{out}: cannot write the explorer: the folder {parent} does not exist; create it first")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    except OSError as error:
        raise InputError(f"{out}: cannot write the explorer ({error.strerror or error})") from None
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp's folder is private; the explorer is read by a browser or host
        (staging / "data").mkdir()
        for name, text in texts.items():
            write_output(staging / name, text, name)
        if os.path.lexists(out):
            raise InputError(f"{out}: appeared while the explorer was written; it is left as it is")
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
