"""How big a run must be to detect a given drop, and what it would cost, from one run report. Pure.

From a baseline's report (or a pilot run's): the suite's units (cases, their groups, or tests), the spread of
per-unit changes an unchanged system would show (measured from the samples' pass rates where the report has
repeats; taken as none where it has one sample per case, which says so), and per case and sample what a run
spent (calls, tokens, latency). The figures are evalkit.gate.detectable's, at the gate's levels: the suite's
paired guard at alpha / 2, a single test at alpha / 2 over the tests compared. Money is each side's tokens (the
model under test's, the judge's) at a price table's figures: the prices the report recorded, or a price file's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from evalkit.core.errors import InputError, describe_validation
from evalkit.core.money import Side, Tokens, call_cost
from evalkit.core.prices import PriceEntry, price_of
from evalkit.gate.detectable import Spread, cases_needed, one_test_drop, one_test_repeats, suite_drop
from evalkit.gate.floor import bound, informative
from evalkit.gate.headline import Headline
from evalkit.records.report import Cost, Latency
from evalkit.records.report_reader import PASSING, RunReport, case_heads

__all__ = ["LADDER", "Design", "Plan", "Pricing", "Usage", "plan", "recorded_pricing", "table_pricing"]

LADDER = (1, 2, 3, 5, 10, 20)
"""Repeats per call the plan considers (with the report's own)."""


@dataclass(frozen=True)
class Usage:
    """What one case's sample cost in the report: calls (model and judge), tokens, and the calls' latency."""

    calls: float
    input_tokens: float
    output_tokens: float
    mean_ms: float | None
    """Mean latency of the report's measured calls; None when none was measured (a replay)."""
    p95_ms: float | None
    judge_input_tokens: float = 0.0
    """The judge's part of `input_tokens` (priced at the judge's figures)."""
    judge_output_tokens: float = 0.0


@dataclass(frozen=True)
class Pricing:
    """The prices a plan costs its designs at: each side's name and entry (None: the table has none for it), and
    where the figures come from."""

    model: Side
    judge: Side | None
    """None: the report made no judge calls."""
    source: str
    """`the report's recorded prices`, or the price file given."""

    @property
    def unpriced(self) -> list[str]:
        """The names of the sides without an entry."""
        sides = [self.model, *([self.judge] if self.judge is not None else [])]
        return list(dict.fromkeys(side.name for side in sides if side.price is None))


@dataclass(frozen=True)
class Design:
    """A run of `cases` cases with `repeats` samples per call, and what it would take."""

    repeats: int
    units: int
    cases: int
    drop: float | None
    """The smallest drop it detects."""
    calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    money: float | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class Plan:
    """The suite as it is, the cheapest designs that reach the target, and how the figures were reached."""

    target: float
    alpha: float
    power: float
    concurrency: int
    now: Headline
    """What the suite detects as it is (its units, its repeats)."""
    current: Design
    """The suite as it is, as a design: what a run of it takes."""
    noise: str
    """How the spread of an unchanged system's changes was found."""
    designs: tuple[Design, ...]
    """Per number of repeats, the fewest units that reach the target; left out: designs that cannot, and those
    that need no fewer units than one with fewer repeats."""
    tests: int
    test_now: float | None
    """What one test passing all its samples on the baseline detects at the report's repeats."""
    test_repeats: int | None
    """The samples per side at which one such test detects the target; None beyond the most a run may take."""
    usage: Usage | None
    pricing: Pricing | None
    """The prices money is planned at; None: the report recorded none and no price file was given."""

    @property
    def best(self) -> Design | None:
        """The design with the fewest calls (the fewest samples where calls are unknown)."""
        if not self.designs:
            return None
        return min(self.designs, key=lambda d: (d.calls if d.calls is not None else d.cases * d.repeats, d.repeats))


def plan(report: RunReport, *, target: float, alpha: float, power: float, concurrency: int,
         pricing: Pricing | None = None) -> Plan:
    """The plan to detect a drop of `target` in the report's suite at a decision-wide `alpha` with `power`."""
    if not 0 < target <= 1:
        raise ValueError(f"target is {target!r}; a drop lies in (0, 1]")
    level = alpha / 2
    metric, unit, units, rows, repeats, sd, noise = _units(report)
    if bound(_base(report, metric)) == "floor":
        other = informative(report)
        raise InputError(f"the report's {metric} is 0 (every {unit} failed), so no drop from it can be detected "
                         "and a plan for one would spend calls that can show nothing; "
                         + (f"{other} differs across the cases: gate on it (the policy's review_on_drop)"
                            if other else "no per-case metric or check differs across its cases either")
                         + ", or fix what fails every case (a judge that fails every reply: evalkit calibrate)")
    now = Headline(metric, unit, Spread(units, sd, 0.0), rows, level, power, repeats,
                   suite_drop(units, sd, level=level, power=power))
    usage = _usage(report, rows, repeats)
    per_unit = rows / units if units else 1.0
    designs: list[Design] = []
    for runs in sorted({*LADDER, repeats}):
        scaled = sd * math.sqrt(repeats / runs)  # sampling noise shrinks as 1 / repeats
        needed = cases_needed(target, scaled, level=level, power=power)
        if needed is None:
            continue
        if designs and needed >= designs[-1].units:
            continue  # more repeats that need no fewer units only cost more
        cases = math.ceil(needed * per_unit)
        designs.append(_costed(Design(runs, needed, cases, suite_drop(needed, scaled, level=level, power=power)),
                               usage, pricing, concurrency))
    tests = len(report.outcomes)
    test_level = level / max(1, tests)
    current = _costed(Design(repeats, units, rows, now.drop), usage, pricing, concurrency)
    return Plan(target, alpha, power, concurrency, now, current, noise, tuple(designs), tests,
                one_test_drop(repeats, repeats, repeats, level=test_level, power=power) if repeats > 1 else None,
                one_test_repeats(target, 1.0, level=test_level, power=power), usage, pricing)


def _units(report: RunReport) -> tuple[str, str, int, int, int, float, str]:
    """The headline metric's name, unit, units, rows, repeats per call, spread of an unchanged system's changes,
    and how that spread was found."""
    heads = case_heads(report.cases)
    groups = {head.id: head.group for head in heads if head.group is not None}
    sampled = {name: counts for name, counts in report.repeats.items() if counts.runs > 1}
    if sampled:
        runs = statistics.mode(counts.runs for counts in sampled.values())
        by_case: dict[str, list[float]] = {}
        for name, counts in sampled.items():
            rate = counts.passed / counts.runs
            by_case.setdefault(counts.case or name, []).append(math.sqrt(rate * (1 - rate)))
        by_unit: dict[Any, list[float]] = {}
        for case, sds in by_case.items():
            by_unit.setdefault(("group", groups[case]) if case in groups else case, []).append(statistics.fmean(sds))
        # an unchanged unit's change of mean pass fraction: both sides sampled `runs` times; the tests (and the
        # cases of a group) taken as moving together, the widest they can
        variance = statistics.fmean(2 * statistics.fmean(sds) ** 2 / runs for sds in by_unit.values())
        return ("pass fraction per case", "group" if groups else "case", len(by_unit), len(by_case), runs,
                math.sqrt(variance), f"measured from {len(sampled)} tests' {runs} samples each (the pass rates' "
                "binomial spread, tests of a case taken as moving together)")
    scored = [head for head in heads if head.status != "unscored"]
    one = ("one sample per call: how much an unchanged system's results vary cannot be measured from it, and is "
           "taken as none (right for a deterministic model; plan from a pilot run with run.repeats=N otherwise)")
    if scored:
        units = len({("group", h.group) if h.group is not None else h.id for h in scored})
        return "case pass rate", "group" if groups else "case", units, len(scored), 1, 0.0, one
    return "test pass rate", "test", len(report.outcomes), len(report.outcomes), 1, 0.0, one


def _base(report: RunReport, metric: str) -> float | None:
    """The report's own value of the headline metric `_units` chose (None: nothing to average)."""
    if metric == "pass fraction per case":
        sampled = [counts.passed / counts.runs for counts in report.repeats.values() if counts.runs > 1]
        return statistics.fmean(sampled) if sampled else None
    if metric == "case pass rate":
        scored = [head.passed is True for head in case_heads(report.cases) if head.status != "unscored"]
        return statistics.fmean(scored) if scored else None
    outcomes = report.outcomes.values()
    return sum(1 for outcome in outcomes if outcome in PASSING) / len(outcomes) if outcomes else None


def _usage(report: RunReport, rows: int, repeats: int) -> Usage | None:
    """Per row (case, or test for a report without cases) and sample: the calls the report made (model and
    judge), their tokens and their latency."""
    execution = report.execution
    cost, latency = execution.cost or Cost(), execution.latency or Latency()
    # status -> calls; a candidate-program run's nested section counts nothing here (its cost does)
    calls = sum(v for v in execution.calls.values() if isinstance(v, int))
    calls = calls or (cost.model_calls or 0) + (cost.judge_calls or 0)
    if not calls:
        return None
    per = max(1, rows) * repeats
    measured = bool(latency.measured_calls)
    judge_in, judge_out = cost.judge_input_tokens or 0, cost.judge_output_tokens or 0
    return Usage(calls / per,
                 ((cost.input_tokens or 0) + judge_in) / per,
                 ((cost.output_tokens or 0) + judge_out) / per,
                 float(latency.mean_ms) if measured and latency.mean_ms is not None else None,
                 float(latency.p95_ms) if measured and latency.p95_ms is not None else None,
                 judge_in / per, judge_out / per)


def _costed(design: Design, usage: Usage | None, pricing: Pricing | None, concurrency: int) -> Design:
    """The design with its calls, tokens, money (with every side priced) and wall time (with measured latency):
    the calls go out `concurrency` at a time, each taking the mean latency."""
    if usage is None:
        return design
    samples = design.cases * design.repeats
    calls = math.ceil(usage.calls * samples)
    input_tokens, output_tokens = round(usage.input_tokens * samples), round(usage.output_tokens * samples)
    judge = Tokens(round(usage.judge_input_tokens * samples), round(usage.judge_output_tokens * samples))
    model = Tokens(input_tokens - judge.input, output_tokens - judge.output)
    money = None
    if pricing is not None:
        parts = [call_cost(pricing.model.price, model)]
        if judge.input or judge.output:
            parts.append(call_cost(pricing.judge.price if pricing.judge is not None else None, judge))
        money = None if any(part is None for part in parts) else float(sum(p for p in parts if p is not None))
    seconds = None if usage.mean_ms is None else math.ceil(calls / concurrency) * usage.mean_ms / 1000
    return Design(design.repeats, design.units, design.cases, design.drop, calls, input_tokens, output_tokens,
                  money, seconds)


def recorded_pricing(report: RunReport) -> Pricing | None:
    """The prices the report's cost in money was computed at (`execution.money`, each side's entry as the run's
    price table held it); None for a report without them (made before evalkit priced runs, or adapted)."""
    money = report.execution.money
    if money is None or not isinstance(money.get("model"), Mapping):
        return None

    def side(block: Any, role: str) -> Side | None:
        if not isinstance(block, Mapping):
            return None
        price = block.get("price")
        try:
            entry = PriceEntry.model_validate(price) if isinstance(price, Mapping) else None
        except ValidationError as error:  # an edited report: its figures cannot be trusted to price anything
            raise InputError(describe_validation(error, PriceEntry, f"execution.money.{role}.price")
                             + "; plan at a price file's figures with --prices FILE") from None
        return Side(str(block.get("name")), entry)

    model = side(money["model"], "model")
    assert model is not None
    return Pricing(model, side(money.get("judge"), "judge"), "the report's recorded prices")


def table_pricing(report: RunReport, table: Mapping[str, PriceEntry], source: str) -> Pricing:
    """The report's model (and judge, where it judged) priced by `table`, as a run prices them: each by the entry
    whose key is exactly its name."""
    names = _side_names(report)
    judge = names.get("judge")
    return Pricing(Side(names["model"], price_of(table, names["model"])),
                   Side(judge, price_of(table, judge)) if judge is not None else None, source)


def _side_names(report: RunReport) -> dict[str, str]:
    """The model under test's name, and the judge's where the report has judge calls: as its money section names
    them, else as its eval key does."""
    money = report.execution.money or {}
    recorded = {role: str(block["name"]) for role in ("model", "judge")
                if isinstance(block := money.get(role), Mapping) and block.get("name")}
    cost = report.execution.cost
    judged = cost is not None and bool(cost.judge_calls)
    names = {"model": recorded.get("model") or str(report.eval.get("model") or "(unnamed model)")}
    judge = recorded.get("judge") or report.eval.get("judge_model")
    if judged and judge:
        names["judge"] = str(judge)
    return names
