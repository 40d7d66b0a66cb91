"""The policy's rules: one small function per rule, in the order their findings are listed. Pure.

A rule reads a `Compared` (two reports under one policy) and yields findings (evalkit.gate.findings): its id, its
effect, the tests or cases concerned, the figures, and the message rendered from them. `decide` runs the list;
renderers, JUnit output and `policy-diff` read the findings, so a new rule is a policy field (evalkit.core.policy)
plus one function registered here with `@rule`, and nothing else changes.

Three stages: `precondition` rules are decided first, and when one finds something the reports are not compared
at all (a run on the wrong split, another dataset or judge); `comparison` rules decide over the compared tests,
metrics and grades; `warning` rules only inform.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from evalkit.core.errors import ConfigError, describe_validation
from evalkit.core.policy import Policy
from evalkit.core.registry import Kind, load_all
from evalkit.gate.calibration import check_of
from evalkit.gate.comparable import incomparability, undeclared_tool_changes
from evalkit.gate.compared import Compared, sampled, unmatched_critical
from evalkit.gate.findings import Effect, Finding
from evalkit.gate.headline import points
from evalkit.gate.release import scored, why_unpaired
from evalkit.gate.repeats import fisher_lower_p, wilson_interval
from evalkit.gate.sequential_rule import pool
from evalkit.judging.judge_health import judge_warnings

__all__ = ["BUILTIN", "RULES", "RULE_SETS", "Rule", "RuleSet", "Stage", "incomparable_finding", "policy_rules",
           "reference", "registered", "repeat_messages", "rule", "rules_for"]

Stage = Literal["precondition", "comparison", "warning"]
Check = Callable[[Compared], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: its id, the policy fields that configure it, and its check."""

    id: str
    fields: tuple[str, ...]
    check: Check
    stage: Stage = "comparison"
    per_test: str = ""
    """How a test it blocks on is described in JUnit output (`regressed: passed on the baseline`); without it
    the finding's message is used."""
    graded: bool = False
    """Whether it reads graded cases (program suites): a policy that enables one lists the failing cases."""
    options: type[BaseModel] | None = None
    """For another package's rule: the model of its options under the policy's `rules.<id>` (pydantic, best with
    `extra="forbid"`), checked before the rule runs; the check reads them as `c.policy.rules["<id>"]`."""

    @property
    def summary(self) -> str:
        """The first paragraph of the check's docstring, on one line: what the rule does, for the docs reference."""
        return " ".join((self.check.__doc__ or "").strip().split("\n\n")[0].split())

    def enabled(self, policy: Policy) -> bool:
        """Whether the policy turns the rule on: a rule without fields always runs."""
        return not self.fields or any(getattr(policy, name, None) for name in self.fields)


RULES: list[Rule] = []
"""evalkit's own rules, in the order their findings are listed (which is the order of a decision's reasons)."""


@dataclass(frozen=True)
class RuleSet:
    """The gate rules one package registers (in the `evalkit.rules` entry points), in the order of their findings.

    evalkit's own set is registered so too (`evalkit = "evalkit.gate.rules:BUILTIN"` in its pyproject.toml); its
    rules are turned on by the policy's own fields, another package's only by the policy's `rules:`."""

    name: str
    rules: Sequence[Rule]


RULE_SETS: Kind[RuleSet] = Kind("evalkit.rules", "rule set", RuleSet, lambda rule_set: rule_set.name)
"""The gate-rule extension point in evalkit's registry (public in evalkit.plugins)."""

BUILTIN = RuleSet("evalkit", RULES)
"""evalkit's own rule set: the list the `@rule` decorators below fill, in their order."""


