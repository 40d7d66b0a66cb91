"""`evalkit gate BASELINE CANDIDATE [--policy NAME|FILE] [--out FILE]`: gate two reports.

Without --policy, the policy is the one the candidate's run composed (its `provenance.policy`, found by name in
the project's conf/policy/), or, for a report that names none (a plain pytest-json-report), the strict default
(evalkit.core.policy.STRICT_DEFAULT). Never a demo suite's policy."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

from evalkit.cli.args import ArgumentParser
from evalkit.cli.evidence import evidence, policy_identity, report_identity
from evalkit.cli.guard import check_outputs, command, say, write_outputs
from evalkit.cli.main import epilog
from evalkit.core.errors import InputError
from evalkit.core.key import changed_settings
from evalkit.core.outputs import same_file
from evalkit.core.policy import STRICT_DEFAULT, Policy, load_policy
from evalkit.gate.compared import critical_of
from evalkit.gate.decide import decide
from evalkit.gate.decision import ExitCode, exit_code
from evalkit.gate.isolation import refuse_short_isolation
from evalkit.project.options import find_option
from evalkit.project.paths import shown
from evalkit.records.decision import PolicyIdentity
from evalkit.records.report_reader import RunReport, read_reports
from evalkit.render.bundle import Decided, render_bundle
from evalkit.render.markdown import render_policy
from evalkit.render.text import render_decision

__all__ = ["main"]



def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit gate", epilog=epilog("gate"),
        description="Gate a candidate run report against a baseline run report under a policy. "
                    "Exit code: 0 go (or review), 1 block, 2 incomparable, 3 input or usage error (or an output "
                    "that cannot be written), 4 internal error.")
    parser.add_argument("baseline", type=Path, help="run report of the baseline (what is on main)")
    parser.add_argument("candidate", type=Path, help="run report of the candidate")
    parser.add_argument("--policy", default=None,
                        help="a policy name from conf/policy/ or a path to a YAML or JSON file (default: the "
                             "policy the candidate's run composed, its provenance.policy; for a report that names "
                             "none, the strict default: no test that passes on the baseline may stop passing or "
                             "vanish, no pass-rate floor, no critical tests)")
    parser.add_argument("--out", type=Path, help="also write the decision as JSON to this file, and as JUnit XML "
                                                 "beside it (the same name ending in .xml: decision.xml)")
    parser.add_argument("--markdown", type=Path, help="also write the decision as Markdown (a pull-request comment)")
    parser.add_argument("--html", type=Path, help="also write the decision as an HTML page (report.html: the "
                                                  "regressed tests first, what changed, every failing case)")
    parser.add_argument("--require-pass", action=argparse.BooleanOptionalAction, default=True,
                        help="exit with the decision's code (default); --no-require-pass writes the same files "
                             "and exits 0 whatever the decision")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # A short-lived process parsing reports of up to millions of tests: the cyclic garbage collector
    # would rescan every parsed object again and again while nothing here forms cycles.
    gc.disable()
    inputs = _inputs(args)
    _refuse_outputs(args, inputs)  # before reports that may take seconds to read
    (baseline, baseline_sha), (candidate, candidate_sha) = read_reports([args.baseline, args.candidate])
    policy, identity = _choose_policy(args.policy, candidate, args.candidate)
    refuse_short_isolation(policy, {"baseline": baseline, "candidate": candidate})
    # a judge calibration is looked for beside the baseline only when the policy asks for one
    calibration = None
    if policy.min_judge_kappa is not None:
        from evalkit.run.baseline import calibration_beside
        calibration = calibration_beside(args.baseline)
    decision = decide(policy, baseline, candidate, calibration)
    facts = evidence(identity, report_identity(str(args.baseline), baseline_sha, baseline),
                     report_identity(str(args.candidate), candidate_sha, candidate))
    named = ((("decision.json", "decision.xml") if args.out else ()) + (("decision.md",) if args.markdown else ())
             + (("report.html",) if args.html else ()))
    texts = render_bundle(Decided(decision, baseline, candidate, policy, facts, str(args.baseline)), names=named)
    outputs: dict[Path, tuple[str, str]] = {}
    if args.out:
        outputs[args.out] = (texts["decision.json"], "decision (--out)")
        outputs[_junit_path(args.out)] = (texts["decision.xml"], "decision as JUnit XML (beside --out)")
    if args.markdown:
        outputs[args.markdown] = (texts["decision.md"], "decision (--markdown)")
    if args.html:
        outputs[args.html] = (texts["report.html"], "decision as HTML (--html)")
    critical = critical_of(policy, baseline, candidate)
    # every output is checked before any is written, and they are written all or nothing: a refusal or a full disk
    # must not leave a decision.json for a CI step to pick up without its other files
    write_outputs(outputs, inputs=inputs)
    exits = exit_code(decision.decision, policy.review_fails) if args.require_pass else ExitCode.GO
    say(render_decision(decision, critical, changed_settings(baseline.eval, candidate.eval), exits))
    say(render_policy(identity))
    return exits


def _refuse_outputs(args: argparse.Namespace, inputs: dict[str, Path]) -> None:
    """The output files refused as writing them would refuse them, and any two of them naming one file."""
    if args.html:
        others = [path for path in (args.out, args.out and _junit_path(args.out), args.markdown) if path]
        if any(same_file(args.html, other) for other in others):
            raise InputError(f"{args.html}: --html names a file another output of this command writes; give it "
                             "its own path")
    if args.out and args.markdown:
        if same_file(args.out, args.markdown):
            raise InputError(f"{args.out}: --out and --markdown name the same file; give each its own path")
        if same_file(_junit_path(args.out), args.markdown):
            raise InputError(f"{args.markdown}: --markdown names {_junit_path(args.out)}, where --out writes its "
                             "JUnit XML; give --markdown another path")
    planned = {args.out: "decision (--out)", args.markdown: "decision (--markdown)",
               args.html: "decision as HTML (--html)"}
    if args.out:
        planned[_junit_path(args.out)] = "decision as JUnit XML (beside --out)"
    check_outputs({path: what for path, what in planned.items() if path}, inputs=inputs)


def _junit_path(out: Path) -> Path:
    """Where the JUnit XML goes: beside --out, the same name ending in .xml (decision.json -> decision.xml)."""
    if out.suffix.lower() == ".xml":
        raise InputError(f"{out}: --out writes the decision as JSON and its JUnit XML beside it as "
                         f"{out.with_suffix('.xml').name}; name a .json file")
    return out.with_suffix(".xml")


def _inputs(args: argparse.Namespace) -> dict[str, Path]:
    """The files this command read, which its outputs may never replace."""
    inputs = {"the baseline report": args.baseline, "the candidate report": args.candidate}
    if args.policy is not None and Path(args.policy).suffix in (".yaml", ".yml", ".json"):
        inputs["the policy file"] = Path(args.policy)
    return inputs


def _choose_policy(spec: str | None, candidate: RunReport, candidate_path: Path) -> tuple[Policy, PolicyIdentity]:
    """--policy if given; else the policy the candidate's run composed; else the strict default. Says which."""
    if spec is not None:
        is_file = Path(spec).suffix in (".yaml", ".yml", ".json")
        path = find_option("policy", spec)
        policy = load_policy(path)
        return policy, policy_identity(policy, fallback_name=Path(spec).stem if is_file else spec,
                                       source=shown(path), chosen_by="--policy")
    named = candidate.provenance.get("policy")
    if named is None:
        return STRICT_DEFAULT, policy_identity(
            STRICT_DEFAULT, fallback_name="strict-default", source="evalkit.core.policy.STRICT_DEFAULT",
            chosen_by="strict default: no --policy, and the candidate names no policy")
    if not isinstance(named, str) or not named:
        raise InputError(f"{candidate_path}: provenance.policy must name a policy option, got {named!r}; "
                         "pass --policy NAME|FILE")
    try:
        policy = load_policy(find_option("policy", named))
    except InputError as error:
        raise InputError(f"{candidate_path}: its run composed policy {named!r} (provenance.policy), which this "
                         f"project cannot load: {error}; pass --policy NAME|FILE") from None
    return policy, policy_identity(policy, fallback_name=named, source=f"conf/policy/{named}.yaml",
                                   chosen_by="named by the candidate's suite (provenance.policy)")
