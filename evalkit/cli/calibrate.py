"""`evalkit calibrate suite=NAME [--out FILE]`: run a suite's graders on its authored counterexamples;
`... --report REPORT [--labels FILE]`: set the suite's judged checks in a run report against human labels, from the
suite's judge_labels.yaml or a labels file exported from the run explorer (evalkit.records.labels), which must have
been made on that very report.

What calibration computes lives in evalkit.programs.calibrate; this module finds the suite and prints.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, write_output
from evalkit.cli.main import epilog
from evalkit.core.errors import InputError
from evalkit.core.files import read_bytes, read_text, read_text_sha256
from evalkit.core.fingerprint import SHA_LENGTH, sha256
from evalkit.core.parsing import parse_yaml
from evalkit.gate.decision import ExitCode
from evalkit.judging.agreement import WEIGHTS
from evalkit.programs.calibrate import calibrate, calibrate_judges, parse_labels, render, render_judges
from evalkit.project.options import find_option
from evalkit.project.paths import path_within, project_root
from evalkit.records.calibration import CALIBRATION_FILE
from evalkit.records.labels import LABELS_FORMAT, LabelsFile, read_labels
from evalkit.records.report_reader import parse_report
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
                                                    "`labels: {CHECK: {CASE: pass | fail | LEVEL}}`, or a labels "
                                                    "file (JSON Lines) exported from the run explorer for this report")
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
    print(render(result))
    return ExitCode.GO


def _judges(args: argparse.Namespace, suite_dir: Path) -> int:
    """The judged checks of a run report against the labels (evalkit.programs.calibrate.calibrate_judges)."""
    labels_path = args.labels if args.labels is not None else suite_dir / LABELS_FILE
    where = str(labels_path)
    text = read_text(labels_path, "labels file")
    if _exported(text):
        labels, recording = _exported_labels(read_labels(text, where), args.report, where), None
    else:
        labels, recording = parse_labels(parse_yaml(text, where, "labels file"), where)
    report_text, report_sha = read_text_sha256(args.report, "report")
    report = parse_report(report_text, str(args.report))
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


def _exported(text: str) -> bool:
    """Whether the labels are a file exported from the run explorer: its first line, an object, names the labels
    format (read_labels then checks it whole; a judge_labels.yaml, even one written as JSON, names none). Not
    parsed here: a hostile first line is read_labels' to refuse, in one line."""
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith("{") and f'"{LABELS_FORMAT}"' in first


def _exported_labels(labels: LabelsFile, report_path: Path, where: str) -> dict[str, dict[str, bool | int]]:
    """The labels of an exported file (pass/fail, or levels), by check and case, once its header names this
    report's bytes."""
    sha = sha256(read_bytes(report_path, "report"))
    given = labels.header.report_sha256
    if given != sha:
        raise InputError(f"{where}: the labels were made on another report (report_sha256 {given[:SHA_LENGTH]}…), "
                         f"not on {report_path} ({sha[:SHA_LENGTH]}…); calibrate the report they were made on")
    out: dict[str, dict[str, bool | int]] = {}
    for label in labels.labels:  # levels are calibrated with weighted kappa, as in judge_labels.yaml
        out.setdefault(label.check_id, {})[label.case_id] = label.label == "pass" if isinstance(label.label, str) \
            else label.label
    if not out:
        raise InputError(f"{where}: no labels after the header; label cases in the run explorer before exporting")
    return out
