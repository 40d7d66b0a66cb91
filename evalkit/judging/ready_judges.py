"""Ready-made judges: faithfulness to a context, answer relevancy, and a G-Eval-style criteria rubric, each a
check kind of `checks.yaml` that the suite's pinned judge scores on anchored levels 1 to 5.

Like `llm-rubric` (evalkit.judging.llm_rubric), each check plans one judge call per case, `judge/<check>/<case>`,
recorded, replayed and fingerprinted with the suite's own judge calls: the judge's name and reply settings are in
the eval key (`judge_model`, `judge_sha`), and the whole prompt, with the levels' anchors, is in the request, so an
edit to a prompt here changes the recorded request and a replay refuses the stale call by name.

The judge answers `{"reason": "...", "score": 1..5}`; the check passes at `pass_at` (4 by default) and above. An
answer that is not that fails the check with what came, never errors it. Pure: building a request and reading an
answer; the call itself is made by the runner.

What is "G-Eval-style" and what is not: the judge follows evaluation steps (the check's own, or FIXED_STEPS) and
then scores on anchored levels, as G-Eval does; it does not generate its steps with a first model call, and the
score is the integer the judge writes, not G-Eval's probability-weighted sum over the score tokens (providers do
not all return token probabilities, and a recording keeps text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.untrusted import squeezed
from evalkit.records.call import Message, Request

__all__ = ["DEFAULT_PASS_AT", "FIXED_STEPS", "JUDGES", "LEVELS", "SCORE_SCHEMA", "AnswerRelevancySpec",
           "FaithfulnessSpec", "GEvalSpec", "ReadyJudge", "Scored", "case_text", "judge_request", "needed_field",
           "score_verdict", "system_prompt"]

LEVELS: Final = (1, 2, 3, 4, 5)
DEFAULT_PASS_AT: Final = 4
"""A reply passes at this level and above unless the check says `pass_at`."""
SHOWN_CHARS: Final = 160

SCORE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["reason", "score"],
}
"""The judge's answer, as structured output asks for it: the reason first, so the score follows from it."""


class FaithfulnessSpec(BaseModel):
    """`faithfulness: {context: FIELD}`: the reply states only what the case's context supports."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context: str = Field(min_length=1)
    """The case field holding the context (retrieved passages, a document) the reply must keep to."""
    pass_at: int = Field(DEFAULT_PASS_AT, ge=1, le=5)
    """The lowest level that passes."""


class AnswerRelevancySpec(BaseModel):
    """`answer-relevancy: {question: FIELD}`: the reply answers the case's question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1)
    """The case field holding the question the reply must answer."""
    pass_at: int = Field(DEFAULT_PASS_AT, ge=1, le=5)
    """The lowest level that passes."""


