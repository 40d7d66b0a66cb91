"""A third party's check kind: `word-count: {max: N}` passes a reply of at most N words (and at least `min`).

It imports only evalkit's public plugin face, as a plugin package should."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalkit.plugins import Case, CheckKind, CheckSpec, Verdict


class WordCount(BaseModel):
    """`{min: N, max: M}`: how many words the reply may have."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int = Field(0, ge=0)
    """The fewest words."""
    max: int = Field(ge=0)
    """The most words."""


def words(spec: CheckSpec, value: Any, case: Case, load: Any) -> Verdict:
    """Pure: count the reply's words against the entry's bounds."""
    bounds: WordCount = spec.options
    if not isinstance(value, str):
        return Verdict(False, f"expected a text, came {type(value).__name__}")
    count = len(value.split())
    if bounds.min <= count <= bounds.max:
        return Verdict(True)
    return Verdict(False, f"expected {bounds.min} to {bounds.max} words, came {count}")


WORD_COUNT = CheckKind("word-count", WordCount, words, "the reply has between `min` and `max` words")
