"""The turn protocol end to end (tests/helpers/turn_chat/chat.py, the how-to's program): a chat program that remembers the
user's name, run live against a loopback model through evalkit's endpoint, then replayed offline with the same
transcripts and outcomes and no model; a program that hangs on turn 2 is a timeout naming that turn, within its
deadline (the run bounded by tests/helpers/bounded.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.server import FakeOpenAI
from helpers.bounded import run_bounded
from helpers.chat_project import (
    CHAT,
    chat_project,
    chat_suite,
    evalkit_in,
    job_report,
    program_model_reply,
    project_env,
)

pytestmark = pytest.mark.slow
CASES = {
    "ada": (["Hello, my name is Ada.", "Can you recommend a book?", "What is my name?"], "Ada"),
    "bo": (["Hi, my name is Bo.", "What is my name?"], "Bo"),
}
SUITE = chat_suite()
CHECKS = '''
def test_every_turn_was_answered(program_run):
    assert all(turn["reply"] for turn in program_run["turns"])


def test_remembers_the_name(program_run, reference):
    last = program_run["turns"][-1]["reply"]
    assert reference["name"] in last, last
'''
def model(body: dict[str, Any]) -> str:
    return program_model_reply(body["messages"])


def _project(root: Path, env: dict[str, str]) -> None:
    suite = chat_project(root, env, conversations={case: turns for case, (turns, _) in CASES.items()},
                         answers={case: {"name": name} for case, (_, name) in CASES.items()}, checks=CHECKS,
                         purpose="the turn protocol's test",
                         conf={"suite/chat": SUITE,
                               "chat_program/hangs": "program: ${suite.path}/hangs.py\nchange: hangs\ntimeout_s: 1\n"})
    # the same program, hanging on its second turn after a first that called the model
    hangs = CHAT.read_text().replace('    state = task["state"] or', '    if task["turn"] == 2:\n'
                                     '        __import__("time").sleep(3600)\n    state = task["state"] or')
    assert "sleep(3600)" in hangs
    (suite / "hangs.py").write_text(hangs)


def test_a_chat_program_records_live_replays_identically_and_a_hang_is_named(tmp_path: Path) -> None:
    env = project_env()
    _project(tmp_path, env)
    evalkit = evalkit_in(tmp_path, env)

    def report(job: str) -> dict[str, Any]:
        return job_report(tmp_path, job)

    with FakeOpenAI(model) as server:
        live = evalkit("mode=live", f"model.base_url={server.base_url}", "hydra.run.dir=outputs/live")
        assert live.returncode == 0, live.stdout + live.stderr
        asked = len(server.chat_requests)
        replay = evalkit("hydra.run.dir=outputs/replay")
        assert replay.returncode == 0, replay.stdout + replay.stderr
        assert len(server.chat_requests) == asked == 5  # one model call per turn, live; none in the replay
    # turn 3 of ada's conversation carries the two turns before it: the program's state, handed back by evalkit
    assert [m["role"] for m in server.chat_requests[2].body["messages"]] == ["system", *["user", "assistant"] * 2,
                                                                            "user"]
    first, again = report("live"), report("replay")
    assert again["provenance"]["mode"] == "replay"
    assert first["trajectories"] == again["trajectories"]
    assert [s["text"] for s in first["trajectories"]["task/ada"]["steps"] if s["kind"] == "assistant_turn"] == [
        "Noted (1 messages so far).", "Noted (2 messages so far).", "Your name is Ada."]
    assert [s["call_id"] for s in first["trajectories"]["task/bo"]["steps"] if s["kind"] == "model_call"] == [
        "task/bo", "task/bo@1"]  # the endpoint's call ids run on across the turns, as the recording keys them
    ada = next(c for c in first["cases"] if c["id"] == "ada")["program"]
    assert [t["state"]["name"] for t in ada["turns"]] == ["Ada"] * 3  # what each turn handed on, in the report
    outcomes = {t["nodeid"]: t["outcome"] for t in first["tests"]}
    assert outcomes == {t["nodeid"]: t["outcome"] for t in again["tests"]}
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 4

    # a program that forgets all but the last exchange asks the same on turns 1 and 2, and otherwise on turn 3:
    # the replay serves the first two and refuses the third, naming its call, with nothing scored
    forgets = CHAT.read_text().replace('[*state["history"], {"role": "user"', '[*state["history"][-2:], {"role": "user"')
    assert forgets != CHAT.read_text()
    (tmp_path / "suites/chat/forgets.py").write_text(forgets)
    refused = evalkit("chat_program.program=suites/chat/forgets.py", "hydra.run.dir=outputs/forgets")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "task/ada@2 was recorded for another request: messages" in refused.stderr, refused.stderr
    assert not (tmp_path / "outputs/forgets/report.json").exists()

    with FakeOpenAI(model) as server:  # a hostile program: bounded, so a hang of the run fails this test
        hung = run_bounded([sys.executable, "-m", "evalkit", "baseline=none", "run.progress=off", "chat_program=hangs",
                            "mode=live", f"model.base_url={server.base_url}", "hydra.run.dir=outputs/hangs"],
                           cwd=tmp_path, env=env, memory_mb=2048, timeout_s=120)
        assert len(server.chat_requests) == 2  # each case's turn 1; turn 2 hung before it asked
    assert hung.returncode in (0, 1), hung.stdout + hung.stderr  # a decision over unscored cases, no crash
    cases = {c["id"]: c for c in report("hangs")["cases"]}
    assert {c["status"] for c in cases.values()} == {"unscored"}  # counted, never a pass
    ada = cases["ada"]["program"]
    assert (ada["status"], ada["reason"]) == ("timeout", "turn 2: timeout after 1 s")
    assert [(t["turn"], t["status"], t["reply"]) for t in ada["turns"]] == [
        (1, "finished", "Noted (1 messages so far)."), (2, "timeout", None)]
    page = (tmp_path / "outputs/hangs/report.html").read_text()  # the transcript up to the turn that broke
    panel = page[page.index('<details class="case"'):page.index("</details>", page.index('<details class="case"'))]
    assert "Hello, my name is Ada." in panel and "Noted (1 messages so far)." in panel
    assert "turn 2: timeout after 1 s" in panel