def policy_rules(policy: Policy) -> list[Rule]:
    """The rules a decision under this policy runs: evalkit's own, then each rule of another installed package
    that the policy names under `rules:`, its options checked. A named rule that no package provides, or bad
    options, is refused in one line (exit 3): a reviewed policy must decide alike wherever it runs."""
    if not policy.rules:
        return list(RULES)
    builtin = {r.id for r in RULES}
    offered: dict[str, tuple[Rule, str]] = {}
    for name, rule_set in load_all(RULE_SETS).items():
        if name == BUILTIN.name:
            continue
        for plugin_rule in rule_set.rules:
            owner = "evalkit" if plugin_rule.id in builtin else offered.get(plugin_rule.id, (None, ""))[1]
            if owner:
                raise ConfigError(f"gate rule '{plugin_rule.id}' of rule set '{name}' is also a rule of {owner}; "
                                  "uninstall one of the packages")
            offered[plugin_rule.id] = (plugin_rule, name)
    chosen = []
    for rule_id, options in policy.rules.items():
        if rule_id not in offered:
            raise ConfigError(f"policy rules: gate rule '{rule_id}' is not installed (rules of installed packages: "
                              f"{', '.join(sorted(offered)) or 'none'}); install the package that provides it")
        plugin_rule, _ = offered[rule_id]
        if plugin_rule.options is not None:
            try:
                plugin_rule.options.model_validate(options)
            except ValidationError as error:
                raise ConfigError(describe_validation(error, plugin_rule.options, f"policy rules.{rule_id}")) from None
        chosen.append(plugin_rule)
    return [*RULES, *chosen]


def rule(rule_id: str, *fields: str, stage: Stage = "comparison", per_test: str = "",
         graded: bool = False) -> Callable[[Check], Check]:
    """Register the decorated function as the rule `rule_id`, configured by the policy's `fields`."""
    def register(check: Check) -> Check:
        if any(existing.id == rule_id for existing in RULES):
            raise ValueError(f"rule {rule_id!r} is registered twice")
        RULES.append(Rule(rule_id, fields, check, stage, per_test, graded))
        return check
    return register


@contextmanager
def registered(extra: Rule) -> Iterator[Rule]:
    """Run with one more rule in the list (a policy's own rule under test), removed again afterwards."""
    RULES.append(extra)
    try:
        yield extra
    finally:
        RULES.remove(extra)


def rules_for(rule_id: str) -> Rule | None:
    return next((r for r in RULES if r.id == rule_id), None)


def reference() -> str:
    """The rules as a Markdown table for the docs: id, stage, the policy fields that configure it, what it does."""
    lines = ["| rule | stage | policy fields | what it finds |", "|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.stage} | {', '.join(f'`{name}`' for name in r.fields) or '(always)'} | {r.summary} |"
              for r in RULES]
    return "\n".join(lines) + "\n"


def _few(items: Sequence[str], shown: int = 3) -> str:
    return ", ".join(items[:shown]) + (f", ... {len(items) - shown} more" if len(items) > shown else "")


def _effect(setting: str) -> Effect | None:
    """A policy's block / review / ignore setting as the effect of what it applies to (None: ignored)."""
    return None if setting == "ignore" else Effect(setting)


# --- preconditions: when one fires, the reports are not compared -------------------------------------------

@rule("not_acceptance_split", "require_split", stage="precondition")
def not_acceptance_split(c: Compared) -> Iterator[Finding]:
    """Only a run on the policy's split can pass: any other split blocks, whatever the baseline."""
    policy, dataset = c.policy, c.candidate.dataset
    if policy.require_split is None or dataset.get("split") == policy.require_split:
        return
    split = dataset.get("split")
    ran = f"split {split}" if split else "every split at once" if dataset else "a dataset without splits"
    yield Finding("not_acceptance_split", Effect.BLOCK,
                  f"not_acceptance_split: the candidate ran {ran}; this policy releases only on the "
                  f"{policy.require_split} split (rerun with split={policy.require_split})",
                  figures={"split": split, "required": policy.require_split})


def incomparable_finding(policy: Policy, message: str, subject: str = "") -> Finding:
    """Why two runs cannot be compared, with the effect the policy's `on_incomparable` gives it (a decision of
    incomparable is a block that is not the candidate's fault)."""
    effect = Effect.REVIEW if policy.on_incomparable == "review" else Effect.BLOCK
    return Finding("incomparable", effect, message, subject=subject or message)


@rule("incomparable", "on_incomparable", "tool_changes", stage="precondition")
def incomparable(c: Compared) -> Iterator[Finding]:
    """Runs of another suite, dataset or judge are not compared: incomparable, review or block, as the policy
    says."""
    for message in incomparability(c.baseline.eval, c.candidate.eval):
        yield incomparable_finding(c.policy, message)
    for message in undeclared_tool_changes(c.baseline.eval, c.candidate.eval, c.policy.tool_changes):
        yield incomparable_finding(c.policy, message)


# --- comparison ------------------------------------------------------------------------------------------------

