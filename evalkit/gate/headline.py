"""What a decision could have detected: the suite's headline metric paired over its units, and each repeated test.
Pure.

The headline metric is the one the suite's paired comparison is about:
- with the policy's `paired` rule over graded cases: task success, per case, clustered by the cases' groups, at
  the interval's one-sided level (1 - confidence) / 2;
- with repeated samples on both sides: the pass fraction of the repeated tests, per case (the suite guard's unit,
  evalkit.gate.repeats), clustered by the cases' groups where the report gives them, at alpha / 2;
- otherwise, with cases on both sides: whether each case passed, clustered by group, at alpha / 2;
- otherwise: whether each test passed, each test its own unit, at alpha / 2.
The figures and their assumptions are those of evalkit.gate.detectable.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.core.policy import Policy
from evalkit.gate.detectable import (
    Spread,
    cases_needed,
    counted_spread,
    one_test_drop,
    repeats_needed,
    sequential_test_drop,
    spread,
    suite_drop,
)
from evalkit.gate.floor import bound, informative
from evalkit.gate.release import Grades
from evalkit.gate.repeats import RepeatsOutcome
from evalkit.gate.sequential_rule import unpaired
from evalkit.records.report_reader import PASSING, RunReport, case_heads

__all__ = ["Detectable", "Headline", "RepeatedDrops", "detectable", "points", "suite_sentence", "tests_sentence"]


def points(drop: float) -> str:
    """A drop in a rate as points (0.062 -> `6 points`), rounded up so that it never reads smaller than it is."""
    whole = -int(-round(drop * 100, 6) // 1)
    return f"{whole} point" + ("" if whole == 1 else "s")


def suite_sentence(suite: Mapping[str, Any]) -> str:
    """A headline figure (Headline.to_json) in words: `this run could detect drops of 35 points or more in the
    case pass rate (20 cases paired; one-sided level 0.025, power 80%)`."""
    unit, units = suite["unit"], suite["units"]
    basis = (f"{units} {unit}{'s' if units != 1 else ''} paired"
             + (f", {suite['rows']} cases" if unit == "group" else "")
             + (f", {suite['repeats']} samples each" if suite["repeats"] > 1 else "")
             + f"; one-sided level {suite['level']:g}, power {suite['power']:.0%}")
    if bound(suite.get("base")) == "floor":  # nothing falls from 0: a drop figure would promise the impossible
        other = suite.get("informative")
        return (f"the {suite['metric']} is 0 on the baseline (every {unit} failed there), so it cannot show a "
                f"drop ({basis}); "
                + (f"{other} differs across the cases and can show a change" if other else
                   "no per-case metric or check differs across the baseline's cases either, so this run measured "
                   "nothing that could fall"))
    if suite["drop"] is None:
        return (f"this run could not have detected any drop in the {suite['metric']}, not even every {unit} "
                f"failing ({basis})")
    return f"this run could detect drops of {points(suite['drop'])} or more in the {suite['metric']} ({basis})"


def tests_sentence(tests: Mapping[str, Any]) -> str:
    """The repeated tests' figures (RepeatedDrops.to_json) in one line: their range and median, and how many tests
    could show no drop at all."""
    drops = tests["drops"].values()
    shown = sorted(d for d in drops if d is not None)
    blind = len(drops) - len(shown)
    parts = []
    if shown:
        span = (points(shown[0]) if shown[0] == shown[-1]
                else f"{points(shown[0])} to {points(shown[-1])} (median {points(statistics.median(shown))})")
        parts.append(f"each repeated test could show a drop of {span} from its baseline rate")
    if blind:
        parts.append(f"{blind} test(s) could show no drop at these sample sizes")
    if not parts:
        parts.append("no repeated test passed on the baseline, so none could show a drop")
    test = ("one-sided Fisher" if tests.get("method") != "sequential"
            else f"the sequential test in rounds of up to {tests['most']} samples,")
    return "; ".join(parts) + f" ({test} at {tests['level']:.3g}, power {tests['power']:.0%})"


@dataclass(frozen=True)
class Headline:
    """The suite's headline metric, paired: what it is, over how many units, and the smallest drop it could show."""

    metric: str
    """What is compared per unit (`case pass rate`, `task success`, ...)."""
    unit: str
    """What an independent unit is: `case`, `group` or `test`."""
    spread: Spread
    rows: int
    """Paired rows (cases, or tests) the units are made of."""
    level: float
    """The one-sided level of the paired test."""
    power: float
    repeats: int
    """Samples per call behind each row (1 without repeats)."""
    drop: float | None
    """The smallest drop detected with `power`; None when not even every unit failing would be."""
    base: float | None = None
    """The metric's mean over the paired units on the baseline: at 0 it cannot show a drop, at 1 no rise."""
    informative: str | None = None
    """At 0: the report's first measure that differs across the baseline's cases, in words (None: none)."""

    @property
    def at_floor(self) -> bool:
        """Whether the metric is 0 on the baseline, where no drop can show."""
        return bound(self.base) == "floor"

    @property
    def rows_per_unit(self) -> float:
        return self.rows / self.spread.units if self.spread.units else 1.0

    def units_for(self, target: float) -> int | None:
        """How many units would detect `target` at these repeats (None: beyond reach)."""
        return cases_needed(target, self.spread.sd, level=self.level, power=self.power)

    def repeats_for(self, target: float) -> int | None:
        """How many repeats per call would detect `target` with these units (None: repeats cannot reach it)."""
        return repeats_needed(target, self.spread.units, self.spread.sd, self.repeats, level=self.level,
                              power=self.power)

    def sentence(self) -> str:
        return suite_sentence(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return ({"metric": self.metric, "unit": self.unit, "units": self.spread.units, "rows": self.rows,
                "change": self.spread.mean, "sd": self.spread.sd, "level": self.level, "power": self.power,
                "repeats": self.repeats, "drop": self.drop}
                | ({"base": self.base} if self.base is not None else {})
                | ({"informative": self.informative} if self.informative is not None else {}))


@dataclass(frozen=True)
class RepeatedDrops:
    """Each repeated test's smallest detectable drop from its baseline rate: one-sided Fisher at `level` for fixed
    repeats, the sequential test in rounds up to `most` samples for a candidate sampled in rounds."""

    level: float
    """alpha / 2 over the tests compared: the level of Holm's first step, which every test clears at the latest
    (and the sequential rule's per-test level)."""
    power: float
    drops: dict[str, float | None] = field(default_factory=dict)
    """nodeid -> the drop, None when no outcome at these sample sizes is significant; tests the baseline never
    passed are left out (nothing to drop from)."""
    most: int | None = None
    """Set for a candidate sampled in rounds: the most samples a test could have taken (`run.max_repeats`)."""

    def summary(self) -> str:
        return tests_sentence(self.to_json())

    def to_json(self) -> dict[str, Any]:
        out = {"level": self.level, "power": self.power, "drops": dict(sorted(self.drops.items()))}
        if self.most is not None:
            out |= {"method": "sequential", "most": self.most}
        return out


@dataclass(frozen=True)
class Detectable:
    """What a decision could have detected."""

    suite: Headline | None
    """None when the two reports share no unit to pair."""
    tests: RepeatedDrops | None = None
    """Set when both sides repeated their tests."""

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite.to_json() if self.suite else None,
                "tests": self.tests.to_json() if self.tests else None}


