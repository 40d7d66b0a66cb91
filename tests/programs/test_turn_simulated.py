"""A simulated user against a candidate program (evalkit/run/program_runner.py with evalkit/programs/turns.py): the
user's turns come from the simulator model (recorded as `user/<case>@<n>`), the program (tests/helpers/turn_chat/
chat.py) answers each through the turn protocol; live against one loopback model playing both the simulated user and
the program's model, then replayed offline with the same transcripts and no server; its stop phrase ends the
conversation as having reached its goal, `max_turns` as not; a changed persona prompt is refused in replay naming the
simulator; a simulated user without a simulator is refused in one line before any case runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeOpenAI
from helpers.chat_project import chat_project, chat_suite, evalkit_in, job_report, program_model_reply, project_env

pytestmark = pytest.mark.slow
CASES = {
    # says its name, asks for it, and ends the conversation once the program says it back: turns to goal 2
    "ada": {"persona": "I am Ada.", "goal": "hear the assistant say your name"},
    # never says its name, so the program never learns it: the case's max_turns ends it, goal not reached
    "bo": {"persona": "You never say your name.", "goal": "hear the assistant say your name", "max_turns": 2},
}
SUITE = chat_suite(simulator="chat-user")
SIMULATOR = """name: chat-user
provider: openai
base_url: http://127.0.0.1:9/v1
api_key_env: null
options:
  temperature: 0
stop: GOAL REACHED
max_turns: 4
prompt: "You play a user. {persona} Your goal: {goal}. Once it is met, say exactly: {stop}"
"""
CHECKS = '''
def test_every_turn_was_answered(program_run):
    assert program_run["turns"] and all(turn["reply"] for turn in program_run["turns"])
'''


def model(body: dict[str, Any]) -> str:
    """The loopback model, both sides: the simulated user (its system prompt is the simulator's) and the program's
    model, which knows the user's name only from the program's system prompt."""
    messages = body["messages"]
    system, last = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You play a user."):
        own = sum(1 for m in messages if m["role"] == "assistant")  # its own turns so far
        if own and "Your name is" in last:
            return "Thank you! GOAL REACHED"
        if own == 0:
            name = re.search(r"I am (\w+)\.", system)
            return f"Hello, my name is {name.group(1)}." if name else "Hello there."
        return "What is my name?"
    return program_model_reply(messages)


def _project(root: Path, env: dict[str, str]) -> None:
    chat_project(root, env, conversations=CASES, answers={case: {} for case in CASES}, checks=CHECKS,
                 purpose="a simulated user against a program",
                 conf={"suite/chat": SUITE, "simulator/chat-user": SIMULATOR})


def test_a_simulated_user_plays_a_program_live_replays_identically_and_a_changed_persona_is_refused(
        tmp_path: Path) -> None:
    env = project_env()
    _project(tmp_path, env)
    evalkit = evalkit_in(tmp_path, env)

    def report(job: str) -> dict[str, Any]:
        return job_report(tmp_path, job)

    with FakeOpenAI(model) as server:
        live = evalkit("mode=live", f"model.base_url={server.base_url}", f"simulator.base_url={server.base_url}",
                       "hydra.run.dir=outputs/live")
        assert live.returncode == 0, live.stdout + live.stderr
        asked = [r.body["messages"][0]["content"].startswith("You play a user.") for r in server.chat_requests]
    # ada: 3 simulated turns (the third says the stop phrase) and 2 program turns; bo: 2 and 2 (its max_turns)
    assert (asked.count(True), asked.count(False)) == (5, 4), asked
    replay = evalkit("hydra.run.dir=outputs/replay")  # no server at all: every call from the recording
    assert replay.returncode == 0, replay.stdout + replay.stderr
    first, again = report("live"), report("replay")
    assert again["provenance"]["mode"] == "replay"
    assert first["trajectories"] == again["trajectories"]
    ada = [(s["kind"], s.get("text"), s.get("call_id")) for s in first["trajectories"]["task/ada"]["steps"]]
    assert ada == [("user_turn", "Hello, my name is Ada.", "user/ada@1"), ("model_call", None, "task/ada"),
                   ("assistant_turn", "Noted (1 messages so far).", None),
                   ("user_turn", "What is my name?", "user/ada@2"), ("model_call", None, "task/ada@1"),
                   ("assistant_turn", "Your name is Ada.", None),
                   ("user_turn", "Thank you! GOAL REACHED", "user/ada@3")]  # the closing turn: never sent
    cases = {c["id"]: c["program"] for c in first["cases"]}
    assert cases["ada"]["simulated"]["reached"] == 2 and cases["bo"]["simulated"]["reached"] is None
    assert [t["reply"] for t in cases["bo"]["turns"]] == ["Noted (1 messages so far).", "I do not know your name."]
    for data in (first, again):
        metrics = data["metrics"]
        assert metrics["conversation.goal_rate"]["mean"] == 0.5
        assert metrics["conversation.turns_to_goal"]["mean"] == 2
    assert first["eval"]["components"]["simulator"] == again["eval"]["components"]["simulator"]
    assert first["eval"]["components"]["simulator"].startswith("chat-user@")
    assert first["execution"]["calls"]["cost"]["simulator_calls"] == 5  # counted apart from the program's 4

    # the persona prompt is the simulator's component: a changed one is refused in replay, naming it
    changed = evalkit("simulator.prompt='You play a user. {persona} Be curt. Goal: {goal}. Then say {stop}'",
                      "hydra.run.dir=outputs/changed")
    assert changed.returncode == 3, changed.stdout + changed.stderr
    assert "no recording of this identity; the closest, " in changed.stderr, changed.stderr
    assert "was recorded with simulator.prompt: recorded \"You play a user." in changed.stderr, changed.stderr
    assert not (tmp_path / "outputs/changed/report.json").exists()

    # a simulated user with no simulator: one line, before any case ran
    alone = evalkit("~simulator", "hydra.run.dir=outputs/alone")
    assert alone.returncode == 3, alone.stdout + alone.stderr
    assert "case ada: field 'conversation' holds a simulated user's brief, but the run has no simulator" in \
        alone.stderr, alone.stderr
