"""`pairwise` checks: the reply compared with another reply by the suite's pinned judge, in both orders, on the
pairwise block (evalkit.judging.pairwise): the new reply wins only if the judge picks it both times, and a
preference that flips with the order is a tie.

The other reply is the baseline run's reply to the same case (`against: baseline`: sample 0 of the recording the
baseline report names, which the runner reads already for suites that judge against the baseline), or a reply
kept in a case field (`against: {case: FIELD}`: a reference answer in the dataset). The check plans two judge
calls per case, `judge/<check>/new-first/<case>` and `judge/<check>/old-first/<case>`, recorded and replayed with
the rest; a reply equal to the other is a tie without asking. A run with no baseline reply for a case (the first
run, or a baseline whose recording is not in the project) skips the check on it, saying so: there is nothing to
compare, and passing it would claim a comparison that was never made.

The check passes unless the new reply loses (`require: no-loss`, the default), or only when it wins
(`require: win`); its outcome per case is kept as the metrics `<check>.win`, `.tie`, `.loss` and `.disagree`.
"""

from __future__ import annotations

import json
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.judging.pairwise import (
    DEFAULT_INSTRUCTION,
    VERDICT_SCHEMA,
    PairOutcome,
    PairVerdict,
    combine,
    pairwise_prompts,
)
from evalkit.judging.pairwise import NEW_FIRST as PAIRWISE_NEW_FIRST
from evalkit.judging.pairwise import OLD_FIRST as PAIRWISE_OLD_FIRST
from evalkit.records.call import Message, Request

__all__ = ["NEW_FIRST", "OLD_FIRST", "CaseField", "PairwiseSpec", "pair_metrics", "pair_requests", "pair_verdict",
           "question_of"]

NEW_FIRST: Final = "new-first"
"""The call showing the new reply first: `judge/<check>/new-first/<case>`."""
OLD_FIRST: Final = "old-first"
PAIRWISE_SYSTEM: Final = ("You compare two answers to the same question and say which one serves it better, "
                          "as the message asks.")
"""The judge's system message (part of each request, so changing it changes the recording's identity)."""


class CaseField(BaseModel):
    """`{case: FIELD}`: the other reply, kept in a case field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case: str = Field(min_length=1)


class PairwiseSpec(BaseModel):
    """`pairwise: {against: baseline, criterion: "...", require: no-loss}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    against: Literal["baseline"] | CaseField
    """`baseline`: the baseline run's reply to the same case; `{case: FIELD}`: a reply kept in the case."""
    criterion: str = Field(DEFAULT_INSTRUCTION, min_length=1)
    """What makes one reply better, in words; by default the pairwise block's, which also warns against length."""
    question: str | None = None
    """The case field the judge reads as the question; None: the judge reads all of the case's fields."""
    require: Literal["no-loss", "win"] = "no-loss"
    """`no-loss`: pass unless the judge prefers the other reply in both orders; `win`: pass only when it prefers
    the new one in both."""

    @property
    def describe(self) -> str:
        return "the baseline's reply" if self.against == "baseline" else f"case field {self.against.case!r}"


def question_of(spec: PairwiseSpec, case: Case) -> str:
    """What the judge is told the replies answer: the question field, or the case's fields as JSON."""
    if spec.question is not None and spec.question in case.fields:
        value = case.fields[spec.question]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return f"Case {case.id}: {json.dumps(case.fields, ensure_ascii=False, sort_keys=True)}"


def pair_requests(name: str, spec: PairwiseSpec, case: Case, new: str, old: str,
                  judge: ModelConfig) -> dict[str, Request]:
    """The two judge calls (by judge metric, `<check>/new-first` and `<check>/old-first`) comparing `new` with
    `old`; none when they are the same text."""
    if new == old:
        return {}
    prompts = pairwise_prompts(question_of(spec, case), new=new, old=old, instruction=spec.criterion)
    texts = {f"{name}/{NEW_FIRST}": prompts[PAIRWISE_NEW_FIRST], f"{name}/{OLD_FIRST}": prompts[PAIRWISE_OLD_FIRST]}
    return {metric: Request(model=judge.name, messages=(Message(role="system", content=PAIRWISE_SYSTEM),
                                                        Message(role="user", content=text)),
                            response_schema=VERDICT_SCHEMA, options=judge.options)
            for metric, text in texts.items()}


def pair_verdict(spec: PairwiseSpec, new_first: str | None,
                 old_first: str | None) -> tuple[bool, str, PairVerdict | None]:
    """(passed, one-line message, the pair's verdict) from the judge's two answers; None and None: the replies
    were the same (a tie, with no call). An answer that is not a verdict fails the check with what came."""
    if new_first is None or old_first is None:
        verdict = PairVerdict(outcome=PairOutcome.TIE, disagree=False)
        seen = f"the same reply as {spec.describe}"
    else:
        try:
            verdict = combine(new_first, old_first)
        except InputError:
            return False, (f"expected the judge's verdict first, second or tie in both orders, came "
                           f"{_cut(new_first)} and {_cut(old_first)}"), None
        seen = {PairOutcome.WIN: "a win",
                PairOutcome.LOSS: f"a loss (the judge preferred {spec.describe} in both orders)",
                PairOutcome.TIE: "a tie (the judge's preference flipped with the order)" if verdict.disagree
                else "a tie"}[verdict.outcome]
    if spec.require == "win":
        passed = verdict.outcome is PairOutcome.WIN
        return passed, "" if passed else f"expected a win against {spec.describe}, came {seen}", verdict
    passed = verdict.outcome is not PairOutcome.LOSS
    return passed, "" if passed else f"expected no loss against {spec.describe}, came {seen}", verdict


def pair_metrics(verdict: PairVerdict) -> dict[str, float]:
    """The pair's outcome as the check's metrics (`win`, `tie`, `loss`, `disagree`, each 0 or 1)."""
    return {**{o.value: 1.0 if verdict.outcome is o else 0.0 for o in PairOutcome},
            "disagree": 1.0 if verdict.disagree else 0.0}


def _cut(text: str) -> str:
    one = json.dumps(" ".join(text.split()), ensure_ascii=False)
    return one if len(one) <= 80 else one[:77] + "..."
