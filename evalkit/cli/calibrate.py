"""`evalkit calibrate suite=NAME [--out FILE]`: run a suite's graders on its authored counterexamples.

What calibration computes lives in evalkit.programs.calibrate; this module finds the suite and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, write_output
from evalkit.cli.main import epilog
from evalkit.core.errors import EvalkitError, InputError, one_line
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_yaml
from evalkit.gate.decision import ExitCode
from evalkit.programs.calibrate import calibrate, render
from evalkit.project.options import find_option
from evalkit.project.paths import path_within, project_root
from evalkit.run.suite import load_module

__all__ = ["main"]


def _suite_dir(spec: str) -> Path:
    name = spec.split("=", 1)[1] if spec.startswith("suite=") else spec
    option = find_option("suite", name)
    data = parse_yaml(read_text(option, "suite option"), str(option), "suite option") or {}
    suite = data.get("suite") if isinstance(data, dict) else None
    path = suite.get("path") if isinstance(suite, dict) else None
    if not isinstance(path, str):
        raise InputError(f"{option}: no suite.path")
    # calibration imports the suite's calibration.py: only from a folder inside the project
    return path_within(path, project_root(), "suite path", str(option))


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="evalkit calibrate", epilog=epilog("calibrate"),
                            description="Run a suite's graders on its authored counterexamples and print each "
                                        "grader's confusion matrix (positive = should pass). Exit 0, or 3 on "
                                        "bad input.")
    parser.add_argument("suite", help="suite=NAME (an option of conf/suite/), e.g. suite=quality_lab")
    parser.add_argument("--out", type=Path, help="also write the result as JSON to this file")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        suite_dir = _suite_dir(args.suite)
        module = load_module(suite_dir, "calibration.py",
                             "a suite that can be calibrated defines GRADERS and examples() in calibration.py")
        graders, examples = getattr(module, "GRADERS", None), getattr(module, "examples", None)
        if not isinstance(graders, Mapping) or not callable(examples):
            raise InputError(f"{suite_dir / 'calibration.py'}: define GRADERS (a dict of graders) and examples()")
        result = calibrate(graders, examples(), str(suite_dir / "calibration.py"))
        if args.out:
            suite_files = {f"{p.relative_to(suite_dir)}, a file of the suite": p
                           for p in sorted(suite_dir.rglob("*")) if p.is_file()}
            write_output(args.out, json.dumps(result, indent=2, ensure_ascii=False) + "\n", "calibration",
                         inputs=suite_files)
    except EvalkitError as error:
        print(f"error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    print(render(result))
    return ExitCode.GO

