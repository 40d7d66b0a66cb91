"""What the policy's rules read: two run reports compared once, under one policy. Pure.

Each comparison is computed the first time a rule asks for it, so a decision refused before its tests are compared
(another dataset, the wrong split) never walks them, and a report without graded cases never pairs grades.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import chain, compress
from operator import not_
from typing import Any

from evalkit.core.failure import first_line
from evalkit.core.nodeid import matches_critical
from evalkit.core.policy import Policy
from evalkit.gate.calibration import Calibration, Uncalibrated, uncalibrated
from evalkit.gate.classified import classified_pairs, paired_intervals
from evalkit.gate.compare import MetricChange, compare_metrics
from evalkit.gate.headline import Detectable, detectable
from evalkit.gate.release import Grades, grades, paired_bootstrap
from evalkit.gate.repeats import RepeatsOutcome, compare_repeats
from evalkit.gate.sequential_rule import compare_sequential, pool
from evalkit.gate.stats import PairedStatistics
from evalkit.records.report_reader import FAILING, PASSING, RunReport

__all__ = ["Compared", "TestChanges", "critical_of", "is_critical", "sampled", "unmatched_critical"]


def is_critical(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    """A test is critical when its name, or a class it is in, starts with one of the policy's prefixes, or an entry
    with parameters is its id (evalkit.core.nodeid.matches_critical: parameters take no part in a prefix)."""
    return matches_critical(nodeid, prefixes)


def critical_of(policy: Policy, *reports: RunReport | None) -> tuple[str, ...]:
    """The critical tests of a comparison: the policy's, then those a suite's checks.yaml marks critical in any
    of the reports, as if the policy listed them (so the gate and every page tag the same tests)."""
    declared = (name for report in reports if report is not None for name in report.critical)
    return (*policy.critical, *dict.fromkeys(declared))


def unmatched_critical(prefixes: tuple[str, ...], *sides: Iterable[str]) -> list[str]:
    """The policy's critical entries that name no test on any side: most likely a typo, so said as a warning."""
    out = []
    for prefix in prefixes:
        # a substring scan first (C speed over millions of ids); only ids that contain the entry are parsed
        bare = prefix.split("::")[-1] if "::" in prefix else prefix
        if not any(is_critical(nodeid, (prefix,)) for side in sides for nodeid in side if bare in nodeid):
            out.append(prefix)
    return out


def sampled(report: RunReport) -> bool:
    """Whether a report sampled tests more than once: counts of one sample each are single runs (N = 1)."""
    return any(counts.runs > 1 for counts in report.repeats.values())


@dataclass(frozen=True)
class TestChanges:
    """Per test, baseline against candidate (sorted test ids), and the candidate's own pass rates."""

    regressed: tuple[str, ...]
    fixed: tuple[str, ...]
    critical_failures: tuple[str, ...]
    missing_critical: tuple[str, ...]
    new_failing: tuple[str, ...]
    unmeasured: tuple[str, ...]
    """Tests that ran on the baseline without passing (failed, error) and are skipped on the candidate: no longer
    measured, where a pass would have been a fix."""
    denied: tuple[str, ...]
    """Tests skipped on the candidate because evalkit made no reply for their case (the budget denied its calls):
    not measured, so neither regressions, critical failures nor new failures; the run is incomplete instead
    (the `budget_denied` rule)."""
    passed: int
    outcomes: dict[str, int]
    """The candidate's tests per outcome."""
    pass_rate: float
    """Passing / all tests: a skip or an xfail lowers it."""
    ran_pass_rate: float | None
    """Passing / (passing + failed + error), None when no such test ran."""


def _denied_tests(report: RunReport, failing: Iterable[str]) -> set[str]:
    """The tests of `failing` that evalkit's plugin skipped with the reason a case's `denied` mark gives (`Skipped:
    unscored: budget_denied: ...`): only evalkit's own unmade calls, never another tool's errored sample, which
    stays a failure of its test."""
    reasons = set(report.denied.values())
    if not reasons:
        return set()
    skips = {first_line(f"Skipped: unscored: {reason}") for reason in reasons}  # as the report keeps a message
    messages, outcomes = report.messages, report.outcomes
    return {name for name in failing if outcomes.get(name) == "skipped" and messages.get(name) in skips}


def _not_passing(outcomes: Mapping[str, str]) -> list[str]:
    """The tests that did not pass, in the report's order, found without a bytecode loop over the passing ones."""
    return list(compress(outcomes, map(not_, map(PASSING.__contains__, outcomes.values()))))


