"""The supervised worker process (evalkit.live.providers.supervisor), with small Python children written here:
one that answers, one killed by a signal, one that exits with an error, one that closes its output and lives on.
The llama.cpp worker itself is tested in tests/live/test_providers_llamacpp.py."""

from __future__ import annotations

import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from evalkit.live.providers.supervisor import Worker, WorkerEnded

ECHO = """
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("die"):
        os.kill(os.getpid(), getattr(__import__("signal"), message["die"]))
    print(json.dumps({"pid": os.getpid(), "echo": message}), flush=True)
"""


def test_questions_get_their_own_answers_from_many_threads() -> None:
    worker = Worker([sys.executable, "-c", ECHO])
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda n: worker.ask({"n": n, "text": "é\n\u2028"}), range(40)))
        assert [a["echo"] for a in answers] == [{"n": n, "text": "é\n\u2028"} for n in range(40)]
        assert {a["pid"] for a in answers} == {worker.pid} and worker.alive
    finally:
        worker.close()
    assert not worker.alive


@pytest.mark.parametrize("name", ["SIGSEGV", "SIGILL", "SIGABRT", "SIGKILL"])
def test_a_child_killed_by_a_signal_names_it_then_and_after(name: str) -> None:
    worker = Worker([sys.executable, "-c", ECHO])
    try:
        assert worker.ask({"n": 1})["echo"] == {"n": 1}
        with pytest.raises(WorkerEnded, match=f"^{name}$") as ended:
            worker.ask({"die": name})
        assert ended.value.by_signal and ended.value.how == name and not worker.alive
        with pytest.raises(WorkerEnded, match=f"^{name}$"):  # no answer can come any more: the same reason
            worker.ask({"n": 2})
    finally:
        worker.close()


def test_a_child_killed_from_outside_while_idle_is_found_at_the_next_question() -> None:
    worker = Worker([sys.executable, "-c", ECHO])
    try:
        worker.ask({"n": 1})
        os.kill(worker.pid, signal.SIGSEGV)
        with pytest.raises(WorkerEnded, match="^SIGSEGV$"):
            worker.ask({"n": 2})
    finally:
        worker.close()


def test_an_exit_gives_its_code_and_the_last_line_of_stderr_on_one_line() -> None:
    code = "import sys; sys.stdin.readline(); print('loading\\n\\nerror: bad magic  \\n', file=sys.stderr); " \
           "sys.exit(3)"
    worker = Worker([sys.executable, "-c", code])
    try:
        with pytest.raises(WorkerEnded) as ended:
            worker.ask({"load": True})
    finally:
        worker.close()
    assert not ended.value.by_signal and ended.value.how == "exit code 3"
    assert str(ended.value) == "exit code 3 (its last output: error: bad magic)"


def test_a_line_that_is_not_an_answer_ends_the_worker() -> None:
    worker = Worker([sys.executable, "-c", "import sys; sys.stdin.readline(); print('[1, 2]', flush=True)"])
    try:
        with pytest.raises(WorkerEnded, match="^exit code 0$"):
            worker.ask({})
    finally:
        worker.close()


def test_a_child_that_closes_its_output_and_lives_on_is_killed() -> None:
    code = "import os, sys, time; sys.stdin.readline(); os.close(1); time.sleep(600)"
    worker = Worker([sys.executable, "-c", code], grace_s=0.5)
    worker_pid = worker.pid
    try:
        with pytest.raises(WorkerEnded, match="^SIGKILL$"):
            worker.ask({})
    finally:
        worker.close()
    with pytest.raises(ProcessLookupError):
        os.kill(worker_pid, 0)


def test_close_stops_a_child_that_waits_for_input() -> None:
    worker = Worker([sys.executable, "-c", ECHO])
    worker.ask({"n": 1})
    worker.close()
    assert not worker.alive
    with pytest.raises(ProcessLookupError):
        os.kill(worker.pid, 0)
