"""The trajectory: what one case did, step by step (DESIGN.md, "Words" and "Agents").

A `Trajectory` is an ordered tuple of steps, each one of: a model call (by call id, with its token counts, cost
and time where known), a tool call (the call contract's ToolCall, the same value a reply carries: the tool's name
and its arguments as parsed JSON), a tool result (the call it answers, its content as text cut to
MAX_TOOL_RESULT_CHARS, whether it is an error) and the final answer. The steps are data: checks read them
(evalkit.judging.trajectory), adapters build them (evalkit.adapt.otel), and `first_difference` finds the step
where two runs of a case part (report.html and decision.md show it).
Frozen and `extra="forbid"`, so a record read back from a file is exactly what was written.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalkit.records.call import ToolCall

__all__ = ["MAX_TOOL_RESULT_CHARS", "AssistantTurn", "FinalAnswer", "ModelCall", "Step", "ToolCall", "ToolResult",
           "Trajectory", "UserTurn", "first_difference", "what_it_did"]

MAX_TOOL_RESULT_CHARS = 4000
"""The longest tool result content kept, in characters: a tool may return a whole web page or file, and a
trajectory is evidence read by people and diffed in reviews; the cut is marked and says how much was cut."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelCall(_Record):
    """One call to a model."""

    kind: Literal["model_call"] = "model_call"
    call_id: str
    """The call's id: evalkit's call id in a recording, the span id in a trace."""
    model: str | None = None
    """The model asked for (a trace's `gen_ai.request.model`); None when not recorded."""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    """The call's cost in US dollars when known (a trace records none)."""
    milliseconds: float | None = Field(default=None, ge=0)
    """How long the call took, when known."""


class ToolResult(_Record):
    """What a tool returned to the agent, or that it failed."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    """The id of the ToolCall this answers."""
    content: str = ""
    """The result as text, cut to MAX_TOOL_RESULT_CHARS (a marker at the end says how long it was)."""
    error: bool = False
    """True when the tool failed (a trace's span status ERROR)."""
    error_message: str | None = None
    """Why it failed, one line, when known."""

    @field_validator("content", mode="before")
    @classmethod
    def _cut(cls, value: object) -> object:
        if isinstance(value, str) and len(value) > MAX_TOOL_RESULT_CHARS:
            # the marker fits inside the bound, so a cut result read back from a file is not cut again
            marker = f" [... {len(value):,} characters in all, cut]"
            return value[:MAX_TOOL_RESULT_CHARS - len(marker)] + marker
        return value


class FinalAnswer(_Record):
    """The agent's final answer."""

    kind: Literal["final_answer"] = "final_answer"
    text: str


class UserTurn(_Record):
    """A conversation's user turn: scripted in the case, or written by the simulated user (`call_id` its call)."""

    kind: Literal["user_turn"] = "user_turn"
    turn: int = Field(ge=1)
    text: str
    call_id: str | None = None
    """The simulated user's call (`user/<case>@<turn>`); None for a scripted turn."""


class AssistantTurn(_Record):
    """A conversation's assistant turn: the reply to user turn `turn`, which the per-turn checks read."""

    kind: Literal["assistant_turn"] = "assistant_turn"
    turn: int = Field(ge=1)
    text: str


Step = Annotated[ModelCall | ToolCall | ToolResult | FinalAnswer | UserTurn | AssistantTurn,
                 Field(discriminator="kind")]
"""One step of a trajectory, told apart by its `kind`."""


class Trajectory(_Record):
    """What one case did, step by step, in the order it happened."""

    steps: tuple[Step, ...] = ()

    def model_calls(self) -> list[tuple[int, ModelCall]]:
        """The model calls with their step numbers (1-based, as messages name them)."""
        return [(n, step) for n, step in enumerate(self.steps, 1) if isinstance(step, ModelCall)]

    def tool_calls(self) -> list[tuple[int, ToolCall]]:
        """The tool calls with their step numbers (1-based)."""
        return [(n, step) for n, step in enumerate(self.steps, 1) if isinstance(step, ToolCall)]

    def tool_results(self) -> list[tuple[int, ToolResult]]:
        """The tool results with their step numbers (1-based)."""
        return [(n, step) for n, step in enumerate(self.steps, 1) if isinstance(step, ToolResult)]

    def assistant_turns(self) -> list[AssistantTurn]:
        """A conversation's assistant turns, in turn order (empty for an agent's single task)."""
        return [step for step in self.steps if isinstance(step, AssistantTurn)]

    def user_turns(self) -> list[UserTurn]:
        """A conversation's user turns, in turn order."""
        return [step for step in self.steps if isinstance(step, UserTurn)]


def what_it_did(step: Step) -> tuple[str, ...]:
    """What a step did, as two runs of a case are compared: the kind, and for a tool call the tool and its
    arguments, for a tool result its content and whether it failed, for a final answer its text. Left out is what
    differs between any two runs of the same behaviour: call ids (evalkit's carry the step number, a provider's
    tool call ids are made up per call), tokens, cost, time and a provider's opaque signature. A model call is
    only its kind: what the model decided shows in the steps that follow it."""
    if isinstance(step, ToolCall):
        # canonical JSON, so that 1 and 1.0 and true stay three different arguments, and key order does not count
        return step.kind, step.tool, json.dumps(step.arguments, sort_keys=True, ensure_ascii=False)
    if isinstance(step, ToolResult):
        return step.kind, step.content, str(step.error), step.error_message or ""
    if isinstance(step, FinalAnswer | UserTurn | AssistantTurn):  # a conversation's turns by their text
        return step.kind, step.text
    return (step.kind,)


def first_difference(before: Trajectory, after: Trajectory) -> int | None:
    """The number (1-based) of the first step where two trajectories of a case part, compared by `what_it_did`;
    None when they did the same. Where one ends first, the step after its last is where they part (one side has
    a step there, the other none)."""
    for number, (old, new) in enumerate(zip(before.steps, after.steps, strict=False), 1):
        if what_it_did(old) != what_it_did(new):
            return number
    if len(before.steps) != len(after.steps):
        return min(len(before.steps), len(after.steps)) + 1
    return None
