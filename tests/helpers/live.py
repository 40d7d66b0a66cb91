"""The live runs' shared pieces: the fake Ollama server's replies, the issue_triage suite's numbers, and the
`evalkit` and `server` fixtures (registered for every test module by tests/conftest.py), used by test_live.py and
the journal, safety and sweep-scale tests.

Each run is a real CLI subprocess from the project root. The judge (Gemini by default, which would need a key and
the network) is replaced by `judge=local`, an option in an extra config folder added with `hydra.searchpath`,
pointing at the same loopback server.
"""

from __future__ import annotations

import json
import os
import re
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

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


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
