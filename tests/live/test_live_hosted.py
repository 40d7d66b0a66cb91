"""End-to-end live runs through the hosted providers (Anthropic, Azure OpenAI, Bedrock): `python -m evalkit mode=live`
against each one's loopback fake, through the official client, for the issue-triage suite and its judge.

Per provider: a run records every call and its replay grades the same; a run killed with SIGKILL resumes from its
journal; a storm of 429s and 529/503s is ridden out by the runner's retries; a server that keeps failing is an
outage (exit 5) that writes no recording; and no written file holds a credential, even one the model wrote into its
reply.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeAnthropic, FakeAzureOpenAI, FakeBedrock, FakeError, FakeServer

from evalkit.core.dataset import Case, load_dataset

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATASET = load_dataset(PROJECT_ROOT / "suites" / "issue_triage" / "datasets" / "v1.json")
JUDGE_PREFIX = "You check the summary"
VERDICT = {"faithful": True, "reason": "Every statement in the summary is stated in the issue."}
CALLS = 15  # 12 task calls and 3 judge calls
KEY = "hosted-key-not-a-secret-7d1f0c"
AWS_KEY_ID, AWS_TOKEN = "AKIAFAKEHOSTED000042", "FwoGZXIvYXdzHOSTED-session-token-42"
LEAKY_CASE = "token-leak"
"""The case whose reply quotes the credential back (a model echoing its context): redacted on arrival."""


@dataclass(frozen=True)
class Hosted:
    provider: str
    fake: Callable[..., FakeServer]
    config: str
    """The model option's YAML, with {url} and {name}."""
    texts: Callable[[dict[str, Any]], tuple[str, str]]
    """(system prompt, last user message) of a call."""
    overloaded: int
    """What the provider's server answers when it has no capacity (Anthropic 529, Bedrock 503, Azure 503)."""

    def __str__(self) -> str:
        return self.provider


def _anthropic(body: dict[str, Any]) -> tuple[str, str]:
    return body.get("system", ""), body["messages"][-1]["content"]


def _azure(body: dict[str, Any]) -> tuple[str, str]:
    first = body["messages"][0]
    return (first["content"] if first["role"] == "system" else ""), body["messages"][-1]["content"]


def _bedrock(body: dict[str, Any]) -> tuple[str, str]:
    system = "".join(block["text"] for block in body.get("system", []))
    return system, body["messages"][-1]["content"][0]["text"]


HOSTED = [
    Hosted("anthropic", FakeAnthropic, "name: {name}\nprovider: anthropic\nbase_url: {url}\n"
           "api_key_env: EVALKIT_TEST_HOSTED_KEY\noptions: {{max_tokens: 512, temperature: 0}}\n", _anthropic, 529),
    Hosted("azure", FakeAzureOpenAI, "name: {name}\nprovider: azure\nbase_url: {url}\n"
           "api_key_env: EVALKIT_TEST_HOSTED_KEY\ndeployment: triage-prod\napi_version: '2024-10-21'\n"
           "options: {{temperature: 0, seed: 7}}\n", _azure, 503),
    Hosted("bedrock", FakeBedrock, "name: {name}\nprovider: bedrock\nbase_url: {url}\nregion: us-east-1\n"
           "options: {{maxTokens: 512, temperature: 0}}\n", _bedrock, 503),
]


@pytest.fixture(params=HOSTED, ids=str)
def hosted(request: pytest.FixtureRequest) -> Hosted:
    found: Hosted = request.param
    return found


def case_of(user: str) -> Case:
    for case in DATASET.cases:
        if user == case.issue or user.startswith(f"Issue:\n{case.issue}\n\nSummary:\n"):
            return case
    raise FakeError(400, f"no dataset case has this issue: {user[:80]!r}")


def answers(hosted: Hosted) -> Callable[[dict[str, Any]], str]:
    """Correct triage for every case (one of them quoting the key back), faithful verdicts for the judge."""

    def reply(body: dict[str, Any]) -> str:
        system, user = hosted.texts(body)
        if system.startswith(JUDGE_PREFIX):
            return json.dumps(VERDICT)
        case = case_of(user)
        terms = ", ".join(case.must_mention)
        summary = f"Reporter raises a {case.label} about {terms}."
        if case.id == LEAKY_CASE:
            summary = f"Reporter pasted {KEY} about {terms}."
        return json.dumps({"label": case.label, "priority": case.priority, "summary": summary})

    return reply


def storm(hosted: Hosted, inner: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """Two refusals before every answer (a 429, then the provider's overloaded status), Retry-After 0."""
    lock = threading.Lock()
    seen = [0]

    def reply(body: dict[str, Any]) -> str:
        with lock:
            n = seen[0]
            seen[0] += 1
        if n % 3 == 0:
            raise FakeError(429, "rate limit exceeded", headers={"Retry-After": "0"})
        if n % 3 == 1:
            raise FakeError(hosted.overloaded, "Overloaded", headers={"Retry-After": "0"})
        return inner(body)

    return reply


class Project:
    """Runs `python -m evalkit` with the hosted model and judge options, recordings and job folders under tmp."""

    def __init__(self, tmp_path: Path, hosted: Hosted) -> None:
        self.tmp = tmp_path
        self.hosted = hosted
        self.runs = 0

    def point_at(self, url: str) -> None:
        for group, name in (("model", self.model_name), ("judge", "hosted-judge")):
            folder = self.tmp / "conf" / group
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosted.yaml").write_text(self.hosted.config.format(url=url, name=name), encoding="utf-8")

    @property
    def model_name(self) -> str:
        return {"anthropic": "claude-sonnet-5", "azure": "gpt-4o",
                "bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0"}[self.hosted.provider]

    @property
    def recordings(self) -> list[Path]:
        folder = self.tmp / "rec" / "issue_triage"
        return sorted(p for p in folder.glob("*.json")) if folder.is_dir() else []

    def __call__(self, mode: str, *overrides: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        command, env, job = self.command(mode, *overrides)
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        return done, job

    def command(self, mode: str, *overrides: str) -> tuple[list[str], dict[str, str], Path]:
        self.runs += 1
        job = self.tmp / f"job{self.runs}"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "ANTHROPIC_", "AZURE_", "OPENAI_", "HTTP", "http"))
               and k not in ("HYDRA_FULL_ERROR", "PYTEST_ADDOPTS")}
        env |= {"EVALKIT_TEST_HOSTED_KEY": KEY, "AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": KEY,
                "AWS_SESSION_TOKEN": AWS_TOKEN, "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials", "AWS_CONFIG_FILE": "/nonexistent/config",
                "PYTHONDONTWRITEBYTECODE": "1"}
        command = [sys.executable, "-m", "evalkit", f"mode={mode}", "model=hosted", "judge=hosted", "baseline=none",
                   f"hydra.searchpath=['file://{self.tmp / 'conf'}']", f"run.recordings={self.tmp / 'rec'}",
                   f"hydra.run.dir={job}", *overrides]
        return command, env, job


