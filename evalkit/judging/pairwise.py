"""Pairwise judging with the order swapped: the new output wins only if the judge picks it in both orders.

A judge that prefers whatever it reads first (or second) then flips its verdict when the order flips;
that flip is a tie, counted as `disagree`. The swap removes position bias only: a judge that prefers
the longer answer prefers it in both orders, so length bias survives (see `pairwise_prompts`). Pure: the
two judge calls are made by the suite's task (`pairwise_prompts`), their reply texts parsed here.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalkit.core.errors import InputError

__all__ = ["NEW_FIRST", "OLD_FIRST", "VERDICT_SCHEMA", "PairOutcome", "PairVerdict", "Verdict", "combine",
           "pairwise_prompts", "parse_verdict"]

Verdict = Literal["first", "second", "tie"]
"""Which of the two answers the judge prefers, by position."""

NEW_FIRST = "pairwise/new-first"
"""The judge metric (a suite's `build_judge` key) of the call that shows the new output first."""
OLD_FIRST = "pairwise/old-first"
"""The judge metric of the call that shows the old output first."""

_VERDICTS: tuple[Verdict, ...] = ("first", "second", "tie")
_BY_WORD: dict[str, Verdict] = {v: v for v in _VERDICTS}

VERDICT_SCHEMA: dict[str, Any] = {
    "title": "PairwiseVerdict",
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": list(_VERDICTS)}},
    "required": ["verdict"],
    "additionalProperties": False,
}
"""A response schema for structured output; `parse_verdict` reads replies that follow it."""

DEFAULT_INSTRUCTION = (
    "Which answer serves the question better? Judge what each answer says, not its position or its length: "
    "a longer answer is not better for being longer."
)


class PairOutcome(enum.StrEnum):
    """The new output's result against the old one for one pair."""

    WIN = "win"
    TIE = "tie"
    LOSS = "loss"


class PairVerdict(BaseModel):
    """The combined verdict of the two judge calls on one pair."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: PairOutcome
    """win / tie / loss for the new output."""
    disagree: bool
    """The judge's preference flipped with the order (the outcome is then a tie)."""


def parse_verdict(text: str) -> Verdict:
    """A judge's verdict from its reply: the bare word `first`, `second` or `tie` (any case, surrounding
    whitespace allowed), or a JSON object `{"verdict": ...}` following VERDICT_SCHEMA. Anything else is refused."""
    word: Any = text.strip()
    if isinstance(word, str) and word.startswith("{"):
        try:
            body = json.loads(word)
        except json.JSONDecodeError:
            body = None
        word = body.get("verdict") if isinstance(body, dict) and set(body) == {"verdict"} else None
    verdict = _BY_WORD.get(word.lower()) if isinstance(word, str) else None
    if verdict is not None:
        return verdict
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise InputError(f"judge verdict {shown!r} is not one of first, second, tie "
                     "(a bare word, or JSON {\"verdict\": ...})")


def combine(new_first: str, old_first: str) -> PairVerdict:
    """The pair's verdict from the judge's verdict texts with the new output shown first and shown second."""
    one = _AS_NEW[parse_verdict(new_first)]  # positions -> new/old
    two = _SWAPPED[parse_verdict(old_first)]
    if one == two:
        return PairVerdict(outcome=one, disagree=False)
    return PairVerdict(outcome=PairOutcome.TIE, disagree=True)


_AS_NEW = {"first": PairOutcome.WIN, "second": PairOutcome.LOSS, "tie": PairOutcome.TIE}
_SWAPPED = {"first": PairOutcome.LOSS, "second": PairOutcome.WIN, "tie": PairOutcome.TIE}


def pairwise_prompts(question: str, new: str, old: str, instruction: str = DEFAULT_INSTRUCTION) -> dict[str, str]:
    """The two judge prompts, keyed by judge metric: NEW_FIRST shows the new output first, OLD_FIRST the old.

    A suite's `build_judge` returns these keys (each text wrapped in a Request); evalkit then makes the
    calls `judge/pairwise/new-first/<case-id>` and `judge/pairwise/old-first/<case-id>`, and a check reads
    them back with `judge_reply(NEW_FIRST)` and `judge_reply(OLD_FIRST)` before `combine`.
    """

    def prompt(first: str, second: str) -> str:
        return (f"Question:\n{question}\n\nFirst answer:\n{first}\n\nSecond answer:\n{second}\n\n"
                f"{instruction}\nReply with one word: first, second or tie.")

    return {NEW_FIRST: prompt(new, old), OLD_FIRST: prompt(old, new)}
