"""How every page and table shows a figure, so a value reads the same in the terminal, decision.md, report.html,
history and the comparison table."""

from __future__ import annotations

from typing import Final

__all__ = ["NO_VALUE", "change", "number"]

NO_VALUE: Final = "n/a"
"""What stands for a figure that could not be measured (a metric no case measured, a rate with no tests)."""


def number(value: object, *, signed: bool = False) -> str:
    """A float to three decimals (with its sign when `signed`, for a change), other values as they are, None as
    NO_VALUE."""
    if value is None:
        return NO_VALUE
    if isinstance(value, float):
        return f"{value:+.3f}" if signed else f"{value:.3f}"
    return str(value)


def change(delta: object, interval: object = None) -> str:
    """A metric's change, with its 95% paired interval where the decision has one: `-0.150 [-0.300, -0.020]`."""
    shown = number(delta)
    if isinstance(interval, list | tuple) and len(interval) == 2:
        shown += f" [{number(float(interval[0]))}, {number(float(interval[1]))}]"
    return shown
