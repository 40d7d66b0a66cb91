"""The candidate program's way out: evalkit's endpoint and nothing else. A program that tries to reach the real
provider's host (a loopback server outside the sandbox stands in for it) or to read the real key gets neither."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.server import FakeOpenAI

from evalkit.programs.endpoint import Endpoint
from evalkit.programs.sandbox import run_program
from evalkit.records.call import Reply, Request

REAL_KEY = "sk-real-provider-key-0123456789abcdef"
PROGRAM = """
import json, os, urllib.request
out = {"env": dict(os.environ)}
def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json",
                                                                      "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.loads(answer.read())
call = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
reply = post(os.environ["OPENAI_BASE_URL"] + "/chat/completions", call)
out["endpoint"] = reply["choices"][0]["message"]["content"]
try:
    post(REAL_PROVIDER + "/chat/completions", call)
    out["real"] = "reached"
except OSError as error:
    out["real"] = type(error).__name__
leaks = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            leaks.append(open(f"/proc/{pid}/environ", "rb").read().decode("utf-8", "replace"))
        except OSError:
            pass
out["proc_environ"] = leaks
json.dump(out, open("response.json", "w"))
"""


@pytest.fixture
def socket_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="evalkit-endpoint-test-") as folder:
        os.chmod(folder, 0o755)  # the sandbox's user must reach the socket
        yield Path(folder)


def test_the_program_reaches_the_endpoint_and_neither_the_real_host_nor_the_real_key(
        tmp_path: Path, socket_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)  # evalkit's own environment holds the real key
    asked: list[Request] = []
    with FakeOpenAI(lambda body: "the real provider answered") as real:
        program = tmp_path / "agent.py"
        program.write_text(f"REAL_PROVIDER = {real.base_url!r}\n{PROGRAM}", encoding="utf-8")

        def answer(call_id: str, request: Request) -> Reply:
            asked.append(request)
            return Reply(text=f"endpoint {call_id}")

        with Endpoint(socket_folder / "e.sock", "c1", "m", answer) as endpoint:
            run = run_program(program, [], b"{}", {}, [], timeout_s=30, max_response_bytes=1 << 20,
                              endpoint=socket_folder / "e.sock")
        assert run.status == "finished", run.reason
        assert run.response is not None
        assert run.response["endpoint"] == "endpoint task/c1"
        assert run.response["real"] != "reached" and real.calls == 0
    env = run.response["env"]
    assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:") and env["ANTHROPIC_BASE_URL"]
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == "evalkit-endpoint-dummy-key"
    assert REAL_KEY not in json.dumps(run.response)
    assert endpoint.calls == ["task/c1"] and len(asked) == 1