@rule("run_problem")
def run_problem(c: Compared) -> Iterator[Finding]:
    """A candidate whose pytest record shows a problem (collection errors, an interrupted run) blocks."""
    for problem in c.candidate.problems:
        yield Finding("run_problem", Effect.BLOCK, problem, subject=problem)


@rule("incomplete_run")
def incomplete_run(c: Compared) -> Iterator[Finding]:
    """Nothing is dropped from a denominator: a run with unscored cases blocks (cases the budget denied are the
    `budget_denied` rule's)."""
    denied = c.candidate.denied
    unscored = [case for case in c.candidate.unscored if case not in denied]
    if unscored:
        yield Finding("incomplete_run", Effect.BLOCK,
                      f"incomplete run: {len(unscored)} unscored ({', '.join(unscored[:5])}"
                      f"{', ...' if len(unscored) > 5 else ''})",
                      figures={"unscored": len(unscored), "cases": list(unscored)})


@rule("budget_denied", "on_budget_denied")
def budget_denied(c: Compared) -> Iterator[Finding]:
    """A run cut short by its budget is incomplete, never a set of regressions: the cases whose calls the budget
    denied are named once, with the budget, and block (or call for review, `on_budget_denied: review`); their
    skipped tests are left out of the regressions and critical failures."""
    denied = c.candidate.denied
    if denied:
        cases = list(denied)
        why = sorted(set(denied.values()))
        budget = "; ".join(reason.removeprefix("budget_denied: ") for reason in why[:3])
        effect = Effect.REVIEW if c.policy.on_budget_denied == "review" else Effect.BLOCK
        yield Finding("budget_denied", effect,
                      f"incomplete: {len(cases)} case(s) denied by the budget ({budget}): {_few(cases)}",
                      figures={"cases": cases, "denied": len(cases), "budget": why},
                      subject="budget")


@rule("could_not_run")
def could_not_run(c: Compared) -> Iterator[Finding]:
    """A declared check that could not run on a case (a case field it reads is missing there, its pattern ran past
    its time budget, its schema refers to nothing) blocks, naming the check, its cases and why: it measured nothing
    there, so neither a pass nor a failure it shares with the baseline may stand for the candidate."""
    for check, cases in sorted(c.candidate.could_not_run.items()):
        ids = sorted(cases)
        yield Finding("could_not_run", Effect.BLOCK, f"could_not_run: check {check} could not run on {len(ids)} "
                      f"case(s) ({_few(ids)}): {cases[ids[0]]}",
                      figures={"check": check, "cases": ids, "why": cases[ids[0]]}, subject=check)


@rule("regression", "max_regressions", "regressions", per_test="regressed: passed on the baseline")
def regression(c: Compared) -> Iterator[Finding]:
    """More tests that passed on the baseline and do not pass now than `max_regressions` allows."""
    regressed, policy = c.tests.regressed, c.policy
    effect = _effect(policy.regressions)
    if effect is None or len(regressed) <= policy.max_regressions:
        return
    # the regressions of checks whose judge is not calibrated (min_judge_kappa) count only towards review
    capped = [name for name in regressed if check_of(name) in c.uncalibrated]
    figures = {"regressed": len(regressed), "allowed": policy.max_regressions}
    if len(regressed) - len(capped) > policy.max_regressions or effect is not Effect.BLOCK:
        yield Finding("regression", effect, f"{len(regressed)} regression(s); policy allows {policy.max_regressions}",
                      regressed, figures)
    else:
        checks = ", ".join(sorted({check_of(name) for name in capped}))
        yield Finding("regression", Effect.REVIEW, f"{len(regressed)} regression(s); policy allows "
                      f"{policy.max_regressions} (capped at review: {len(capped)} of them are of {checks}, whose "
                      "judge is not calibrated, see judge_calibration)", regressed, {**figures, "capped": len(capped)})


@rule("new_failing", "new_failing", per_test="new failing test (new_failing: block)")
def new_failing(c: Compared) -> Iterator[Finding]:
    """Tests that do not pass on the candidate and are absent from the baseline."""
    tests, effect = c.tests.new_failing, _effect(c.policy.new_failing)
    if tests and effect is not None:
        yield Finding("new_failing", effect, f"{len(tests)} new test(s) not passing (absent from the baseline)",
                      tests, {"new_failing": len(tests)})


