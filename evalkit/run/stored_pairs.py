"""The stored baseline/candidate pairs of a project that `evalkit policy-diff` decides again: its shipped reports
(each against itself and its suite's baseline) and its runs under outputs/ and multirun/ (each against the baseline
it was gated against, the newest of each eval key, policy and baseline standing for the older ones).
"""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.core.errors import EvalkitError, one_line
from evalkit.core.files import read_text
from evalkit.gate.policy_change import Pair
from evalkit.project.git import GIT
from evalkit.project.paths import project_root, shown
from evalkit.records.report_reader import RunReport, parse_report
from evalkit.run.baseline import calibration_beside, load_baseline, load_calibration
from evalkit.run.saved_decision import saved_decision_field

__all__ = ["RUN_FOLDERS", "default_pairs", "given_pair", "in_scope"]

RUN_FOLDERS = ("outputs", "multirun")


def _read_report(path: Path) -> RunReport:
    return parse_report(read_text(path, "report"), str(path))


def given_pair(baseline: str, candidate: str) -> Pair:
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


def in_scope(pairs: list[Pair], names: set[str | None], everything: bool) -> tuple[list[Pair], str]:
    if everything:
        return pairs, f"all {len(pairs)} stored pair(s) of the project (--all)"
    mine = [pair for pair in pairs if pair.policy in names]
    if not mine:
        return pairs, (f"all {len(pairs)} stored pair(s) of the project: none of their runs composed policy "
                       f"{' or '.join(sorted(str(n) for n in names)) or '(a file outside conf/policy/)'}")
    return mine, (f"{len(mine)} stored pair(s) whose run composed policy {' or '.join(sorted(str(n) for n in names))}"
                  f" ({len(pairs) - len(mine)} of other policies left out; --all decides them too)")
