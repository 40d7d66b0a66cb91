"""Whether a rate sits at its floor or ceiling on a baseline, and which of the report's measures still moves. Pure.

A rate at 0 on the baseline cannot fall: a detectable drop figure for it is arithmetic about a drop that cannot
happen, and a plan to detect a drop from it plans calls that can show nothing. At 1 it cannot rise. Either way the
cases all agree, so the report's other measures are the place to look: a per-case metric (a judge's score) or a
check whose values differ across the baseline's cases can show a change where the headline rate cannot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from evalkit.records.report_reader import RunReport

__all__ = ["Bound", "bound", "informative"]

Bound = Literal["floor", "ceiling"]

_EPSILON = 1e-12


def bound(rate: float | None) -> Bound | None:
    """`floor` for a rate at 0, `ceiling` at 1, None in between (or unknown)."""
    if rate is None:
        return None
    if rate <= _EPSILON:
        return "floor"
    if rate >= 1 - _EPSILON:
        return "ceiling"
    return None


def informative(report: RunReport) -> str | None:
    """The first measure, by name, whose values differ across the report's scored cases, in words (`the metric
    faithfulness.score (mean 2.35 over 20 cases)`, `the check's pass rate of test_cites (0.40 over 20 cases)`);
    None when every per-case metric and check agrees on every case."""
    values: dict[str, list[float]] = {}
    checks: dict[str, list[float]] = {}
    for case in report.cases:
        if not isinstance(case, Mapping) or case.get("status") == "unscored":
            continue
        for name, value in _items(case.get("metrics")):
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                values.setdefault(name, []).append(float(value))
        for name, outcome in _items(case.get("checks")):
            if outcome in ("passed", "failed"):
                checks.setdefault(name, []).append(float(outcome == "passed"))
    for name in sorted(values):
        seen = values[name]
        if max(seen) - min(seen) > _EPSILON:
            return f"the metric {name} (mean {math.fsum(seen) / len(seen):.3g} over {len(seen)} cases)"
    for name in sorted(checks):
        seen = checks[name]
        if max(seen) - min(seen) > _EPSILON:
            return f"the pass rate of check {name} ({math.fsum(seen) / len(seen):.2f} over {len(seen)} cases)"
    return None


def _items(block: Any) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in block.items()] if isinstance(block, Mapping) else []
