"""`run.otel_export=PATH`: a run's calls as OTLP JSON with the GenAI conventions (evalkit/run/otel_export.py).

The export is read back with evalkit's own trace reader (`evalkit adapt otel`'s), so what a tracing backend would
show and what evalkit gates agree: the same cases, the same calls, the same outcomes. End to end: a replay of the
shipped triage suite, and a live run against the loopback Ollama fake with secrets planted in its prompt."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeOllama
from helpers.live import PROJECT_ROOT, Evalkit, replies

from evalkit.adapt.otel import trajectories
from evalkit.adapt.otlp import read_otlp
from evalkit.core.errors import InputError
from evalkit.live.redact import MASK, Redactor
from evalkit.records import FinalAnswer, ModelCall
from evalkit.records.call import Message, Reply, Request, Usage
from evalkit.run.execute import CallResult
from evalkit.run.otel_export import DETAILS_EVENT, call_spans, export_text, write_export

pytest.importorskip("opentelemetry.sdk.trace", reason="install evalkit's [otel] extra")

KEY_VALUE = "kv-0123456789abcdef0123"
"""The value of the model's key variable in these tests: never written, in any encoding."""
SHAPED = "sk-" + "A1b2C3d4E5f6G7h8I9j0"  # an OpenAI-shaped key (a default credential shape)
PATTERNED = "ACME-314159"  # matched by the run's own secret pattern below
PATTERN = r"ACME-[0-9]{6}"
STARTED = 1_767_225_600_000_000_000


def _request(case: str, prompt: str = "Triage the issue.") -> Request:
    return Request(model="triage-model", messages=(Message(role="system", content=prompt),
                                                   Message(role="user", content=f"issue of {case}")),
                   options={"temperature": 0, "seed": 7, "think": False})


def _reply(text: str, tokens: int) -> Reply:
    return Reply(text=text, stop_reason="stop", usage=Usage(input_tokens=tokens, output_tokens=5), latency_ms=12.5)


def _calls() -> tuple[dict[str, CallResult], dict[str, Request]]:
    """Case a: two samples, live (sent at known times); case b: replayed, and a judge call that failed."""
    calls = {"task/a": CallResult("recorded", _reply("answer a0", 30), sent_ns=STARTED + 1_000),
             "task/a#1": CallResult("recorded", _reply("answer a1", 31), sent_ns=STARTED + 2_000),
             "task/b": CallResult("replayed", _reply("answer b", 40)),
             "judge/faithfulness/b": CallResult("failed", reason="judge/faithfulness/b: no reply after 5 attempt(s)")}
    requests = {call_id: _request(call_id.rsplit("/", 1)[-1].split("#")[0]) for call_id in calls}
    return calls, requests


def _spans_of(text: str) -> list[dict[str, Any]]:
    export = json.loads(text)
    return [s for rs in export["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def _export(calls: dict[str, CallResult], requests: dict[str, Request], redact: Redactor | None = None,
            messages: bool = True, passed: dict[str, bool] | None = None) -> str:
    spans = call_spans(calls, requests, {"model": "ollama", "judge": "openai"}, STARTED)
    return export_text(spans, suite="issue_triage", mode="live", passed=passed or {"a": True, "b": False},
                       version="0.1.0", redact=redact or Redactor(), messages=messages)


def test_the_export_reads_back_as_the_runs_cases_calls_and_outcomes() -> None:
    calls, requests = _calls()
    text = _export(calls, requests)
    assert text.endswith("\n") and text.count("\n") == 1  # one export on one line: the file exporter's JSON Lines
    cases, notes = trajectories(read_otlp(text.encode(), "export.json"), "export.json")
    assert sorted(cases) == ["a", "b"] and notes == []
    steps_a = cases["a"].model_calls()
    assert [(c.model, c.input_tokens, c.output_tokens, c.milliseconds) for _, c in steps_a] == [
        ("triage-model", 30, 5, 12.5), ("triage-model", 31, 5, 12.5)]
    assert cases["a"].steps[-1] == FinalAnswer(text="answer a1")  # the last call's reply, from the opt-in event
    assert len(cases["b"].model_calls()) == 2 and isinstance(cases["b"].steps[0], ModelCall)
    spans = _spans_of(text)
    roots = {_attributes(s)["evalkit.case_id"]: s for s in spans if "parentSpanId" not in s or not s["parentSpanId"]}
    assert {case: _attributes(root)["evalkit.case.passed"] for case, root in roots.items()} == {"a": True, "b": False}
    assert len({root["traceId"] for root in roots.values()}) == 2  # a trace per case
    by_call = {_attributes(s).get("evalkit.call_id"): s for s in spans}
    first = _attributes(by_call["task/a"])  # OTLP/JSON writes 64-bit integers as text
    assert {key: first.get(key) for key in (
        "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.request.temperature",
        "gen_ai.request.seed", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "evalkit.call.role",
        "evalkit.call.status")} == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "ollama", "gen_ai.request.model": "triage-model",
        "gen_ai.request.temperature": 0.0, "gen_ai.request.seed": "7", "gen_ai.usage.input_tokens": "30",
        "gen_ai.usage.output_tokens": "5", "evalkit.call.role": "model", "evalkit.call.status": "recorded"}
    assert first["gen_ai.response.finish_reasons"] == {"values": [{"stringValue": "stop"}]}
    assert by_call["task/a"]["kind"] == 3 and by_call["task/a"]["name"] == "chat triage-model"  # CLIENT, as ints
    assert by_call["task/a"]["startTimeUnixNano"] == str(STARTED + 1_000)  # a live call: when it was sent
    assert int(by_call["task/a"]["endTimeUnixNano"]) - int(by_call["task/a"]["startTimeUnixNano"]) == 12_500_000
    # the replayed call starts at the run's start; the judge's after it; the failed one is an error
    assert by_call["task/b"]["startTimeUnixNano"] == str(STARTED)
    assert int(by_call["judge/faithfulness/b"]["startTimeUnixNano"]) == STARTED + 12_500_001
    failed = by_call["judge/faithfulness/b"]
    assert failed["status"]["code"] == 2 and _attributes(failed)["error.type"] == "failed"
    assert _attributes(failed)["gen_ai.provider.name"] == "openai" and _attributes(failed)["evalkit.call.role"] == "judge"
    assert len(by_call["task/a"]["spanId"]) == 16 and len(by_call["task/a"]["traceId"]) == 32  # hex, as OTLP/JSON


