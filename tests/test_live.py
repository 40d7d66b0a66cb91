"""End-to-end live runs: `python -m evalkit mode=live|record-missing` against a fake Ollama server.

Each run is a real CLI subprocess from the project root. The judge (Gemini by default, which would need a
key and the network) is replaced by `judge=local`, an option in an extra config
folder added with `hydra.searchpath`, pointing at the same loopback server.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes import FakeError as FakeOllamaError
from fakes import FakeOllama

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case, load_dataset
from evalkit.core.key import build_key, recording_path, reply_settings
from evalkit.core.version import __version__
from evalkit.run.recording import load_recording, request_fingerprint
from evalkit.run.suite import load_task

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project

pytestmark = pytest.mark.slow

SUITE_DIR = PROJECT_ROOT / "suites" / "issue_triage"
DATASET = load_dataset(SUITE_DIR / "datasets" / "v1.json")
CASES: dict[str, Case] = {case.id: case for case in DATASET.cases}
JUDGED = sorted(case.id for case in DATASET.cases if case.get("judged", False))
PROMPT = (SUITE_DIR / "prompts" / "v1.txt").read_text(encoding="utf-8")
CHECKS_PER_CASE = 4  # schema, label, priority, summary; plus the faithfulness check per judged case
TOTAL_TESTS = CHECKS_PER_CASE * len(CASES) + len(JUDGED)

MODEL = ModelConfig(name="gemma4:e2b", provider="ollama", options={"temperature": 0, "seed": 7, "think": False})
JUDGE = ModelConfig(name="local-judge:1b", provider="ollama", options={"temperature": 0, "seed": 1})
JUDGE_PREFIX = "You check the summary"


def recording_name(**options: Any) -> str:
    """The file name of the recording these tests' runs write: gemma4 (its options updated by `options`) on prompt
    and dataset v1, judged by JUDGE: a readable name and the digest of that identity."""
    model = ModelConfig.model_validate(yaml.safe_load(
        (PROJECT_ROOT / "evalkit/conf/model/gemma4.yaml").read_text(encoding="utf-8")))
    key = build_key(suite="issue_triage", dataset=load_dataset(SUITE_DIR / "datasets/v1.json"), model=model.name,
                    prompt_version="v1", prompt_text=(SUITE_DIR / "prompts/v1.txt").read_text(encoding="utf-8"),
                    judge_model=JUDGE.name, components={},
                    model_settings=reply_settings({**model.options, **options}, model.structured_output),
                    judge_settings=reply_settings(JUDGE.options, JUDGE.structured_output))
    return recording_path(key, Path()).name


RECORDING_NAME = recording_name()
VERDICT = {"faithful": True, "reason": "Every statement in the summary is stated in the issue."}

# Environment that would change where the client connects or what it sends.
# The Gemini judge's key stays out too: with it, a refused run could reach the real API.
_CLIENT_ENV = ("HYDRA_FULL_ERROR", "OLLAMA_API_KEY", "OLLAMA_HOST", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
               "http_proxy", "https_proxy", "all_proxy", "PYTEST_ADDOPTS", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def test_fixture_sizes() -> None:
    """The numbers the tests below assert (12 task calls, 3 judge calls, 51 tests)."""
    assert (len(CASES), len(JUDGED), TOTAL_TESTS) == (12, 3, 51)


# -- what the fake server answers -------------------------------------------------------------


def is_judge(body: Mapping[str, Any]) -> bool:
    first = body["messages"][0]
    return bool(first["role"] == "system" and first["content"].startswith(JUDGE_PREFIX))


def case_of(body: Mapping[str, Any]) -> Case:
    """The dataset case a task or judge request is about, found by its issue text."""
    user = body["messages"][-1]["content"]
    for case in DATASET.cases:
        if user == case.issue or user.startswith(f"Issue:\n{case.issue}\n\nSummary:\n"):
            return case
    raise FakeOllamaError(400, f"no dataset case has this issue: {user[:80]!r}")


def summary_of(case: Case, variant: str = "") -> str:
    """A summary the checks accept: it names every `must_mention` term and stays under 20 words."""
    terms = ", ".join(case.must_mention)
    return f"{variant}Reporter raises a {case.label} about {terms}.".strip()


def triage_reply(case: Case, variant: str = "") -> str:
    return json.dumps({"label": case.label, "priority": case.priority, "summary": summary_of(case, variant)})


def replies(overrides: Mapping[str, str | Exception] | None = None) -> Callable[[dict[str, Any]], str]:
    """Correct triage for every case, faithful verdicts for the judge; `overrides` by case id."""
    overrides = dict(overrides or {})

    def reply(body: dict[str, Any]) -> str:
        if is_judge(body):
            return json.dumps(VERDICT)
        case = case_of(body)
        special = overrides.get(case.id)
        if isinstance(special, Exception):
            raise special
        return special if special is not None else triage_reply(case)

    return reply


def task_calls(server: FakeOllama) -> list[dict[str, Any]]:
    # a request cut off by a killed client has no body: the server never answered it as a call
    return [r.body for r in server.chat_requests if r.body is not None and not is_judge(r.body)]


def judge_calls(server: FakeOllama) -> list[dict[str, Any]]:
    return [r.body for r in server.chat_requests if r.body is not None and is_judge(r.body)]


# -- running the CLI ---------------------------------------------------------------------------


@dataclass
class Run:
    done: subprocess.CompletedProcess[str]
    job: Path

    @property
    def code(self) -> int:
        return self.done.returncode

    @property
    def report_path(self) -> Path:
        found = re.search(r"report (\S+)", self.done.stdout)
        assert found, f"no `report <path>` on stdout:\n{self.done.stdout}\n{self.done.stderr}"
        return Path(found.group(1))

    @property
    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.report_path.read_text(encoding="utf-8"))
        return data

    @property
    def outcomes(self) -> dict[str, str]:
        return {test["nodeid"]: test["outcome"] for test in self.report["tests"]}

    @property
    def call_status(self) -> dict[str, str]:
        """call id -> replayed | recorded | failed | blocked ..., as the report's cases list them."""
        return {cid: status for case in self.report["cases"] for cid, status in case["calls"].items()}

    def explain(self) -> str:
        log = self.job / "pytest.log"
        tail = log.read_text(encoding="utf-8")[-3000:] if log.is_file() else "(no pytest.log)"
        return f"exit {self.code}\nstdout:\n{self.done.stdout}\nstderr:\n{self.done.stderr}\npytest.log:\n{tail}"