def outcomes(job: Path) -> dict[str, str]:
    report = json.loads((job / "report.json").read_text(encoding="utf-8"))
    return {test["nodeid"]: test["outcome"] for test in report["tests"]}


def written_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_record_then_replay_with_no_credential_in_any_file(tmp_path: Path, hosted: Hosted) -> None:
    project = Project(tmp_path, hosted)
    with hosted.fake(answers(hosted)) as server:
        project.point_at(server.url)
        done, job = project("live")
        assert done.returncode == 0, done.stderr
        assert len(server.chat_requests) == CALLS
    [recording_path] = project.recordings
    recording = json.loads(recording_path.read_text(encoding="utf-8"))
    assert recording["provenance"]["kind"] == "recorded"
    assert recording["provenance"]["producer"]["model"]["provider"] == hosted.provider
    assert len(recording["calls"]) == CALLS
    leaky = json.loads(recording["calls"][f"task/{LEAKY_CASE}"]["reply"]["text"])
    assert leaky["summary"].startswith("Reporter pasted [REDACTED] about")
    live = outcomes(job)
    assert len(live) == 51

    # replay: no server, no credential; the same outcomes
    project.point_at("http://127.0.0.1:9")  # discard port: a call there would fail
    replayed, replay_job = project("replay")
    assert replayed.returncode == 0, replayed.stderr
    assert outcomes(replay_job) == live

    secrets = [KEY, AWS_KEY_ID, AWS_TOKEN] if hosted.provider == "bedrock" else [KEY]
    for path in written_files(tmp_path):
        if path.suffix == ".yaml" and path.parent.parent.name == "conf":
            continue  # the test's own config options
        text = path.read_text(encoding="utf-8", errors="replace")
        assert not [s for s in secrets if s in text], path


def test_a_run_killed_with_sigkill_resumes_from_its_journal(tmp_path: Path, hosted: Hosted) -> None:
    project = Project(tmp_path, hosted)
    journal = tmp_path / "rec" / "issue_triage"
    with hosted.fake(answers(hosted), latency_ms=150) as server:
        project.point_at(server.url)
        command, env, _ = project.command("live", "run.concurrency=2")
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not [p for p in journal.glob("*.journal.jsonl") if len(p.read_text().splitlines()) >= 4]:
            assert time.monotonic() < deadline and process.poll() is None, "the live run never journaled 4 calls"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
    [kept] = journal.glob("*.journal.jsonl")
    done_before = {json.loads(line)["call_id"] for line in kept.read_text().splitlines() if line.endswith("}")}
    assert project.recordings == []  # nothing half-written

    with hosted.fake(answers(hosted)) as server:
        project.point_at(server.url)
        resumed, job = project("live", "+run.resume=true")
        sent = len(server.chat_requests)
    assert resumed.returncode == 0, resumed.stderr
    assert sent == CALLS - len(done_before)  # only what the journal did not hold
    assert set(outcomes(job).values()) == {"passed"}
    [recording_path] = project.recordings
    assert len(json.loads(recording_path.read_text(encoding="utf-8"))["calls"]) == CALLS
    assert not kept.exists()


def test_a_429_and_overload_storm_is_ridden_out_by_retries(tmp_path: Path, hosted: Hosted) -> None:
    project = Project(tmp_path, hosted)
    with hosted.fake(storm(hosted, answers(hosted))) as server:
        project.point_at(server.url)
        # one call at a time: every call meets exactly a 429 and an overload before its answer
        done, job = project("live", "run.concurrency=1", "run.backoff_s=0.01")
        requests = len(server.chat_requests)
    assert done.returncode == 0, done.stderr
    assert requests == 3 * CALLS
    [recording_path] = project.recordings
    assert len(json.loads(recording_path.read_text(encoding="utf-8"))["calls"]) == CALLS
    assert set(outcomes(job).values()) == {"passed"}


def test_a_server_that_keeps_failing_is_an_outage_and_writes_no_recording(tmp_path: Path, hosted: Hosted) -> None:
    def overloaded(body: dict[str, Any]) -> str:
        raise FakeError(hosted.overloaded, "Overloaded")

    project = Project(tmp_path, hosted)
    with hosted.fake(overloaded) as server:
        project.point_at(server.url)
        done, job = project("live", "run.retries=1", "run.backoff_s=0.01")
    assert done.returncode == 5, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("outage: task/"), done.stderr
    assert f"HTTP {hosted.overloaded}" in lines[0] and "Overloaded" in lines[0]
    assert project.recordings == []
    assert not (job / "decision.json").exists()
