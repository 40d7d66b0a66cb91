"""End-to-end live runs: `python -m evalkit mode=live|record-missing` against a fake Ollama server.

Each run is a real CLI subprocess from the project root. The judge (Gemini by default, which would need a
key and the network) is replaced by `judge=local`, an option in an extra config
folder added with `hydra.searchpath`, pointing at the same loopback server.
"""

from __future__ import annotations

import json
import socket

import pytest
from fakes import FakeError as FakeOllamaError
from fakes import FakeOllama
from helpers.live import (
    CASES,
    CHECKS_PER_CASE,
    JUDGE,
    JUDGED,
    MODEL,
    PROMPT,
    RECORDING_NAME,
    SUITE_DIR,
    TOTAL_TESTS,
    VERDICT,
    Evalkit,
    case_of,
    is_judge,
    judge_calls,
    live,
    node,
    read_json,
    replies,
    summary_of,
    task_calls,
    triage_reply,
)

from evalkit.core.version import __version__
from evalkit.run.recording import load_recording, request_fingerprint
from evalkit.run.suite import load_task

pytestmark = pytest.mark.slow

def test_fixture_sizes() -> None:
    """The numbers the tests below assert (12 task calls, 3 judge calls, 51 tests)."""
    assert (len(CASES), len(JUDGED), TOTAL_TESTS) == (12, 3, 51)


# -- live ----------------------------------------------------------------------------------------


def test_live_run_calls_the_server_and_records_every_call(evalkit: Evalkit, server: FakeOllama) -> None:
    run = live(evalkit, server)

    assert run.code == 0, run.explain()
    assert f"{TOTAL_TESTS} of {TOTAL_TESTS} tests passed (live" in run.done.stdout
    assert run.report_path == run.job / "report.json"

    # the server saw every task call, then the judge calls built from their replies
    tasks, judges = task_calls(server), judge_calls(server)
    assert len(tasks) == 12 and len(judges) == 3
    assert [is_judge(r.body) for r in server.chat_requests] == [False] * 12 + [True] * 3
    assert sorted(case_of(b).id for b in tasks) == sorted(CASES)
    assert sorted(case_of(b).id for b in judges) == JUDGED
    assert not [r for r in server.requests if r.path != "/api/chat"]

    # ... and each carried exactly what the suite's task builds
    task = load_task(SUITE_DIR)
    for body in tasks:
        expected = task.build_task(case_of(body), PROMPT, MODEL)
        assert body["model"] == "gemma4:e2b"
        assert body["stream"] is False
        assert body["messages"] == [m.model_dump() for m in expected.messages]
        assert body["format"] == expected.response_schema
        assert body["options"] == {"temperature": 0, "seed": 7}
        assert body["think"] is False
    assert task.build_judge is not None
    for body in judges:
        case = case_of(body)
        expected = task.build_judge(case, triage_reply(case), JUDGE)["faithfulness"]
        assert body["model"] == JUDGE.name
        assert body["messages"] == [m.model_dump() for m in expected.messages]
        assert body["messages"][-1]["content"].endswith(f"Summary:\n{summary_of(case)}")
        assert body["format"] == expected.response_schema
        assert body["options"] == {"temperature": 0, "seed": 1}
        assert "think" not in body

    # the recording: provenance `recorded`, one entry per call with the request's fingerprint
    assert sorted(p.name for p in (evalkit.recordings / "issue_triage").iterdir() if p.suffix != ".lock") == [RECORDING_NAME]
    raw = read_json(evalkit.recording)
    assert raw["provenance"]["kind"] == "recorded"
    assert raw["provenance"]["evalkit_version"] == __version__
    assert raw["provenance"]["recorded_at"]
    assert raw["key"]["model"] == "gemma4:e2b" and raw["key"]["judge_model"] == JUDGE.name
    expected_ids = {f"task/{c}" for c in CASES} | {f"judge/faithfulness/{c}" for c in JUDGED}
    assert set(raw["calls"]) == expected_ids
    recording = load_recording(evalkit.recording)
    for call_id, entry in recording.calls.items():
        assert entry.request_sha == request_fingerprint(entry.request), call_id
        case = CASES[call_id.rsplit("/", 1)[-1]]
        if call_id.startswith("task/"):
            assert entry.request == task.build_task(case, PROMPT, MODEL)
            assert entry.reply.text == triage_reply(case)
        else:
            assert entry.request == task.build_judge(case, triage_reply(case), JUDGE)["faithfulness"]
            assert json.loads(entry.reply.text or "") == VERDICT
        assert entry.reply.stop_reason == "stop"
        assert entry.reply.usage.input_tokens and entry.reply.usage.output_tokens
        assert entry.reply.latency_ms is not None

    # the report: 51 passed, every call recorded live
    report = run.report
    assert report["summary"]["passed"] == TOTAL_TESTS == len(run.outcomes)
    assert set(run.outcomes.values()) == {"passed"}
    assert report["provenance"]["mode"] == "live"
    assert report["provenance"]["recording_provenance"] == "recorded"
    # the key, and beside it the settings its fingerprints cover, as the recording keeps them
    assert report["eval"] == {**raw["key"], "settings": raw["settings"]}
    assert run.call_status == {cid: "recorded" for cid in expected_ids}


