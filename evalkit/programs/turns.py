"""The turn protocol: evalkit drives a conversation against a candidate program, one user turn in, one reply out,
the conversation's state kept by the program and handed back to it on the next turn.

Each turn is one ordinary sandbox run (evalkit.programs.sandbox): a fresh task folder, `task.json` in and
`response.json` out, under the candidate's `timeout_s` and `max_response_bytes`, every descendant killed before the
response is read. Turn n's `task.json` holds the case's public fields (less `conversation`), and:

    turn     n, from 1
    message  the user's turn n (a text)
    state    what the program returned as `state` on turn n-1; null on turn 1

The program answers with `response.json`: `reply` (its text to the user, required) and `state` (any JSON value it
wants back on the next turn: its memory of the conversation, a history, a session id). Other keys are kept for the
checks, as a single-turn program's are. Why one run per turn and not a long-lived process speaking JSON lines:
every guarantee the sandbox gives a single case (no channel back to evalkit but the read-back files, nothing left
running between turns, the deadline and the size limit) holds per turn unchanged, and the state a turn hands on is
data in the report, which a reviewer reads and a replay reproduces (a state kept in a process's memory is neither).
It is also how a production chat backend already works: a stateless request handler with the session stored
elsewhere.

The conversation ends at the first turn the program does not finish with a reply: it timed out, crashed, hit a
limit, wrote invalid or oversized JSON (the sandbox's statuses), or a `response.json` without a `reply` text
(`invalid_response`). The case then carries that status with a reason naming the turn ("turn 2: timeout after
1 s"), and the turns before it stay in its transcript. A program's model calls reach evalkit's endpoint, one
endpoint for the whole conversation, so the call ids run on across the turns (`task/<case>`, `task/<case>@1`, ...)
and a replay serves each turn what it was served live.

The user's side is a `UserSide`: a case's scripted turns, or a simulated user (evalkit.run.program_runner: a model
playing the case's persona, its calls recorded as `user/<case>@<n>`), asked for each turn with the program's last
reply. It ends the conversation by returning None (the script is done; the simulated user said its stop phrase or
reached its turn limit), and a simulated user whose call failed ends it with that call's status, the reason naming
the turn, as a protocol break does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalkit.core.config import MAX_TURNS
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.records.trajectory import AssistantTurn, ModelCall, Step, Trajectory, UserTurn

__all__ = ["FIELD", "RunTurn", "UserSide", "UserTurnFailed", "converse", "scripted", "scripted_turns", "transcript",
           "turn_task", "user_side"]

FIELD = "conversation"
"""The case field that makes a program's case a conversation: its scripted user turns."""

RunTurn = Callable[[int, bytes], dict[str, Any]]
"""Run one turn (its number, the bytes of its task.json): the sandbox's result for it, as run_programs keeps a
case's (ProgramRun's fields, `units`, `usage_state`, and with an endpoint `model_calls`, `unserved`, `rejected`)."""


UserSide = Callable[[int, "str | None"], "str | None"]
"""The user's side of a conversation: asked for turn n with the program's reply to turn n-1 (None on turn 1), it
returns the user's message, or None where the conversation ends; it raises UserTurnFailed where it could not take
its turn (a simulated user's call failed)."""


class UserTurnFailed(Exception):
    """The user's side could not take its turn: the case ends with `status`, its reason naming the turn."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def scripted(turns: Sequence[str]) -> UserSide:
    """A script's user side: its turns in order, then the end."""
    return lambda n, _reply: turns[n - 1] if n <= len(turns) else None


def user_side(case: Case, where: str, simulate: Callable[[Case], UserSide] | None = None) -> UserSide | None:
    """The case's user side; None when it is no conversation. A simulated user's brief is played by `simulate`
    (the run's simulator); without one it is refused in one line."""
    if FIELD not in case.fields:
        return None
    if isinstance(case.get(FIELD), dict):
        if simulate is None:
            raise InputError(f"{where}: case {case.id}: field '{FIELD}' holds a simulated user's brief, but the run "
                             "has no simulator: add `- /simulator: NAME` to the suite option's defaults (or pass "
                             "simulator=NAME), and `suite.program.endpoint: true` (its turns are recorded calls)")
        return simulate(case)
    turns = scripted_turns(case, where)
    return None if turns is None else scripted(turns)


def scripted_turns(case: Case, where: str) -> tuple[str, ...] | None:
    """The case's scripted user turns; None when it is no conversation. A simulated user's brief is refused in one
    line here (user_side plays it)."""
    if FIELD not in case.fields:
        return None
    value = case.get(FIELD)
    said = f"{where}: case {case.id}: field '{FIELD}'"
    if isinstance(value, dict):
        raise InputError(f"{said} holds a simulated user's brief; scripted user turns are a list of texts")
    if not isinstance(value, list) or not value or len(value) > MAX_TURNS or not all(
            isinstance(t, str) and t.strip() for t in value):
        raise InputError(f"{said}: a scripted conversation is a list of 1 to {MAX_TURNS} non-empty user turns (texts)")
    return tuple(value)


