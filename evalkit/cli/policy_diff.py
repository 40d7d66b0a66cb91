"""`evalkit policy-diff OLD NEW [--pair BASELINE CANDIDATE]... [--all]`: what a policy change lets
through, for the reviewer of a policy pull request.

OLD and NEW are each a policy file, a policy option's name (`triage`: conf/policy/triage.yaml) or `git:REF:PATH`
(read with `git show REF:PATH` in the project's repository: `git:origin/main:conf/policy/triage.yaml`). Stored
baseline/candidate pairs are decided again under both (`decide()` is pure, so this needs no model and no run)
and the decisions that change are printed as a Markdown table: old and new decision and exit code, and the
reasons that disappear and appear.

The pairs: those given with `--pair BASELINE CANDIDATE`; by default every shipped report of the project
(`suites/*/runs/*.json`) against itself and against its suite's baseline (its `provenance.baseline`), and every
run report under `outputs/` and `multirun/` against the baseline its `decision.json` names (else its
`provenance.baseline`). By default only the pairs whose run composed the policy under review
(`provenance.policy` is OLD's or NEW's option name) are decided; `--all` decides every pair, and when no pair
names the policy every pair is decided (the output says which).

Exit codes: 0 compared (whatever the decisions), 3 input or usage error (a policy that cannot be read or is
invalid, a git ref or git missing, a `--pair` report that cannot be read), 4 internal error.
"""

from __future__ import annotations

import argparse
from pathlib import Path, PurePosixPath

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command, say
from evalkit.cli.main import epilog
from evalkit.core.errors import InputError
from evalkit.core.files import decode
from evalkit.core.parsing import parse_json, parse_yaml
from evalkit.core.policy import Policy, load_policy, policy_from_mapping
from evalkit.gate.decision import ExitCode
from evalkit.gate.policy_change import decide_again
from evalkit.project.git import GIT, show, split_spec
from evalkit.project.options import find_option
from evalkit.project.paths import find_project
from evalkit.render.policy_diff import render_policy_diff
from evalkit.run.stored_pairs import default_pairs, given_pair, in_scope

__all__ = ["main", "read_policy"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="evalkit policy-diff", epilog=epilog("policy-diff"),
        description="Decide stored baseline/candidate pairs under an old and a new policy and print, as Markdown, "
                    "the decisions that change and why. Exit code: 0 compared, 3 input or usage error, 4 internal "
                    "error.")
    parser.add_argument("old", help="the policy before the change: a file, an option name from conf/policy/, or "
                                    "git:REF:PATH (e.g. git:origin/main:conf/policy/triage.yaml)")
    parser.add_argument("new", help="the policy after the change (the same forms)")
    parser.add_argument("--pair", nargs=2, action="append", metavar=("BASELINE", "CANDIDATE"), default=[],
                        help="a baseline and a candidate run report to decide (repeatable; replaces the default "
                             "pairs: the project's shipped reports and its outputs/ and multirun/ runs)")
    parser.add_argument("--run", action="append", type=Path, metavar="REPORT", default=None,
                        help="a run's report.json (or its folder) to decide against the baseline it was gated "
                             "against (repeatable; replaces the runs found under outputs/ and multirun/, of which "
                             "the newest of each eval key is taken)")
    parser.add_argument("--all", action="store_true",
                        help="decide every default pair, not only those whose run composed this policy")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    old, new = read_policy(args.old), read_policy(args.new)
    skipped: list[str] = []
    if args.pair:
        pairs = [given_pair(baseline, candidate) for baseline, candidate in args.pair]
        scope = f"{len(pairs)} pair(s) given with --pair"
    else:
        superseded: list[str] = []
        runs = [path / "report.json" if path.is_dir() else path for path in args.run] if args.run else None
        pairs = default_pairs(skipped, superseded, runs)
        pairs, scope = in_scope(pairs, {_option_name(args.old), _option_name(args.new)} - {None}, args.all)
        if superseded:
            scope += (f"; {len(superseded)} older run(s) of the same eval key, policy and baseline left out (the "
                      "newest stands for them; --run REPORT decides a given one)")
    say(render_policy_diff(args.old, old, args.new, new, decide_again(old, new, pairs), scope, skipped))
    return ExitCode.GO


def read_policy(spec: str) -> Policy:
    """A policy from a file, an option name or `git:REF:PATH`; every refusal is one line naming `spec`."""
    if not spec.startswith(GIT):
        return load_policy(find_option("policy", spec))
    ref, path = split_spec(spec, spec, "expected git:REF:PATH, e.g. git:origin/main:conf/policy/triage.yaml")
    if not path:
        raise InputError(f"{spec}: expected git:REF:PATH, e.g. git:origin/main:conf/policy/triage.yaml")
    # git runs in the project root: PATH is in the repository, `./PATH` relative to the project (as for baselines)
    text = decode(show(ref, path, find_project() or Path.cwd(), spec), spec, "policy")
    data = parse_json(text, spec, "policy") if path.endswith(".json") else parse_yaml(text, spec, "policy")
    return policy_from_mapping(data, spec)


def _option_name(spec: str) -> str | None:
    """The policy option a spec names (`triage`, `conf/policy/triage.yaml`, `git:main:conf/policy/triage.yaml`),
    which is what run reports record in `provenance.policy`; None for a file elsewhere."""
    path = spec[len(GIT):].partition(":")[2] if spec.startswith(GIT) else spec
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.suffix not in (".yaml", ".yml", ".json"):
        return path or None
    return pure.stem if pure.parent.name == "policy" else None