def test_replay_of_a_live_recording_gives_the_same_outcomes(evalkit: Evalkit) -> None:
    with FakeOllama(replies()) as server:
        recorded = live(evalkit, server)
        assert recorded.code == 0, recorded.explain()
        url = server.url
    before = evalkit.recording.read_bytes()

    replayed = evalkit("replay", url=url)  # the server is stopped: replay must not call it

    assert replayed.code == 0, replayed.explain()
    assert replayed.outcomes == recorded.outcomes
    assert len(replayed.outcomes) == TOTAL_TESTS
    assert replayed.report["provenance"]["mode"] == "replay"
    assert replayed.report["provenance"]["recording_provenance"] == "recorded"
    assert replayed.report["eval"] == recorded.report["eval"]
    assert set(replayed.call_status.values()) == {"replayed"}
    assert evalkit.recording.read_bytes() == before  # replay never rewrites the recording


@pytest.mark.parametrize(("case_id", "variant", "expected_calls"), [
    ("sync-keyerror", "", ["task"]),  # not judged
    ("import-drops-tasks", "", ["task"]),  # same reply: the recorded judge call still matches
    ("import-drops-tasks", "Again: ", ["task", "judge"]),  # new reply: its judge call is stale
], ids=["unjudged", "judged-same-reply", "judged-new-reply"])
def test_record_missing_calls_only_the_missing_case(evalkit: Evalkit, case_id: str, variant: str,
                                                    expected_calls: list[str]) -> None:
    with FakeOllama(replies()) as server:
        first = live(evalkit, server)
    assert first.code == 0, first.explain()
    data = read_json(evalkit.recording)
    before = dict(data["calls"])
    del data["calls"][f"task/{case_id}"]
    evalkit.recording.write_text(json.dumps(data, indent=1), encoding="utf-8")

    with FakeOllama(replies({case_id: triage_reply(CASES[case_id], variant)})) as server:
        evalkit.judge_at(server.url)
        run = evalkit("record-missing", url=server.url)

    assert run.code == 0, run.explain()
    assert [("judge" if is_judge(r.body) else "task") for r in server.chat_requests] == expected_calls
    assert {case_of(r.body).id for r in server.chat_requests} == {case_id}
    assert set(run.outcomes.values()) == {"passed"} and len(run.outcomes) == TOTAL_TESTS

    after = read_json(evalkit.recording)
    assert after["provenance"]["kind"] == "recorded"
    assert set(after["calls"]) == set(before)
    renewed = {f"task/{case_id}"} | ({f"judge/faithfulness/{case_id}"} if "judge" in expected_calls else set())
    for call_id, entry in after["calls"].items():
        if call_id in renewed:
            continue
        assert entry == before[call_id], f"{call_id} was re-recorded although it was not missing"
    assert json.loads(after["calls"][f"task/{case_id}"]["reply"]["text"])["summary"] == \
        summary_of(CASES[case_id], variant)
    status = run.call_status
    assert {cid for cid, s in status.items() if s == "recorded"} == renewed
    assert {s for cid, s in status.items() if cid not in renewed} == {"replayed"}


def test_invalid_json_reply_is_recorded_and_fails_only_its_case(evalkit: Evalkit) -> None:
    broken = "sort-by-due"
    garbage = "Sure! label: feature, priority: p2 {not json"
    with FakeOllama(replies({broken: garbage})) as server:
        run = live(evalkit, server)
        assert len(task_calls(server)) == 12 and len(judge_calls(server)) == 3

    assert run.code == 0, run.explain()
    recording = load_recording(evalkit.recording)
    assert recording.provenance.kind == "recorded"
    assert len(recording.calls) == 15
    assert recording.calls[f"task/{broken}"].reply.text == garbage

    outcomes = run.outcomes
    assert len(outcomes) == TOTAL_TESTS
    mine = {nodeid: o for nodeid, o in outcomes.items() if nodeid.endswith(f"[{broken}]")}
    assert len(mine) == CHECKS_PER_CASE
    assert mine[node("test_reply_matches_schema", broken)] == "failed"
    assert set(mine.values()) <= {"failed", "error"}, mine
    others = {nodeid: o for nodeid, o in outcomes.items() if nodeid not in mine}
    assert set(others.values()) == {"passed"}
    assert f"{TOTAL_TESTS - CHECKS_PER_CASE} of {TOTAL_TESTS} tests passed" in run.done.stdout
    case_row = next(c for c in run.report["cases"] if c["id"] == broken)
    assert case_row["passed"] is False


