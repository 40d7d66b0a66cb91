"""`evalkit migrate RECORDING...`: convert recordings of an older format to the current one.

Each file is read, converted (evalkit.run.migrate) and written atomically under the name of its new identity,
beside the old one, which is then removed (commit both: `git add -A recordings/`). Where a recording of that
identity is already there, the converted calls are added to it, and the conversion is refused (nothing written,
nothing removed) when that would lose a call or a provenance. A file already in the current format is left alone
and said so. Exit codes: 0 converted (or nothing to do), 3 a file that cannot be converted
(nothing of it is written), 4 internal error.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say
from evalkit.cli.main import epilog
from evalkit.core.errors import InputError
from evalkit.core.files import read_text
from evalkit.core.key import recording_path
from evalkit.core.outputs import refuse_link
from evalkit.core.parsing import parse_json
from evalkit.gate.decision import ExitCode
from evalkit.run.migrate import merged, migrate_recording
from evalkit.run.recording import FORMAT, load_recording, save_recording

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit migrate", epilog=epilog("migrate"),
        description="Convert recordings of an older format to the current one, each renamed to its identity's "
                    "file (a readable name and a digest of everything that changes a reply).")
    parser.add_argument("recordings", type=Path, nargs="+", help="recording files, e.g. recordings/*/*.json")
    return parser


@command
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for path in args.recordings:
        refuse_link(path, "recording")
        data = parse_json(read_text(path, "recording"), str(path), "recording")
        if not isinstance(data, dict):
            raise InputError(f"{path}: not a recording (a JSON object)")
        if data.get("format") == FORMAT:
            say(f"{path}: already {FORMAT}; left as it is")
            continue
        recording = migrate_recording(data, str(path))
        # the suite's folder: recordings/<suite>/<file>
        target = recording_path(recording.key, path.parent.parent)
        refuse_link(target, "recording")
        moved = target.resolve() != path.resolve()
        if moved and target.exists():  # never overwritten: what it holds is evidence too
            recording = merged(load_recording(target), recording, str(path), str(target))
        save_recording(recording, target)
        if moved:
            path.unlink()
        say(f"{path} -> {target}")
    return ExitCode.GO