class Evalkit:
    """`python -m evalkit` with the recordings, judge option and job folders under tmp_path."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.recordings = tmp_path / "rec"
        self.conf = tmp_path / "conf"
        self.runs = 0

    @property
    def recording(self) -> Path:
        return self.recordings / "issue_triage" / RECORDING_NAME

    def judge_at(self, url: str) -> None:
        """Write conf/judge/local.yaml: the judge, served by the fake Ollama server at `url`."""
        (self.conf / "judge").mkdir(parents=True, exist_ok=True)
        options = "\n".join(f"  {k}: {json.dumps(v)}" for k, v in JUDGE.options.items())
        (self.conf / "judge" / "local.yaml").write_text(
            f"name: {JUDGE.name}\nprovider: {JUDGE.provider}\nbase_url: {url}\napi_key_env: null\n"
            f"timeout_s: 30\noptions:\n{options}\n", encoding="utf-8")

    def command(self, mode: str, *overrides: str, url: str | None = None, local_judge: bool = True,
                model: str = "gemma4") -> tuple[list[str], dict[str, str], Path]:
        """The command line, environment and job folder of the next run."""
        self.runs += 1
        job = self.tmp / f"job{self.runs}"
        args = [f"mode={mode}", f"model={model}", f"run.recordings={self.recordings}", "baseline=none",
                f"hydra.run.dir={job}"]
        if url is not None:
            args.append(f"model.base_url={url}")
        if local_judge:
            args += [f"hydra.searchpath=['file://{self.conf}']", "judge=local"]
        env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return [sys.executable, "-m", "evalkit", *args, *overrides], env, job

    def __call__(self, mode: str, *overrides: str, url: str | None = None, local_judge: bool = True,
                 model: str = "gemma4") -> Run:
        command, env, job = self.command(mode, *overrides, url=url, local_judge=local_judge, model=model)
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        return Run(done, job)


@pytest.fixture
def evalkit(tmp_path: Path) -> Evalkit:
    return Evalkit(tmp_path)


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama(replies()) as fake:
        yield fake


def live(evalkit: Evalkit, server: FakeOllama, mode: str = "live") -> Run:
    evalkit.judge_at(server.url)
    return evalkit(mode, url=server.url)


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def node(check: str, case_id: str) -> str:
    return f"test_triage.py::{check}[{case_id}]"


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
