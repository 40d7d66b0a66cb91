"""The id of one call of a run: `task/<case>` or `judge/<metric>/<case>`, `@<n>` for a task's step n > 0 (the n+1-th
model call one case made: an agent calling through evalkit's endpoint), `~<r>` for the judge's own repeat r > 0
(`judge.repeats`), and `#<i>` for sample i > 0.

Recordings, journals and run inputs key calls by this text; everything that makes or reads one goes through
`CallId`, so the format is written once. A case id never holds `/`, `#`, `@` or `~` (evalkit.core.dataset), so the
case is what follows the last `/` (up to a `@` or `~`) and the sample what follows `#`; a judge metric may hold `/`
(`pairwise/new-first`). Sample 0, step 0 and the judge's repeat 0 keep the plain id, so single runs and recordings
made before repeats and steps existed read the same, and a program making one call per case has the id a model
suite's task call has. `judge/faithful/refund~2#1`: the judge's third look at sample 1's reply; `task/refund@3`: the
case's fourth model call.
An agent's model steps (evalkit.run.agent_loop) are `task/<case>@<step>` (step 1, 2 ...), and the plain
`task/<case>` of an agent case names its outcome (the final answer), which the checks read; a program calling
through evalkit's endpoint numbers its calls from 0, the first keeping the plain id.
A conversation's simulated user (evalkit.run.conversation) writes user turn n as the call `user/<case>@<n>`
(n from 1); the assistant's reply to it is `task/<case>@<n>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalkit.core.errors import InputError

__all__ = ["CallId", "REPEAT_MARK", "SAMPLE_MARK", "STEP_MARK"]

SAMPLE_MARK = "#"
REPEAT_MARK = "~"
STEP_MARK = "@"


@dataclass(frozen=True, order=True)
class CallId:
    """Which call: the task's for a case, or a judge metric's for a case; and which sample of it."""

    kind: Literal["task", "judge", "user"]
    case: str
    metric: str = ""
    """The judge metric (a suite's `build_judge` key); empty for a task call."""
    sample: int = 0
    repeat: int = 0
    """The judge's own repeat of this call (`judge.repeats=K`: 0 to K - 1); always 0 for a task call."""
    step: int = 0
    """A task call's step: 0 for the case's first model call, n for its n+1-th; always 0 for a judge call."""

    @classmethod
    def task(cls, case: str, sample: int = 0, step: int = 0) -> CallId:
        return cls("task", case, "", sample, step=step)

    @classmethod
    def judge(cls, metric: str, case: str, sample: int = 0, repeat: int = 0) -> CallId:
        return cls("judge", case, metric, sample, repeat)

    @classmethod
    def agent_step(cls, case: str, step: int, sample: int = 0) -> CallId:
        if step < 1:
            raise ValueError(f"an agent's steps count from 1, not {step}")
        return cls.task(case, sample, step)

    @classmethod
    def user_turn(cls, case: str, turn: int, sample: int = 0) -> CallId:
        """The simulated user's call that writes user turn `turn` (from 1) of a conversation case."""
        if turn < 1:
            raise ValueError(f"a conversation's turns count from 1, not {turn}")
        return cls("user", case, "", sample, step=turn)

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
        if kind in ("task", "user"):
            case, marked, count = case.partition(STEP_MARK)
        else:
            case, marked, count = case.partition(REPEAT_MARK)
        if marked and not (count.isascii() and count.isdigit() and count[0] != "0"):
            case = ""  # a mark with no number after it (or 0 spelled out): not a call id
        if case and not any(m in case for m in (SAMPLE_MARK, STEP_MARK, REPEAT_MARK)):
            if kind == "task" and not metric:
                return cls.task(case, sample, int(count) if marked else 0)
            if kind == "judge" and metric:
                return cls.judge(metric, case, sample, int(count) if marked else 0)
            if kind == "user" and not metric and marked:
                return cls.user_turn(case, int(count), sample)
        raise InputError(f"{text[:200]!r} is not a call id (task/<case> with @<n> for step n > 0, "
                         "judge/<metric>/<case> with ~<r> for the judge's repeat r > 0, and #<i> for sample i > 0; "
                         "user/<case>@<n> for a simulated user's turn n)")

    @property
    def plain(self) -> CallId:
        """The same call's sample 0 (and the judge's repeat 0; a task's step is kept)."""
        return CallId(self.kind, self.case, self.metric, 0, step=self.step)

    def sampled(self, sample: int) -> CallId:
        return CallId(self.kind, self.case, self.metric, sample, self.repeat, self.step)

    def __str__(self) -> str:
        step = f"{STEP_MARK}{self.step}" if self.step else ""
        base = (f"{self.kind}/{self.case}{step}" if self.kind in ("task", "user")
                else f"judge/{self.metric}/{self.case}")
        if self.repeat:
            base = f"{base}{REPEAT_MARK}{self.repeat}"
        return base if self.sample == 0 else f"{base}{SAMPLE_MARK}{self.sample}"