def test_a_call_that_fails_after_its_retries_is_an_outage_never_a_verdict(evalkit: Evalkit) -> None:
    down = "token-leak"
    with FakeOllama(replies({down: FakeOllamaError(500, "model runner crashed")})) as server:
        evalkit.judge_at(server.url)
        run = evalkit("live", "run.retries=1", "run.backoff_s=0.01", url=server.url)
        assert len([r for r in task_calls(server) if case_of(r).id == down]) == 2  # the call and its retry
        assert judge_calls(server) == []  # the run stopped before its judge wave

    assert run.code == 5, run.explain()  # outage: its own exit code, never 0, 1 or 2
    lines = run.done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"outage: task/{down}: no reply after 2 attempt(s) (retryable)")
    assert "model runner crashed" in lines[0] and "+run.resume=true" in lines[0]
    assert not (run.job / "decision.json").exists() and "decision:" not in run.done.stdout  # nothing gated
    assert not evalkit.recording.exists()  # nothing half-written
    journal = evalkit.recording.with_name(evalkit.recording.name + ".journal.jsonl")
    kept = [json.loads(line) for line in journal.read_text().splitlines()]
    succeeded = {e["call_id"] for e in kept if not e["entry"].get("failure")}
    assert succeeded and f"task/{down}" not in succeeded

    with FakeOllama(replies()) as server:  # the server is back: resume sends only what is missing
        evalkit.judge_at(server.url)
        resumed = evalkit("live", "+run.resume=true", url=server.url)
        sent = {f"{'judge' if is_judge(r.body) else 'task'}/{case_of(r.body).id}" for r in server.chat_requests}
    assert resumed.code == 0, resumed.explain()
    assert not sent & succeeded and f"task/{down}" in {s for s in sent if s.startswith("task/")}
    assert set(resumed.outcomes.values()) == {"passed"}
    assert len(read_json(evalkit.recording)["calls"]) == 15 and not journal.exists()


def test_a_server_that_cannot_be_reached_keeps_the_recording_and_says_so(evalkit: Evalkit) -> None:
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert evalkit("live", url=server.url).code == 0
    before = evalkit.recording.read_bytes()
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    run = evalkit("live", "run.retries=0", url=url)
    assert run.code == 5, run.explain()
    assert run.done.stderr.startswith("outage: task/") and "nothing was gated" in run.done.stderr
    assert "connect" in run.done.stderr.lower(), run.done.stderr  # the cause is named (connection refused)
    assert evalkit.recording.read_bytes() == before  # good recorded replies are never replaced by failures


# -- refusals ------------------------------------------------------------------------------------


def test_live_run_of_a_model_whose_provider_is_not_installed_exits_3(evalkit: Evalkit) -> None:
    run = evalkit("live", "model.provider=cohere", model="gemini-flash", local_judge=False)

    assert run.code == 3, run.explain()
    lines = run.done.stderr.strip().splitlines()
    assert len(lines) == 1, run.done.stderr
    assert lines[0].startswith("error: ")
    assert "provider 'cohere' is not installed (installed: anthropic, azure, bedrock, gemini, llamacpp, ollama, " \
           "openai)" in lines[0]
    assert "Traceback" not in run.done.stderr
    assert not evalkit.recording.parent.exists() or not any(evalkit.recording.parent.iterdir())


def test_live_run_with_missing_credential_exits_3_before_calling(evalkit: Evalkit, server: FakeOllama) -> None:
    evalkit.judge_at(server.url)
    run = evalkit("live", "model.api_key_env=EVALKIT_TEST_UNSET_TOKEN", url=server.url)

    assert run.code == 3, run.explain()
    lines = run.done.stderr.strip().splitlines()
    assert len(lines) == 1 and "EVALKIT_TEST_UNSET_TOKEN" in lines[0], run.done.stderr
    assert lines[0].startswith("error: the model under test: gemma4:e2b (ollama) needs"), lines[0]
    assert server.requests == []


def test_live_run_with_a_judge_whose_provider_is_not_installed_refuses_before_any_call(evalkit: Evalkit,
                                                                                         server: FakeOllama) -> None:
    run = evalkit("live", "judge.provider=cohere", url=server.url, local_judge=False)

    assert run.code == 3, run.explain()
    assert "'judge.provider': Value error, provider 'cohere' is not installed" in run.done.stderr
    assert server.requests == [], f"{len(server.requests)} model calls were made and then thrown away"


def test_live_run_with_the_gemini_judge_and_no_key_refuses_before_any_call(evalkit: Evalkit,
                                                                            server: FakeOllama) -> None:
    run = evalkit("live", url=server.url, local_judge=False)  # the suite's default judge: Gemini

    assert run.code == 3, run.explain()
    lines = run.done.stderr.strip().splitlines()
    assert len(lines) == 1 and "GOOGLE_API_KEY" in lines[0], run.done.stderr
    # the key is the judge's: the message must not read as if the model under test (gemma4) needed it
    assert lines[0].startswith("error: the suite's pinned judge: gemini-3.8-flash (gemini) needs"), lines[0]
    assert server.requests == [], f"{len(server.requests)} model calls were made and then thrown away"
