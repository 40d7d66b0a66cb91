"""Conversation cases: several user turns against the model and prompt composed from config, each assistant turn a
recorded call, so a replay reproduces the whole conversation offline (DESIGN.md: a conversation is a trajectory).

A case's `conversation` field holds its script: a list of fixed user turns, or a simulated user's brief,
`{persona: ..., goal: ..., stop: PHRASE, max_turns: N}`, which the run's `simulator` (its own config group, like the
judge) plays. The simulated user's turns are recorded calls too (`user/<case>@<n>`), and its model, options and
persona prompt are the `simulator` component of the eval key (evalkit.run.identity), so a changed persona prompt
names that component instead of silently replaying old turns.

The turns go in waves, as the agent loop's steps do (evalkit.run.agent_loop): the simulated users' turn n of every
open case, then the model's reply to turn n of every case, so `run.concurrency` is used across cases and budgets,
retries, recording and replay apply per turn exactly as to a single call. The assistant's reply to turn n is
`task/<case>@<n>`; the plain `task/<case>` is the conversation's outcome (its last assistant turn), which the reply
checks read; the per-turn checks (`turn:` in checks.yaml) read the trajectory's assistant turns.

A simulated conversation ends when the simulated user says its stop phrase (the goal is reached: the turns before
it are the turns to goal), or after `max_turns` user turns (not reached). The simulated user's text is data: it is
sent as a message's content and kept in the trajectory, never formatted, parsed or run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalkit.core.call_id import CallId
from evalkit.core.config import MAX_TURNS, SimulatorConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.core.prices import PriceEntry
from evalkit.records.call import Message, Request
from evalkit.records.trajectory import AssistantTurn, Step, Trajectory, UserTurn
from evalkit.run.agent_loop import AgentOutcome, model_call

if TYPE_CHECKING:
    from evalkit.run.execute import CallResult

__all__ = ["FIELD", "OPENING", "ConversationOutcome", "Script", "conversation_metrics", "persona_request",
           "run_conversations", "script_of", "scripts_of", "stop_phrase", "turn_limit"]

FIELD = "conversation"
"""The case field that makes a case a conversation."""
OPENING = "(The conversation begins. Write your first message to the assistant.)"
"""What the simulated user reads before its first turn: some providers take no request without a user message."""
_BRIEF_KEYS = {"persona", "goal", "stop", "max_turns"}
_SLOT = re.compile(r"\{(persona|goal|stop)\}")


@dataclass(frozen=True)
class Script:
    """One case's conversation: its fixed user turns, or a simulated user's brief."""

    turns: tuple[str, ...] = ()
    """The scripted user turns, in order; empty for a simulated user."""
    persona: str = ""
    goal: str = ""
    stop: str | None = None
    """The case's stop phrase; None: the simulator's."""
    max_turns: int | None = None
    """The case's turn limit; None: the simulator's."""

    @property
    def simulated(self) -> bool:
        return not self.turns


def scripts_of(cases: Sequence[Case], where: str) -> dict[str, Script] | None:
    """Each case's script, by case id; None when no case holds a conversation. In a dataset with conversations every
    case must hold one: a mistake is one line naming the dataset, the case and what to write."""
    if not any(FIELD in case.fields for case in cases):
        return None
    return {case.id: script_of(case, where) for case in cases}


def script_of(case: Case, where: str) -> Script:
    """The case's conversation script (it has the field); a mistake is one line naming `where`, the case and what
    to write. A candidate program's simulated users (evalkit.run.program_runner) are read here too."""
    value = case.get(FIELD)
    said = f"{where}: case {case.id}: field '{FIELD}'"
    if value is None:
        raise InputError(f"{said} is missing; in a dataset of conversations every case needs one: a list of user "
                         "turns, or {persona, goal} for a simulated user")
    if isinstance(value, list):
        if not value or len(value) > MAX_TURNS or not all(isinstance(t, str) and t.strip() for t in value):
            raise InputError(f"{said}: a scripted conversation is a list of 1 to {MAX_TURNS} non-empty user turns "
                             "(texts)")
        return Script(turns=tuple(value))
    if isinstance(value, dict):
        unknown = sorted(set(value) - _BRIEF_KEYS)
        if unknown:
            raise InputError(f"{said}: unknown key(s) {', '.join(map(str, unknown))} (a simulated user takes: "
                             f"{', '.join(sorted(_BRIEF_KEYS))})")
        texts = {k: value.get(k) for k in ("persona", "goal")}
        if not all(isinstance(t, str) and t.strip() for t in texts.values()):
            raise InputError(f"{said}: a simulated user needs 'persona' and 'goal' (non-empty texts)")
        stop, most = value.get("stop"), value.get("max_turns")
        if stop is not None and not (isinstance(stop, str) and stop.strip()):
            raise InputError(f"{said}: 'stop' is the phrase that ends the conversation (a non-empty text)")
        if most is not None and not (isinstance(most, int) and not isinstance(most, bool) and 1 <= most <= MAX_TURNS):
            raise InputError(f"{said}: 'max_turns' is a whole number from 1 to {MAX_TURNS}")
        return Script(persona=str(texts["persona"]), goal=str(texts["goal"]), stop=stop, max_turns=most)
    raise InputError(f"{said} is a {type(value).__name__}: write a list of user turns, or {{persona, goal}} for a "
                     "simulated user")