@rule("critical", "critical", per_test="critical test does not pass")
def critical(c: Compared) -> Iterator[Finding]:
    """A critical test that does not pass on the candidate blocks, whatever the baseline did."""
    tests = c.tests.critical_failures
    if tests:
        yield Finding("critical", Effect.BLOCK, f"{len(tests)} critical test(s) fail", tests,
                      {"failing": len(tests)})


@rule("missing_critical", "critical", per_test="critical test absent from the candidate")
def missing_critical(c: Compared) -> Iterator[Finding]:
    """A critical test of the baseline that is absent from the candidate blocks."""
    tests = c.tests.missing_critical
    if tests:
        yield Finding("missing_critical", Effect.BLOCK,
                      f"{len(tests)} critical test(s) from the baseline are missing from the candidate", tests,
                      {"missing": len(tests)})


@rule("judge_flips", "judge_flips", per_test="the judge both passed and failed the reply over its own repeats")
def judge_flips(c: Compared) -> Iterator[Finding]:
    """A judged check whose judge both passed and failed one reply over its own repeats (`judge.repeats`) calls
    for review (or blocks, as `judge_flips` says), naming the check and its cases; the test is never a regression
    on its own: a person decides what the reply deserves."""
    effect = _effect(c.policy.judge_flips)
    if effect is None:
        return
    for check, block in sorted(c.candidate.judges.items()):
        if not block.flips:
            continue
        cases = [flip.case for flip in block.flips]
        shown = "; ".join(f"{flip.case}: " + ", ".join(
            "/".join("none" if v is None else v for v in levels) for levels in flip.verdicts.values())
            for flip in block.flips[:3]) + (f"; ... {len(cases) - 3} more" if len(cases) > 3 else "")
        yield Finding("judge_flips", effect, f"judge_flips: check {check}: its judge gave one reply both a pass and "
                      f"a fail over {block.repeats} repeats on {len(cases)} case(s) ({shown}); a flip is not a "
                      "regression on its own: a person decides these cases",
                      tuple(flip.test for flip in block.flips),
                      {"check": check, "cases": cases, "repeats": block.repeats}, subject=check)


@rule("judge_calibration", "min_judge_kappa")
def judge_calibration(c: Compared) -> Iterator[Finding]:
    """A judged check the policy's `min_judge_kappa` asks to be calibrated against people that has no calibration,
    one below its floor, or one made for another judge fingerprint calls for review, saying which and why; its
    other findings are capped at review (evalkit.gate.calibration)."""
    for check, why in sorted(c.uncalibrated.items()):
        yield Finding("judge_calibration", Effect.REVIEW, why.message, figures=why.figures, subject=check)


@rule("pass_rate", "min_pass_rate")
def pass_rate(c: Compared) -> Iterator[Finding]:
    """The candidate's pass rate (passing / all tests) below the policy's floor blocks."""
    rate, floor = c.tests.pass_rate, c.policy.min_pass_rate
    if rate < floor:
        yield Finding("pass_rate", Effect.BLOCK, f"pass rate {rate:.3f} is below {floor}",
                      figures={"pass_rate": rate, "floor": floor})


@rule("ran_pass_rate", "min_ran_pass_rate")
def ran_pass_rate(c: Compared) -> Iterator[Finding]:
    """The pass rate of the tests that ran below the policy's floor blocks; no test ran is below any floor."""
    rate, floor = c.tests.ran_pass_rate, c.policy.min_ran_pass_rate
    if floor and (rate is None or rate < floor):
        shown = "not measurable (no test ran)" if rate is None else f"{rate:.3f}"
        yield Finding("ran_pass_rate", Effect.BLOCK, f"pass rate of the tests that ran {shown} is below {floor}",
                      figures={"ran_pass_rate": rate, "floor": floor})


@rule("critical_case", "critical_cases")
def critical_case(c: Compared) -> Iterator[Finding]:
    """A critical case blocks when it is absent or any of its checks did not pass."""
    for case_id in c.policy.critical_cases:
        case = c.cases.get(case_id)
        if case is None:
            yield Finding("critical_case", Effect.BLOCK, f"critical case {case_id} is missing from the candidate",
                          figures={"case": case_id, "missing": True}, subject=case_id)
            continue
        # a check skipped as not applicable is not a failure; the case's `passed` says whether it passed
        failed = sorted(name for name, outcome in (case.get("checks") or {}).items()
                        if outcome not in ("passed", "skipped"))
        if failed or not case.get("passed", False):
            yield Finding("critical_case", Effect.BLOCK,
                          f"critical case {case_id} failed: {', '.join(failed) or 'no passing checks'}",
                          figures={"case": case_id, "missing": False, "failed_checks": failed}, subject=case_id)


