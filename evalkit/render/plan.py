"""A plan (evalkit.gate.plan) for a terminal: the suite as it is, the designs that reach the target, their cost."""

from __future__ import annotations

from evalkit.core.money import Side
from evalkit.gate.headline import points
from evalkit.gate.plan import Design, Plan, Pricing
from evalkit.render.money import NO_PRICE, usd
from evalkit.render.numbers import NO_VALUE

__all__ = ["render_plan"]


def _count(value: int | None) -> str:
    return NO_VALUE if value is None else f"{value:,}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return NO_VALUE
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _money(design: Design) -> str:
    return NO_PRICE if design.money is None else usd(design.money)


def _prices(pricing: Pricing | None) -> str:
    """Which prices the money column is at, or why it has none."""
    if pricing is None:
        return ("money: no price (the report recorded no prices: made before evalkit priced runs, or by another "
                "tool); plan at a price file's figures with --prices FILE (as conf/prices/*.yaml)")
    if pricing.unpriced:
        return (f"money: no price ({pricing.source} have no entry for {', '.join(pricing.unpriced)}); plan at a "
                "price file's figures with --prices FILE (as conf/prices/*.yaml)")
    roles: dict[Side, list[str]] = {}  # a judge that is the model under test is priced once
    for role, side in [("model under test", pricing.model), ("judge", pricing.judge)]:
        if side is not None:
            roles.setdefault(side, []).append(role)
    figures = "; ".join(f"{side.name} ({' and '.join(names)}): input ${side.price.input:g}, output "
                        f"${side.price.output:g} per million tokens, as of {side.price.as_of} ({side.price.source})"
                        for side, names in roles.items() if side.price is not None)
    return (f"money: in US dollars at {pricing.source}: {figures} (input tokens priced whole at the input figure, "
            "as the report counts them)")


def _row(plan: Plan, design: Design, unit: str) -> str:
    units = f"{design.units:,}" + (f" ({design.cases:,} cases)" if unit == "group" else "")
    drop = NO_VALUE if design.drop is None else points(design.drop)
    return (f"  {design.repeats:>7}  {units:>16}  {drop:>10}  {_count(design.calls):>10}  "
            f"{_count(design.input_tokens):>13}  {_count(design.output_tokens):>13}  {_money(design):>9}  "
            f"{_duration(design.seconds):>9}")


def render_plan(plan: Plan, source: str) -> str:
    """The plan as lines: target and levels, what the suite detects now, the designs, the cheapest, per test, and
    what the figures rest on."""
    now, unit = plan.now, plan.now.unit
    level = now.level
    lines = [f"plan from {source}: {now.spread.units:,} {unit}s"
             + (f" ({now.rows:,} cases)" if unit == "group" else "")
             + f", {now.repeats} sample(s) per call, {plan.tests:,} tests",
             f"target: detect a drop of {points(plan.target)} in the {now.metric} (one-sided level {level:g}: alpha "
             f"{plan.alpha:g} / 2, the suite guard's share; power {plan.power:.0%})",
             "as it is: " + (f"could detect drops of {points(now.drop)} or more" if now.drop is not None
                             else f"could not detect any drop, not even every {unit} failing")
             + (f"; a run of it: {_count(plan.current.calls)} calls"
                + (f", {_duration(plan.current.seconds)}" if plan.current.seconds is not None else "")
                if plan.current.calls is not None else "")]
    if plan.test_now is not None:
        lines.append(f"as it is, per test: a test passing all {now.repeats} samples on the baseline is caught when it "
                     f"falls by {points(plan.test_now)} or more")
    lines.append("")
    header = f"{unit}s"
    lines.append(f"  {'repeats':>7}  {header:>16}  {'detects':>10}  {'calls':>10}  {'input tokens':>13}  "
                 f"{'output tokens':>13}  {'money':>9}  {'wall time':>9}")
    lines += [_row(plan, design, unit) for design in plan.designs]
    if not plan.designs:
        lines.append(f"  no number of {unit}s up to 10,000,000 reaches the target at these repeats")
    best = plan.best
    if best is not None:
        more = max(0, best.cases - now.rows) if unit != "test" else max(0, best.units - now.spread.units)
        lines += ["", f"cheapest: {best.cases if unit != 'test' else best.units:,} "
                      f"{'cases' if unit != 'test' else 'tests'} x {best.repeats} repeat(s)"
                      + (f" = {best.calls:,} calls" if best.calls is not None else "")
                      + f" ({more:,} more than the suite has)"]
    lines.append("per test: " + (f"a test passing on the baseline, falling by {points(plan.target)}, is caught at "
                                 f"{plan.test_repeats} samples per side" if plan.test_repeats is not None
                                 else f"a single test's fall of {points(plan.target)} needs more than 1,000 samples "
                                      "per side; the suite guard is what can see it")
                 + f" (one-sided Fisher at {level / max(1, plan.tests):.3g})")
    lines += ["", f"noise: {plan.noise}"]
    usage = plan.usage
    if usage is None:
        lines.append("cost: the report records no calls, so calls, tokens and wall time cannot be planned")
    else:
        lines.append(f"cost: per case and sample, {usage.calls:.2f} calls, {usage.input_tokens:.0f} input and "
                     f"{usage.output_tokens:.0f} output tokens, as the report spent them")
        lines.append(_prices(plan.pricing))
        p95 = f" (p95 {usage.p95_ms:.0f} ms)" if usage.p95_ms is not None else ""
        lines.append(f"wall time: calls {plan.concurrency} at a time at the mean latency {usage.mean_ms:.0f} ms{p95}"
                     if usage.mean_ms is not None
                     else "wall time: not measured (the report's calls were replayed, none timed): plan from a "
                          "live run's report")
    return "\n".join(lines)