def test_messages_are_opt_in_events_only() -> None:
    calls, requests = _calls()
    quiet = _export(calls, requests, messages=False)
    assert "answer a0" not in quiet and "Triage the issue" not in quiet and "issue of a" not in quiet
    spoken = _export(calls, requests, messages=True)
    span = next(s for s in _spans_of(spoken) if _attributes(s).get("evalkit.call_id") == "task/a")
    assert not [key for key in _attributes(span) if key in ("gen_ai.input.messages", "gen_ai.output.messages")]
    (event,) = span["events"]
    assert event["name"] == DETAILS_EVENT
    details = _attributes(event)
    assert json.loads(details["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "Triage the issue."}]},
        {"role": "user", "parts": [{"type": "text", "content": "issue of a"}]}]
    assert json.loads(details["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "answer a0"}], "finish_reason": "stop"}]


def test_secrets_planted_in_a_prompt_never_reach_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_OTEL_TEST_KEY", KEY_VALUE)
    redact = Redactor(["EVALKIT_OTEL_TEST_KEY"], [PATTERN])
    calls, requests = _calls()
    planted = f"Use key {KEY_VALUE}, or {SHAPED}, and ticket {PATTERNED}."
    requests = {cid: _request("a", planted) for cid in requests}
    calls["task/a"] = CallResult("recorded", _reply(f"echoed {KEY_VALUE} {SHAPED} {PATTERNED}", 30), sent_ns=STARTED)
    text = _export(calls, requests, redact)
    for secret in (KEY_VALUE, SHAPED, PATTERNED, KEY_VALUE.upper()):
        assert secret not in text
    assert MASK in text and "Use key" in text  # the text is there, its secrets masked
    cases, _ = trajectories(read_otlp(text.encode(), "export.json"), "export.json")  # and it still reads
    assert sorted(cases) == ["a", "b"]


def test_the_file_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls, requests = _calls()
    target = tmp_path / "calls.otlp.json"
    target.write_text("the previous export\n", encoding="utf-8")
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
    with pytest.raises(InputError, match=r"run.otel_export=.*calls.otlp.json: cannot write the trace export "
                                         r"\(No space left\)"):
        write_export(target, _export(calls, requests))
    assert target.read_text(encoding="utf-8") == "the previous export\n"  # never torn, never half replaced
    assert [p.name for p in tmp_path.iterdir()] == ["calls.otlp.json"]  # no temp file left behind
    monkeypatch.undo()
    write_export(target, _export(calls, requests))
    assert sorted(trajectories(read_otlp(target.read_bytes(), str(target)), str(target))[0]) == ["a", "b"]


# -- end to end --------------------------------------------------------------------------------------------

CHECKS = "checks:\n  - {id: one-task-call, kind: steps, max_model_calls: 2}\n"


def _adapt(export: Path, checks: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "otel", str(export), str(export),
                           "--checks", str(checks), "--out", str(out)], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.slow
def test_a_replay_exports_its_calls_and_evalkit_adapt_otel_reads_them_back(tmp_path: Path) -> None:
    export, job = tmp_path / "triage.otlp.json", tmp_path / "job"
    done = subprocess.run([sys.executable, "-m", "evalkit", f"run.otel_export={export}", "run.otel_messages=true",
                           f"hydra.run.dir={job}"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((job / "report.json").read_text(encoding="utf-8"))
    given = json.loads((job / "run-input.json").read_text(encoding="utf-8"))
    cases, _ = trajectories(read_otlp(export.read_bytes(), str(export)), str(export))
    assert sorted(cases) == sorted(c["id"] for c in report["cases"])
    spans = _spans_of(export.read_text(encoding="utf-8"))
    passed = {_attributes(s)["evalkit.case_id"]: _attributes(s)["evalkit.case.passed"] for s in spans
              if "evalkit.case.passed" in _attributes(s)}
    assert passed == {c["id"]: c["passed"] for c in report["cases"]}
    assert {_attributes(s)["evalkit.call.status"] for s in spans if "evalkit.call_id" in _attributes(s)} == {"replayed"}
    for case, trajectory in cases.items():  # every call of the case, each sample's and the judge's, in the run's order
        ids = sorted(cid for cid in given["calls"] if cid.rsplit("/", 1)[-1].split("#")[0] == case)
        assert len(trajectory.model_calls()) == len(ids)
        assert trajectory.steps[-1] == FinalAnswer(text=given["calls"][max(ids, key=lambda i: i.startswith("judge"))]["text"])
    (tmp_path / "checks.yaml").write_text(CHECKS, encoding="utf-8")
    adapted = _adapt(export, tmp_path / "checks.yaml", tmp_path / "adapted")
    assert adapted.returncode == 0 and adapted.stdout.startswith("decision: GO"), adapted.stdout + adapted.stderr
    tests = json.loads((tmp_path / "adapted/candidate.json").read_text(encoding="utf-8"))["tests"]
    assert {t["case"] for t in tests} == {c["id"] for c in report["cases"]}


@pytest.mark.slow
def test_a_live_run_exports_its_calls_with_the_planted_secrets_masked(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_OTEL_TEST_KEY", KEY_VALUE)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text((PROJECT_ROOT / "suites/issue_triage/prompts/v1.txt").read_text(encoding="utf-8")
                      + f"\nInternal note: key {KEY_VALUE}, fallback {SHAPED}, ticket {PATTERNED}.\n", encoding="utf-8")
    export = tmp_path / "live.otlp.json"
    evalkit = Evalkit(tmp_path)
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        run = evalkit("live", f"prompt.file={prompt}", "model.api_key_env=EVALKIT_OTEL_TEST_KEY",
                      f"run.secret_patterns=['{PATTERN}']", f"run.otel_export={export}", "run.otel_messages=true",
                      url=server.url)
        sent = [r.body for r in server.chat_requests if r.body is not None]
    assert run.code == 0, run.explain()
    assert any(KEY_VALUE in json.dumps(body) for body in sent)  # the model was sent the planted prompt
    text = export.read_text(encoding="utf-8")
    for secret in (KEY_VALUE, SHAPED, PATTERNED):
        assert secret not in text
    assert "Internal note: key " + MASK in text
    spans = _spans_of(text)
    calls = [_attributes(s) for s in spans if "evalkit.call_id" in _attributes(s)]
    assert len(calls) == len(sent) and {c["evalkit.call.status"] for c in calls} == {"recorded"}
    cases, _ = trajectories(read_otlp(text.encode(), str(export)), str(export))
    assert sorted(cases) == sorted(c["id"] for c in run.report["cases"])
    assert not list(tmp_path.glob(".live.otlp.json.*"))  # written whole, under a temporary name then renamed


def test_a_conversations_turns_are_spans_in_turn_order_each_side_with_its_role() -> None:
    calls = {f"{kind}/c@{turn}": CallResult("replayed", _reply(f"{kind} {turn}", 10))
             for kind in ("task", "user") for turn in (1, 2)}
    requests = {call_id: _request("c") for call_id in calls}
    spans = call_spans(calls, requests, {"model": "ollama", "simulator": "openai"}, STARTED)["c"]
    assert [(s.call_id, s.role, s.provider) for s in spans] == [
        ("user/c@1", "simulator", "openai"), ("task/c@1", "model", "ollama"),
        ("user/c@2", "simulator", "openai"), ("task/c@2", "model", "ollama")]
