"""Checks over the desk's replies (replayed by default: no model call).

Per-case metrics (run means are in the report's `metrics`): recall_at_k (answerable rag cases),
citation_validity (rag cases whose request showed evidence; None when the reply's citations cannot be
read), abstention_correct (rag cases), tool_pass (tool cases), format_pass (format cases).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import Outcome
from retriever import Retrieval
from task import RUBRIC, TOOLS, Ratings, ToolPlan

from evalkit import NEW_FIRST, OLD_FIRST, Case, combine, language_of


@pytest.mark.cases(lambda case: case.kind == "rag" and case.expect == "answer")
def test_recall(case, retrieval: Retrieval, record_metric):
    """recall@k: one of the case's pages (any one is right) is among the pages of the ranked top-k chunks."""
    hit = any(doc in retrieval.ranked_docs for doc in case.doc_ids)
    record_metric("recall_at_k", 1.0 if hit else 0.0)
    assert hit, f"none of {case.doc_ids} in the top-k pages {list(retrieval.ranked_docs) or '(nothing retrieved)'}"


@pytest.mark.cases(lambda case: case.kind == "rag")
def test_citations(case, retrieval: Retrieval, outcome: Outcome, record_metric):
    """A citation is valid when it names a chunk the model was shown; an answer must cite at least one.

    citation_validity is measured on every rag case whose request showed evidence: 1 when the reply answers
    citing only shown chunks, or abstains citing nothing; 0 otherwise; None when the citations cannot be read.
    The check asserts it only where an answer is expected: an answer to a question that needs an abstention is
    already the failure of test_abstention, and is not failed twice.
    """
    shown = set(retrieval.shown_ids)
    cited = outcome.cited_ids
    if cited is None:  # unreadable: the desk abstained, so no claim was shown to the customer
        if shown:
            record_metric("citation_validity", None)
        return
    if outcome.status == "answered":
        valid = bool(cited) and set(cited) <= shown
    else:
        valid = not cited
    if shown:
        record_metric("citation_validity", 1.0 if valid else 0.0)
    if case.expect == "answer":
        assert valid, (f"{outcome.status} citing {list(cited) or 'nothing'}; the model was shown "
                       f"{sorted(shown) or 'no evidence'}")


@pytest.mark.cases(lambda case: case.kind == "rag")
def test_abstention(case, outcome: Outcome, record_metric):
    """The desk answers what the pages answer and abstains on the rest."""
    expected = "answered" if case.expect == "answer" else "abstained"
    correct = outcome.status == expected
    record_metric("abstention_correct", 1.0 if correct else 0.0)
    detail = f" ({outcome.detail})" if outcome.detail else ""
    assert correct, f"expected {expected}, the desk {outcome.status}{detail}"


@pytest.mark.cases(lambda case: case.kind == "tool")
def test_tools(case, task_reply: str, record_metric):
    """The planned calls are the expected tools, in order; each listed argument matches (others are free)."""
    problems = _tool_problems(case, task_reply)
    record_metric("tool_pass", 0.0 if problems else 1.0)
    assert not problems, "; ".join(problems)


@pytest.mark.cases(lambda case: case.kind == "format")
def test_format(case, task_reply: str, record_metric):
    """The reply has the format the case asked for."""
    problem = _format_problem(case.format, task_reply)
    record_metric("format_pass", 0.0 if problem else 1.0)
    assert problem is None, f"{problem}: {task_reply!r}"


def _tool_problems(case: Case, text: str) -> list[str]:
    try:
        plan = ToolPlan.model_validate_json(text)
    except ValueError as error:
        return [f"not a tool plan: {str(error).splitlines()[0]}"]
    problems = [f"unknown tool {call.name!r}" for call in plan.tool_calls if call.name not in TOOLS]
    got = [call.name for call in plan.tool_calls]
    want = [tool["name"] for tool in case.tools]
    if got != want:
        problems.append(f"calls {got}, expected {want}")
    else:
        for call, tool in zip(plan.tool_calls, case.tools, strict=True):
            wrong = {k: call.arguments.get(k) for k, v in tool["arguments"].items() if call.arguments.get(k) != v}
            if wrong:
                problems.append(f"{call.name}: arguments {wrong}, expected {tool['arguments']}")
    return problems


def _format_problem(spec: dict, text: str) -> str | None:
    kind = spec["type"]
    if kind == "bullets":
        lines = [line for line in text.strip().splitlines() if line.strip()]
        if not lines or not all(re.match(r"\s*[-*•] \S", line) for line in lines):
            return "not a bullet list (every line '- item')"
        return None if len(lines) <= spec["max_items"] else f"{len(lines)} bullets, at most {spec['max_items']}"
    if kind == "max_words":
        words = len(text.split())
        return None if words <= spec["max"] else f"{words} words, at most {spec['max']}"
    if kind == "json_keys":
        try:
            data = json.loads(text)
        except ValueError:
            return "not JSON"
        if not isinstance(data, dict) or sorted(data) != sorted(spec["keys"]):
            return f"keys {sorted(data) if isinstance(data, dict) else type(data).__name__}, expected {spec['keys']}"
        return None
    if kind == "language":
        found = language_of(text)
        return None if found == spec["language"] else f"language {found}, expected {spec['language']}"
    if kind == "plain_text":
        return "Markdown markup in a plain-text reply" if re.search(r"[*_#`]|\[.+\]\(|^\s*[-+] ", text, re.M) else None
    raise ValueError(f"unknown format type {kind!r}")


@pytest.mark.cases(lambda case: case.kind == "rag")
def test_rubric(case, judge_reply, record_metric):
    """The judge rates the reply on the rubric; each criterion becomes a metric (`rubric.<criterion>`).

    The check is the judge's contract: a rating for every criterion and only those, at a level that exists.
    """
    ratings = Ratings.model_validate_json(judge_reply("rubric")).model_dump()
    for metric, level in RUBRIC.score(ratings).items():
        record_metric(metric, float(level))


@pytest.mark.cases(lambda case: case.kind == "rag", judged=NEW_FIRST)
def test_pairwise(case, judge_reply, record_metric):
    """Against the baseline's reply, in both orders: the new reply wins only if the judge picks it both times.

    Only cases whose reply differs from the baseline's are compared (the runner made the judge calls only for
    those); the metrics are per compared case, so their means are rates.
    """
    verdict = combine(judge_reply(NEW_FIRST), judge_reply(OLD_FIRST))
    for outcome in ("win", "tie", "loss"):
        record_metric(f"pairwise.{outcome}", 1.0 if verdict.outcome == outcome else 0.0)
    record_metric("pairwise.disagree", 1.0 if verdict.disagree else 0.0)