def turn_task(public: Mapping[str, Any], turn: int, message: str, state: Any) -> bytes:
    """The bytes of turn `turn`'s task.json: the case's public fields, then the turn, the message and the state,
    keys sorted so the bytes (and the budget's units) are stable."""
    fields = {k: v for k, v in public.items() if k != FIELD}
    return json.dumps({**fields, "turn": turn, "message": message, "state": state}, sort_keys=True).encode()


def converse(public: Mapping[str, Any], turns: Sequence[str] | UserSide, run_turn: RunTurn) -> dict[str, Any]:
    """Drive one conversation: each user turn in order (`turns`: a script, or a UserSide asked turn by turn), the
    state handed on, until the user's side ends it or the first turn that breaks the protocol. The case's result is
    its last turn's (so `response` is the last reply's response.json), with `turns` (the transcript, one entry per
    turn taken), the `units` of every turn and the `model_calls` of all."""
    user = turns if callable(turns) else scripted(turns)
    state: Any = None
    reply: str | None = None
    taken: list[dict[str, Any]] = []
    result: dict[str, Any] = {}
    units: int | None = 0
    calls: list[str] = []
    for n in range(1, MAX_TURNS + 1):
        try:
            message = user(n, reply)
        except UserTurnFailed as failure:  # the user's side broke: the case ends there, as at a protocol break
            result = {**(result or _NOT_RUN), "status": failure.status, "reason": f"turn {n}: {failure.reason}",
                      "response": None}
            break
        if message is None:
            break
        result = dict(run_turn(n, turn_task(public, n, message, state)))
        calls += result.get("model_calls") or []
        units = None if units is None or result.get("units") is None else units + int(result["units"])
        if result.get("status") == "finished":
            problem = _protocol_problem(result.get("response"))
            if problem is not None:
                result.update(status="invalid_response", reason=problem, response=None)
        entry = {"turn": n, "user": message, "status": result.get("status"), "wall_ms": result.get("wall_ms"),
                 "model_calls": list(result.get("model_calls") or [])}
        if result.get("status") != "finished":
            result["reason"] = f"turn {n}: {result.get('reason')}"
            taken.append({**entry, "reply": None, "reason": result["reason"]})
            break
        response = result["response"]
        state, reply = response.get("state"), response["reply"]
        # each turn's state stays in the transcript: where a program lost what it was told is read, not guessed
        taken.append({**entry, "reply": reply, "state": state, "state_bytes": len(json.dumps(state).encode())})
    # a turn that may have done (and billed) work unseen makes the whole conversation's usage unknown
    usage = "unknown" if units is None else "not_started" if len(taken) <= 1 and result.get(
        "usage_state", "not_started") == "not_started" else "known"
    out = {**result, "turns": taken, "units": units, "usage_state": usage}
    if "model_calls" in result or calls:
        out["model_calls"] = calls
    return out


_NOT_RUN: dict[str, Any] = {"response": None, "artifacts": {}, "artifact_sha256": {}, "visible_files": [],
                            "input_bytes": 0, "output_bytes": None, "wall_ms": None, "isolation": None}
"""A conversation's result where its first user turn failed before the program ran (candidate.py's stand-in keys)."""


def _protocol_problem(response: Any) -> str | None:
    """Why a finished turn's response.json breaks the protocol; None when it keeps it."""
    if not isinstance(response, dict):
        return "response.json is not a JSON object"
    if not isinstance(response.get("reply"), str):
        return "response.json has no 'reply' text (the turn protocol's answer: {\"reply\": TEXT, \"state\": ...})"
    return None


def transcript(result: Mapping[str, Any], model: str | None = None) -> Trajectory:
    """A conversation's result as a trajectory (report.html's transcript): each user turn (a simulated user's with
    its call id), the model calls the program made for it (by call id), and its reply; then a simulated user's
    closing turn, if it said its stop phrase."""
    steps: list[Step] = []
    for entry in result.get("turns", ()):
        n = int(entry["turn"])
        steps.append(UserTurn(turn=n, text=str(entry["user"]), call_id=entry.get("user_call")))
        steps += [ModelCall(call_id=str(call_id), model=model) for call_id in entry.get("model_calls", ())]
        if entry.get("reply") is not None:
            steps.append(AssistantTurn(turn=n, text=str(entry["reply"])))
    closing = (result.get("simulated") or {}).get("closing")
    if closing:  # the simulated user's turn that said its stop phrase: kept, never sent to the program
        steps.append(UserTurn(turn=int(closing["turn"]), text=str(closing["user"]), call_id=closing.get("user_call")))
    return Trajectory(steps=tuple(steps))
