"""How far raters agree: a judge with itself over its own repeated samples (self-agreement and Fleiss' kappa),
and a judge with people over ordinal levels (Cohen's kappa, weighted linearly or quadratically). Pure.

Kappa is agreement beyond what the raters' own level frequencies would give by chance: 1 is perfect agreement,
0 no better than chance, below 0 worse. Every function returns None where chance agreement is total (every
rating the same level) or nothing was rated: a kappa there would divide by zero, and a made-up number would read
as measured.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["WEIGHTS", "SelfAgreement", "Weights", "fleiss_kappa", "self_agreement", "weighted_kappa"]

Weights = Literal["linear", "quadratic"]
WEIGHTS: tuple[Weights, ...] = ("linear", "quadratic")
"""How far apart two ordinal levels are counted: `linear` |a - b|, `quadratic` (a - b)^2 (the default of
`evalkit calibrate`: a near miss costs little, a judge two levels off costs four times one level off)."""


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of subjects each rated by the same number n >= 2 of raters (one row per subject, its n levels):
    (P - Pe) / (1 - Pe), P the mean share of agreeing rater pairs per subject and Pe the sum of squared overall
    level shares. Rows of another length than the first are refused (ValueError): the formula needs equal n."""
    rows = [list(row) for row in ratings]
    if not rows:
        return None
    n = len(rows[0])
    if n < 2 or any(len(row) != n for row in rows):
        raise ValueError(f"Fleiss' kappa needs the same number (at least 2) of ratings per subject, got "
                         f"{sorted({len(row) for row in rows})}")
    totals: Counter[Hashable] = Counter()
    agreeing = 0.0
    for row in rows:
        counts = Counter(row)
        totals.update(counts)
        agreeing += sum(k * (k - 1) for k in counts.values()) / (n * (n - 1))
    observed = agreeing / len(rows)
    chance = sum((count / (len(rows) * n)) ** 2 for count in totals.values())
    return None if chance >= 1 else round((observed - chance) / (1 - chance), 6)


@dataclass(frozen=True)
class SelfAgreement:
    """A judged check's agreement with itself: over the replies it judged K times each, how many got K equal
    verdicts, and Fleiss' kappa over the levels it gave (pass/fail, or a score)."""

    repeats: int
    replies: int
    """Replies judged K times (a reply whose judge gave no verdict in some sample is left out, counted below)."""
    agreeing: int
    kappa: float | None
    levels: tuple[str, ...]
    """The levels the judge gave, as written in the report (`pass`, `score 4`), sorted."""
    unread: int = 0
    """Replies left out because a sample's answer held no verdict (it is not a level the judge chose)."""

    @property
    def agreement(self) -> float | None:
        return round(self.agreeing / self.replies, 6) if self.replies else None

    def to_json(self) -> dict[str, Any]:
        return {"repeats": self.repeats, "replies": self.replies, "agreeing": self.agreeing,
                "agreement": self.agreement, "fleiss_kappa": self.kappa, "levels": list(self.levels),
                "unread": self.unread}


def self_agreement(verdicts: Sequence[Sequence[str | None]]) -> SelfAgreement | None:
    """The self-agreement of one check from each reply's K verdicts (None: that sample's answer held none); None
    when the check was judged once per reply (K = 1: nothing to agree with)."""
    repeats = max((len(row) for row in verdicts), default=0)
    if repeats < 2:
        return None
    read = [list(row) for row in verdicts if len(row) == repeats and all(v is not None for v in row)]
    levels = tuple(sorted({str(v) for row in read for v in row}))
    return SelfAgreement(repeats=repeats, replies=len(read), agreeing=sum(len(set(row)) == 1 for row in read),
                         kappa=fleiss_kappa(read) if read else None, levels=levels,
                         unread=len(verdicts) - len(read))


def weighted_kappa(said: Sequence[float], truth: Sequence[float], weights: Weights = "quadratic") -> float | None:
    """Cohen's kappa of two raters over ordinal levels, disagreements weighted by their distance in levels:
    1 - sum(w * observed) / sum(w * expected), with w = |a - b| (linear) or (a - b)^2 (quadratic), observed the
    joint shares of the level pairs and expected the product of each rater's own level shares. Distances are in the
    levels' own numbers (2 and 5 are three apart even when no one rated 3 or 4)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights {weights!r}: one of {', '.join(WEIGHTS)}")
    n = len(said)
    if n != len(truth):
        raise ValueError("both raters must rate the same subjects")
    if n == 0:
        return None

    def distance(a: float, b: float) -> float:
        return abs(a - b) if weights == "linear" else (a - b) ** 2

    observed = sum(distance(a, b) for a, b in zip(said, truth, strict=True)) / n
    mine, theirs = Counter(said), Counter(truth)
    expected = sum(distance(a, b) * ca * cb for a, ca in mine.items() for b, cb in theirs.items()) / (n * n)
    return None if expected == 0 else round(1 - observed / expected, 6)
