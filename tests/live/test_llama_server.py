"""The openai provider against a real OpenAI-compatible server: llama-cpp-python's, serving SmolLM2-135M.

The test starts `python -m llama_cpp.server` on 127.0.0.1 (one server for the module). That server takes
`response_format: {type: json_object, schema: ...}` and answers HTTP 500 to OpenAI's `json_schema`: with
`structured_output: json_object` a live run records real replies; with the wrong dialect the run ends as an
outage (exit 5), never as a verdict. Every call is capped at a few dozen tokens.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.config import ModelConfig
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.llamacpp import bundled_model_file

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

pytestmark = [pytest.mark.slow, pytest.mark.external]

SCHEMA: dict[str, Any] = {
    "title": "Triage", "type": "object",
    "properties": {"label": {"enum": ["bug", "feature"], "type": "string"},
                   "summary": {"minLength": 1, "type": "string"}},
    "required": ["label", "summary"], "additionalProperties": False,
}
REQUEST = Request(model="smollm2", messages=(Message(role="system", content="You triage GitHub issues."),
                                             Message(role="user", content="`tracker sync` crashes with KeyError.")),
                  response_schema=SCHEMA, options={"temperature": 0, "seed": 7, "max_tokens": 48})
CAP = "+model.options.max_tokens=24"  # gpt-local sets no cap; a small model can loop to the context limit
_CLIENT_ENV = ("HYDRA_FULL_ERROR", "OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
               "http_proxy", "https_proxy", "all_proxy", "PYTEST_ADDOPTS", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_file()),
                                   "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
                                  stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, f"llama_cpp.server exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"llama_cpp.server did not come up: {log.read_text()[-2000:]}"
            time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _provider(url: str, dialect: str | None) -> Any:
    return make_provider(ModelConfig(name="smollm2", provider="openai", base_url=url, timeout_s=60,
                                     structured_output=dialect))


def test_json_object_with_the_schema_gets_schema_following_json(server_url: str) -> None:
    reply = _provider(server_url, "json_object").complete(REQUEST)
    assert reply.stop_reason in ("stop", "length")
    if reply.stop_reason == "stop":
        data = json.loads(reply.text or "")
        assert set(data) == {"label", "summary"} and data["label"] in ("bug", "feature")
    assert reply.usage.input_tokens and reply.usage.output_tokens


def test_the_server_answers_500_to_json_schema(server_url: str) -> None:
    """The fact the dialect setting exists for: a 5xx (retryable), not a 4xx, so only its outage ends the run."""
    with pytest.raises(CallFailure, match="HTTP 500") as failed:
        _provider(server_url, None).complete(REQUEST)
    assert failed.value.status == 500 and "json_object" in str(failed.value)


def _evalkit(tmp_path: Path, url: str, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-m", "evalkit", "mode=live", "model=gpt-local", f"model.base_url={url}",
               "model.name=smollm2", CAP, "judge=smollm2", "baseline=none", f"run.recordings={tmp_path / 'rec'}",
               f"hydra.run.dir={tmp_path / 'job'}", *overrides]
    return subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=400,
                          check=False)


def test_a_live_run_in_the_json_object_dialect_records_real_replies(server_url: str, tmp_path: Path) -> None:
    done = _evalkit(tmp_path, server_url, "model.structured_output=json_object")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "decision: none" in done.stdout and "15 calls sent" in done.stdout, done.stdout
    recording = json.loads(next((tmp_path / "rec" / "issue_triage").glob("*.json")).read_text())
    assert recording["provenance"]["kind"] == "recorded"
    assert recording["provenance"]["producer"]["model"] == {"provider": "openai", "structured_output": "json_object"}
    assert recording["provenance"]["producer"]["judge"]["provider"] == "llamacpp"
    replies = [entry["reply"] for entry in recording["calls"].values()]
    assert len(replies) == 15 and all(reply and reply["stop_reason"] in ("stop", "length") for reply in replies)


def test_a_live_run_in_the_wrong_dialect_is_an_outage_not_a_verdict(server_url: str, tmp_path: Path) -> None:
    done = _evalkit(tmp_path, server_url, "run.retries=1", "run.backoff_s=0.01")
    assert done.returncode == 5, done.stdout + done.stderr
    # the outage in one line, after the run's note that the in-process judge's calls go one at a time
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("run.concurrency=8 lowered ")]
    assert len(lines) == 1 and lines[0].startswith("outage: task/") and "HTTP 500" in lines[0], done.stderr
    assert "decision" not in done.stdout and not (tmp_path / "job" / "decision.json").exists()
