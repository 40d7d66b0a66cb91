"""A deterministic lexical retriever over the policy pages in corpus/pages.json.

Scoring (no model, no embedding, no randomness):

- text is split into terms: runs of ASCII letters and digits (lower-cased) and runs of Bengali-block
  characters; English stop words and a few Bangla function words are dropped; an English term longer
  than three letters loses one trailing `s` (`returns` -> `return`, but not `ss`);
- a chunk's terms are those of its text (page titles are not scored: they would make every chunk of a page
  tie);
- score(question, chunk) = |question terms found in the chunk| / |question terms|, an exact fraction
  in [0, 1] (a question with no terms scores 0 everywhere).

Retrieval with the component `retriever` (`k`, `min_score`, `min_margin`):

1. chunks scoring below `min_score` are dropped (a score equal to it stays);
2. the rest are ranked by score, ties broken by corpus order, and the first `k` kept: the *ranked* list,
   which recall@k measures;
3. the answering rule: nothing is shown to the model (the desk abstains) when the ranked list is empty
   (`no_evidence`), or when it holds chunks of at least two pages and the best score of the top page
   exceeds the best score of the second page by less than `min_margin` (`ambiguous`: two pages answer
   the question about equally well, e.g. a current page and its superseded version). With `k=1` there
   is never a second page, so the margin rule never applies; `min_margin=0` switches it off.
   Otherwise the ranked chunks are shown.

Scores and thresholds are compared as exact fractions (`Fraction(str(0.3))`), so 0.35 - 0.3 is never
0.04999... .
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Literal

CORPUS = Path(__file__).resolve().parent / "corpus" / "pages.json"

_TERM = re.compile(r"[a-z0-9]+|[\u0980-\u09ff]+")
STOP_WORDS = frozenset(
    "a an and are as at be by can could do does for from get got had has have how i if in is it its me my "
    "of on or our please should that the their there this to was we what when where which who why will "
    "with would you your".split()
    + ["কি", "কী", "কত", "আমি", "আমার", "আমাকে", "করতে", "করে", "হয়", "হবে", "কোন", "কোনো", "কিভাবে", "এবং", "ও", "বা",
       "যায়", "না", "কে", "এর", "তার"]
)


def terms(text: str) -> frozenset[str]:
    """The set of scoring terms of a text (see the module docstring)."""
    out = set()
    for term in _TERM.findall(text.lower()):
        if term in STOP_WORDS:
            continue
        if term.isascii() and len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
            term = term[:-1]
        out.add(term)
    return frozenset(out)


@dataclass(frozen=True)
class Chunk:
    id: str
    """`<doc id>:c<index>`: what a reply cites."""
    doc_id: str
    title: str
    text: str
    lang: str
    status: str
    """`current` or `superseded`."""
    terms: frozenset[str]


@dataclass(frozen=True)
class Scored:
    chunk: Chunk
    score: Fraction


@dataclass(frozen=True)
class Retrieval:
    ranked: tuple[Scored, ...]
    """Chunks at or above min_score, best first, at most k: what recall@k measures."""
    shown: tuple[Scored, ...]
    """What the model is shown: the ranked chunks, or nothing when the desk abstains."""
    abstained: Literal["no_evidence", "ambiguous"] | None

    @property
    def ranked_docs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.chunk.doc_id for s in self.ranked))

    @property
    def shown_ids(self) -> tuple[str, ...]:
        return tuple(s.chunk.id for s in self.shown)


@cache
def load_corpus(path: Path = CORPUS) -> tuple[Chunk, ...]:
    data = json.loads(path.read_text(encoding="utf-8"))
    chunks = []
    for page in data["pages"]:
        for index, text in enumerate(page["chunks"]):
            chunks.append(Chunk(f"{page['id']}:c{index}", page["id"], page["title"], text, page["lang"],
                                page["status"], terms(text)))
    return tuple(chunks)


def score(question: frozenset[str], chunk: Chunk) -> Fraction:
    return Fraction(len(question & chunk.terms), len(question)) if question else Fraction(0)


def retrieve(question: str, *, k: int, min_score: float, min_margin: float,
             corpus: tuple[Chunk, ...] | None = None) -> Retrieval:
    """Rank, cut and decide whether to show evidence, as the module docstring says."""
    if k < 1:
        raise ValueError(f"retriever.k must be at least 1, got {k}")
    chunks = load_corpus() if corpus is None else corpus
    wanted = terms(question)
    floor, margin = Fraction(str(min_score)), Fraction(str(min_margin))
    scored = [(Scored(c, score(wanted, c)), i) for i, c in enumerate(chunks)]
    kept = sorted((s for s in scored if s[0].score >= floor), key=lambda s: (-s[0].score, s[1]))
    ranked = tuple(s for s, _ in kept[:k])
    if not ranked:
        return Retrieval(ranked, (), "no_evidence")
    best: dict[str, Fraction] = {}
    for s in ranked:
        best.setdefault(s.chunk.doc_id, s.score)  # ranked best first: the first chunk of a page is its best
    tops = list(best.values())
    if len(tops) >= 2 and tops[0] - tops[1] < margin:
        return Retrieval(ranked, (), "ambiguous")
    return Retrieval(ranked, ranked, None)