@rule("suite_drop", "repeats")
def suite_drop(c: Compared) -> Iterator[Finding]:
    """With repeated samples: pass fractions that fell across cases (the sign-flip test below alpha/2) block."""
    repeated = c.repeated
    suite = repeated.suite if repeated is not None else None
    if repeated is None or suite is None or not repeated.suite_drop:
        return
    test = "sign-flip" if repeated.method == "fixed" else "sequential (paired bets over rounds, always-valid)"
    yield Finding("suite_drop", Effect.BLOCK,
                  f"pass fractions fell across cases: mean change {suite.difference:+.3f} "
                  f"(interval {suite.interval[0]:+.3f} to {suite.interval[1]:+.3f}), {test} "
                  f"p={repeated.suite_p:.2g} below alpha/2 = {repeated.alpha / 2:g}",
                  figures={"difference": suite.difference, "interval": list(suite.interval),
                           "p": repeated.suite_p, "alpha": repeated.alpha})


@rule("unreliable_baseline", "repeats")
def unreliable_baseline(c: Compared) -> Iterator[Finding]:
    """With repeated samples: tests that pass only some samples on the baseline, as `repeats:` says."""
    flaky = c.repeated.unreliable_baseline if c.repeated is not None else ()
    effect = _effect(c.policy.repeats.unreliable_baseline)
    if flaky and effect is not None:
        yield Finding("unreliable_baseline", effect,
                      f"unreliable_baseline: {len(flaky)} test(s) pass only some samples on the baseline "
                      f"({', '.join(flaky[:3])}{', ...' if len(flaky) > 3 else ''})", tuple(flaky),
                      {"unreliable": len(flaky)})


@rule("insufficient_data", "repeats")
def insufficient_data(c: Compared) -> Iterator[Finding]:
    """With repeated samples: too few for any outcome to reach alpha, as `repeats:` says."""
    why = c.repeated.insufficient_data if c.repeated is not None else None
    effect = _effect(c.policy.repeats.insufficient_data)
    if why and effect is not None:
        yield Finding("insufficient_data", effect, f"insufficient_data: {why}", figures={"why": why})


@rule("too_small_to_tell", "repeats", per_test="passed every sample on the baseline, fails some now (too few "
                                             "samples to tell)")
def too_small_to_tell(c: Compared) -> Iterator[Finding]:
    """With repeated samples: a test that passed every sample on the baseline and fails some on the candidate,
    where the drop is not significant at these sample sizes, is named for review (as `repeats:` says): the run is
    too small to tell a regression from chance, which must not read as go. A single run's rule is unchanged."""
    repeated, effect = c.repeated, _effect(c.policy.repeats.too_small_to_tell)
    if repeated is None or effect is None:
        return
    fixed = repeated.method == "fixed"
    was, now = (c.baseline.repeats if fixed else pool(c.baseline)), c.candidate.repeats
    critical = set(c.tests.critical_failures)  # these block already, every sample demanded
    names = sorted(name for name in was.keys() & now.keys()
                   if 0 < was[name].runs == was[name].passed and now[name].passed < now[name].runs
                   and name not in repeated.regressed and name not in critical)
    if not names:
        return
    counts = []
    for name in names:
        before, after = was[name], now[name]
        p = f" (one-sided Fisher p={fisher_lower_p(before.passed, before.runs, after.passed, after.runs):.2g})" \
            if fixed else ""
        counts.append(f"{name}: candidate {after.passed}/{after.runs}, baseline {before.passed}/{before.runs}{p}")
    yield Finding("too_small_to_tell", effect,
                  f"too_small_to_tell: {len(names)} test(s) passed every sample on the baseline and fail some on the "
                  f"candidate, a drop this run is too small to tell from chance at alpha/2 = {repeated.alpha / 2:g} "
                  f"({_few(counts)}); rerun both sides with more repeats (run.repeats=N), or review these tests",
                  tuple(names), {"tests": len(names), "alpha": repeated.alpha})


