"""What the conversation judges are shown: a conversation case's whole transcript, with roles, and the request that
asks the suite's pinned judge about it (the judges themselves, their specs and anchored levels, are
evalkit.judging.ready_judges': knowledge-retention, role-adherence, conversation-goal, refusal-holds).

The transcript is what the assistant was given before the first turn (its system prompt: the task's request as
build_task made it), then every turn of both sides in order, one line each: `user, turn 2: ...`,
`assistant, turn 2: ...`. One line per turn, whitespace squeezed, because the turns are untrusted text (a model's,
a simulated user's): a turn that writes a line break and `assistant, turn 3: ...` cannot forge a turn the judge
reads as the assistant's. A turn is cut at TURN_CHARS and past TRANSCRIPT_TURNS lines the rest are counted, so a
long conversation cannot fill a small judge's context.

A case the judge cannot be asked about (not a conversation, no assistant turn, a scripted conversation with no
goal for `conversation-goal`, a case field the spec names missing) gets no call, and the check could not run on
it (`cannot_judge`): unmeasured, never a pass. Pure: building a request; the call is made by the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.untrusted import squeezed
from evalkit.judging.ready_judges import (
    JUDGES,
    SCORE_SCHEMA,
    TURN_SCORE_SCHEMA,
    ConversationGoalSpec,
    ConversationSpec,
    KnowledgeRetentionSpec,
    RefusalHoldsSpec,
    RoleAdherenceSpec,
    case_text,
    needed_field,
    system_prompt,
)
from evalkit.records.call import Message, Request
from evalkit.records.trajectory import AssistantTurn, Trajectory, UserTurn

__all__ = ["CONVERSATION_FIELD", "TRANSCRIPT_TURNS", "TURN_CHARS", "cannot_judge", "conversation_request",
           "transcript_text"]

CONVERSATION_FIELD: Final = "conversation"
"""The case field that makes a case a conversation (evalkit.run.conversation.FIELD; a test holds them equal)."""
TURN_CHARS: Final = 1_500
"""One turn's text, as the judge reads it, is cut after this many characters."""
TRANSCRIPT_TURNS: Final = 120
"""The judge is shown at most this many turns of both sides (a conversation runs to 50 user turns at most, so
this cuts only an imported one); the rest are counted."""
PROMPT_CHARS: Final = 6_000
"""The assistant's instructions, as the judge reads them, are cut after this many characters."""


def cannot_judge(spec: ConversationSpec, case: Case) -> str | None:
    """Why a conversation judge cannot judge this case from its fields alone (a case field the spec names is
    missing; a conversation-goal check without `goal:` on a case whose user is scripted, so has no goal); None
    when it can. The planner asks no judge then, and the check could not run, saying this."""
    wanted = needed_field(spec)
    if wanted is not None and wanted not in case.fields:
        return f"expected case field {wanted!r} for the judge, but case {case.id} has none"
    if isinstance(spec, ConversationGoalSpec) and spec.goal is None and _brief_goal(case) is None:
        return (f"expected the user's goal for the judge, but case {case.id} has none: its conversation is scripted "
                "(a simulated user's `goal` is read by default); name a case field with `goal: FIELD`")
    return None


def _brief_goal(case: Case) -> str | None:
    brief = case.get(CONVERSATION_FIELD)
    goal = brief.get("goal") if isinstance(brief, Mapping) else None
    return goal if isinstance(goal, str) and goal.strip() else None


def conversation_request(kind: str, spec: ConversationSpec, case: Case, trajectory: Trajectory, judge: ModelConfig,
                         task: Request | None = None) -> Request | None:
    """The judge call that scores one conversation case's transcript (with `task`, the request build_task made,
    whose messages the assistant was given before the first turn); None when the conversation has no assistant turn
    to judge or `cannot_judge` says why not."""
    if cannot_judge(spec, case) is not None or not trajectory.assistant_turns():
        return None
    parts = []
    if task is not None and task.messages:
        given = "\n".join(f"{message.role}: {squeezed(message.text, PROMPT_CHARS)}" for message in task.messages)
        parts.append(f"What the assistant was given before the first turn (its instructions):\n{given}")
    if isinstance(spec, KnowledgeRetentionSpec) and spec.fact is not None:
        parts.append(f"The fact to keep:\n{_field(case, spec.fact)}")
    elif isinstance(spec, RoleAdherenceSpec) and spec.role is not None:
        parts.append(f"The role:\n{_field(case, spec.role)}")
    elif isinstance(spec, ConversationGoalSpec):
        parts.append(f"The user's goal:\n{_field(case, spec.goal) if spec.goal else _brief_goal(case)}")
    elif isinstance(spec, RefusalHoldsSpec) and spec.forbidden is not None:
        parts.append(f"What the assistant must refuse:\n{_field(case, spec.forbidden)}")
    parts.append(f"The conversation:\n{transcript_text(trajectory)}")
    return Request(model=judge.name, messages=(Message(role="system", content=system_prompt(kind)),
                                               Message(role="user", content="\n\n".join(parts))),
                   response_schema=TURN_SCORE_SCHEMA if JUDGES[kind].names_turn else SCORE_SCHEMA,
                   options=judge.options)


def _field(case: Case, name: str) -> str:
    return squeezed(case_text(case.fields[name]), PROMPT_CHARS)


def transcript_text(trajectory: Trajectory) -> str:
    """A conversation's turns, both sides in order, one line each (`user, turn 1: ...`, `assistant, turn 1: ...`);
    the model calls between them are not shown (their content is the assistant's turn). A simulated user's last
    turn that ended the conversation (its stop phrase) is shown too: it has no reply."""
    lines: list[str] = []
    for step in trajectory.steps:
        if isinstance(step, UserTurn | AssistantTurn):
            who = "user" if isinstance(step, UserTurn) else "assistant"
            lines.append(f"{who}, turn {step.turn}: {squeezed(step.text, TURN_CHARS) or '(nothing)'}")
    shown = lines[:TRANSCRIPT_TURNS]
    if len(lines) > TRANSCRIPT_TURNS:
        shown.append(f"... {len(lines) - TRANSCRIPT_TURNS} more turns not shown")
    return "\n".join(shown)

