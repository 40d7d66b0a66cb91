"""Decision words and the exit codes that carry them to CI."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from evalkit.gate.findings import Effect, Finding
from evalkit.records.decision import DecisionFile, Evidence

__all__ = ["Verdict", "ExitCode", "exit_code", "Decision"]


class Verdict(enum.StrEnum):
    """What the gate says about a candidate."""

    GO = "go"
    REVIEW = "review"
    BLOCK = "block"
    INCOMPARABLE = "incomparable"


class ExitCode(enum.IntEnum):
    """Process exit codes. Decisions use 0-2; errors never share a code with a decision."""

    GO = 0
    BLOCK = 1
    INCOMPARABLE = 2
    INPUT_ERROR = 3  # bad file, bad config, bad command line: one line says which and what to fix
    INTERNAL_ERROR = 4  # a bug in evalkit or a suite; the traceback is printed
    OUTAGE = 5  # a live run's model server failed: nothing was gated; the journal keeps what succeeded


def exit_code(verdict: Verdict, review_fails: bool = False) -> ExitCode:
    """The exit code of a decision; `review` passes unless the policy makes it fail the job."""
    if verdict is Verdict.REVIEW:
        return ExitCode.BLOCK if review_fails else ExitCode.GO
    return {Verdict.GO: ExitCode.GO, Verdict.BLOCK: ExitCode.BLOCK,
            Verdict.INCOMPARABLE: ExitCode.INCOMPARABLE}[verdict]


@dataclass(frozen=True)
class Decision:
    """The gate's answer with everything a reviewer needs to check it."""

    decision: Verdict
    findings: tuple[Finding, ...] = ()
    """What each rule found, in the rules' order (evalkit.gate.rules): the reasons, review reasons and warnings
    below are their messages."""
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Key components that differ: name -> (baseline, candidate)."""
    pass_rate: float | None = None
    regressed: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    critical_failures: tuple[str, ...] = ()
    missing_critical: tuple[str, ...] = ()
    tests: int = 0
    passed: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    """Per metric: before, after, delta, status (see evalkit.gate.compare)."""
    statistics: dict[str, Any] | None = None
    """The paired bootstrap of task success (estimand, difference, interval, seed, resamples), when the policy
    asks for one."""
    failures: tuple[dict[str, Any], ...] = ()
    """Graded suites: candidate cases failing task, quality or safety, with both sides' reasons."""
    outcomes: dict[str, int] = field(default_factory=dict)
    """The candidate's tests per outcome (passed, failed, error, skipped, xfailed, xpassed), plugins' outcomes
    read by what they mean."""
    ran_pass_rate: float | None = None
    """Passing / (passing + failed + error): the pass rate over the tests that ran and were expected to pass
    (skipped and xfailed left out); None when there are none."""
    new_failing: tuple[str, ...] = ()
    """Tests that do not pass on the candidate and are absent from the baseline (a new check, or a new test that
    errors); the policy's `new_failing` says whether they block, call for review or are only listed."""
    messages: dict[str, str] = field(default_factory=dict)
    """nodeid -> the first line of why it did not pass, for each regressed, critical and new failing test that
    says why (a test absent from the candidate: `absent from the candidate`)."""
    repeats: dict[str, Any] | None = None
    """When both sides sampled each test several times: alpha, the significantly regressed tests (Fisher p),
    unreliable_baseline, insufficient_data, the suite's paired bootstrap of per-case pass fractions, and each
    test whose samples disagree on either side (`disagree`: both sides' [k, N])."""
    detectable: dict[str, Any] | None = None
    """The smallest drops the comparison could have detected (evalkit.gate.headline): `suite`, the headline
    metric's (metric, unit, units, level, power, drop), and with repeats `tests`, each test's; None for runs that
    were not compared."""

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why it blocks (or, for incomparable, why the runs cannot be compared)."""
        return self._messages(Effect.BLOCK)

    @property
    def review_reasons(self) -> tuple[str, ...]:
        """Reasons that call for a person's review; they decide only when nothing blocks."""
        return self._messages(Effect.REVIEW)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a reviewer should know that does not decide: a critical name matching no test, a baseline whose
        run had problems."""
        return self._messages(Effect.WARN)

    def _messages(self, effect: Effect) -> tuple[str, ...]:
        return tuple(finding.message for finding in self.findings if finding.effect is effect)

    def record(self, *, baseline: str | None = None, evidence: Evidence | None = None) -> DecisionFile:
        """The decision as `decision.json` holds it (evalkit.records.decision), with the baseline it was made
        against as it was named to the command, and what it was made from; both are left out where a decision is
        printed on its own."""
        return DecisionFile(
            baseline=baseline, decision=self.decision.value, reasons=list(self.reasons), changed=self.changed,
            pass_rate=self.pass_rate, regressed=list(self.regressed), fixed=list(self.fixed),
            critical_failures=list(self.critical_failures), missing_critical=list(self.missing_critical),
            tests=self.tests, passed=self.passed, review_reasons=list(self.review_reasons), metrics=self.metrics,
            statistics=self.statistics, failures=list(self.failures), warnings=list(self.warnings),
            outcomes=self.outcomes, ran_pass_rate=self.ran_pass_rate, new_failing=list(self.new_failing),
            messages=self.messages, findings=[finding.record() for finding in self.findings], repeats=self.repeats,
            detectable=self.detectable, evidence=evidence)