@dataclass
class _Conversation:
    base: str
    """`task/<case>` (with `#<i>` for sample i)."""
    which: CallId
    script: Script
    request: Request
    """What the model is asked next: build_task's messages, then the turns so far."""
    heard: list[Message] = field(default_factory=list)
    """The conversation from the simulated user's side (its own turns as `assistant`)."""
    steps: list[Step] = field(default_factory=list)
    last: CallResult | None = None
    final: CallResult | None = None
    reached: int | None = None
    """The assistant turns it took the simulated user to reach its goal; None: not reached (or scripted)."""


@dataclass
class ConversationOutcome(AgentOutcome):
    """The agent loop's outcome (every turn's call, each case's outcome and trajectory), and for each simulated
    conversation the assistant turns it took to reach its goal (None: not reached)."""

    reached: dict[str, int | None] = field(default_factory=dict)


Wave = Callable[[Sequence[tuple[str, Request, str]]], "dict[str, CallResult]"]


def run_conversations(planned: Sequence[tuple[str, Request]], scripts: Mapping[str, Script], *,
                      simulator: SimulatorConfig | None, wave: Wave, settle: Callable[[int], None], model: str,
                      price: PriceEntry | None) -> ConversationOutcome:
    """Hold each planned case's conversation (its `task/<case>` id and the request build_task made, to which the
    turns are appended). `wave` obtains one turn of many cases through the run's call path (roles `model` and
    `simulator`); `settle` refuses a replay's misses and ends the run on an outage."""
    talks = []
    for call_id, request in planned:
        which = CallId.parse(call_id)
        script = scripts[which.case]
        if script.simulated and simulator is None:
            raise InputError(f"case {which.case} has a simulated user (conversation: {{persona, goal}}), but the run "
                             "has no simulator: add `- /simulator: NAME` to the suite option's defaults (or pass "
                             "simulator=NAME)")
        talks.append(_Conversation(call_id, which, script, request))
    out = ConversationOutcome()
    most = max((turn_limit(t.script, simulator) for t in talks), default=0)
    for turn in range(1, most + 1):
        active = [t for t in talks if t.final is None and turn <= turn_limit(t.script, simulator)]
        if not active:
            break
        _user_turns(turn, [t for t in active if t.script.simulated], simulator, wave, settle, out)
        for talk in active:
            if not talk.script.simulated:
                _say(talk, turn, talk.script.turns[turn - 1], None)
        active = [t for t in active if t.final is None]
        ids = {t.base: str(CallId.agent_step(t.which.case, turn, t.which.sample)) for t in active}
        results = _asked(wave, settle, out, [(ids[t.base], t.request, "model") for t in active])
        for talk in active:
            step_id = ids[talk.base]
            result = results[step_id]
            if result.reply is None:
                talk.final = _ended(result, f"{step_id}: {result.reason}")
                continue
            reply = result.reply
            text = reply.text or ""
            talk.steps += [model_call(step_id, model, reply, talk.request, price), AssistantTurn(turn=turn, text=text)]
            talk.request = talk.request.model_copy(update={"messages": (*talk.request.messages,
                                                                        Message(role="assistant", content=text))})
            talk.heard.append(Message(role="user", content=text or "(no reply)"))
            talk.last = result
            if turn >= turn_limit(talk.script, simulator):
                talk.final = result
    for talk in talks:
        out.finals[talk.base] = talk.final or talk.last or _ended(None, f"{talk.base}: no turn was taken")
        out.trajectories[talk.base] = Trajectory(steps=tuple(talk.steps))
        if talk.script.simulated:
            out.reached[talk.base] = talk.reached
    return out


def _asked(wave: Wave, settle: Callable[[int], None], out: ConversationOutcome,
           calls: list[tuple[str, Request, str]]) -> dict[str, CallResult]:
    """One wave of calls (a turn of either side): sent, settled with the run's progress, kept in the outcome."""
    results = wave(calls)
    settle(len(calls))
    out.steps |= results
    return results


