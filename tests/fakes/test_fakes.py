"""The fake servers themselves: the seeded fault plan, keep-alive, and the stand-alone process."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


try:
    from fakes import FakeGemini, FakeOllama, FakeOpenAI, Fault, Faults
except ImportError:  # tests/ imported as a package
    from tests.fakes import FakeGemini, FakeOllama, FakeOpenAI, Fault, Faults

CALL = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi there"}]})


def test_the_fault_plan_is_reproducible_and_seeded() -> None:
    plan = Faults(rate=0.3, seed=5)
    first = [plan.pick(n) for n in range(2000)]
    assert first == [Faults(rate=0.3, seed=5).pick(n) for n in range(2000)]
    assert first != [Faults(rate=0.3, seed=6).pick(n) for n in range(2000)]
    spoiled = [f for f in first if f is not None]
    assert 0.26 < len(spoiled) / len(first) < 0.34
    assert set(spoiled) == set(Fault)


def test_the_script_comes_first_then_the_rate() -> None:
    plan = Faults(script=(Fault.RATE_LIMIT, None, Fault.RESET))
    assert [plan.pick(n) for n in range(5)] == [Fault.RATE_LIMIT, None, Fault.RESET, None, None]
    assert Faults.always(Fault.TIMEOUT).pick(12345) is Fault.TIMEOUT


@pytest.mark.parametrize("bad", [{"rate": 1.5}, {"rate": -0.1}, {"rate": 0.5, "kinds": ()}])
def test_a_bad_plan_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Faults(**bad)  # type: ignore[arg-type]


def test_connections_are_kept_alive_and_calls_counted() -> None:
    plan = Faults(script=(None, Fault.SERVER_ERROR, Fault.RATE_LIMIT, None))
    with FakeOpenAI(lambda body: "ok", faults=plan) as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        statuses = []
        for _ in range(4):
            connection.request("POST", "/v1/chat/completions", body=CALL, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
            assert connection.sock is not None, "the server closed a keep-alive connection"
            assert response.getheader("Content-Length") is not None
        connection.close()
        assert statuses == [200, 500, 429, 200]
        assert server.calls == 4
        assert dict(server.injected) == {"500": 1, "429": 1}


def test_requests_that_are_not_calls_are_not_counted() -> None:
    with FakeOllama(lambda body: "ok") as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        connection.request("GET", "/")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"Ollama is running")
        connection.request("POST", "/api/generate", body="{}")
        response = connection.getresponse()
        response.read()
        assert response.status == 404
        assert server.calls == 0 and len(server.requests) == 2 and server.chat_requests == []


def test_gemini_calls_are_matched_by_model_path() -> None:
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    with FakeGemini(lambda body: "ok") as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        connection.request("POST", "/v1beta/models/gemini-x:generateContent", body=body)
        reply = json.loads(connection.getresponse().read())
        assert reply["candidates"][0]["content"]["parts"] == [{"text": "ok"}]
        assert reply["modelVersion"] == "gemini-x"
        assert reply["usageMetadata"] == {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}


def test_stop_releases_a_held_call_at_once() -> None:
    server = FakeOllama(lambda body: "ok", faults=Faults.always(Fault.TIMEOUT, hang_s=30)).start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("POST", "/api/chat", body=json.dumps({"model": "m", "stream": False, "messages": []}))
    time.sleep(0.1)
    started = time.perf_counter()
    server.stop()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        connection.getresponse()
    assert time.perf_counter() - started < 2


def _serve(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    port_file = tmp_path / "port"
    process = subprocess.Popen([sys.executable, "-m", "tests.fakes.serve", "--port-file", str(port_file), *args],
                               cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the server did not start: {process.communicate()}")
        time.sleep(0.02)
    return process, int(port_file.read_text())


def test_the_server_runs_as_its_own_process(tmp_path: Path) -> None:
    stats_file = tmp_path / "stats.json"
    process, port = _serve(tmp_path, "--protocol", "openai", "--fault-rate", "0.5", "--faults", "500,429",
                           "--seed", "3", "--latency-ms", "5", "--stats-file", str(stats_file))
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        statuses = []
        for _ in range(30):
            connection.request("POST", "/v1/chat/completions", body=CALL)
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
        connection.close()
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert out == "" and err == ""  # no per-request logging

    plan = Faults(rate=0.5, kinds=(Fault.SERVER_ERROR, Fault.RATE_LIMIT), seed=3)
    expected = [{None: 200, Fault.SERVER_ERROR: 500, Fault.RATE_LIMIT: 429}[plan.pick(n)] for n in range(30)]
    assert statuses == expected
    stats = json.loads(stats_file.read_text())
    assert stats["calls"] == 30
    assert stats["faults"] == {str(s): expected.count(s) for s in (429, 500) if s in expected}


def test_the_process_refuses_an_unknown_fault_kind(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "tests.fakes.serve", "--protocol", "ollama", "--faults", "boom"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=20)
    assert done.returncode == 2
    assert "--faults" in done.stderr and "valid: slow, 429" in done.stderr


def _first_bytes(url_port: int, wanted: int, within_s: float = 3.0) -> tuple[bytes, str]:
    """Send one request; the first `wanted` bytes of the answer (fewer at its end), and how it ended."""
    import socket

    with socket.create_connection(("127.0.0.1", url_port), timeout=within_s) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        got = b""
        try:
            while len(got) < wanted:
                chunk = sock.recv(min(65536, wanted - len(got)))
                if not chunk:
                    return got, "closed"
                got += chunk
        except ConnectionResetError:
            return got, "reset"
        except TimeoutError:
            return got, "waiting"
    return got, "more"


def test_the_hostile_server_misbehaves_as_it_says() -> None:
    """Each behaviour of tests/fakes/hostile.py, seen from a raw socket: the live fault tests pass only because the
    server did what it was made for."""
    try:
        from fakes.hostile import GIANT_BYTES, Hostile, HostileServer
    except ImportError:  # tests/ imported as a package
        from tests.fakes.hostile import GIANT_BYTES, Hostile, HostileServer

    with HostileServer(Hostile.DRIP_HEAD, interval_s=0.2) as server:
        started = time.perf_counter()
        got, ended = _first_bytes(server.port, 5)
        assert got == b"HTTP/" and time.perf_counter() - started >= 0.6
    with HostileServer(Hostile.INTERIM, interval_s=0.05) as server:
        got, _ = _first_bytes(server.port, 25 * 5)
        assert got == b"HTTP/1.1 100 Continue\r\n\r\n" * 5
    with HostileServer(Hostile.GIANT_LENGTH) as server:
        got, ended = _first_bytes(server.port, 8 * 2**20)
        assert f"Content-Length: {GIANT_BYTES}\r\n".encode() in got and ended == "more"
        assert server.sent_bytes >= 8 * 2**20
    with HostileServer(Hostile.ABSURD_LENGTH) as server:
        assert b"Content-Length: " + b"1" + b"0" * 30 + b"\r\n" in _first_bytes(server.port, 200)[0]
    with HostileServer(Hostile.GIANT_CHUNKED) as server:
        got, _ = _first_bytes(server.port, 300)
        assert b"Transfer-Encoding: chunked\r\n\r\n100000\r\nxxx" in got
    with HostileServer(Hostile.REDIRECT, redirect_to="http://localhost:1") as server:
        got, _ = _first_bytes(server.port, 85)
        assert got.startswith(b"HTTP/1.1 307 ") and b"Location: http://localhost:1/v1/chat/completions\r\n" in got
    with HostileServer(Hostile.RESET_MID_BODY) as server:
        got, ended = _first_bytes(server.port, 10_000)
        assert b"Content-Length: 1000\r\n" in got and ended == "reset"
    with HostileServer(Hostile.HTML) as server:
        assert b"Content-Type: text/html" in _first_bytes(server.port, 200)[0]
