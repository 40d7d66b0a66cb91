"""A conversation case's transcript as report.html and decision.md show it: its turns, user and assistant, with the
first failing turn marked, and beside it the baseline's transcript, turn by turn, with the first turn where the two
part marked too (as evalkit.render.trajectory_view does for an agent's steps).

The first failing turn is the lowest turn the case's failing checks name: a per-turn check's failure starts with
`turn N of M: ` (evalkit.judging.turns) and a conversation judge's with `turn N: ` (evalkit.judging.ready_judges),
after pytest's `Failed: ` and a judge's repeat count. Only that leading form is read, which evalkit writes before
any text of the model's, so a reply that says "turn 1: ..." inside its quoted text marks nothing. Turns come from the
reports' `trajectories` block: untrusted text, escaped by the templates (and by evalkit.core.untrusted for
Markdown), cut as an agent's steps are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from evalkit.core.untrusted import MAX_VALUE_CHARS, squeezed
from evalkit.records.report_reader import RunReport
from evalkit.records.trajectory import AssistantTurn, Trajectory, UserTurn
from evalkit.render.trajectory_view import STEP_CHARS, TRAJECTORY_CHARS, trajectory_of

__all__ = ["FailingTurn", "TranscriptView", "TurnFailure", "TurnSide", "case_messages", "failing_turn",
           "failing_turns", "is_conversation", "transcript_view", "turn_line"]

_NAMED = re.compile(r"(?:Failed: )?(?:\d+ of \d+ judge repeats passed; )?turn (\d+)(?: of \d+)?: ")
CONTEXT_TURNS = 1
"""Turns shown before the marked one when the turns before it do not all fit."""
_TURN_COST = 80
"""What a turn's row costs beyond its texts, in characters, for TRAJECTORY_CHARS."""


@dataclass(frozen=True)
class TurnSide:
    """One side's turn N: what the user said and what the assistant answered (None: that side has no such step;
    a simulated user's closing turn has no answer), each cut to STEP_CHARS with the count of what was cut."""

    user: str | None
    assistant: str | None
    user_cut: int = 0
    assistant_cut: int = 0
    user_call: str = ""
    """The simulated user's call id; empty for a scripted turn."""


@dataclass(frozen=True)
class TranscriptView:
    """A conversation's panel: rows of (turn, baseline's turn, candidate's turn), the marked turns, and notes on
    what is not shown or could not be read."""

    rows: list[tuple[int, TurnSide | None, TurnSide | None]]
    beside: bool
    failing: int | None = None
    """The candidate's first failing turn (None: no failing check names one)."""
    failing_checks: tuple[str, ...] = ()
    """The checks whose failure names that turn."""
    parts_at: int | None = None
    """The first turn where the candidate's transcript differs from the baseline's."""
    skipped_before: int = 0
    left_out: int = 0
    notes: tuple[str, ...] = ()


def is_conversation(trajectory: Trajectory | str | None) -> bool:
    """Whether a case's trajectory is a conversation's (it has turns)."""
    return isinstance(trajectory, Trajectory) and any(isinstance(s, UserTurn | AssistantTurn)
                                                      for s in trajectory.steps)


class FailingTurn(NamedTuple):
    """A case's first failing turn and the checks whose failure names it."""

    turn: int
    checks: tuple[str, ...]


def failing_turn(messages: Iterable[tuple[str, str]]) -> FailingTurn | None:
    """The lowest turn that the failures of a case's checks name, with the checks that name it, from (check,
    message) pairs; None when none names a turn."""
    named: dict[int, list[str]] = {}
    for check, message in messages:
        found = _NAMED.match(message)
        if found is not None:
            named.setdefault(int(found.group(1)), []).append(check)
    if not named:
        return None
    turn = min(named)
    return FailingTurn(turn, tuple(named[turn]))


