"""The id of one call of a run: `task/<case>` or `judge/<metric>/<case>`, and `#<i>` for sample i > 0.

Recordings, journals and run inputs key calls by this text; everything that makes or reads one goes through
`CallId`, so the format is written once. A case id never holds `/` or `#` (evalkit.core.dataset), so the case is
what follows the last `/` and the sample what follows `#`; a judge metric may hold `/` (`pairwise/new-first`).
Sample 0 keeps the plain id, so single runs and recordings made before repeats existed read the same.
An agent's model steps (evalkit.run.agent_loop) are task calls too, `task/<case>@<step>` (step 1, 2 ...), before any
`#<i>`: a case id never holds `@`, so the step is what follows it; the plain `task/<case>` of an agent case names
its outcome (the final answer), which the checks read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalkit.core.errors import InputError

__all__ = ["CallId", "SAMPLE_MARK", "STEP_MARK"]

SAMPLE_MARK = "#"
STEP_MARK = "@"


@dataclass(frozen=True, order=True)
class CallId:
    """Which call: the task's for a case, or a judge metric's for a case; and which sample of it."""

    kind: Literal["task", "judge"]
    case: str
    metric: str = ""
    """The judge metric (a suite's `build_judge` key); empty for a task call."""
    sample: int = 0
    step: int = 0
    """An agent's model step (1, 2 ...); 0 for any other call."""

    @classmethod
    def task(cls, case: str, sample: int = 0) -> CallId:
        return cls("task", case, "", sample)

    @classmethod
    def agent_step(cls, case: str, step: int, sample: int = 0) -> CallId:
        if step < 1:
            raise ValueError(f"an agent's steps count from 1, not {step}")
        return cls("task", case, "", sample, step)

    @classmethod
    def judge(cls, metric: str, case: str, sample: int = 0) -> CallId:
        return cls("judge", case, metric, sample)

    @classmethod
    def parse(cls, text: str) -> CallId:
        """The call id written as `text`; anything else is an InputError naming it."""
        plain, mark, number = text.rpartition(SAMPLE_MARK)
        if not mark:
            plain, number = text, "0"
        elif not (number.isascii() and number.isdigit() and number[0] != "0"):
            plain, number = "", "0"  # `#` with no sample number after it (or sample 0 spelled out): not a call id
        head, _, case = plain.rpartition("/")
        kind, _, metric = head.partition("/")
        sample = int(number)
        case, at, step = case.partition(STEP_MARK)
        if at and kind == "task" and not metric and case and step.isascii() and step.isdigit() and step[0] != "0":
            return cls.agent_step(case, int(step), sample)
        if at:
            case = ""  # `@` with no step number after it, or on a judge call: not a call id
        if case and SAMPLE_MARK not in case and kind == "task" and not metric:
            return cls.task(case, sample)
        if case and SAMPLE_MARK not in case and kind == "judge" and metric:
            return cls.judge(metric, case, sample)
        raise InputError(f"{text[:200]!r} is not a call id (task/<case>, task/<case>@<step>, "
                         "judge/<metric>/<case>, with #<i> for sample i > 0)")

    @property
    def plain(self) -> CallId:
        """The same call's sample 0."""
        return CallId(self.kind, self.case, self.metric, 0, self.step)

    def sampled(self, sample: int) -> CallId:
        return CallId(self.kind, self.case, self.metric, sample, self.step)

    def __str__(self) -> str:
        base = f"task/{self.case}" if self.kind == "task" else f"judge/{self.metric}/{self.case}"
        if self.step:
            base += f"{STEP_MARK}{self.step}"
        return base if self.sample == 0 else f"{base}{SAMPLE_MARK}{self.sample}"