@dataclass(frozen=True)
class Compared:
    """A baseline and a candidate under a policy, compared lazily."""

    policy: Policy
    baseline: RunReport
    candidate: RunReport
    calibration: Calibration | None = None
    """The judge calibration the edge found for `min_judge_kappa` (None: it looked for none)."""

    @cached_property
    def uncalibrated(self) -> dict[str, Uncalibrated]:
        """The judged checks `min_judge_kappa` asks to be calibrated that are not (evalkit.gate.calibration)."""
        return uncalibrated(self.policy, self.candidate, self.calibration)

    @cached_property
    def flipped(self) -> dict[str, str]:
        """Test id -> check, for the candidate's tests whose judge flipped on its own repeats, unless the policy
        ignores flips (`judge_flips: ignore`)."""
        return {} if self.policy.judge_flips == "ignore" else self.candidate.judge_flips

    @cached_property
    def repeated(self) -> RepeatsOutcome | None:
        """The statistical comparison, when both sides sampled their tests several times; for a candidate sampled
        in rounds (`run.repeats=auto`) the sequential one, against the baseline's samples (single runs included)."""
        rule = self.policy.repeats
        rounds = self.candidate.sequential
        if rounds is not None:
            return compare_sequential(pool(self.baseline), self.candidate.repeats, alpha=rule.alpha,
                                      max_repeats=rounds.max_repeats, seed=rule.seed,
                                      resamples=rule.resamples)
        if not (sampled(self.baseline) and sampled(self.candidate)):
            return None
        return compare_repeats(self.baseline.repeats, self.candidate.repeats, alpha=rule.alpha,
                               min_repeats=rule.min_repeats, seed=rule.seed, resamples=rule.resamples)

    @cached_property
    def tests(self) -> TestChanges:
        before, after = self.baseline.outcomes, self.candidate.outcomes
        critical = critical_of(self.policy, self.baseline, self.candidate)
        # Reports can hold millions of tests, nearly all passing on both sides: only the tests that do not pass on
        # one side, or are missing from the candidate, are looked at one by one (the rest in C: set operations)
        failing = _not_passing(after)
        missing = before.keys() - after.keys()
        regressed = [name for name in chain(failing, missing) if before.get(name) in PASSING]
        fixed = [name for name in _not_passing(before) if after.get(name) in PASSING]
        missing_critical = [name for name in missing if is_critical(name, critical)]
        repeated = self.repeated
        if repeated is not None:
            # a test sampled on both sides regresses only when its drop is significant (evalkit.gate.repeats)
            both = self.candidate.repeats
            was = pool(self.baseline) if self.candidate.sequential is not None else self.baseline.repeats
            regressed = [name for name in regressed if name not in both or name not in was]
            regressed += [name for name in repeated.regressed if name not in regressed]
            fixed = [name for name in fixed if name not in both or name not in was]
            fixed += [name for name in repeated.improved if name not in fixed]
        flipped = self.flipped
        if flipped:  # a flip is the judge's noise, reviewed by judge_flips: never a regression on its own
            regressed = [name for name in regressed if name not in flipped]
        denied = _denied_tests(self.candidate, failing)
        if denied:  # not measured: the budget_denied rule names their cases once, as an incomplete run
            regressed = [name for name in regressed if name not in denied]
        counts = Counter(after.values())
        passed = len(after) - len(failing)
        ran = passed + sum(counts[o] for o in FAILING)
        return TestChanges(
            regressed=tuple(sorted(regressed)), fixed=tuple(sorted(fixed)),
            critical_failures=tuple(sorted(name for name in failing
                                           if name not in denied and is_critical(name, critical))),
            missing_critical=tuple(sorted(missing_critical)),
            new_failing=tuple(sorted(name for name in failing if name not in before and name not in denied)),
            denied=tuple(sorted(denied)),
            unmeasured=tuple(sorted(name for name in failing
                                    if after[name] == "skipped" and before.get(name) in FAILING)),
            passed=passed, outcomes=dict(sorted(counts.items())),
            # an empty candidate loads only with problems that block
            pass_rate=passed / len(after) if after else 0.0, ran_pass_rate=passed / ran if ran else None)

    @cached_property
    def metrics(self) -> dict[str, MetricChange]:
        """Every metric's change; a classification metric with the paired interval of its change, where both
        reports kept each case's labels for the same check."""
        changes = compare_metrics(self.baseline.metrics, self.candidate.metrics)
        checks = sorted(self.baseline.classification.keys() & self.candidate.classification.keys())
        groups = {str(c.get("id")): str(c.get("group", c.get("id"))) for c in self.candidate.cases}
        for check in checks:
            before = classified_pairs(self.baseline.classification[check])
            after = classified_pairs(self.candidate.classification[check])
            prefix = "" if len(self.candidate.classification) == 1 else f"{check}."
            for name, interval in paired_intervals(before, after, groups).items():
                change = changes.get(prefix + name)
                if change is not None and change.delta is not None:
                    changes[prefix + name] = replace(change, interval=interval)
        return changes

    @cached_property
    def grades(self) -> Grades:
        """Graded cases paired by case id, for the release-evidence rules."""
        return grades(self.baseline, self.candidate)

    @cached_property
    def paired(self) -> PairedStatistics | None:
        """The paired cluster bootstrap of task success the policy's `paired` asks for, None when it asks for
        none or no case is scored on both sides."""
        rule = self.policy.paired
        return None if rule is None else paired_bootstrap(rule, self.grades)

    @cached_property
    def detectable(self) -> Detectable:
        """The smallest drops this comparison could have detected: the suite's headline metric, and each repeated
        test (evalkit.gate.headline)."""
        tests = self.tests
        return detectable(self.policy, self.baseline, self.candidate, repeated=self.repeated,
                          graded=self.grades if self.policy.paired is not None else None,
                          regressed=tests.regressed, fixed=tests.fixed)

    @cached_property
    def cases(self) -> Mapping[str, Mapping[str, Any]]:
        """The candidate's cases by id."""
        return {str(c.get("id")): c for c in self.candidate.cases}
