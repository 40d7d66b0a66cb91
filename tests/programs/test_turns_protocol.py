"""evalkit/programs/turns.py: the turn protocol, a conversation driven against a candidate program one sandbox run per
turn, its state handed back, and a program that breaks the protocol ending its case with the turn named."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.config import ProgramSpec
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.live.budget import UnitBudget
from evalkit.programs.candidate import CandidateConfig, run_programs
from evalkit.programs.turns import UserTurnFailed, converse, scripted_turns, transcript, turn_task, user_side

# keeps a count and every message it heard in its state; its reply says both
COUNTER = """
import json
task = json.load(open("task.json"))
state = task["state"] or {"heard": []}
state["heard"].append(task["message"])
reply = f"turn {task['turn']}, heard {len(state['heard'])}: " + " | ".join(state["heard"])
json.dump({"reply": reply, "state": state, "case": task["id"]}, open("response.json", "w"))
"""


def _program(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "chat.py"
    path.write_text(text, encoding="utf-8")
    return path


def _run(tmp_path: Path, text: str, turns: list[str], *, timeout_s: float = 10.0,
         max_response_bytes: int = 4096, budget: UnitBudget | None = None) -> dict[str, Any]:
    program = _program(tmp_path, text)
    candidate = CandidateConfig(program=str(program), change="none", timeout_s=timeout_s,
                                max_response_bytes=max_response_bytes)
    case = Case("c1", {"conversation": turns, "topic": "names"})
    return run_programs([case], ProgramSpec(files_field=None), candidate, program, budget or UnitBudget(None))["c1"]


def test_each_turn_reads_the_state_the_program_returned_on_the_turn_before(tmp_path: Path) -> None:
    result = _run(tmp_path, COUNTER, ["hello", "my name is Ada", "what is my name?"])
    assert result["status"] == "finished", result["reason"]
    assert [t["reply"] for t in result["turns"]] == [
        "turn 1, heard 1: hello", "turn 2, heard 2: hello | my name is Ada",
        "turn 3, heard 3: hello | my name is Ada | what is my name?"]
    assert result["response"]["state"]["heard"][-1] == "what is my name?"  # the last turn's response.json
    assert result["response"]["case"] == "c1"
    assert all(t["status"] == "finished" and t["state_bytes"] > 0 for t in result["turns"])
    assert [t["state"]["heard"] for t in result["turns"]][:2] == [["hello"], ["hello", "my name is Ada"]]
    steps = transcript(result).model_dump()["steps"]
    assert [(s["kind"], s["turn"]) for s in steps] == [("user_turn", 1), ("assistant_turn", 1), ("user_turn", 2),
                                                       ("assistant_turn", 2), ("user_turn", 3), ("assistant_turn", 3)]


def test_the_units_are_every_turns_task_and_response(tmp_path: Path) -> None:
    budget = UnitBudget(None)
    result = _run(tmp_path, COUNTER, ["a", "b"], budget=budget)
    assert result["usage_state"] == "known"
    assert result["units"] == budget.summary()["spent_units"] > 2 * len(turn_task({"id": "c1"}, 1, "a", None))


@pytest.mark.parametrize(("program", "status", "reason"), [
    ('import json\ntask = json.load(open("task.json"))\n'
     'open("response.json", "w").write("{not json" if task["turn"] == 2 else json.dumps({"reply": "hi", "state": 1}))',
     "invalid_response", "turn 2: response.json is not valid UTF-8 JSON"),
    ('import json\ntask = json.load(open("task.json"))\n'
     'json.dump({"reply": "hi"} if task["turn"] == 1 else {"answer": "no reply key"}, open("response.json", "w"))',
     "invalid_response", "turn 2: response.json has no 'reply' text"),
    ('import json\ntask = json.load(open("task.json"))\n'
     'json.dump({"reply": "hi", "state": "x" * (10000 if task["turn"] == 2 else 1)}, open("response.json", "w"))',
     "oversized_response", "turn 2: response.json is "),
    ('import json, sys\ntask = json.load(open("task.json"))\nif task["turn"] == 2: sys.exit(7)\n'
     'json.dump({"reply": "hi"}, open("response.json", "w"))',
     "crashed", "turn 2: exit code 7"),
])
def test_a_turn_that_breaks_the_protocol_ends_the_conversation_naming_it(
        tmp_path: Path, program: str, status: str, reason: str) -> None:
    result = _run(tmp_path, program, ["one", "two", "three"])
    assert result["status"] == status
    assert result["reason"].startswith(reason), result["reason"]
    assert [t["turn"] for t in result["turns"]] == [1, 2]  # turn 3 is never asked
    assert result["turns"][0]["reply"] == "hi" and result["turns"][1]["reply"] is None
    assert result["response"] is None


def test_a_program_that_hangs_mid_conversation_is_a_timeout_within_its_deadline(tmp_path: Path) -> None:
    hangs = ('import json, time\ntask = json.load(open("task.json"))\nif task["turn"] == 2: time.sleep(3600)\n'
             'json.dump({"reply": "hi", "state": task["turn"]}, open("response.json", "w"))')
    started = time.monotonic()
    result = _run(tmp_path, hangs, ["one", "two", "three"], timeout_s=1.0)
    assert time.monotonic() - started < 30  # a deadline per turn, never a hang
    assert (result["status"], result["reason"]) == ("timeout", "turn 2: timeout after 1 s")
    assert result["usage_state"] == "unknown" and result["units"] is None


def test_the_budget_is_reserved_per_turn(tmp_path: Path) -> None:
    first = len(turn_task({"id": "c1", "topic": "names"}, 1, "one", None)) + 4096
    result = _run(tmp_path, COUNTER, ["one", "two"], budget=UnitBudget(first))
    assert (result["status"], result["reason"][:7]) == ("budget_denied", "turn 2:")
    assert result["turns"][0]["reply"] == "turn 1, heard 1: one"


def test_converse_hands_the_state_on_and_keeps_other_keys_for_the_checks() -> None:
    seen: list[dict[str, Any]] = []

    def run_turn(n: int, task: bytes) -> dict[str, Any]:
        data = json.loads(task)
        seen.append(data)
        return {"status": "finished", "reason": None, "wall_ms": 1.0, "units": len(task), "usage_state": "known",
                "response": {"reply": f"r{n}", "state": {"n": n}, "mood": "fine"}, "model_calls": [f"task/c@{n}"]}

    result = converse({"id": "c", "conversation": ["x", "y"], "lang": "en"}, ["x", "y"], run_turn)
    assert [d["state"] for d in seen] == [None, {"n": 1}]
    assert seen[1] == {"id": "c", "lang": "en", "message": "y", "state": {"n": 1}, "turn": 2}  # no script leaks
    assert result["response"]["mood"] == "fine" and result["model_calls"] == ["task/c@1", "task/c@2"]
    assert [t["model_calls"] for t in result["turns"]] == [["task/c@1"], ["task/c@2"]]


@pytest.mark.parametrize(("value", "message"), [
    ({"persona": "p", "goal": "g"}, "holds a simulated user's brief"),
    ([], "a scripted conversation is a list of 1 to"),
    (["ok", 3], "a scripted conversation is a list of 1 to"),
    ("hello", "a scripted conversation is a list of 1 to"),
])
def test_a_bad_script_is_one_line_naming_the_dataset_and_the_case(value: object, message: str) -> None:
    with pytest.raises(InputError, match=f"^data/manifest.json: case c1: field 'conversation'.*{message}"):
        scripted_turns(Case("c1", {"conversation": value}), "data/manifest.json")
    assert scripted_turns(Case("c1", {"question": "q"}), "x") is None


def _finished(n: int, task: bytes) -> dict[str, Any]:
    return {"status": "finished", "reason": None, "wall_ms": 1.0, "units": len(task), "usage_state": "known",
            "response": {"reply": f"r{n}", "state": n}}


def test_a_user_side_is_asked_each_turn_with_the_last_reply_and_ends_the_conversation() -> None:
    asked: list[tuple[int, str | None]] = []

    def user(n: int, reply: str | None) -> str | None:  # a simulated user: says "done" after hearing r2
        asked.append((n, reply))
        return None if reply == "r2" else f"u{n}"

    result = converse({"id": "c"}, user, _finished)
    assert asked == [(1, None), (2, "r1"), (3, "r2")]
    assert [(t["user"], t["reply"]) for t in result["turns"]] == [("u1", "r1"), ("u2", "r2")]
    assert result["status"] == "finished" and result["response"]["reply"] == "r2"


@pytest.mark.parametrize(("fails_on", "kept"), [(1, []), (2, ["r1"])])
def test_a_user_turn_that_fails_ends_the_case_naming_the_turn(fails_on: int, kept: list[str]) -> None:
    def user(n: int, reply: str | None) -> str | None:
        if n == fails_on:
            raise UserTurnFailed("failed", f"user/c@{n}: HTTP 500")
        return f"u{n}"

    result = converse({"id": "c"}, user, _finished)
    assert (result["status"], result["reason"]) == ("failed", f"turn {fails_on}: user/c@{fails_on}: HTTP 500")
    assert [t["reply"] for t in result["turns"]] == kept and result["response"] is None
    assert result["usage_state"] == ("not_started" if fails_on == 1 else "known")


def test_a_program_that_breaks_the_protocol_against_a_user_side_ends_naming_the_turn() -> None:
    def broken(n: int, task: bytes) -> dict[str, Any]:
        return _finished(n, task) if n == 1 else {**_finished(n, task), "response": {"answer": "no reply key"}}

    said: list[int] = []

    def user(n: int, reply: str | None) -> str:
        said.append(n)
        return f"u{n}"

    result = converse({"id": "c"}, user, broken)
    assert result["status"] == "invalid_response" and result["reason"].startswith("turn 2: response.json has no")
    assert said == [1, 2]  # turn 3 is never asked of the user's side


def test_a_simulated_brief_needs_a_simulator_and_is_played_by_it() -> None:
    case = Case("c1", {"conversation": {"persona": "p", "goal": "g"}})
    with pytest.raises(InputError, match=r"^data/manifest.json: case c1: .*but the run has no simulator: add "):
        user_side(case, "data/manifest.json")
    played = user_side(case, "x", lambda c: lambda n, _reply: f"{c.id} says {n}")
    assert played is not None and played(1, None) == "c1 says 1"
    scripted = user_side(Case("c2", {"conversation": ["a"]}), "x")
    assert scripted is not None and (scripted(1, None), scripted(2, "r1")) == ("a", None)
    assert user_side(Case("c3", {"q": 1}), "x") is None