class GEvalSpec(BaseModel):
    """`g-eval: {criteria: "...", steps: [...], pass_at: 4}`: the reply scored against criteria in words."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criteria: str = Field(min_length=1)
    """What a reply must do, in plain words (G-Eval's "criteria")."""
    steps: tuple[str, ...] = ()
    """The evaluation steps the judge follows before scoring; FIXED_STEPS when none are given."""
    pass_at: int = Field(DEFAULT_PASS_AT, ge=1, le=5)
    """The lowest level that passes."""


@dataclass(frozen=True)
class ReadyJudge:
    """One ready-made judge: what it scores, and what each level means (the anchors the judge is shown)."""

    kind: str
    """The check kind, as `checks.yaml` names it."""
    scores: str
    """What the score is about, as the failure message names it."""
    task: str
    """What the judge does, in the system prompt."""
    anchors: Mapping[int, str]
    """Level -> what a reply at that level shows; 5 is the best."""


FAITHFULNESS = ReadyJudge(
    kind="faithfulness", scores="faithfulness to the context",
    task=("You check whether a reply of an AI system is faithful to a context it was given. List the claims the "
          "reply makes, and for each find whether the context states it, implies it, contradicts it, or says "
          "nothing about it. Judge only faithfulness: a reply that leaves things out, or is unhelpful, is not "
          "unfaithful for that."),
    anchors={
        5: "Every claim in the reply is stated in the context or follows directly from it.",
        4: "Every main claim is supported by the context; a minor detail is not in the context, and nothing "
           "contradicts it.",
        3: "Some claims are supported; at least one claim that matters to the reply is not in the context, and "
           "nothing contradicts it.",
        2: "A claim of the reply contradicts the context, or most claims are not in the context.",
        1: "The reply's main claims contradict the context, or the reply has nothing to do with the context.",
    })
ANSWER_RELEVANCY = ReadyJudge(
    kind="answer-relevancy", scores="answer relevancy",
    task=("You check whether a reply of an AI system answers the question it was asked. Split the reply into its "
          "statements and find, for each, whether it addresses the question. Judge only relevancy: whether the "
          "answer is true is not asked here."),
    anchors={
        5: "The reply answers the question directly and completely; every statement addresses the question.",
        4: "The reply answers the question; a minor part of the question is unanswered, or a few statements do not "
           "address it.",
        3: "The reply answers part of the question; a main part is unanswered, or much of the reply is about "
           "something else.",
        2: "The reply is on the question's topic but does not answer it.",
        1: "The reply is about something else, is empty, or refuses without answering.",
    })
G_EVAL = ReadyJudge(
    kind="g-eval", scores="the criteria",
    task=("You grade a reply of an AI system against criteria. Follow the evaluation steps in order, noting "
          "what each finds, then give the level the findings support. Judge only what the criteria ask."),
    anchors={
        5: "The reply meets every part of the criteria; no step finds a problem.",
        4: "The reply meets the criteria; one step finds a minor problem that leaves the criteria met.",
        3: "The reply meets part of the criteria; a step finds a problem that leaves a part of the criteria unmet.",
        2: "The reply misses most of the criteria; most steps find a problem.",
        1: "The reply meets none of the criteria, or has nothing to do with them.",
    })
JUDGES: Final[Mapping[str, ReadyJudge]] = {j.kind: j for j in (FAITHFULNESS, ANSWER_RELEVANCY, G_EVAL)}
"""The ready-made judges by check kind."""

FIXED_STEPS: Final = (
    "Read the criteria and note each thing they ask of a reply.",
    "Read the case and the reply.",
    "For each thing the criteria ask, find whether the reply does it, and quote the part that shows it.",
    "Choose the level whose description matches what the steps found.",
)
"""A g-eval check's evaluation steps when it gives none (G-Eval would have a model write them)."""

Spec = FaithfulnessSpec | AnswerRelevancySpec | GEvalSpec


def system_prompt(kind: str) -> str:
    """The judge's system message for a ready-made judge: its task, the anchored levels, the answer's form."""
    judge = JUDGES[kind]
    levels = "\n".join(f"{level}: {judge.anchors[level]}" for level in sorted(judge.anchors, reverse=True))
    return (f"{judge.task}\n\nScore the reply on these levels (5 is the best):\n{levels}\n\n"
            'Answer with JSON only: {"reason": "<one sentence naming what decided the level>", '
            '"score": <the level, 1 to 5>}.')


def case_text(value: Any) -> str:
    """A case field as the judge reads it: a text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def needed_field(spec: Spec) -> str | None:
    """The case field a judge of this spec must read (None: it reads the whole case)."""
    if isinstance(spec, FaithfulnessSpec):
        return spec.context
    if isinstance(spec, AnswerRelevancySpec):
        return spec.question
    return None


def judge_request(kind: str, spec: Spec, case: Case, reply: str, judge: ModelConfig) -> Request:
    """The judge call that scores one case's reply; the case must hold the field the spec names
    (`needed_field`: the planner asks no judge for a case without it, and the check fails naming it)."""
    if isinstance(spec, FaithfulnessSpec):
        task = f"Context:\n{case_text(case.fields[spec.context])}\n\nReply:\n{reply}"
    elif isinstance(spec, AnswerRelevancySpec):
        task = f"Question:\n{case_text(case.fields[spec.question])}\n\nReply:\n{reply}"
    else:
        steps = "\n".join(f"{n}. {step}" for n, step in enumerate(spec.steps or FIXED_STEPS, start=1))
        task = (f"Case {case.id}: {json.dumps(case.fields, ensure_ascii=False, sort_keys=True)}\n\n"
                f"Reply:\n{reply}\n\nCriteria: {spec.criteria}\n\nEvaluation steps:\n{steps}")
    return Request(model=judge.name, messages=(Message(role="system", content=system_prompt(kind)),
                                               Message(role="user", content=task)),
                   response_schema=SCORE_SCHEMA, options=judge.options)


@dataclass(frozen=True)
class Scored:
    """What a ready-made judge's answer says: passed or not, the one-line message when not, and the level (None
    when the answer gave none)."""

    passed: bool
    message: str
    score: int | None


def score_verdict(kind: str, judge_reply: str, pass_at: int) -> Scored:
    """The check's verdict from the judge's answer: the level against `pass_at`; an answer without a level from
    1 to 5 fails with what came."""
    form = '{"reason": ..., "score": 1-5}'
    try:
        data = json.loads(judge_reply)
    except json.JSONDecodeError as error:
        return Scored(False, f"expected the judge's score as JSON {form}, came unparseable JSON ({error.msg}): "
                             f"{squeezed(judge_reply, SHOWN_CHARS)}", None)
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, float) and score.is_integer():
        score = int(score)
    if isinstance(score, bool) or not isinstance(score, int) or score not in LEVELS:
        return Scored(False, f"expected the judge's score {form}, came {squeezed(judge_reply, SHOWN_CHARS)}", None)
    if score >= pass_at:
        return Scored(True, "", score)
    reason = squeezed(str(data.get("reason") or "no reason given"), SHOWN_CHARS)
    return Scored(False, f"expected {JUDGES[kind].scores} at level {pass_at} or above (of 5), came {score}: {reason}",
                  score)