def _say(talk: _Conversation, turn: int, text: str, call_id: str | None) -> None:
    """User turn `turn` joins the transcript and the model's next request."""
    talk.steps.append(UserTurn(turn=turn, text=text, call_id=call_id))
    talk.request = talk.request.model_copy(update={"messages": (*talk.request.messages,
                                                                Message(role="user", content=text))})


def _user_turns(turn: int, talks: Sequence[_Conversation], simulator: SimulatorConfig | None, wave: Wave,
                settle: Callable[[int], None], out: ConversationOutcome) -> None:
    """The simulated users' turn `turn`: asked of the simulator, recorded as `user/<case>@<turn>`; a turn with the
    stop phrase ends its conversation as having reached its goal (the turn is kept, never sent to the model)."""
    if not talks:
        return
    assert simulator is not None
    ids = {t.base: str(CallId.user_turn(t.which.case, turn, t.which.sample)) for t in talks}
    results = _asked(wave, settle, out, [(ids[t.base], _simulator_request(t, simulator), "simulator") for t in talks])
    for talk in talks:
        user_id = ids[talk.base]
        result = results[user_id]
        if result.reply is None:
            talk.final = _ended(result, f"{user_id}: {result.reason}")
            continue
        text = result.reply.text or ""
        talk.heard.append(Message(role="assistant", content=text or "(silence)"))
        if stop_phrase(talk.script, simulator) in text:
            talk.steps.append(UserTurn(turn=turn, text=text, call_id=user_id))
            talk.reached = turn - 1
            talk.final = talk.last or _ended(result, f"{user_id}: the simulated user ended the conversation "
                                                     "before the assistant's first turn")
            continue
        _say(talk, turn, text, user_id)


def _simulator_request(talk: _Conversation, simulator: SimulatorConfig) -> Request:
    return persona_request(talk.script, talk.heard, simulator)


def persona_request(script: Script, heard: Sequence[Message], simulator: SimulatorConfig) -> Request:
    """What the simulated user is asked: its persona prompt (the case's persona, goal and stop phrase put in by
    plain replacement, so braces or markup in a case's text are never read as a template), then the conversation
    from its side (`heard`: its own turns as `assistant`, the other side's as `user`)."""
    values = {"persona": script.persona, "goal": script.goal, "stop": stop_phrase(script, simulator)}
    # one pass over the prompt only: a case's persona that says `{goal}` is text, never filled in
    system = _SLOT.sub(lambda slot: values[slot.group(1)], simulator.prompt)
    return Request(model=simulator.name, options=simulator.options,
                   messages=(Message(role="system", content=system), Message(role="user", content=OPENING),
                             *heard))


def turn_limit(script: Script, simulator: SimulatorConfig | None) -> int:
    """The most user turns the script takes: its length, or a simulated user's limit (the case's, within the
    simulator's)."""
    if not script.simulated:
        return len(script.turns)
    most = simulator.max_turns if simulator is not None else MAX_TURNS
    return min(script.max_turns, most) if script.max_turns is not None else most


def stop_phrase(script: Script, simulator: SimulatorConfig | None) -> str:
    """The phrase that ends a simulated conversation as having reached its goal: the case's, else the simulator's."""
    return script.stop or (simulator.stop if simulator is not None else "GOAL REACHED")


def _ended(result: CallResult | None, reason: str) -> CallResult:
    from evalkit.run.execute import CallResult  # the call result type of the path this loop drives

    return CallResult(result.status if result is not None else "failed", reason=reason)


def conversation_metrics(cases: Sequence[Mapping[str, Any]], reached: Mapping[str, int | None]) -> dict[str, Any]:
    """The simulated conversations' metrics, sample 0 of each case: `conversation.goal_rate` (the share whose
    simulated user reached its goal; higher is better, so a policy may block on its drop) and
    `conversation.turns_to_goal` (the mean assistant turns it took, over those that reached it; LOWER is better,
    so it is shown, not gated on with `block_on_drop`)."""
    plain = {call_id.removeprefix("task/"): n for call_id, n in reached.items() if "#" not in call_id}
    scored = [c for c in cases if c.get("id") in plain and c.get("status") != "unscored"]
    turns = [n for c in scored if (n := plain[str(c.get("id"))]) is not None]

    def metric(value: float | None, count: int) -> dict[str, Any]:
        return {"mean": None if value is None else round(value, 6), "count": count if value is not None else 0,
                "unmeasured": 0 if value is not None else max(count, 1)}

    return {"conversation.goal_rate": metric(len(turns) / len(scored) if scored else None, len(scored)),
            "conversation.turns_to_goal": metric(sum(turns) / len(turns) if turns else None, len(turns))}
