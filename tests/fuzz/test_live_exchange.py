"""Fuzzing the live exchange: every provider's way in, from the reply's first byte to the Reply it makes.

Each provider gets a real reply of its protocol (tests/fakes/protocols.py, as its fake server sends it) with its
HTTP bytes mutated (cut, flipped, a span repeated, HTTP's own hostile pieces spliced in: interim replies, chunk sizes,
absurd lengths, redirects, encodings) or one value of its JSON body replaced by any JSON value. Whatever it gets, the
call must end in one of two ways: a Reply, or a CallFailure (the one line a live run prints as its outage). The calls
run in a child process (tests/fuzz/live_worker.py) under a memory limit, each within a time bound, so a crash, a
hang or a blowup fails the test instead of the machine. Profiles as the readers' harness (tests/fuzz/test_readers.py):
`quick` by default, `--hypothesis-profile=long` on demand.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import PROTOCOLS, FakeReply
from helpers.documents import paths, replace
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1024**3
"""Address space the child may use: every provider's client library and a 1 MiB reply fit far below it."""
CALL_TIMEOUT_S = 30.0
MAX_LINE = 1000  # evalkit's longest error line (evalkit.core.errors.MAX_MESSAGE_CHARS)
CONTENT = '{"label": "bug", "summary": "tracker sync crashes"}'
_CALL = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64,
         "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
_PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions", "azure": "/openai/deployments/d/chat/completions",
          "anthropic": "/v1/messages", "gemini": "/v1beta/models/m:generateContent",
          "bedrock": "/model/anthropic.claude-3-5-haiku-20241022-v1:0/converse"}


def _reply(body: bytes, *, chunked: bool = False, status: str = "200 OK") -> bytes:
    if chunked:
        framed = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 40]), body[i:i + 40]) for i in range(0, len(body), 40))
        return (b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%s0\r\n\r\n"
                % (status.encode(), framed))
    return b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        status.encode(), len(body), body)


def _document(provider: str) -> dict[str, Any]:
    return PROTOCOLS[provider].reply(_PATHS[provider], _CALL, FakeReply(CONTENT), 0)


SEEDS = {provider: _reply(json.dumps(_document(provider)).encode()) for provider in _PATHS}
HOSTILE_PIECES = [b"HTTP/1.1 100 Continue\r\n\r\n", b"Transfer-Encoding: chunked\r\n", b"Content-Length: 0\r\n",
                  b"Content-Length: 100000000000000000000000000000\r\n", b"Content-Length: 99999999\r\n",
                  b"ffffffffffffffff\r\n", b"-1\r\n", b"1_0\r\n", b"0\r\n\r\n", b"\r\n\r\n", b"\n", b"\x00",
                  b"Location: http://elsewhere.invalid/\r\n", b"HTTP/1.1 307 Temporary Redirect\r\n",
                  b"Content-Encoding: gzip\r\n", b"Content-Type: text/html\r\n", b"Connection: close\r\n",
                  b"HTTP/1.0 200 OK\r\n", b"HTTP/1.1 101 Switching Protocols\r\n\r\n", b"\xff\xfe", b"1e400",
                  b'"choices": null, ', b"<html>"]


