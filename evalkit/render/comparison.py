"""Two runs compared (`evalkit compare`): per case improved, regressed, unchanged, new and missing, and
per metric before, after and delta, as terminal text or JSON. Values to strings; no decision is made here."""

from __future__ import annotations

from typing import Any

from evalkit.core.untrusted import terminal  # a listed id is report data: it must not forge a line of its own
from evalkit.gate.compare import Comparison
from evalkit.render.numbers import number
from evalkit.render.text import render_changed

__all__ = ["STATUSES", "comparison_json", "render_comparison"]

STATUSES = ("regressed", "missing", "improved", "new", "unchanged")
"""Case statuses in the order a reviewer reads them: what got worse first."""
LISTED = 20
"""How many case ids each status lists in the terminal (all of them are in --json)."""


def comparison_json(comparison: Comparison, unit: str, changed: dict[str, tuple[Any, Any]],
                    incomparable: list[str]) -> dict[str, Any]:
    """The comparison as plain data: `unit` is `case` (the reports' cases) or `test` (reports without cases)."""
    by_status: dict[str, list[str]] = {status: [] for status in STATUSES}
    for name, status in comparison.cases.items():
        by_status[status].append(name)
    return {"comparable": not incomparable, "incomparable": incomparable,
            "changed": {name: list(sides) for name, sides in changed.items()}, "unit": unit,
            "counts": {status: len(names) for status, names in by_status.items()}, "cases": by_status,
            "metrics": {name: {"before": m.before, "after": m.after, "delta": m.delta, "status": m.status}
                        for name, m in comparison.metrics.items()}}


def render_comparison(data: dict[str, Any], baseline: str, candidate: str) -> str:
    """The terminal view of `comparison_json`'s data: counts first, then the ids, then the metric table."""
    lines = [f"baseline:  {baseline}", f"candidate: {candidate}"]
    if data["incomparable"]:
        lines.append("INCOMPARABLE: the runs measured different things; nothing compared:")
        lines += [f"  - {reason}" for reason in data["incomparable"]]
        return "\n".join(terminal(line) if line.startswith("  - ") else line for line in lines)
    lines.append(f"changed: {render_changed(data['changed']) or 'nothing in the eval key'}")
    unit = data["unit"]
    counts = data["counts"]
    lines.append(f"{unit}s: " + ", ".join(f"{counts[status]} {status}" for status in STATUSES))
    for status in STATUSES[:-1]:
        names = data["cases"][status]
        if names:
            more = f" (first {LISTED}; --json lists all)" if len(names) > LISTED else ""
            lines.append(f"{status} ({len(names)}){more}:")
            lines += [f"  - {name}" for name in names[:LISTED]]
    if data["metrics"]:
        width = max(len(name) for name in data["metrics"])
        lines.append("metrics:")
        lines.append(f"  {'':<{width}}  {'before':>8}  {'after':>8}  {'delta':>8}  status")
        lines += [f"  {name:<{width}}  {number(m['before']):>8}  {number(m['after']):>8}  "
                  f"{number(m['delta'], signed=True):>8}  {m['status']}" for name, m in data["metrics"].items()]
    else:
        lines.append("metrics: none in either report")
    return "\n".join(terminal(line) if line.startswith("  - ") else line for line in lines)
