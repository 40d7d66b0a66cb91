"""`evalkit merge SHARD... --out report.json`: join the shard files of one run made on several machines
(`evalkit run run.shard=K/N`) into the run report one machine would have written, for `evalkit gate`.

Exit codes: 0 merged, 3 input or usage error (not shard files, shards of different runs, a shard missing or given
twice, an output that would replace an input), 4 internal error. Nothing is gated here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say, write_outputs
from evalkit.cli.main import epilog
from evalkit.gate.decision import ExitCode
from evalkit.records.report_reader import report_from_mapping
from evalkit.run.shards import merge_shard_files, read_shard

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit merge", epilog=epilog("merge"),
        description="Join the shard files of one run whose checks ran on several machines (evalkit run "
                    "run.shard=K/N writes shard-K-of-N.json in its job folder) into the run report one machine "
                    "would have written; gate it with evalkit gate. Exit code: 0 merged, 3 input or usage error, "
                    "4 internal error.")
    parser.add_argument("shards", type=Path, nargs="+", help="the N shard files, in any order")
    parser.add_argument("--out", type=Path, required=True, help="the run report to write (a new or replaced file)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    files = [(str(path), read_shard(path)) for path in args.shards]
    data = merge_shard_files(files)
    report = report_from_mapping(data, f"the merged report of {len(files)} shard(s)")  # refused before writing
    write_outputs({args.out: (json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n",
                              "merged run report (--out)")},
                  inputs={f"shard file {where}": Path(where) for where, _ in files})
    say(f"merged {len(files)} shard(s) of suite {report.eval.get('suite')}: {report.passed} of "
        f"{len(report.outcomes)} tests passed; report {args.out}\n"
        f"next: evalkit gate BASELINE {args.out}")
    return ExitCode.GO
