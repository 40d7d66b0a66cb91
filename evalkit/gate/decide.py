"""The gate: decide(policy, baseline, candidate) -> Decision. Pure: no I/O, no clock, no randomness.

The rules are evalkit.gate.rules, run in their order; this module turns their findings into a decision.
Run `evalkit gate BASELINE CANDIDATE` for the command-line front (evalkit/cli/gate.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from evalkit.core.policy import Policy
from evalkit.gate.calibration import Calibration, cap
from evalkit.gate.comparable import changed_components, incomparability
from evalkit.gate.compared import Compared, is_critical, unmatched_critical
from evalkit.gate.decision import Decision, Verdict
from evalkit.gate.findings import Effect, Finding
from evalkit.gate.release import failures
from evalkit.gate.repeats import RepeatsOutcome
from evalkit.gate.rules import Rule, Stage, policy_rules, repeat_messages
from evalkit.records.report_reader import RunReport

__all__ = ["decide", "refuse", "verdict_of", "incomparability", "changed_components", "is_critical",
           "unmatched_critical"]


def verdict_of(findings: Iterable[Finding]) -> Verdict:
    """Any block blocks; otherwise any review calls for review; otherwise go. Warnings never decide."""
    effects = {finding.effect for finding in findings}
    return Verdict.BLOCK if Effect.BLOCK in effects else Verdict.REVIEW if Effect.REVIEW in effects else Verdict.GO


def refuse(policy: Policy, findings: Iterable[Finding], changed: dict[str, tuple[Any, Any]],
           warnings: Iterable[Finding] = ()) -> Decision:
    """The decision on runs that were not compared: a refused split blocks, naming every problem; runs that
    measured different things are what the policy's `on_incomparable` says."""
    found = list(findings)
    if any(f.rule != "incomparable" for f in found):  # no baseline makes a run on the wrong split releasable
        found = [dataclasses.replace(f, effect=Effect.BLOCK) for f in found]
        verdict = Verdict.BLOCK
    elif policy.on_incomparable == "incomparable":
        verdict = Verdict.INCOMPARABLE
    else:
        verdict = verdict_of(found)
    return Decision(verdict, (*found, *warnings), changed)


def decide(policy: Policy, baseline: RunReport, candidate: RunReport,
           calibration: Calibration | None = None) -> Decision:
    """Compare per-test outcomes of baseline and candidate under the policy; `calibration` is the judge calibration
    the caller found for the policy's `min_judge_kappa` (evalkit.gate.calibration)."""
    compared = Compared(policy, baseline, candidate, calibration)
    changed = changed_components(baseline.eval, candidate.eval)
    rules = policy_rules(policy)
    warnings = _run(rules, compared, "warning")
    refused = _run(rules, compared, "precondition")
    if refused:
        return refuse(policy, refused, changed, warnings)
    found = cap(_run(rules, compared, "comparison"), compared.uncalibrated)
    tests = compared.tests
    graded = any(r.graded and r.enabled(policy) for r in rules)
    repeated = compared.repeated
    return Decision(
        verdict_of(found), (*found, *warnings), changed, round(tests.pass_rate, 3),
        tests.regressed, tests.fixed, tests.critical_failures, tests.missing_critical,
        tests=len(candidate.outcomes), passed=tests.passed,
        metrics={name: change.to_json() for name, change in compared.metrics.items()},
        statistics=_paired(compared) if graded else None, failures=failures(compared.grades) if graded else (),
        outcomes=tests.outcomes,
        ran_pass_rate=None if tests.ran_pass_rate is None else round(tests.ran_pass_rate, 3),
        new_failing=tests.new_failing,
        messages=_messages((*tests.regressed, *tests.critical_failures, *tests.missing_critical,
                            *tests.new_failing), candidate) | repeat_messages(compared),
        repeats=_repeat_summary(repeated, compared) if repeated else None,
        detectable=compared.detectable.to_json(),
    )


def _run(rules: list[Rule], compared: Compared, stage: Stage) -> list[Finding]:
    return [finding for rule in rules if rule.stage == stage for finding in rule.check(compared)]


def _paired(compared: Compared) -> dict[str, Any] | None:
    """The paired bootstrap's result as decision.json carries it, None when not asked for or without pairs."""
    rule, result = compared.policy.paired, compared.paired
    if rule is None or result is None:
        return None
    return {**result.model_dump(mode="json"), "margin": rule.margin, "pairs": len(compared.grades.paired),
            "planned": len(compared.grades.after)}


def _repeat_summary(repeated: RepeatsOutcome, compared: Compared) -> dict[str, Any]:
    return {"method": repeated.method, "alpha": repeated.alpha, "regressed": dict(sorted(repeated.regressed.items())),
            "unreliable_baseline": list(repeated.unreliable_baseline),
            "insufficient_data": repeated.insufficient_data,
            "suite": repeated.suite.model_dump(mode="json") if repeated.suite else None,
            "suite_p": repeated.suite_p, "suite_drop": repeated.suite_drop,
            "disagree": _disagree(compared)}


def _disagree(compared: Compared) -> dict[str, dict[str, list[int]]]:
    """Tests repeated on both sides whose samples disagree on either (0 < k < N): each side's [k, N]."""
    before, after = compared.baseline.repeats, compared.candidate.repeats
    return {name: {"candidate": [after[name].passed, after[name].runs],
                   "baseline": [before[name].passed, before[name].runs]}
            for name in sorted(before.keys() & after.keys())
            if 0 < after[name].passed < after[name].runs or 0 < before[name].passed < before[name].runs}


def _messages(names: tuple[str, ...], candidate: RunReport) -> dict[str, str]:
    """Why each listed test did not pass, in one line, where the candidate's report says (sorted by test id)."""
    out = {}
    for name in sorted(set(names)):
        if name not in candidate.outcomes:
            out[name] = "absent from the candidate"
        elif name in candidate.messages:
            out[name] = candidate.messages[name]
    return out