@rule("detectable_drop", "max_detectable_drop", "power")
def detectable_drop(c: Compared) -> Iterator[Finding]:
    """A run that could not have detected a drop of `max_detectable_drop` in the suite's headline metric (at the
    suite guard's level, with the policy's `power`) calls for review, naming how many cases or repeats would."""
    target = c.policy.max_detectable_drop
    suite = c.detectable.suite
    if target is None or (suite is not None and not suite.at_floor and suite.drop is not None
                          and suite.drop <= target + 1e-12):
        return
    if suite is not None and suite.at_floor:  # a figure for a drop from 0 would pass a run that can show none
        yield Finding("detectable_drop", Effect.REVIEW,
                      f"detectable_drop: {suite.sentence()}; the policy asks for {points(target)}",
                      figures={"drop": None, "required": target, "base": suite.base})
        return
    if suite is None:
        yield Finding("detectable_drop", Effect.REVIEW, "detectable_drop: the two runs share no case or test to "
                      f"pair, so no drop could be detected; the policy asks for {points(target)}",
                      figures={"drop": None, "required": target})
        return
    units, repeats = suite.units_for(target), suite.repeats_for(target)
    word = suite.unit
    ways = []
    if units is not None:
        extra = "" if suite.unit != "group" else f" (about {round(units * suite.rows_per_unit)} cases)"
        ways.append(f"{units} {word}s{extra} at these repeats ({max(0, units - suite.spread.units)} more)")
    if repeats is not None:
        ways.append(f"run.repeats={repeats} with these {word}s")
    else:
        ways.append(f"more repeats alone cannot reach it (the drop may fall on a few {word}s)")
    yield Finding("detectable_drop", Effect.REVIEW,
                  f"detectable_drop: {suite.sentence()}; the policy asks for {points(target)}: "
                  + "; ".join(ways),
                  figures={"drop": suite.drop, "required": target, "units": suite.spread.units, "unit": suite.unit,
                           "level": suite.level, "power": suite.power, "units_needed": units,
                           "repeats_needed": repeats})


@rule("metric_floor", "block_below", "review_below")
def metric_floor(c: Compared) -> Iterator[Finding]:
    """A metric below its floor on the candidate, or no longer measurable, blocks (or calls for review)."""
    for floors, effect in ((c.policy.block_below, Effect.BLOCK), (c.policy.review_below, Effect.REVIEW)):
        for name, floor in floors.items():
            value = c.candidate.metrics.get(name)
            if value is None:
                message = f"{name} cannot be measured on the candidate (floor {floor})"
            elif value < floor:
                message = f"{name} {value:.3f} is below {floor}"
            else:
                continue
            yield Finding("metric_floor", effect, message, figures={"metric": name, "value": value, "floor": floor},
                          subject=name)


@rule("metric_drop", "block_on_drop", "review_on_drop")
def metric_drop(c: Compared) -> Iterator[Finding]:
    """A metric that fell below the baseline's value, beyond the drop the policy allows it (a drop to
    not-measurable is a drop)."""
    for names, effect in ((c.policy.block_on_drop, Effect.BLOCK), (c.policy.review_on_drop, Effect.REVIEW)):
        for name in names:
            change = c.metrics.get(name)
            allowed = c.policy.allowed_drop(name, names)
            if change is not None and change.status == "regressed" and not (  # a fall within its allowance is none
                    allowed and change.before is not None and change.after is not None
                    and change.before - change.after <= allowed):
                after_text = "no longer measurable" if change.after is None else f"{change.after:.3f}"
                before_text = "not measured" if change.before is None else f"{change.before:.3f}"
                yield Finding("metric_drop", effect, f"{name} fell {before_text} -> {after_text}",
                              figures={"metric": name, "before": change.before, "after": change.after},
                              subject=name)


_UNSCORED = ("Skipped: unscored: ", "Skipped: could not run: ")
"""How the skip of a test over an unscored case begins (evalkit.run.plugin, evalkit.run.declared)."""