def detectable(policy: Policy, baseline: RunReport, candidate: RunReport, *, repeated: RepeatsOutcome | None,
               graded: Grades | None, regressed: tuple[str, ...], fixed: tuple[str, ...]) -> Detectable:
    """The detectable drops of a comparison (`repeated`: the repeats rule's outcome when both sides sampled;
    `graded`: the graded cases when the policy pairs task success; `regressed` and `fixed`: the tests that fell
    and rose, as the gate compared them)."""
    power, share = policy.power, policy.repeats.alpha / 2
    if policy.paired is not None and graded is not None and graded.paired:
        level = (1 - policy.paired.confidence) / 2
        ids = graded.paired
        changes = [float(graded.after[c]["task_pass"]) - float(graded.before[c]["task_pass"]) for c in ids]
        suite = _headline("task success", [graded.groups[c] for c in ids], changes, len(ids), level, power, 1,
                          grouped=any(graded.groups[c] != c for c in ids))
        return Detectable(_based(suite, sum(float(graded.before[c]["task_pass"]) for c in ids) / len(ids), baseline))
    if repeated is not None:
        found = _repeated(baseline, candidate, share, power)
        names = [name for name in baseline.repeats if name in candidate.repeats]
        rate = (sum(baseline.repeats[n].passed / baseline.repeats[n].runs for n in names) / len(names)
                if names else None)
        return replace(found, suite=_based(found.suite, rate, baseline))
    after = candidate.outcomes
    fell = sum(1 for name in regressed if name in after)  # a regressed test may be absent: then it is unpaired
    cases = _cases(baseline, candidate, share, power)
    if cases is not None:
        return Detectable(cases if cases.base is None else _based(cases, cases.base, baseline))
    tests = _tests(baseline, candidate, fell, len(fixed), share, power)
    if tests is None:
        return Detectable(None)
    base = sum(1 for name, outcome in baseline.outcomes.items() if outcome in PASSING and name in after) / tests.rows
    return Detectable(_based(tests, base, baseline))