def case_messages(messages: Mapping[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Failure messages by case, each with its check, from test id -> message (`checks.yaml::short_turns[c1]`:
    case `c1`, check `short_turns`; a test id without a case is left out)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for nodeid, message in messages.items():
        last = nodeid.rsplit("::", 1)[-1]
        if "[" in last and last.endswith("]"):
            check, _, case = last[:-1].partition("[")
            out.setdefault(case, []).append((check, message))
    return out


def _turns(trajectory: Trajectory) -> dict[int, TurnSide]:
    said: dict[int, UserTurn] = {}
    answered: dict[int, AssistantTurn] = {}
    for step in trajectory.steps:
        if isinstance(step, UserTurn):
            said.setdefault(step.turn, step)
        elif isinstance(step, AssistantTurn):
            answered.setdefault(step.turn, step)
    out = {}
    for turn in sorted(set(said) | set(answered)):
        user, assistant = said.get(turn), answered.get(turn)
        user_text, user_cut = _clip(user.text) if user is not None else (None, 0)
        answer, answer_cut = _clip(assistant.text) if assistant is not None else (None, 0)
        out[turn] = TurnSide(user_text, answer, user_cut, answer_cut, (user.call_id or "") if user else "")
    return out


def _clip(text: str) -> tuple[str, int]:
    return (text, 0) if len(text) <= STEP_CHARS else (text[:STEP_CHARS], len(text) - STEP_CHARS)


def transcript_view(before: Trajectory | str | None, after: Trajectory | str | None, has_baseline: bool,
                    failing: FailingTurn | None) -> TranscriptView:
    """The panel of a conversation case: the candidate's turns (`after`), beside the baseline's (`before`) when the
    baseline ran the case, with `failing` (the candidate's first failing turn) and the first differing turn marked."""
    notes = [side for side in (before, after) if isinstance(side, str)]
    old = _turns(before) if isinstance(before, Trajectory) and has_baseline else None
    new = _turns(after) if isinstance(after, Trajectory) else {}
    beside = old is not None
    if has_baseline and before is None:
        notes.append("the baseline report has no transcript for this case")
    parts_at = None
    if old is not None:
        parts_at = next((turn for turn in sorted(set(old) | set(new)) if _said(old.get(turn)) != _said(new.get(turn))),
                        None)
        if parts_at is None:
            notes.append("the baseline's transcript is the same (the difference is elsewhere: a check, the judge)")
    turn = failing.turn if failing is not None else None
    if turn is not None and turn not in new:
        notes.append(f"the failing check names turn {turn}, which this transcript does not have")
        turn = None
    numbers = sorted(set(old or {}) | set(new))
    first, last = _window(numbers, old or {}, new, max((t for t in (turn, parts_at) if t is not None), default=None))
    rows = [(n, (old or {}).get(n) if beside else None, new.get(n)) for n in numbers if first <= n <= last]
    return TranscriptView(rows, beside, turn, failing.checks if turn is not None and failing else (), parts_at,
                          sum(1 for n in numbers if n < first), sum(1 for n in numbers if n > last), tuple(notes))


def _said(side: TurnSide | None) -> tuple[str | None, str | None] | None:
    """A turn as two transcripts are compared: what each side said (the cut texts, cut alike)."""
    return None if side is None else (side.user, side.assistant)


def _window(numbers: Sequence[int], old: Mapping[int, TurnSide], new: Mapping[int, TurnSide],
            marked: int | None) -> tuple[int, int]:
    """The turns shown (first, last): from the first, or from shortly before the marked turn when the turns before
    it would not fit, and on until TRAJECTORY_CHARS is spent (a marked turn is always shown)."""
    if not numbers:
        return 1, 0
    costs = {n: sum(_TURN_COST + len(s.user or "") + len(s.assistant or "") for s in (old.get(n), new.get(n)) if s)
             for n in numbers}
    first = numbers[0]
    if marked is not None and sum(costs[n] for n in numbers if n <= marked) > TRAJECTORY_CHARS:
        first = max(numbers[0], marked - CONTEXT_TURNS)
    spent, last = 0, first - 1
    for n in (n for n in numbers if n >= first):
        spent += costs[n]
        if spent > TRAJECTORY_CHARS and n > max(first, marked or 0):
            break
        last = n
    return first, last


def turn_line(side: TurnSide | None, limit: int = MAX_VALUE_CHARS) -> str:
    """A turn's assistant answer on one line, as decision.md names it (plain text; the caller escapes it)."""
    if side is None:
        return "no turn (the conversation had ended)"
    if side.assistant is None:
        return squeezed(f"no answer; the user said: {side.user or ''}", limit)
    return squeezed(side.assistant, limit)


class TurnFailure(NamedTuple):
    """A regressed conversation's first failing turn, the checks naming it, and what each side's assistant said
    there (one line each; the baseline's empty when the baseline has no transcript)."""

    case: str
    turn: int
    checks: tuple[str, ...]
    candidate: str
    baseline: str


def failing_turns(baseline: RunReport, candidate: RunReport, case_ids: Sequence[str],
                  messages: Mapping[str, Sequence[tuple[str, str]]]) -> list[TurnFailure]:
    """For each conversation case of `case_ids` whose failing checks (`messages`: case -> (check, message)) name a
    turn, that first failing turn and what each side's assistant said there (decision.md names them)."""
    found = []
    for case_id in case_ids:
        new = trajectory_of(candidate, case_id)
        failing = failing_turn(messages.get(case_id, ()))
        if not isinstance(new, Trajectory) or not is_conversation(new) or failing is None:
            continue
        old = trajectory_of(baseline, case_id)
        before = _turns(old).get(failing.turn) if isinstance(old, Trajectory) else None
        found.append(TurnFailure(case_id, failing.turn, failing.checks, turn_line(_turns(new).get(failing.turn)),
                                 turn_line(before) if isinstance(old, Trajectory) else ""))
    return found
