"""`evalkit calibrate suite=NAME [--out FILE]`: run a suite's graders on its authored counterexamples;
`... --report REPORT [--labels FILE]`: set the suite's judged checks in a run report against human labels.

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
from evalkit.core.files import read_text, read_text_sha256
from evalkit.core.parsing import parse_yaml
from evalkit.core.report import parse_report
from evalkit.gate.decision import ExitCode
from evalkit.judging.agreement import WEIGHTS
from evalkit.programs.calibrate import calibrate, calibrate_judges, parse_labels, render, render_judges
from evalkit.project.options import find_option
from evalkit.project.paths import path_within, project_root
from evalkit.records.calibration import CALIBRATION_FILE
from evalkit.run.suite import load_module

__all__ = ["main"]

LABELS_FILE = "judge_labels.yaml"
"""The labels of a suite's judged checks, beside its checks.yaml, unless `--labels` names another file."""


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
                                        "grader's confusion matrix (positive = should pass); with --report, set the "
                                        "judged checks of that run report against human labels of its replies "
                                        "(agreement, Cohen's kappa, the confusion matrix; weighted kappa for "
                                        "labels that are levels), bound to the run's judge. Exit 0, or 3 on bad "
                                        "input.")
    parser.add_argument("suite", help="suite=NAME (an option of conf/suite/), e.g. suite=quality_lab")
    parser.add_argument("--report", type=Path, help="calibrate the judged checks of this run report against the "
                                                    "labels (with repeats: every verdict on sample 0's reply)")
    parser.add_argument("--labels", type=Path, help=f"the labels (default: the suite's {LABELS_FILE}): "
                                                    "`labels: {CHECK: {CASE: pass | fail | LEVEL}}`")
    parser.add_argument("--weights", choices=WEIGHTS, default="quadratic",
                        help="how weighted kappa counts a disagreement between levels: linear |a - b| or "
                             "quadratic (a - b)^2 (default); pass/fail labels use Cohen's kappa")
    parser.add_argument("--out", type=Path, help=f"also write the result as JSON to this file ({CALIBRATION_FILE} "
                                                 "beside the baseline report is where a gate's min_judge_kappa "
                                                 "looks)")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        suite_dir = _suite_dir(args.suite)
        if args.report is not None:
            return _judges(args, suite_dir)
        if args.labels is not None:
            raise InputError("--labels goes with --report (the run report whose judged replies were labelled)")
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



def _judges(args: argparse.Namespace, suite_dir: Path) -> int:
    """The judged checks of a run report against the labels (evalkit.programs.calibrate.calibrate_judges)."""
    labels_path = args.labels if args.labels is not None else suite_dir / LABELS_FILE
    where = str(labels_path)
    labels, recording = parse_labels(parse_yaml(read_text(labels_path, "labels file"), where, "labels file"), where)
    text, report_sha = read_text_sha256(args.report, "report")
    report = parse_report(text, str(args.report))
    replayed = report.provenance.get("recording")
    if recording is not None and recording != replayed:
        raise InputError(f"{where}: the labels are about the replies of {recording}, and {args.report} judged those "
                         f"of {replayed}; calibrate a run of the labelled recording")
    result = calibrate_judges(report.outcomes, report.messages, report.repeats, labels, where, report.judges,
                              args.weights)
    # the judge whose verdicts these are: a gate trusts the calibration for this fingerprint only
    result = {"kind": result.pop("kind"), "positive_class": result.pop("positive_class"),
              "judge": {"model": report.eval.get("judge_model"), "sha": report.eval.get("judge_sha")},
              "report": str(args.report), "report_sha256": report_sha, **result}
    if args.out:
        write_output(args.out, json.dumps(result, indent=2, ensure_ascii=False) + "\n", "calibration",
                     inputs={"the labels": labels_path, "the run report": args.report})
    print(render_judges(result))
    return ExitCode.GO
