"""Comparison detail between two runs: per case improved / regressed / unchanged, and per metric
before, after, delta and status. Pure. The gate uses the metric comparison (`compare_metrics`);
`evalkit compare` shows both.

All metrics are read as higher-is-better. A metric that can no longer be measured (None) ranks
below every number, so a drop to None is a regression, never an unchanged row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["MetricChange", "Comparison", "compare_metrics", "compare_cases"]

Status = Literal["improved", "regressed", "unchanged"]


@dataclass(frozen=True)
class MetricChange:
    before: float | None
    after: float | None
    delta: float | None
    """after - before, None when either side could not be measured."""
    status: Status
    interval: tuple[float, float] | None = None
    """The 95% paired interval of the change, where one was computed (classification metrics, by
    evalkit.gate.classified)."""

    def to_json(self) -> dict[str, Any]:
        """As decision.json carries it: `interval` only where there is one."""
        out: dict[str, Any] = {"before": self.before, "after": self.after, "delta": self.delta, "status": self.status}
        if self.interval is not None:
            out["interval"] = list(self.interval)
        return out


@dataclass(frozen=True)
class Comparison:
    cases: dict[str, str] = field(default_factory=dict)
    """case id -> improved | regressed | unchanged | new | missing."""
    metrics: dict[str, MetricChange] = field(default_factory=dict)

    @property
    def regressed(self) -> list[str]:
        return [case for case, status in self.cases.items() if status in ("regressed", "missing")]

    @property
    def improved(self) -> list[str]:
        return [case for case, status in self.cases.items() if status == "improved"]


def _rank(value: float | None) -> float:
    return float("-inf") if value is None else value


def compare_metrics(before: Mapping[str, float | None], after: Mapping[str, float | None]) -> dict[str, MetricChange]:
    """Every metric of either run; one the candidate no longer reports counts as None there."""
    out: dict[str, MetricChange] = {}
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        status: Status = ("improved" if _rank(a) > _rank(b) else "regressed" if _rank(a) < _rank(b)
                          else "unchanged")
        delta = None if a is None or b is None else round(a - b, 6)
        out[name] = MetricChange(b, a, delta, status)
    return out


def compare_cases(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Per case: did it pass before and after? A case only the baseline had is `missing`."""
    was = {str(c.get("id")): bool(c.get("passed")) for c in before}
    now = {str(c.get("id")): bool(c.get("passed")) for c in after}
    out: dict[str, str] = {}
    for case in sorted(set(was) | set(now)):
        if case not in now:
            out[case] = "missing"
        elif case not in was:
            out[case] = "new"
        else:
            out[case] = ("improved" if now[case] and not was[case] else
                         "regressed" if was[case] and not now[case] else "unchanged")
    return out
