"""evalkit.live.providers.jsonhttp: the keep-alive JSON transport under the Ollama provider, against loopback servers.

The provider's own behaviour (wire format, errors, timeouts) is under contract in test_provider_contract.py and
test_providers_ollama.py; these tests cover what the transport adds: base URLs read as Ollama reads them, one
connection per thread that survives the server closing it between calls, and proxies from the environment."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fakes import FakeOllama
from helpers.serving import serving

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError
from evalkit.live.providers import Message, Request
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.jsonhttp import JsonHttp, Target, parse_target
from evalkit.live.providers.ollama import OllamaProvider

CHAT = {"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": True, "done_reason": "stop",
        "prompt_eval_count": 3, "eval_count": 1}
REQUEST = Request(model="m", messages=(Message(role="user", content="say ok"),))


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("url", "expected"), [
    ("127.0.0.1", Target("http", "127.0.0.1", 11434, "")),
    ("example.com:56789/", Target("http", "example.com", 56789, "")),
    ("http://example.com", Target("http", "example.com", 80, "")),
    ("https://example.com", Target("https", "example.com", 443, "")),
    ("https://example.com:8443/ollama/", Target("https", "example.com", 8443, "/ollama")),
    ("[::1]:56789/path", Target("http", "::1", 56789, "/path")),
])
def test_base_urls_are_read_as_ollama_reads_them(url: str, expected: Target) -> None:
    assert parse_target(url, 11434) == expected


def test_a_base_url_that_is_not_http_is_refused_in_one_line() -> None:
    config = ModelConfig(name="m", provider="ollama", base_url="ftp://example.com")
    with pytest.raises(ConfigError, match=r"base_url 'ftp://example.com' is not an http\(s\) URL"):
        OllamaProvider(config)


class _ClosingServer:
    """Answers one request per connection with a keep-alive reply, then closes the connection anyway: what a
    server does to an idle keep-alive connection. Counts the connections it accepted."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stopping = False
        self.closed = threading.Semaphore(0)
        """Released each time a connection has been closed."""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            if self.stopping:
                connection.close()
                return
            self.connections += 1
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(body) < length:
                    body += connection.recv(65536)
                reply = json.dumps(CHAT).encode()
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                   + str(len(reply)).encode() + b"\r\n\r\n" + reply)
            self.closed.release()

    def close(self) -> None:
        self.stopping = True
        socket.create_connection(("127.0.0.1", self.port), timeout=5).close()  # wakes the accept() it waits in
        self.thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def closing_server() -> Iterator[_ClosingServer]:
    server = _ClosingServer()
    yield server
    server.close()


def test_a_connection_the_server_closed_between_calls_is_opened_again(closing_server: _ClosingServer) -> None:
    provider = OllamaProvider(ModelConfig(name="m", provider="ollama", base_url=f"http://127.0.0.1:{closing_server.port}"))
    replies = []
    for _ in range(3):
        replies.append(provider.complete(REQUEST).text)
        assert closing_server.closed.acquire(timeout=5)  # closed before the next call, not racing it
    assert replies == ["ok", "ok", "ok"]
    assert closing_server.connections == 3


def test_a_connection_is_kept_between_calls() -> None:
    with FakeOllama(lambda body: "ok") as server:
        http = JsonHttp(parse_target(server.url, 11434), timeout_s=5, max_reply_bytes=2**20, headers={})
        first = http._connection()
        assert http.post("/api/chat", {"model": "m", "messages": [], "stream": False}).status == 200
        assert http.post("/api/chat", {"model": "m", "messages": [], "stream": False}).status == 200
        assert http._connection() is first and first.sock is not None
        peer = first.sock.getsockname()
        assert http.post("/api/chat", {"model": "m", "messages": [], "stream": False}).status == 200
        assert first.sock.getsockname() == peer  # the same TCP connection, not a new one


class _Proxy(BaseHTTPRequestHandler):
    """A plain HTTP proxy that answers every request itself, keeping what it was sent. HTTP/1.0 (http.server's
    default): it closes each connection after its reply, so no handler thread outlives the test waiting on a
    client's keep-alive connection (a later test's check_json would step aside for it)."""

    seen: list[tuple[str, str | None]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append((self.path, self.headers.get("Proxy-Authorization")))
        reply = json.dumps(CHAT).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[str]:
    _Proxy.seen = []
    with serving(_Proxy) as address:
        yield address


def test_the_environment_s_proxy_is_used_with_its_credentials(proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", f"http://user:p%40ss@{proxy}")
    provider = OllamaProvider(ModelConfig(name="m", provider="ollama", base_url="http://ollama.invalid:11434/x"))
    assert provider.complete(REQUEST).text == "ok"
    assert _Proxy.seen == [("http://ollama.invalid:11434/x/api/chat", "Basic dXNlcjpwQHNz")]  # user:p@ss


def test_no_proxy_is_honoured(proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", f"http://{proxy}")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    with FakeOllama(lambda body: "direct") as server:
        reply = OllamaProvider(ModelConfig(name="m", provider="ollama", base_url=server.url)).complete(REQUEST)
    assert reply.text == "direct"
    assert _Proxy.seen == []


def test_a_redirect_is_not_followed_and_says_where_it_goes() -> None:
    class Moved(BaseHTTPRequestHandler):  # HTTP/1.0, closing after its reply, as _Proxy
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(308)
            self.send_header("Location", "http://elsewhere.invalid/api/chat")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Moved)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        provider = OllamaProvider(ModelConfig(name="m", provider="ollama",
                                              base_url=f"http://127.0.0.1:{server.server_address[1]}"))
        with pytest.raises(CallFailure, match="redirects to http://elsewhere.invalid/api/chat") as raised:
            provider.complete(REQUEST)
    finally:
        server.shutdown()
        server.server_close()
    assert (raised.value.status, raised.value.retryable) == (308, False)
