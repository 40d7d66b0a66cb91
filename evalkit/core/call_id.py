"""The id of one call of a run: `task/<case>` or `judge/<metric>/<case>`, `~<r>` for the judge's own repeat r > 0
(`judge.repeats`), and `#<i>` for sample i > 0.

Recordings, journals and run inputs key calls by this text; everything that makes or reads one goes through
`CallId`, so the format is written once. A case id never holds `/` or `#` (evalkit.core.dataset), so the case is
what follows the last `/` (up to a `~`) and the sample what follows `#`; a judge metric may hold `/`
(`pairwise/new-first`). Sample 0 and the judge's repeat 0 keep the plain id, so single runs and recordings made
before repeats existed read the same. `judge/faithful/refund~2#1`: the judge's third look at sample 1's reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalkit.core.errors import InputError

__all__ = ["CallId", "REPEAT_MARK", "SAMPLE_MARK"]

SAMPLE_MARK = "#"
REPEAT_MARK = "~"


@dataclass(frozen=True, order=True)
class CallId:
    """Which call: the task's for a case, or a judge metric's for a case; and which sample of it."""

    kind: Literal["task", "judge"]
    case: str
    metric: str = ""
    """The judge metric (a suite's `build_judge` key); empty for a task call."""
    sample: int = 0
    repeat: int = 0
    """The judge's own repeat of this call (`judge.repeats=K`: 0 to K - 1); always 0 for a task call."""

    @classmethod
    def task(cls, case: str, sample: int = 0) -> CallId:
        return cls("task", case, "", sample)

    @classmethod
    def judge(cls, metric: str, case: str, sample: int = 0, repeat: int = 0) -> CallId:
        return cls("judge", case, metric, sample, repeat)

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
        case, mark, repeat = case.partition(REPEAT_MARK)
        if mark and not (repeat.isascii() and repeat.isdigit() and repeat[0] != "0"):
            case = ""  # `~` with no repeat number after it (or repeat 0 spelled out): not a call id
        if case and SAMPLE_MARK not in case and kind == "task" and not metric and not mark:
            return cls.task(case, sample)
        if case and SAMPLE_MARK not in case and kind == "judge" and metric:
            return cls.judge(metric, case, sample, int(repeat) if mark else 0)
        raise InputError(f"{text[:200]!r} is not a call id (task/<case>, judge/<metric>/<case> with ~<r> for the "
                         "judge's repeat r > 0, and #<i> for sample i > 0)")

    @property
    def plain(self) -> CallId:
        """The same call's sample 0 (and the judge's repeat 0)."""
        return CallId(self.kind, self.case, self.metric, 0)

    def sampled(self, sample: int) -> CallId:
        return CallId(self.kind, self.case, self.metric, sample, self.repeat)

    def __str__(self) -> str:
        base = f"task/{self.case}" if self.kind == "task" else f"judge/{self.metric}/{self.case}"
        if self.repeat:
            base = f"{base}{REPEAT_MARK}{self.repeat}"
        return base if self.sample == 0 else f"{base}{SAMPLE_MARK}{self.sample}"
