"""A reply check on a conversation's turns (`turn:` in checks.yaml): one chosen assistant turn, every turn, or the
last. Pure: it reads the case's trajectory (as the run input holds it) and asks `judge_one` about each turn's text,
so every reply check kind works per turn exactly as it works on a case's one reply.

With `every`, the first failing turn fails the case and is named (`turn 2 of 4: ...`): a reviewer opens the
transcript there. A chosen turn the conversation never reached fails, saying how many turns it had: a check that
cannot see its turn never passes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from evalkit.judging.checks import Verdict
from evalkit.records.trajectory import Trajectory

__all__ = ["TurnChoice", "judge_turns"]

TurnChoice = int | Literal["every", "last"]
"""Which assistant turn a check reads: N (from 1), `every` one, or the `last`."""


def judge_turns(choice: TurnChoice, trajectory: Mapping[str, Any] | None,
                judge_one: Callable[[str], Verdict]) -> Verdict:
    """The check's verdict on the chosen turn(s) of one conversation."""
    if trajectory is None:
        return Verdict(False, "no conversation: a check with `turn:` reads a conversation's turns, and this case "
                              "has none (no `conversation` field)")
    turns = Trajectory.model_validate(trajectory).assistant_turns()
    if not turns:
        return Verdict(False, "the conversation has no assistant turn to check")
    if choice == "every":
        chosen = turns
    elif choice == "last":
        chosen = turns[-1:]
    else:
        chosen = [t for t in turns if t.turn == choice]
        if not chosen:
            return Verdict(False, f"turn {choice}: the conversation ended after {len(turns)} assistant turn(s)")
    for turn in chosen:
        verdict = judge_one(turn.text)
        if not verdict.ran or not verdict.passed:
            return Verdict(verdict.passed, f"turn {turn.turn} of {len(turns)}: {verdict.message}",
                           verdict.predicted, verdict.metrics, verdict.ran)
    return Verdict(True)
