"""An agent case's trajectory as report.html and decision.md show it: a step list, and beside the baseline's.

report.html shows each failing agent case's steps (model calls, tool calls with their arguments, tool results,
errors, the final answer); where the baseline ran the case too, its steps stand beside the candidate's, row by row,
with the first step where the two part marked (evalkit.records.trajectory.first_difference). decision.md names
that step for each regressed case. Trajectories come from the reports' `trajectories` block, by `task/<case>`:
untrusted text, escaped by the templates (and by evalkit.core.untrusted for Markdown), and cut to a size a browser
and a pull-request comment handle, with a note saying where the whole is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pydantic import ValidationError

from evalkit.core.untrusted import MAX_VALUE_CHARS, squeezed
from evalkit.records.report_reader import RunReport
from evalkit.records.trajectory import (
    AssistantTurn,
    FinalAnswer,
    ModelCall,
    Step,
    ToolCall,
    ToolResult,
    Trajectory,
    UserTurn,
    first_difference,
)

__all__ = ["MAX_CASES", "STEP_CHARS", "TRAJECTORY_CHARS", "Parting", "StepView", "TrajectoryView", "partings",
           "step_line", "trajectory_of", "trajectory_view"]

STEP_CHARS = 2_000
"""Characters of one step's text (arguments, a tool result, the answer) shown on the page; a tool result is
already cut to 4,000 in the report (evalkit.records.trajectory.MAX_TOOL_RESULT_CHARS)."""
TRAJECTORY_CHARS = 24_000
"""Characters of one case's steps shown, both sides together: 300 panels of an agent that looped to its limit
would otherwise make a page of hundreds of megabytes. Steps past it are counted, not shown."""
CONTEXT_STEPS = 2
"""Shared steps shown before the first differing one when the steps before it do not all fit."""
MAX_CASES = 20
"""Regressed cases decision.md names the parting step of; the rest are counted."""
_STEP_COST = 80
"""What a step's row costs beyond its text (its title and facts), in characters, for TRAJECTORY_CHARS."""


@dataclass(frozen=True)
class StepView:
    """One step as shown: its kind (the CSS class), a title, facts (call id, tokens, time) and its text."""

    kind: str
    title: str
    facts: str = ""
    text: str | None = None
    cut: int = 0
    """Characters of the text not shown."""
    error: bool = False


@dataclass(frozen=True)
class TrajectoryView:
    """A case's steps as its panel shows them: rows of (step number, baseline's step, candidate's step), the
    first differing step's number, and notes on what is not shown or could not be read."""

    rows: list[tuple[int, StepView | None, StepView | None]]
    beside: bool
    """Whether the baseline's steps are shown beside the candidate's."""
    parts_at: int | None = None
    skipped_before: int = 0
    """Shared steps before the first row, not shown (the first `skipped_before` steps, the same on both sides)."""
    left_out: int = 0
    """Steps after the last row not shown."""
    notes: tuple[str, ...] = ()


def trajectory_of(report: RunReport, case_id: str) -> Trajectory | str | None:
    """The case's trajectory (sample 0) from a report; None when it has none (not an agent suite, or a report
    written before trajectories were kept); why it cannot be read, as one line, when it is malformed."""
    raw = report.trajectories.get(f"task/{case_id}")
    if raw is None:
        return None
    try:
        return Trajectory.model_validate(raw)
    except (ValidationError, RecursionError) as error:
        first = error.errors()[0] if isinstance(error, ValidationError) and error.errors() else None
        where = ".".join(map(str, first["loc"])) if first else "its steps"
        return f"the trajectory of {case_id} in the report cannot be read ({where}); regenerate the report"


def trajectory_view(before: Trajectory | str | None, after: Trajectory | str | None,
                    has_baseline: bool) -> TrajectoryView | None:
    """The panel's trajectory block; None when neither side has a trajectory (not an agent case)."""
    if before is None and after is None:
        return None
    notes = [side for side in (before, after) if isinstance(side, str)]
    old = before if isinstance(before, Trajectory) else None
    new = after if isinstance(after, Trajectory) else None
    beside = has_baseline and old is not None
    if has_baseline and before is None:
        notes.append("the baseline report has no trajectory for this case")
    if after is None:
        notes.append("this report has no trajectory for this case")
    left = [_step(s) for s in old.steps] if old is not None and beside else []
    right = [_step(s) for s in new.steps] if new is not None else []
    parts_at = first_difference(old, new) if old is not None and new is not None and beside else None
    if beside and old is not None and new is not None and parts_at is None:
        notes.append("the baseline took the same steps (the difference is elsewhere: a check, the judge)")
    first, last = _window(left, right, parts_at)
    rows = [(n, left[n - 1] if n <= len(left) else None, right[n - 1] if n <= len(right) else None)
            for n in range(first, last + 1)]
    return TrajectoryView(rows, beside, parts_at, first - 1, max(len(left), len(right)) - last, tuple(notes))


