"""EvidenceDesk: a help desk that answers from retrieved policy pages, plans tool calls, and follows reply formats.

evalkit calls `build_task` for every case. A `rag` case retrieves with the `retriever` component
(retriever.py) and shows the model the retrieved chunks, or tells it that nothing was found; the reply is
JSON whose citation field is named by the `reply_format` component (`cited_ids`, or `sources`: the seed's
"new schema" stand-in). A `tool` case asks for a tool plan from TOOLS; a `format` case asks for a reply
in the format the case names. The checks in test_evidencedesk.py read the replies.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from retriever import Retrieval, retrieve

from evalkit import VERDICT_SCHEMA, Case, Message, ModelConfig, Request, load_rubric, pairwise_prompts

CITATIONS = "cited_ids"
"""The citation field the desk's reply parser (and so every check) reads; reply_format=sources renames it."""


class Answer(BaseModel):
    """A rag reply as the desk reads it."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["answered", "abstained"]
    answer: str
    cited_ids: list[str]


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, str]


class ToolPlan(BaseModel):
    """A tool case's reply: the calls to make, in order."""

    model_config = ConfigDict(extra="forbid")

    tool_calls: list[ToolCall] = Field(min_length=1)


TOOLS: dict[str, dict[str, Any]] = {
    "order_status": {"description": "Look up where an order is.", "arguments": ["order_id"]},
    "cancel_order": {"description": "Cancel an order that has not shipped.", "arguments": ["order_id"]},
    "start_return": {"description": "Open a return for a delivered order.", "arguments": ["order_id", "reason"]},
    "book_service": {"description": "Book a service visit (date as YYYY-MM-DD).", "arguments": ["date"]},
    "reset_password": {"description": "Send a password reset link.", "arguments": ["email"]},
    "handoff_to_human": {"description": "Hand the conversation to a person (payment disputes, complaints).",
                         "arguments": ["order_id", "reason"]},
}


def retrieval_for(case: Case, components: dict[str, Any]) -> Retrieval:
    """What the desk retrieves for a rag case under the run's `retriever` settings."""
    settings = components["retriever"]
    return retrieve(case.input, k=int(settings["k"]), min_score=float(settings["min_score"]),
                    min_margin=float(settings["min_margin"]))


def reply_schema(field: str) -> dict[str, Any]:
    """The JSON schema the model is asked to follow: Answer, with the citation list named `field`."""
    model = create_model("Answer", __config__=ConfigDict(extra="forbid"),
                         status=(Literal["answered", "abstained"], ...), answer=(str, ...),
                         **{field: (list[str], ...)})  # type: ignore[call-overload]
    return model.model_json_schema()


def build_task(case: Case, prompt: str, model: ModelConfig, components: dict[str, Any]) -> Request:
    if case.kind == "rag":
        user, schema = _rag(case, components), reply_schema(components["reply_format"]["field"])
    elif case.kind == "tool":
        user, schema = _tool(case), ToolPlan.model_json_schema()
    elif case.kind == "format":
        user, schema = f"{case.input}\nReply in exactly the format asked for, and nothing else.", None
    else:
        raise ValueError(f"case {case.id}: unknown kind {case.kind!r} (rag, tool or format)")
    return Request(model=model.name, messages=(Message(role="system", content=prompt),
                                               Message(role="user", content=user)),
                   response_schema=schema, options=model.options)


def _rag(case: Case, components: dict[str, Any]) -> str:
    found = retrieval_for(case, components)
    field = components["reply_format"]["field"]
    if found.shown:
        evidence = "\n".join(f"[{s.chunk.id}] {s.chunk.text}" for s in found.shown)
    elif found.abstained == "ambiguous":
        evidence = "(two help pages match this question about equally well, so none is shown: abstain)"
    else:
        evidence = "(no help page matches this question well enough: abstain)"
    return (f"Question: {case.input}\n\nEvidence:\n{evidence}\n\n"
            f"Reply as JSON with status (answered or abstained), answer, and {field}: the ids of the evidence "
            "chunks your answer uses (empty when you abstain).")


def _tool(case: Case) -> str:
    catalogue = json.dumps(TOOLS, indent=1)
    return (f"Customer: {case.input}\n\nTools:\n{catalogue}\n\n"
            "Reply with the tool calls to make, in order, as JSON: tool_calls, each with name and arguments.")


# --- the judge: the rubric for every rag reply, and pairwise against the baseline's reply ----------

RUBRIC = load_rubric("evidencedesk")  # conf/rubric/evidencedesk.yaml: relevance, evidence_use, format


class Ratings(BaseModel):
    """The judge's rubric ratings of one reply (levels 0, 1, 2; see the rubric's anchors)."""

    model_config = ConfigDict(extra="forbid")

    relevance: int = Field(ge=0, le=2)
    evidence_use: int = Field(ge=0, le=2)
    format: int = Field(ge=0, le=2)


def rubric_prompt(case: Case, evidence: str, output: str) -> str:
    anchors = "\n".join(f"- {c.name} {level}: {anchor}" for c in RUBRIC.criteria for level, anchor in
                        sorted(c.levels.items()))
    return (f"Rate the help-desk reply below on each criterion, 0, 1 or 2, by the anchor that describes what you "
            f"see.\n{anchors}\n\nQuestion: {case.input}\n\nEvidence shown to the desk:\n{evidence}\n\n"
            f"Reply:\n{output}\n\nAnswer as JSON with relevance, evidence_use and format.")


def build_judge(case: Case, output: str, judge: ModelConfig, components: dict[str, Any],
                baseline_replies: dict[str, str]) -> dict[str, Request]:
    """Rag replies get a rubric rating; when the baseline's reply differs, a pairwise comparison in both orders."""
    if case.kind != "rag":
        return {}

    def ask(text: str, schema: dict[str, Any] | None) -> Request:
        return Request(model=judge.name, messages=(Message(role="user", content=text),),
                       response_schema=schema, options=judge.options)

    found = retrieval_for(case, components)
    evidence = "\n".join(f"[{s.chunk.id}] {s.chunk.text}" for s in found.shown) or "(none)"
    requests = {"rubric": ask(rubric_prompt(case, evidence, output), Ratings.model_json_schema())}
    old = baseline_replies.get(case.id)
    if old is not None and old != output:
        for metric, text in pairwise_prompts(case.input, new=output, old=old).items():
            requests[metric] = ask(text, VERDICT_SCHEMA)
    return requests
