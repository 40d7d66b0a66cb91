"""Reducers: how a check run once per sample (`run.repeats=N`) becomes one outcome, as Inspect's epoch reducers do.

- `all` (the default): the check passes only when every sample passed;
- `majority`: when more than half of the samples passed;
- `{mean: T}`: when the fraction of samples that passed is at least T (0 < T <= 1);
- `{at_least: K}`: when at least K samples passed.

A check names its reducer in `checks.yaml` (`reduce: majority`, `reduce: {at_least: 3}`); a hand-written test with
a marker (`@pytest.mark.reduce("majority")`, `@pytest.mark.reduce(at_least=3)`, `@pytest.mark.reduce(mean=0.8)`).
The reducer decides the test's outcome only; the test's `repeats` block keeps the counts (`passed` of `runs`), which
the gate's tests for repeated runs read (evalkit.gate.repeats), and names the reducer (`"reduce": "majority"`), so
a reader can check that the outcome follows from the counts. With one sample there is nothing to reduce.

Pure: no pytest here (evalkit.run.sample_protocol applies a reducer; evalkit.records.report_reader checks one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["ALL", "REDUCERS", "Reducer", "parse_reducer"]

REDUCERS: Final = ("all", "majority", "mean", "at_least")
_FORMS = "all, majority, {mean: T} with 0 < T <= 1, or {at_least: K} with K >= 1"


@dataclass(frozen=True)
class Reducer:
    """One reducer: its rule, and the rule's number (mean's threshold, at_least's count; None for the others)."""

    rule: Literal["all", "majority", "mean", "at_least"] = "all"
    value: float | None = None

    def passes(self, passed: int, runs: int) -> bool:
        """Whether `passed` of `runs` samples passing makes the test pass."""
        if self.rule == "all":
            return passed == runs
        if self.rule == "majority":
            return 2 * passed > runs
        assert self.value is not None
        if self.rule == "mean":
            return passed >= self.value * runs - 1e-9  # k/N >= T, without k/N's rounding
        return passed >= self.value

    @property
    def name(self) -> str:
        """As a run report names it: `all`, `majority`, `mean 0.8`, `at_least 3`."""
        if self.value is None:
            return self.rule
        return f"{self.rule} {self.value:g}"


ALL: Final = Reducer()


def parse_reducer(value: Any) -> Reducer:
    """A reducer from how `checks.yaml`, a marker or a run report spells it (see the module); ValueError naming the
    forms allowed otherwise."""
    if isinstance(value, Reducer):
        return value
    if isinstance(value, str):
        rule, _, number = value.strip().partition(" ")
        if rule in ("all", "majority") and not number:
            return ALL if rule == "all" else Reducer("majority")
        if rule in ("mean", "at_least") and number:
            try:
                return _numbered(rule, float(number))
            except ValueError:
                pass
        if rule in ("mean", "at_least") and not number:
            raise ValueError(f"reduce {rule} needs its number: reduce: {{{rule}: "
                             f"{'0.8' if rule == 'mean' else '3'}}}")
    elif isinstance(value, dict) and len(value) == 1:
        ((rule, number),) = value.items()
        if rule in ("mean", "at_least") and isinstance(number, int | float) and not isinstance(number, bool):
            return _numbered(rule, float(number))
    raise ValueError(f"reduce {value!r} is not a reducer; use {_FORMS}")


def _numbered(rule: str, number: float) -> Reducer:
    if rule == "mean":
        if not 0 < number <= 1:
            raise ValueError(f"reduce mean {number:g}: the threshold is a pass fraction, 0 < T <= 1")
        return Reducer("mean", number)
    if number < 1 or not number.is_integer():
        raise ValueError(f"reduce at_least {number:g}: the count is a whole number of samples, at least 1")
    return Reducer("at_least", number)
