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
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evalkit.cli.args import ArgumentParser
from evalkit.cli.evidence import saved_decision_field
from evalkit.cli.guard import command, say
from evalkit.cli.main import epilog
from evalkit.core.errors import EvalkitError, InputError, one_line
from evalkit.core.files import decode, read_text
from evalkit.core.parsing import parse_json, parse_yaml
from evalkit.core.policy import Policy, load_policy, policy_from_mapping, policy_sha256
from evalkit.core.report import RunReport, parse_report
from evalkit.core.untrusted import markdown, terminal
from evalkit.gate.calibration import Calibration
from evalkit.gate.decide import decide
from evalkit.gate.decision import Decision, ExitCode, exit_code
from evalkit.gate.findings import Effect
from evalkit.project.git import GIT, show, split_spec
from evalkit.project.options import find_option
from evalkit.project.paths import find_project, project_root, shown
from evalkit.run.baseline import calibration_beside, load_baseline, load_calibration

__all__ = ["main", "read_policy", "Pair", "default_pairs"]

RUN_FOLDERS = ("outputs", "multirun")


@dataclass(frozen=True)
class Pair:
    """A stored baseline/candidate pair to decide again."""

    baseline: str
    """How the baseline is named (a path shown relative to the project, or `git:REF:PATH`)."""
    candidate: str
    baseline_report: RunReport
    candidate_report: RunReport
    calibration: Calibration | None = None
    """The judge calibration beside the baseline, for a policy's `min_judge_kappa` (evalkit.gate.calibration)."""

    @property
    def suite(self) -> str:
        return str(self.candidate_report.eval.get("suite") or self.candidate_report.provenance.get("suite") or "-")

    @property
    def policy(self) -> str | None:
        named = self.candidate_report.provenance.get("policy")
        return named if isinstance(named, str) else None


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
        pairs = [_given_pair(baseline, candidate) for baseline, candidate in args.pair]
        scope = f"{len(pairs)} pair(s) given with --pair"
    else:
        superseded: list[str] = []
        runs = [path / "report.json" if path.is_dir() else path for path in args.run] if args.run else None
        pairs = default_pairs(skipped, superseded, runs)
        pairs, scope = _in_scope(pairs, {_option_name(args.old), _option_name(args.new)} - {None}, args.all)
        if superseded:
            scope += (f"; {len(superseded)} older run(s) of the same eval key, policy and baseline left out (the "
                      "newest stands for them; --run REPORT decides a given one)")
    say(render(args.old, old, args.new, new, pairs, scope, skipped))
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


def _read_report(path: Path) -> RunReport:
    return parse_report(read_text(path, "report"), str(path))


def _given_pair(baseline: str, candidate: str) -> Pair:
    base = load_baseline(baseline, None, "-") if baseline.startswith(GIT) else None
    return Pair(baseline, candidate, base.report if base else _read_report(Path(baseline)),
                _read_report(Path(candidate)), load_calibration(baseline, None))


def default_pairs(skipped: list[str], superseded: list[str], runs: list[Path] | None = None) -> list[Pair]:
    """The project's shipped reports (each against itself and its suite's baseline) and its runs (each against
    the baseline it was gated against): `runs` when given, else the newest run under outputs/ and multirun/ of each
    eval key, policy and baseline (the older ones are appended to `superseded`). What cannot be read is appended
    to `skipped`, with why."""
    root = project_root()
    cache: dict[Path, RunReport | str] = {}

    def report(path: Path) -> RunReport | str:
        key = path.resolve()
        if key not in cache:
            try:
                cache[key] = _read_report(path)
            except EvalkitError as error:
                cache[key] = one_line(str(error), 300)
        return cache[key]

    pairs: list[Pair] = []
    seen: set[tuple[Path, Path]] = set()

    def add(baseline: Path, candidate: Path, why: str) -> None:
        if (baseline.resolve(), candidate.resolve()) in seen:
            return
        seen.add((baseline.resolve(), candidate.resolve()))
        base, cand = report(baseline), report(candidate)
        for side in (base, cand):
            if isinstance(side, str):
                skipped.append(f"{shown(candidate)} ({why}): {side}")
                return
        assert isinstance(base, RunReport) and isinstance(cand, RunReport)
        try:
            calibration = calibration_beside(baseline)
        except EvalkitError as error:
            skipped.append(f"{shown(candidate)} ({why}): {one_line(str(error), 300)}")
            return
        pairs.append(Pair(shown(baseline), shown(candidate), base, cand, calibration))

    for candidate in sorted(root.glob("suites/*/runs/*.json")):
        add(candidate, candidate, "shipped, against itself")
        cand = report(candidate)
        named = cand.provenance.get("baseline") if isinstance(cand, RunReport) else None
        if isinstance(named, str) and named:
            add(root / named, candidate, "shipped, against its suite's baseline")
    given = runs is not None
    found = runs if runs is not None else [path for folder in RUN_FOLDERS
                                            for path in sorted((root / folder).glob("**/report.json"))]
    latest: dict[str, tuple[int, Path, str]] = {}  # one run per (eval key, policy, baseline): the newest
    for candidate in found:
        named = saved_decision_field(candidate, "baseline")
        cand = report(candidate)
        if named is None and isinstance(cand, RunReport):
            value = cand.provenance.get("baseline")
            named = value if isinstance(value, str) and value else None
        if named is None:
            skipped.append(f"{shown(candidate)}: names no baseline (a run with baseline=none)")
        elif named.startswith(GIT):
            skipped.append(f"{shown(candidate)}: gated against {named}; give it with --pair {named} "
                           f"{shown(candidate)}")
        elif given or not isinstance(cand, RunReport):
            path = Path(named).expanduser()
            add(path if path.is_absolute() else root / path, candidate, "a run")
        else:
            # ad-hoc runs of the same key against the same baseline under the same policy decide alike (a replay
            # is deterministic): the newest stands for them
            identity = json.dumps([cand.eval, cand.provenance.get("policy"), named], sort_keys=True, default=str)
            stamp = candidate.stat().st_mtime_ns
            if identity not in latest or (stamp, str(candidate)) > (latest[identity][0], str(latest[identity][1])):
                older = latest.get(identity)
                if older is not None:
                    superseded.append(shown(older[1]))
                latest[identity] = (stamp, candidate, named)
            else:
                superseded.append(shown(candidate))
    for _, candidate, named in latest.values():
        path = Path(named).expanduser()
        add(path if path.is_absolute() else root / path, candidate, "a run")
    return pairs