def _based(suite: Headline | None, base: float | None, baseline: RunReport) -> Headline | None:
    """The headline with the baseline's mean of its metric, and at 0 the report's measure that still moves (read
    only then: it decodes every case)."""
    if suite is None or base is None:
        return suite
    return replace(suite, base=base, informative=informative(baseline) if bound(base) == "floor" else None)


def _headline(metric: str, units: list[Any], changes: list[float], rows: int, level: float, power: float,
              repeats: int, *, grouped: bool, unit: str = "case") -> Headline | None:
    found = spread(units, changes)
    if found.units == 0 or level >= 0.5:
        return None
    return Headline(metric, "group" if grouped else unit, found, rows, level, power, repeats,
                    suite_drop(found.units, found.sd, level=level, power=power))


def _groups(report: RunReport) -> dict[str, Any]:
    """Case id -> its group, for the cases that name one."""
    return {head.id: head.group for head in case_heads(report.cases) if head.group is not None}


def _repeated(baseline: RunReport, candidate: RunReport, share: float, power: float) -> Detectable:
    before, after = baseline.repeats, candidate.repeats
    names = sorted(name for name in before if name in after)
    if not names:
        return Detectable(None)
    groups = _groups(candidate)
    cases = [after[n].case or before[n].case or n for n in names]
    units = [("group", groups[case]) if case in groups else case for case in cases]
    changes = [after[n].passed / after[n].runs - before[n].passed / before[n].runs for n in names]
    repeats = statistics.mode(after[n].runs for n in names)
    suite = _headline("pass fraction per case", units, changes, len(set(cases)), share, power, repeats,
                      grouped=bool(groups))
    level = share / len(names)
    rounds = candidate.sequential
    if rounds is not None:  # what the rounds could have caught, had the test dropped: up to max_repeats samples
        choosing = unpaired({n: before[n] for n in names}, rounds.max_repeats)
        drops = {n: sequential_test_drop(before[n].passed, before[n].runs, rounds.max_repeats, rounds.batch,
                                         level=level, power=power, delta=rounds.delta, futility=rounds.futility,
                                         choosing=(choosing[n].passed, choosing[n].runs))
                 for n in names if before[n].passed > 0}
        return Detectable(suite, RepeatedDrops(level, power, drops, most=rounds.max_repeats))
    drops = {n: one_test_drop(before[n].passed, before[n].runs, after[n].runs, level=level, power=power)
             for n in names if before[n].passed > 0}
    return Detectable(suite, RepeatedDrops(level, power, drops))


def _cases(baseline: RunReport, candidate: RunReport, share: float, power: float) -> Headline | None:
    """Whether each case passed, paired by id over the cases scored on both sides. One pass over the candidate's
    cases with counts (a group's sum and size where cases are grouped), never a list per case: reports can hold
    hundreds of thousands."""
    if not baseline.cases or not candidate.cases:
        return None
    before = {head.id: head.passed is True for head in case_heads(baseline.cases) if _scored(head.status)}
    rows = fell = rose = passed = 0
    groups: dict[Any, list[int]] = {}  # group -> [sum of changes, cases]
    for head in case_heads(candidate.cases):
        was = before.get(head.id)
        if was is None or not _scored(head.status):
            continue
        rows += 1
        passed += was
        change = int(head.passed is True) - int(was)
        if head.group is not None:
            entry = groups.setdefault(head.group, [0, 0])
            entry[0] += change
            entry[1] += 1
        elif change:
            fell, rose = fell + (change < 0), rose + (change > 0)
    if not rows:
        return None
    alone = rows - sum(size for _, size in groups.values())
    found = (counted_spread(alone, fell, rose) if not groups else
             spread([*range(alone), *(("group", g) for g in groups)],
                    [*([-1.0] * fell + [1.0] * rose + [0.0] * (alone - fell - rose)),
                     *(total / size for total, size in groups.values())]))
    return Headline("case pass rate", "group" if groups else "case", found, rows, share, power, 1,
                    suite_drop(found.units, found.sd, level=share, power=power), base=passed / rows)


def _scored(status: object) -> bool:
    return status != "unscored"


def _tests(baseline: RunReport, candidate: RunReport, fell: int, rose: int, share: float,
           power: float) -> Headline | None:
    """Whether each test passed, paired by test id: only the counts of tests that fell and rose move the spread."""
    both = sum(map(candidate.outcomes.__contains__, baseline.outcomes))  # no set of a million ids
    if not both or share >= 0.5:
        return None
    found = counted_spread(both, fell, rose)
    return Headline("test pass rate", "test", found, both, share, power, 1,
                    suite_drop(found.units, found.sd, level=share, power=power))
