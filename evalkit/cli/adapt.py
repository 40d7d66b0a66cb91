"""`evalkit adapt SOURCE BASELINE CANDIDATE [--policy P] [--out DIR]`: gate what other eval tools wrote.

SOURCE is one of the adapters registered in evalkit.adapt.framework (inspect, junit, ...), or `docs-stage`
(saved documentation stage reports: `--out RESULT` is then one file). The files are read and written here; the
rules live in evalkit/adapt/.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

from evalkit.adapt.docs_stage import DOCS_STAGE_POLICY, DocsStageComparison, compare_docs_stages, parse_docs_stage
from evalkit.adapt.framework import Adaptation, Source, available_sources, gate_runs, load_source
from evalkit.cli.args import ArgumentParser
from evalkit.cli.evidence import evidence, policy_identity, report_identity
from evalkit.cli.guard import command, say, write_output
from evalkit.cli.main import epilog
from evalkit.core.errors import EvalkitError, InputError, one_line
from evalkit.core.files import read_text
from evalkit.core.fingerprint import sha256
from evalkit.core.policy import STRICT_DEFAULT, Policy, load_policy
from evalkit.gate.decision import ExitCode, exit_code
from evalkit.project.options import find_option
from evalkit.project.paths import shown
from evalkit.records.decision import PolicyIdentity
from evalkit.render.bundle import Decided, render_bundle
from evalkit.render.markdown import render_policy
from evalkit.render.text import render_decision

__all__ = ["main"]

_EXITS = "Exit code: 0 go (or review), 1 block, 2 incomparable, 3 input or usage error, 4 internal error."


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit adapt", epilog=epilog("adapt"),
        description="Adapt what other eval tools wrote into run reports and gate the candidate against the "
                    f"baseline. {_EXITS}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="SOURCE")
    docs = commands.add_parser(  # subparsers are built with the parent's class, so they exit 3 too
        "docs-stage", help="gate two saved documentation stage reports",
        description="Map each applicable tools, retrieval, faithfulness, contextual-recall and answer-relevancy "
                    "check of two saved docs-stage reports to a test outcome, then gate the candidate against "
                    "the baseline (critical: test_tools, test_faithfulness; no regressions; pass rate >= 0.9). "
                    "No model or judge runs. Exit code: 0 go, 1 block, 2 incomparable, 3 input or usage error.")
    docs.add_argument("baseline", type=Path, metavar="BASELINE", help="saved stage report of the baseline")
    docs.add_argument("candidate", type=Path, metavar="CANDIDATE", help="saved stage report of the candidate")
    docs.add_argument("--out", type=Path, required=True, metavar="RESULT",
                      help="new file for the result: both adapted run reports and the decision (never overwritten)")
    for name in available_sources():
        source = load_source(name)
        sub = commands.add_parser(name, help=source.summary,
                                  description=f"{source.summary}. {source.description} {_EXITS}".strip())
        sub.add_argument("baseline", type=Path, metavar="BASELINE", help=f"the baseline's {name} output")
        sub.add_argument("candidate", type=Path, metavar="CANDIDATE", help=f"the candidate's {name} output")
        sub.add_argument("--policy", default=None,
                         help="a policy name from conf/policy/ or a path to a YAML or JSON file (default: the strict "
                              "default: no test that passes on the baseline may stop passing or vanish)")
        sub.add_argument("--out", type=Path, metavar="DIR",
                         help="new folder (never overwritten) for baseline.json and candidate.json (the adapted run "
                              "reports) and the decision's files, as `evalkit run` writes them: decision.json, "
                              "decision.xml, decision.md and report.html")
        if source.read_thresholded is not None:
            sub.add_argument("--pass-threshold", action="append", default=[], metavar="SCORER=VALUE",
                             help="the least numeric score of SCORER that passes (default: 1.0, full credit), for "
                                  "a scale such as 0-10; repeatable; part of the eval key")
        if source.read_checked is not None:
            sub.add_argument("--checks", type=Path, required=True, metavar="FILE",
                             help="the checks file (YAML) each case is gated with; its SHA-256 is part of the eval "
                                  "key, so runs checked with different files are incomparable")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "docs-stage":
        return _docs_stage_main(args)
    return _source_main(load_source(args.command), args)


def _source_main(source: Source, args: argparse.Namespace) -> int:
    out: Path | None = args.out
    if out is not None and os.path.lexists(out):  # checked first, so a refused run reads nothing, writes nothing
        raise InputError(f"{out}: already exists; a result is evidence and is never overwritten: "
                         "choose a new --out folder")
    policy, identity = _policy(args.policy)
    thresholds = _thresholds(getattr(args, "pass_threshold", []))
    if source.read_checked is not None:
        baseline = source.read_checked(args.baseline, args.checks)
        candidate = source.read_checked(args.candidate, args.checks)
    elif thresholds and source.read_thresholded is not None:
        baseline = source.read_thresholded(args.baseline, thresholds)
        candidate = source.read_thresholded(args.candidate, thresholds)
    else:
        baseline = source.read(args.baseline)
        candidate = source.read(args.candidate)
    result = gate_runs(policy, baseline, candidate, baseline_where=str(args.baseline),
                       candidate_where=str(args.candidate))
    if out is not None:
        _write_folder(out, result, identity, policy, args)
    exits = exit_code(result.decision.decision, policy.review_fails)
    say(render_decision(result.decision, policy.critical, exits=exits))
    say(render_policy(identity))
    return exits


def _thresholds(given: list[str]) -> dict[str, float]:
    """`--pass-threshold SCORER=VALUE` options as a mapping; a malformed one is refused naming it."""
    thresholds: dict[str, float] = {}
    for text in given:
        name, _, value = text.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not name or not math.isfinite(number) or name in thresholds:
            raise InputError(f"--pass-threshold {text[:80]!r}: expected SCORER=NUMBER, once per scorer "
                             "(e.g. --pass-threshold model_graded_qa=7)")
        thresholds[name] = number
    return thresholds


def _policy(spec: str | None) -> tuple[Policy, PolicyIdentity]:
    if spec is None:
        return STRICT_DEFAULT, policy_identity(STRICT_DEFAULT, fallback_name="strict-default",
                                               source="evalkit.core.policy.STRICT_DEFAULT",
                                               chosen_by="strict default: no --policy")
    path = find_option("policy", spec)
    policy = load_policy(path)
    return policy, policy_identity(policy, fallback_name=Path(spec).stem, source=shown(path), chosen_by="--policy")


def _write_folder(out: Path, result: Adaptation, identity: PolicyIdentity, policy: Policy,
                  args: argparse.Namespace) -> None:
    """Write the result folder whole or not at all: built beside it under a temporary name, then renamed."""
    texts = {name: json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
             for name, report in (("baseline.json", result.baseline), ("candidate.json", result.candidate))}
    facts = evidence(identity,
                     report_identity(str(out / "baseline.json"), sha256(texts["baseline.json"].encode()),
                                     result.baseline_report),
                     report_identity(str(out / "candidate.json"), sha256(texts["candidate.json"].encode()),
                                     result.candidate_report),
                     sources={"baseline": {"path": str(args.baseline), **_source_facts(result.baseline)},
                              "candidate": {"path": str(args.candidate), **_source_facts(result.candidate)}})
    texts.update(render_bundle(Decided(result.decision, result.baseline_report, result.candidate_report, policy,
                                       facts, str(out / "baseline.json"))))
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{out}: cannot write the result: the folder {parent} does not exist; create it first")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    except OSError as error:
        raise InputError(f"{out}: cannot write the result ({error.strerror or error})") from None
    try:
        for name, text in texts.items():
            write_output(staging / name, text, name)
        if os.path.lexists(out):
            raise InputError(f"{out}: appeared while the result was written; it is left as it is")
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _source_facts(report: object) -> dict[str, object]:
    provenance = report.get("provenance", {}) if isinstance(report, dict) else {}
    return {name: provenance.get(name) for name in ("tool", "source_sha256", "format_version")
            if provenance.get(name) is not None}


def _docs_stage_main(args: argparse.Namespace) -> int:
    try:
        result = _docs_stage(args.baseline, args.candidate, args.out)
    except EvalkitError as error:
        print(f"error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    print(json.dumps(result.decision.record().data(), indent=2))
    return exit_code(result.decision.decision, DOCS_STAGE_POLICY.review_fails)


def _docs_stage(baseline: Path, candidate: Path, out: Path) -> DocsStageComparison:
    if os.path.lexists(out):  # checked first, so a refused run reads nothing and writes nothing
        raise InputError(f"{out}: already exists; a result is evidence and is never overwritten: "
                         "choose a new --out path")
    result = compare_docs_stages(_load(baseline), _load(candidate),
                                 baseline_where=str(baseline), candidate_where=str(candidate))
    write_output(out, json.dumps(result.to_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n", "result",
                 make_folder=True)
    return result


def _load(path: Path) -> object:
    return parse_docs_stage(read_text(path, "stage report"), str(path))