@rule("unmeasurable")
def unmeasurable(c: Compared) -> Iterator[Finding]:
    """A test that ran on the baseline without passing and is skipped on the candidate, or a metric the baseline
    measured that the candidate cannot (no case measured it, or its report has no such metric, and no floor or drop
    rule of the policy names it), calls for review: what was measured never vanishes from a decision unremarked."""
    # a test skipped because its case is unscored is named by incomplete_run and could_not_run, which block
    skipped = [name for name in c.tests.unmeasured if not c.candidate.messages.get(name, "").startswith(_UNSCORED)]
    if skipped:
        yield Finding("unmeasurable", Effect.REVIEW, f"unmeasurable: {len(skipped)} test(s) that ran on the baseline "
                      f"are skipped on the candidate ({_few(skipped)})", tuple(skipped), {"skipped": len(skipped)},
                      subject="tests")
    policy = c.policy
    decided = {*policy.block_below, *policy.review_below, *policy.block_on_drop, *policy.review_on_drop}
    for name, change in c.metrics.items():
        if change.before is None or change.after is not None or name in decided:
            continue
        absent = name not in c.candidate.metrics
        why = "its report has no such metric" if absent else "no case measured it"
        yield Finding("unmeasurable", Effect.REVIEW, f"unmeasurable: {name} was {change.before:.3f} on the baseline "
                      f"and cannot be measured on the candidate ({why})",
                      figures={"metric": name, "before": change.before, "after": None, "absent": absent},
                      subject=name)


# --- release evidence over graded cases (program suites) -------------------------------------------------------

@rule("incomplete_or_unscored_pairs", "require_complete_pairs", graded=True)
def incomplete_or_unscored_pairs(c: Compared) -> Iterator[Finding]:
    """Every case must be scored on both sides; a missing, denied or unscored side blocks."""
    if not c.policy.require_complete_pairs:
        return
    before, after = c.grades.before, c.grades.after
    incomplete = [f"{cid}: {why_unpaired(before.get(cid), grade)}" for cid, grade in after.items()
                  if not (scored(grade) and scored(before.get(cid)))]
    incomplete += [f"{cid}: missing from the candidate" for cid in before if cid not in after]
    if incomplete:
        yield Finding("incomplete_or_unscored_pairs", Effect.BLOCK,
                      f"incomplete_or_unscored_pairs: {len(incomplete)} of {len(after)} case(s) lack a scored "
                      f"pair ({_few(incomplete)})", figures={"unpaired": incomplete, "cases": len(after)})


@rule("safety_or_unknown_failure", "block_on_safety", graded=True)
def safety_or_unknown_failure(c: Compared) -> Iterator[Finding]:
    """A candidate case failing safety, or graded without a safety verdict, blocks."""
    after = c.grades.after
    unsafe = [cid for cid, g in after.items() if scored(g) and g.get("safety_pass") is not True]
    unknown = [cid for cid, g in after.items() if not scored(g)]
    if c.policy.block_on_safety and (unsafe or unknown):
        parts = [f"{len(unsafe)} safety failure(s) ({_few(unsafe)})"] if unsafe else []
        parts += [f"{len(unknown)} case(s) with unknown outcome ({_few(unknown)})"] if unknown else []
        yield Finding("safety_or_unknown_failure", Effect.BLOCK, "safety_or_unknown_failure: " + "; ".join(parts),
                      figures={"unsafe": unsafe, "unknown": unknown})


@rule("unresolved_review", "block_on_review", graded=True)
def unresolved_review(c: Compared) -> Iterator[Finding]:
    """A candidate case still pending a person's review blocks."""
    pending = [cid for cid, g in c.grades.after.items() if g.get("review_pending") is True]
    if c.policy.block_on_review and pending:
        yield Finding("unresolved_review", Effect.BLOCK,
                      f"unresolved_review: {len(pending)} case(s) await a person's review ({_few(pending)}); "
                      "record decisions with evalkit review", figures={"pending": pending})


def _lost(c: Compared, verdict: str) -> list[str]:
    """Cases whose `verdict` passes on the baseline and fails on the candidate."""
    before = c.grades.before
    return [cid for cid, g in c.grades.after.items()
            if (before.get(cid) or {}).get(verdict) is True and g.get(verdict) is False]


@rule("new_task_regression", "block_on_task_regression", graded=True)
def new_task_regression(c: Compared) -> Iterator[Finding]:
    """A case whose task passes on the baseline and fails on the candidate blocks."""
    lost = _lost(c, "task_pass") if c.policy.block_on_task_regression else []
    if lost:
        yield Finding("new_task_regression", Effect.BLOCK, f"new_task_regression: {len(lost)} case(s) pass on the "
                      f"baseline and fail now ({_few(lost)})", figures={"cases": lost})