def _in_scope(pairs: list[Pair], names: set[str | None], everything: bool) -> tuple[list[Pair], str]:
    if everything:
        return pairs, f"all {len(pairs)} stored pair(s) of the project (--all)"
    mine = [pair for pair in pairs if pair.policy in names]
    if not mine:
        return pairs, (f"all {len(pairs)} stored pair(s) of the project: none of their runs composed policy "
                       f"{' or '.join(sorted(str(n) for n in names)) or '(a file outside conf/policy/)'}")
    return mine, (f"{len(mine)} stored pair(s) whose run composed policy {' or '.join(sorted(str(n) for n in names))}"
                  f" ({len(pairs) - len(mine)} of other policies left out; --all decides them too)")


def render(old_spec: str, old: Policy, new_spec: str, new: Policy, pairs: list[Pair], scope: str,
           skipped: list[str]) -> str:
    """The Markdown a reviewer reads: what the rules change, then each decision that changes and why."""
    lines = [f"### Policy change: `{_cell(old_spec)}` → `{_cell(new_spec)}`", ""]
    lines += [f"- old: sha256 `{policy_sha256(old)[:12]}`; new: sha256 `{policy_sha256(new)[:12]}`"]
    keys = _changed_keys(old, new)
    lines += ["- rules changed: " + (", ".join(f"`{k}` {_value(a)} → {_value(b)}" for k, (a, b) in keys.items())
                                     if keys else "none (the two policies are the same rules)")]
    lines += [f"- decided again: {markdown(scope)}", ""]
    changed, same = [], 0
    for pair in pairs:
        before, after = decide(old, pair.baseline_report, pair.candidate_report, pair.calibration), \
            decide(new, pair.baseline_report, pair.candidate_report, pair.calibration)
        gone, came = _findings_only_in(before, after), _findings_only_in(after, before)
        codes = int(exit_code(before.decision, old.review_fails)), int(exit_code(after.decision, new.review_fails))
        if before.decision == after.decision and not gone and not came and codes[0] == codes[1]:
            same += 1
            continue
        changed.append((pair, before, after, codes, gone, came))
    changed.sort(key=lambda row: row[1].decision == row[2].decision)  # changed decisions first, else as found
    flips = sum(1 for _, b, a, *_ in changed if b.decision != a.decision)
    lines.append(f"**{flips} decision(s) change**, {len(changed) - flips} keep their decision with other reasons, "
                 f"{same} unchanged, of {len(pairs)} pair(s).")
    lines.append("")
    if changed:
        lines += ["| suite | baseline | candidate | decision | exit code | reasons that disappear | reasons that "
                  "appear |", "|---|---|---|---|---|---|---|"]
        for pair, before, after, codes, disappear, appear in changed:
            verdict = (f"**{str(before.decision).upper()} → {str(after.decision).upper()}**"
                       if before.decision != after.decision else f"{str(after.decision).upper()} (same)")
            lines.append(f"| {markdown(pair.suite)} | `{_cell(pair.baseline)}` | `{_cell(pair.candidate)}` | "
                         f"{verdict} | {codes[0]} → {codes[1]} | {_list(disappear)} | {_list(appear)} |")
        lines.append("")
    if skipped:
        lines += [f"<details><summary>Not decided ({len(skipped)})</summary>", ""]
        lines += [f"- {markdown(line)}" for line in skipped] + ["", "</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def _findings_only_in(decision: Decision, other: Decision) -> list[str]:
    """The findings that decide (block or review) under one policy and not the other, told apart by rule, effect,
    subject and tests, never by wording: a finding whose figures differ (the same regressions against another
    limit) is the same finding. Shown sorted, review findings marked `review:`."""
    theirs = {f.identity for f in other.findings}
    return sorted(f"review: {f.message}" if f.effect is Effect.REVIEW else f.message for f in decision.findings
                  if f.effect is not Effect.WARN and f.identity not in theirs)


def _changed_keys(old: Policy, new: Policy) -> dict[str, tuple[Any, Any]]:
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    return {key: (a.get(key), b.get(key)) for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)}


def _value(value: Any) -> str:
    return f"`{_cell(str(value))}`"


def _list(reasons: list[str]) -> str:
    return "<br>".join(markdown(r) for r in reasons) or "-"


def _cell(text: str) -> str:
    """Report data inside a code span in a Markdown table cell: no line breaks or control characters, no column
    separators, no backtick to close the span (markup inside a code span is shown, never read)."""
    return terminal(text).replace("|", "\\|").replace("`", "'")
