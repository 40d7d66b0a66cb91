"""The gate: decide(policy, baseline, candidate) -> Decision. Pure: no I/O, no clock, no randomness.

Run `python -m evalkit.gate BASELINE CANDIDATE` for the command-line front (evalkit/gate_cli.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from evalkit.core.nodeid import matches_critical
from evalkit.core.policy import Policy
from evalkit.core.report import FAILING, PASSING, RunReport
from evalkit.gate.compare import compare_metrics
from evalkit.gate.decision import Decision, Verdict
from evalkit.gate.release import release_rules, split_refusal, uses_release_rules
from evalkit.gate.repeats import RepeatsOutcome, compare_repeats, wilson_interval

__all__ = ["decide", "incomparability", "changed_components", "is_critical"]

# Key fields that say what was measured and how, rather than which change is under test.
_NOT_COMPONENTS = frozenset({"key_version", "suite", "dataset", "dataset_sha", "judge_model", "judge_sha"})


def incomparability(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """Why two eval keys cannot be compared (empty when they can), each reason naming what to rerun."""
    b, c = baseline, candidate
    reasons = []
    if "suite" in b and "suite" in c and b["suite"] != c["suite"]:
        reasons.append(f"baseline is a run of suite {b['suite']}, candidate of suite {c['suite']}; "
                       "gate a candidate against a baseline of the same suite")
    if b.get("dataset_sha") != c.get("dataset_sha"):
        reasons.append(f"baseline ran {b.get('dataset')} ({b.get('dataset_sha')}), candidate ran "
                       f"{c.get('dataset')} ({c.get('dataset_sha')}); rerun the baseline on the candidate's dataset")
    if b.get("judge_model") != c.get("judge_model") and str(c.get("judge_model")).startswith("checks@"):
        reasons.append(f"the suite's graders and checks changed ({b.get('judge_model')} -> {c.get('judge_model')}); "
                       "grades are not comparable: rerun the baseline under the candidate's checks")
    elif b.get("judge_model") != c.get("judge_model"):
        reasons.append(f"judge changed from {b.get('judge_model')} to {c.get('judge_model')}; judged scores are "
                       "not comparable: rerun the baseline with the candidate's judge (or keep the judge pinned)")
    elif None not in (b.get("judge_sha"), c.get("judge_sha")) and b.get("judge_sha") != c.get("judge_sha"):
        # a baseline from before the key held the judge's options has no judge_sha: nothing to compare
        reasons.append(f"the judge's options changed (judge settings {b.get('judge_sha')} -> {c.get('judge_sha')}); "
                       "judged scores are not comparable: rerun the baseline with the candidate's judge settings")
    return reasons


def changed_components(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Components whose name or fingerprint differs, in the baseline key's order."""
    b, c = _flatten(baseline), _flatten(candidate)
    names = [k for k in b if k not in _NOT_COMPONENTS] + [k for k in c if k not in b and k not in _NOT_COMPONENTS]
    return {k: (b.get(k), c.get(k)) for k in names if b.get(k) != c.get(k)}