@rule("new_answer_quality_regression", "block_on_quality_regression", graded=True)
def new_answer_quality_regression(c: Compared) -> Iterator[Finding]:
    """A case whose quality passes on the baseline and fails on the candidate blocks."""
    lost = _lost(c, "quality_pass") if c.policy.block_on_quality_regression else []
    if lost:
        yield Finding("new_answer_quality_regression", Effect.BLOCK, f"new_answer_quality_regression: {len(lost)} "
                      f"case(s) pass on the baseline and fail now ({_few(lost)})", figures={"cases": lost})


@rule("paired_interval_below_noninferiority_margin", "paired", graded=True)
def paired_interval_below_noninferiority_margin(c: Compared) -> Iterator[Finding]:
    """The paired bootstrap's lower bound of task success below the policy's margin blocks."""
    rule_ = c.policy.paired
    if rule_ is None:
        return
    result = c.paired
    code = "paired_interval_below_noninferiority_margin"
    if result is None:
        yield Finding(code, Effect.BLOCK, f"{code}: no scored pairs, so no interval", figures={"pairs": 0})
        return
    low, high = result.interval
    if low < rule_.margin:
        yield Finding(code, Effect.BLOCK, f"{code}: lower bound {low:.3f} < margin {rule_.margin} (difference "
                      f"{result.difference:.3f}, {result.confidence:.0%} interval [{low:.3f}, {high:.3f}], "
                      f"{result.groups} groups)",
                      figures={"lower": low, "upper": high, "margin": rule_.margin, "difference": result.difference,
                               "groups": result.groups})


# --- warnings: what a reviewer should know that does not decide ------------------------------------------------

@rule("unmatched_critical", "critical", stage="warning")
def unmatched_critical_entry(c: Compared) -> Iterator[Finding]:
    """A `critical` entry that names no test in either report: most likely a typo, which protects nothing."""
    for name in unmatched_critical(c.policy.critical, c.baseline.outcomes, c.candidate.outcomes):
        yield Finding("unmatched_critical", Effect.WARN, f"critical {name!r} matches no test in either report; "
                      "check the name (a test-name or class-name prefix, or Class::test)", subject=name)


@rule("baseline_problem", stage="warning")
def baseline_problem(c: Compared) -> Iterator[Finding]:
    """Problems of the baseline's run (they do not decide: the candidate is what is gated)."""
    for problem in c.baseline.problems:
        yield Finding("baseline_problem", Effect.WARN, f"baseline: {problem}", subject=problem)


@rule("one_side_sampled", stage="warning")
def one_side_sampled(c: Compared) -> Iterator[Finding]:
    """Only one side carries repeated samples: outcomes are compared as single runs."""
    if sampled(c.baseline) != sampled(c.candidate):
        side = "baseline" if sampled(c.baseline) else "candidate"
        yield Finding("one_side_sampled", Effect.WARN, f"only the {side} carries repeated samples; outcomes were "
                      "compared as single runs (run both sides with the same run.repeats for the statistical rule)",
                      figures={"sampled": side})


@rule("judge_health", stage="warning")
def judge_health(c: Compared) -> Iterator[Finding]:
    """A judge that gave one verdict to nearly every case of the candidate, or whose reasons repeat the reply, is
    warned about: its verdicts may measure nothing (evalkit.judging.judge_health); `evalkit calibrate` checks it."""
    for warning in judge_warnings(c.candidate.cases):
        yield Finding("judge_health", Effect.WARN, warning.message(), figures=warning.to_json(),
                      subject=warning.metric)


def repeat_messages(c: Compared) -> dict[str, str]:
    """For each significantly regressed test: both sides' pass counts, the candidate's Wilson interval, p."""
    out: dict[str, str] = {}
    if c.repeated is None:
        return out
    fixed = c.repeated.method == "fixed"
    was = c.baseline.repeats if fixed else pool(c.baseline)
    for name, p in c.repeated.regressed.items():
        before, after = was[name], c.candidate.repeats[name]
        low, high = wilson_interval(after.passed, after.runs)
        test = "one-sided Fisher p" if fixed else "sequential (always-valid) p"
        out[name] = (f"{after.passed}/{after.runs} samples passed (95% interval {low:.2f}-{high:.2f}), baseline "
                     f"{before.passed}/{before.runs}; {test}={p:.2g}")
    return out