def _window(left: Sequence[StepView], right: Sequence[StepView], parts_at: int | None) -> tuple[int, int]:
    """The step numbers shown (first, last): from step 1, or from shortly before the first differing step when
    the shared steps before it would not fit, and on until TRAJECTORY_CHARS is spent (the parting step is
    always shown)."""
    total = max(len(left), len(right))
    costs = [sum(_cost(side, n) for side in (left, right)) for n in range(1, total + 1)]
    first = 1
    if parts_at is not None and sum(costs[:parts_at]) > TRAJECTORY_CHARS:
        first = max(1, parts_at - CONTEXT_STEPS)
    spent, last = 0, first - 1
    for n in range(first, total + 1):
        spent += costs[n - 1]
        if spent > TRAJECTORY_CHARS and n > max(first, parts_at or 0):
            break
        last = n
    return first, last


def _cost(side: Sequence[StepView], number: int) -> int:
    if number > len(side):
        return 0
    step = side[number - 1]
    return _STEP_COST + len(step.text or "")


def _step(step: Step) -> StepView:
    if isinstance(step, ModelCall):
        return StepView("model_call", "model call", _facts(step))
    if isinstance(step, ToolCall):
        text = step.arguments if isinstance(step.arguments, str) else json.dumps(
            step.arguments, ensure_ascii=False, indent=1, sort_keys=True)
        return StepView("tool_call", f"tool call: {step.tool}", f"id {step.id}", *_clip(text))
    if isinstance(step, ToolResult):
        if step.error:
            why = step.error_message or ""
            text = f"{why}\n{step.content}".strip("\n") if step.content and step.content != why else why
            return StepView("tool_result", "tool error", f"answers {step.call_id}", *_clip(text), error=True)
        return StepView("tool_result", "tool result", f"answers {step.call_id}", *_clip(step.content))
    if isinstance(step, UserTurn):  # a conversation's turns (evalkit.run.conversation)
        return StepView("user_turn", f"user, turn {step.turn}", step.call_id or "", *_clip(step.text))
    if isinstance(step, AssistantTurn):
        return StepView("assistant_turn", f"assistant, turn {step.turn}", "", *_clip(step.text))
    return StepView("final_answer", "final answer", "", *_clip(step.text))


def _facts(call: ModelCall) -> str:
    facts = [call.call_id]
    if call.model:
        facts.append(call.model)
    if call.input_tokens is not None or call.output_tokens is not None:
        facts.append(f"{_count(call.input_tokens)} in, {_count(call.output_tokens)} out tokens")
    if call.cost_usd is not None:
        facts.append(f"${call.cost_usd:.6f}")
    if call.milliseconds is not None:
        facts.append(f"{call.milliseconds:,.0f} ms")
    return " · ".join(facts)


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _clip(text: str) -> tuple[str, int]:
    return (text, 0) if len(text) <= STEP_CHARS else (text[:STEP_CHARS], len(text) - STEP_CHARS)


def step_line(step: Step | None, limit: int = MAX_VALUE_CHARS) -> str:
    """One step on one line, as decision.md names it (plain text; the caller escapes it)."""
    if step is None:
        return "no step (the trajectory had ended)"
    if isinstance(step, ModelCall):
        return "a model call"
    if isinstance(step, ToolCall):
        arguments = json.dumps(step.arguments, ensure_ascii=False, sort_keys=True)
        return squeezed(f"tool call {step.tool} {arguments}", limit)
    if isinstance(step, ToolResult):
        label = "tool error" if step.error else "tool result"
        return squeezed(f"{label}: {step.error_message or step.content}", limit)
    if isinstance(step, FinalAnswer):
        return squeezed(f"final answer: {step.text}", limit)
    if isinstance(step, UserTurn | AssistantTurn):
        who = "user" if isinstance(step, UserTurn) else "assistant"
        return squeezed(f"{who}, turn {step.turn}: {step.text}", limit)
    return "a step"


class Parting(NamedTuple):
    """Where a regressed case's trajectory parts from the baseline's: the step number and what each side did there
    (one line each), or None when both took the same steps; or why a side could not be read (`unreadable`)."""

    case: str
    step: int | None
    baseline: str = ""
    candidate: str = ""
    unreadable: str = ""


def partings(baseline: RunReport, candidate: RunReport, case_ids: Sequence[str]) -> list[Parting]:
    """For each case of `case_ids` both reports kept a trajectory of, the first step where the candidate's parts
    from the baseline's (decision.md names them for the regressed cases)."""
    found: list[Parting] = []
    for case_id in case_ids:
        old, new = trajectory_of(baseline, case_id), trajectory_of(candidate, case_id)
        if old is None or new is None:
            continue
        if isinstance(old, str) or isinstance(new, str):
            found.append(Parting(case_id, None, unreadable=old if isinstance(old, str) else str(new)))
            continue
        step = first_difference(old, new)
        if step is None:
            found.append(Parting(case_id, None))
            continue
        found.append(Parting(case_id, step, *(step_line(t.steps[step - 1] if step <= len(t.steps) else None)
                                              for t in (old, new))))
    return found