def _flatten(key: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in key.items():
        if name == "settings":  # beside the key (evalkit.core.key.with_settings): what its fingerprints cover
            continue
        if isinstance(value, Mapping):
            out.update({f"{name}.{k}": v for k, v in value.items()})
        else:
            out[name] = value
    return out


def is_critical(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    """A test is critical when its name, or a class it is in, starts with one of the policy's prefixes
    (evalkit.core.nodeid.matches_critical: parameters in `[...]` never take part)."""
    return matches_critical(nodeid, prefixes)


def unmatched_critical(prefixes: tuple[str, ...], *sides: Iterable[str]) -> list[str]:
    """The policy's critical entries that name no test on any side: most likely a typo, so said as a warning."""
    out = []
    for prefix in prefixes:
        # a substring scan first (C speed over millions of ids); only ids that contain the entry are parsed
        bare = prefix.split("::")[-1] if "::" in prefix else prefix
        if not any(is_critical(nodeid, (prefix,)) for side in sides for nodeid in side if bare in nodeid):
            out.append(prefix)
    return out


def _run_warnings(policy: Policy, baseline: RunReport, candidate: RunReport) -> list[str]:
    warnings = [f"critical {name!r} matches no test in either report; check the name (a test-name or class-name "
                "prefix, or Class::test)" for name in unmatched_critical(policy.critical, baseline.outcomes,
                                                                         candidate.outcomes)]
    warnings += [f"baseline: {problem}" for problem in baseline.problems]
    if _sampled(baseline) != _sampled(candidate):
        side = "baseline" if _sampled(baseline) else "candidate"
        warnings.append(f"only the {side} carries repeated samples; outcomes were compared as single runs "
                        "(run both sides with the same run.repeats for the statistical rule)")
    return warnings


def decide(policy: Policy, baseline: RunReport, candidate: RunReport) -> Decision:
    """Compare per-test outcomes of baseline and candidate under the policy."""
    changed = changed_components(baseline.eval, candidate.eval)
    blocked = incomparability(baseline.eval, candidate.eval)
    wrong_split = split_refusal(policy, candidate)
    warnings = tuple(_run_warnings(policy, baseline, candidate))
    if wrong_split:  # no baseline can make a run on the wrong split releasable: block, naming both problems
        return Decision(Verdict.BLOCK, (wrong_split, *blocked), changed, warnings=warnings)
    if blocked:  # the policy decides what an incomparable baseline means (seed 000: incomparable; 001: review)
        if policy.on_incomparable == "review":
            return Decision(Verdict.REVIEW, (), changed, review_reasons=tuple(blocked), warnings=warnings)
        verdict = Verdict.BLOCK if policy.on_incomparable == "block" else Verdict.INCOMPARABLE
        return Decision(verdict, tuple(blocked), changed, warnings=warnings)

    before, after = baseline.outcomes, candidate.outcomes
    critical = policy.critical
    regressed, fixed, missing_critical = [], [], []
    for name, outcome in before.items():  # one pass each way: reports can hold millions of tests
        now = after.get(name)
        if outcome in PASSING:
            if now not in PASSING:
                regressed.append(name)
        elif now in PASSING:
            fixed.append(name)
        if now is None and is_critical(name, critical):
            missing_critical.append(name)
    failing = [name for name, outcome in after.items() if outcome not in PASSING]
    critical_failures = sorted(name for name in failing if is_critical(name, critical))
    new_failing = sorted(name for name in failing if name not in before)
    regressed.sort()
    fixed.sort()
    repeated = None
    if _sampled(baseline) and _sampled(candidate):
        # a test sampled on both sides regresses only when its drop is significant (evalkit.gate.repeats)
        rule = policy.repeats
        repeated = compare_repeats(baseline.repeats, candidate.repeats, alpha=rule.alpha,
                                   min_repeats=rule.min_repeats, seed=rule.seed, resamples=rule.resamples)
        both = candidate.repeats
        regressed = sorted({name for name in regressed if name not in both or name not in baseline.repeats}
                           | set(repeated.regressed))
        fixed = [name for name in fixed if name not in both or name not in baseline.repeats]
    missing_critical.sort()
    counts = Counter(after.values())
    passed = len(after) - len(failing)
    # pass_rate keeps seed 000's definition (passing / all tests: a skip or an xfail lowers it); ran_pass_rate
    # leaves out what did not run or was expected to fail (skipped, xfailed)
    pass_rate = passed / len(after) if after else 0.0  # an empty candidate loads only with problems that block
    ran = passed + sum(counts[o] for o in FAILING)
    ran_pass_rate = passed / ran if ran else None

    reasons: list[str] = list(candidate.problems)
    review: list[str] = []
    unscored = candidate.unscored
    if unscored:  # nothing is dropped from a denominator: an incomplete run cannot pass
        reasons.append(f"incomplete run: {len(unscored)} unscored ({', '.join(unscored[:5])}"
                       f"{', ...' if len(unscored) > 5 else ''})")
    if len(regressed) > policy.max_regressions and policy.regressions != "ignore":
        (reasons if policy.regressions == "block" else review).append(
            f"{len(regressed)} regression(s); policy allows {policy.max_regressions}")
    if new_failing and policy.new_failing != "ignore":
        (reasons if policy.new_failing == "block" else review).append(
            f"{len(new_failing)} new test(s) not passing (absent from the baseline)")
    if critical_failures:
        reasons.append(f"{len(critical_failures)} critical test(s) fail")
    if missing_critical:
        reasons.append(f"{len(missing_critical)} critical test(s) from the baseline are missing from the candidate")
    if pass_rate < policy.min_pass_rate:
        reasons.append(f"pass rate {pass_rate:.3f} is below {policy.min_pass_rate}")
    if policy.min_ran_pass_rate and (ran_pass_rate is None or ran_pass_rate < policy.min_ran_pass_rate):
        shown = "not measurable (no test ran)" if ran_pass_rate is None else f"{ran_pass_rate:.3f}"
        reasons.append(f"pass rate of the tests that ran {shown} is below {policy.min_ran_pass_rate}")
    reasons += _critical_cases(policy, candidate)
    if repeated is not None:
        _repeat_reasons(policy, repeated, reasons, review)
    metrics = compare_metrics(baseline.metrics, candidate.metrics)
    for floors, out in ((policy.block_below, reasons), (policy.review_below, review)):
        for name, floor in floors.items():
            value = candidate.metrics.get(name)
            if value is None:
                out.append(f"{name} cannot be measured on the candidate (floor {floor})")
            elif value < floor:
                out.append(f"{name} {value:.3f} is below {floor}")
    for names, out in ((policy.block_on_drop, reasons), (policy.review_on_drop, review)):
        for name in names:
            change = metrics.get(name)
            if change is not None and change.status == "regressed":
                after_text = "no longer measurable" if change.after is None else f"{change.after:.3f}"
                before_text = "not measured" if change.before is None else f"{change.before:.3f}"
                out.append(f"{name} fell {before_text} -> {after_text}")
    release = release_rules(policy, baseline, candidate) if uses_release_rules(policy) else None
    if release is not None:
        reasons += release.reasons
    verdict = Verdict.BLOCK if reasons else Verdict.REVIEW if review else Verdict.GO
    return Decision(
        verdict, tuple(reasons), changed, round(pass_rate, 3),
        tuple(regressed), tuple(fixed), tuple(critical_failures), tuple(missing_critical),
        tests=len(after), passed=passed, review_reasons=tuple(review),
        metrics={name: vars(change) for name, change in metrics.items()},
        statistics=release.statistics if release else None, failures=release.failures if release else (),
        warnings=warnings, outcomes=dict(sorted(counts.items())),
        ran_pass_rate=None if ran_pass_rate is None else round(ran_pass_rate, 3),
        new_failing=tuple(new_failing),
        messages=_messages((*regressed, *critical_failures, *missing_critical, *new_failing), candidate)
        | (_repeat_messages(repeated, baseline, candidate) if repeated else {}),
        repeats=_repeat_summary(repeated) if repeated else None,
    )


def _sampled(report: RunReport) -> bool:
    """Whether a report sampled tests more than once: counts of one sample each are single runs (N = 1)."""
    return any(counts.runs > 1 for counts in report.repeats.values())


def _repeat_reasons(policy: Policy, repeated: RepeatsOutcome, reasons: list[str], review: list[str]) -> None:
    """The suite guard blocks; flaky baselines and too few samples do what the policy's `repeats:` says."""
    suite = repeated.suite
    if repeated.suite_drop and suite is not None:
        reasons.append(f"pass fractions fell across cases: mean change {suite.difference:+.3f} "
                       f"(interval {suite.interval[0]:+.3f} to {suite.interval[1]:+.3f}), sign-flip "
                       f"p={repeated.suite_p:.2g} below alpha/2 = {repeated.alpha / 2:g}")
    rule = policy.repeats
    flaky = repeated.unreliable_baseline
    if flaky and rule.unreliable_baseline != "ignore":
        (reasons if rule.unreliable_baseline == "block" else review).append(
            f"unreliable_baseline: {len(flaky)} test(s) pass only some samples on the baseline "
            f"({', '.join(flaky[:3])}{', ...' if len(flaky) > 3 else ''})")
    if repeated.insufficient_data and rule.insufficient_data != "ignore":
        (reasons if rule.insufficient_data == "block" else review).append(
            f"insufficient_data: {repeated.insufficient_data}")


def _repeat_messages(repeated: RepeatsOutcome, baseline: RunReport, candidate: RunReport) -> dict[str, str]:
    """For each significantly regressed test: both sides' pass counts, the candidate's Wilson interval, p."""
    out = {}
    for name, p in repeated.regressed.items():
        before, after = baseline.repeats[name], candidate.repeats[name]
        low, high = wilson_interval(after.passed, after.runs)
        out[name] = (f"{after.passed}/{after.runs} samples passed (95% interval {low:.2f}-{high:.2f}), baseline "
                     f"{before.passed}/{before.runs}; one-sided Fisher p={p:.2g}")
    return out


def _repeat_summary(repeated: RepeatsOutcome) -> dict[str, Any]:
    return {"alpha": repeated.alpha, "regressed": dict(sorted(repeated.regressed.items())),
            "unreliable_baseline": list(repeated.unreliable_baseline),
            "insufficient_data": repeated.insufficient_data,
            "suite": repeated.suite.model_dump(mode="json") if repeated.suite else None,
            "suite_p": repeated.suite_p, "suite_drop": repeated.suite_drop}


def _messages(names: tuple[str, ...], candidate: RunReport) -> dict[str, str]:
    """Why each listed test did not pass, in one line, where the candidate's report says (sorted by test id)."""
    out = {}
    for name in sorted(set(names)):
        if name not in candidate.outcomes:
            out[name] = "absent from the candidate"
        elif name in candidate.messages:
            out[name] = candidate.messages[name]
    return out


def _critical_cases(policy: Policy, candidate: RunReport) -> list[str]:
    """A critical case blocks when it is absent or any of its checks did not pass; the reason names them."""
    cases = {str(c.get("id")): c for c in candidate.cases}
    out = []
    for case_id in policy.critical_cases:
        case = cases.get(case_id)
        if case is None:
            out.append(f"critical case {case_id} is missing from the candidate")
            continue
        # a check skipped as not applicable is not a failure; the case's `passed` says whether it passed
        failed = sorted(name for name, outcome in (case.get("checks") or {}).items()
                        if outcome not in ("passed", "skipped"))
        if failed or not case.get("passed", False):
            out.append(f"critical case {case_id} failed: {', '.join(failed) or 'no passing checks'}")
    return out