class Child:
    """One worker process under the memory limit, reused for every call."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process = self._start()
        self.count = 0

    def _start(self) -> subprocess.Popen[str]:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

        drop = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        env = {**{k: v for k, v in os.environ.items() if k not in drop}, "PYTHONPATH": str(ROOT),
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("live_worker.py"))], cwd=self.folder,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                   preexec_fn=limit)
        assert self._answer(process, 120.0) == {"outcome": "ready"}
        return process

    @staticmethod
    def _answer(process: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if ready else ""
        return json.loads(line) if line else None

    def call(self, provider: str, data: bytes) -> dict[str, Any]:
        self.count += 1
        target = self.folder / f"reply-{self.count % 2}"
        target.write_bytes(data)
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"provider": provider, "path": str(target)}) + "\n")
        self.process.stdin.flush()
        answer = self._answer(self.process, CALL_TIMEOUT_S)
        if answer is None:  # hung past the bound, or died (out of memory): a fresh child for the next call
            self.process.kill()
            self.process.wait()
            code = self.process.returncode
            self.process = self._start()
            return {"outcome": "crash", "error": f"no answer within {CALL_TIMEOUT_S} s (exit {code})"}
        return answer

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def fuzz_settings(request: pytest.FixtureRequest) -> settings:
    chosen = request.config.getoption("hypothesis_profile", None)
    return settings.get_profile(chosen or "quick")


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Child]:
    worker = Child(tmp_path_factory.mktemp("live-fuzz"))
    yield worker
    worker.close()


def check(answer: dict[str, Any], provider: str, data: bytes) -> None:
    """A reply, or one failure line of evalkit's length: anything else is a finding."""
    assert answer["outcome"] in ("result", "refused"), (
        f"{provider} on {data[:300]!r}... ({len(data)} bytes): {answer.get('error')}\n{answer.get('traceback', '')}")
    if answer["outcome"] == "refused":
        line = answer["line"]
        assert "\n" not in line and len(line) <= MAX_LINE, line


@st.composite
def mutated(draw: st.DrawFn, provider: str) -> bytes:
    """The seed reply's bytes with a few edits: cut, flipped, a span repeated, or a hostile piece spliced in."""
    data = bytearray(SEEDS[provider] if draw(st.booleans()) else _reply(
        json.dumps(_document(provider)).encode(), chunked=True))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        kind = draw(st.sampled_from(["cut", "flip", "repeat", "splice", "splice"]))
        if kind == "cut":
            del data[at:]
        elif kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "repeat":
            span = bytes(data[at:at + draw(st.integers(1, 64))])
            data[at:at] = span * draw(st.integers(1, 50))
        else:
            data[at:at] = draw(st.sampled_from(HOSTILE_PIECES) | st.binary(min_size=1, max_size=16))
    return bytes(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40) | st.sampled_from(["", "\x00", "\x1b[2J", "9" * 5000]) | st.sampled_from([[], {}]),
    lambda inner: st.lists(inner, min_size=1, max_size=4)
    | st.dictionaries(st.text(max_size=10), inner, min_size=1, max_size=4),
    max_leaves=12)


@st.composite
def structured(draw: st.DrawFn, provider: str) -> bytes:
    """A well-framed reply whose JSON body has one value, anywhere, replaced by any JSON value; status 200, or an
    error status (whose body a client library reads for its message)."""
    document = _document(provider)
    changed = replace(document, draw(st.sampled_from(paths(document))), draw(json_values))
    body = json.dumps(changed, allow_nan=True).encode("utf-8", "surrogatepass")
    status = draw(st.sampled_from(["200 OK", "200 OK", "429 Too Many Requests", "500 Internal Server Error"]))
    return _reply(body, chunked=draw(st.booleans()), status=status)


@pytest.mark.parametrize("provider", sorted(SEEDS))
def test_mutated_replies_end_in_a_reply_or_one_line(child: Child, provider: str, fuzz_settings: settings) -> None:
    @fuzz_settings
    @given(data=mutated(provider))
    def run(data: bytes) -> None:
        check(child.call(provider, data), provider, data)

    run()


@pytest.mark.parametrize("provider", sorted(SEEDS))
def test_replies_of_the_wrong_shape_end_in_a_reply_or_one_line(child: Child, provider: str,
                                                               fuzz_settings: settings) -> None:
    @fuzz_settings
    @given(data=structured(provider))
    def run(data: bytes) -> None:
        check(child.call(provider, data), provider, data)

    run()


@pytest.mark.parametrize("provider", sorted(SEEDS))
def test_the_harness_reads_each_seed_as_a_reply_and_sees_a_crash(child: Child, provider: str) -> None:
    """The harness itself can fail: each seed is a reply, a cut one a failure, and a crash is reported."""
    assert child.call(provider, SEEDS[provider])["outcome"] == "result"
    assert child.call(provider, SEEDS[provider][:30])["outcome"] == "refused"
    with pytest.raises(AssertionError, match="KeyError"):
        check({"outcome": "crash", "error": "KeyError: 'x'"}, provider, b"")
