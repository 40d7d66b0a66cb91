"""Crash safety, locking and secrets of live runs, through real `python -m evalkit` subprocesses."""

from __future__ import annotations

import fcntl
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_live import TOTAL_TESTS, Evalkit, FakeOllama, read_json, replies, task_calls
from test_live import evalkit as evalkit  # noqa: F401  (the fixture)

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project


pytestmark = pytest.mark.slow


def journal_of(evalkit: Evalkit) -> Path:
    return evalkit.recording.with_name(evalkit.recording.name + ".journal.jsonl")


def test_kill_9_loses_at_most_the_calls_in_flight_and_resume_continues(evalkit: Evalkit) -> None:
    with FakeOllama(replies(), latency_ms=150) as server:
        evalkit.judge_at(server.url)
        command, env, _ = evalkit.command("live", "run.concurrency=2", url=server.url)
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        journal = journal_of(evalkit)
        deadline = time.monotonic() + 60
        while not (journal.exists() and len(journal.read_text().splitlines()) >= 4):
            assert time.monotonic() < deadline and process.poll() is None, "the live run never journaled 4 calls"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        sent_before = len(task_calls(server))
        url = server.url

    lines = journal.read_text().splitlines()
    kept = [json.loads(line)["call_id"] for line in lines if line.endswith("}")]
    assert len(kept) >= 4 and sent_before - len(kept) <= 2  # at most the 2 calls in flight are lost
    assert not evalkit.recording.exists()  # nothing half-written: the recording appears only when complete

    refused = evalkit("live", url=url)  # a fresh run must not silently drop the journal
    assert refused.code == 3 and "+run.resume=true" in refused.done.stderr
    assert refused.done.stderr.count("\n") == 1

    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        resumed = evalkit("live", "+run.resume=true", url=server.url)
        again = task_calls(server)
    assert resumed.code == 0, resumed.explain()
    assert len(again) == 12 - len([c for c in kept if c.startswith("task/")])
    assert f"{TOTAL_TESTS} of {TOTAL_TESTS} tests passed" in resumed.done.stdout
    assert resumed.report["execution"]["calls"]["resumed"] == len(kept)
    recording = read_json(evalkit.recording)
    assert len(recording["calls"]) == 15 and recording["provenance"]["kind"] == "recorded"
    assert not journal.exists()  # compacted into the recording


def test_a_second_writer_waits_for_the_lock(evalkit: Evalkit) -> None:
    evalkit.recording.parent.mkdir(parents=True)
    lock = evalkit.recording.with_name(evalkit.recording.name + ".lock")
    with FakeOllama(replies()) as server, lock.open("a") as held:
        evalkit.judge_at(server.url)
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another job is writing this recording
        timed_out = evalkit("live", "run.lock_timeout_s=0.5", url=server.url)
        assert timed_out.code == 3 and "another run is writing this recording" in timed_out.done.stderr
        assert server.requests == []

        command, env, _ = evalkit.command("live", url=server.url)
        waiting = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert waiting.stderr is not None
        # wait until the second run says it waits (a fixed sleep is too short on a loaded machine)
        said = waiting.stderr.readline()
        assert "waiting for another run that is writing" in said, said
        assert waiting.poll() is None and server.requests == []  # still waiting, nothing sent
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
        out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, out + said + err
    assert len(read_json(evalkit.recording)["calls"]) == 15


FAKE_KEY = "evalkit-test-secret-0123456789abcdef"


def test_api_keys_never_reach_any_written_file(evalkit: Evalkit, monkeypatch: pytest.MonkeyPatch) -> None:
    # The model echoes the key in one reply (as a leaky model or proxy might).
    leaks = replies({"token-leak": f'{{"label": "bug", "priority": "p0", "summary": "key {FAKE_KEY}"}}'})
    with FakeOllama(leaks) as server:
        evalkit.judge_at(server.url)
        command, env, job = evalkit.command("live", "model.api_key_env=EVALKIT_TEST_KEY", "run.retries=0",
                                            url=server.url)
        env["EVALKIT_TEST_KEY"] = FAKE_KEY
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
        sent = [r.headers.get("authorization") for r in server.requests if "gemma4" in json.dumps(r.body)]
    assert done.returncode == 0, done.stdout + done.stderr
    assert sent and all(h == f"Bearer {FAKE_KEY}" for h in sent)  # the key was really used
    written = [p for p in evalkit.tmp.rglob("*") if p.is_file()]
    assert any(p.name == "report.json" for p in written) and evalkit.recording in written
    for path in written:
        assert FAKE_KEY not in path.read_text(errors="replace"), f"the key leaked into {path}"
    assert FAKE_KEY not in done.stdout + done.stderr
    assert "[REDACTED]" in evalkit.recording.read_text()  # the echoed key was masked, not dropped
    report = read_json(next(p for p in written if p.name == "report.json"))
    assert "[REDACTED]" in {c["id"]: c for c in report["cases"]}["token-leak"]["output"]  # the answer kept, masked


def test_budget_denied_cases_stay_in_the_report_and_the_gate_blocks_the_incomplete_run(evalkit: Evalkit,
                                                                                       tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert evalkit("live", f"run.save_report={base}", url=server.url).code == 0
        evalkit.recordings = tmp_path / "rec-budget"
        run = evalkit("live", "budget.max_calls=10", f"baseline={base}", url=server.url)
        assert len(server.requests) == 15 + 10  # the budget stopped the second run at 10 calls
    assert run.code == 1, run.explain()
    assert "incomplete run:" in run.done.stdout
    cases = {c["id"]: c for c in run.report["cases"]}
    unscored = [c for c in cases.values() if c["status"] == "unscored"]
    assert len(cases) == 12 and len(unscored) >= 2  # denied cases are kept, never dropped
    assert all(any("budget_denied" in p for p in c["problems"]) for c in unscored)
    denied = {k: v for k, v in run.call_status.items() if v == "budget_denied"}
    blocked = [k for k, v in run.call_status.items() if v == "blocked"]  # judge calls of denied task calls
    assert len(denied) + len(blocked) == 5 and denied
    recorded = read_json(evalkit.recording)["calls"]
    assert all(recorded[k]["failure"]["kind"] == "budget_denied" for k in denied if k.startswith("task/"))
