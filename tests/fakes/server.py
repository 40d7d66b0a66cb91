"""A loopback HTTP server that answers like a model server, for tests of evalkit's live call path.

    with FakeOpenAI(lambda body: '{"ok": true}', faults=Faults(rate=0.2, seed=1)) as server:
        ...  # point a client at server.base_url
        assert server.chat_requests[0].body["model"] == "qwen3:8b"

The server binds 127.0.0.1 only, on a port the OS chooses. It speaks HTTP/1.1 with keep-alive,
answers each request with one write, sets Content-Length always and logs nothing, so that its
own overhead stays small under a benchmark's load. Every request (method, path, lower-cased
headers, parsed body) is recorded unless `record=False`; the reply content comes from a
function of the parsed body. Faults (429, 500, timeouts, resets, malformed bodies, slow replies)
are injected by a seeded plan (see faults.py).
"""

from __future__ import annotations

import collections
import json
import socket
import socketserver
import ssl
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .faults import Fault, Faults
from .protocols import PROTOCOLS, FakeReply, Protocol

__all__ = ["FakeServer", "FakeOllama", "FakeOpenAI", "FakeGemini", "FakeAzureOpenAI", "FakeAnthropic", "FakeBedrock",
           "FakeError", "RawReply", "RecordedRequest",
           "ReplyFunction", "LOOPBACK"]

LOOPBACK = "127.0.0.1"
MALFORMED_BODY = b'{"id": "cut-off-reply", "choices": [{"message": {"content": "{\\"label'


class FakeError(Exception):
    """Raise from a reply function to answer with an HTTP error in the protocol's error format."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


@dataclass(frozen=True)
class RawReply:
    """Return from a reply function to answer with exactly these bytes (any status, any content type)."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body (None when there was none or it was not JSON)."""
    raw: bytes = field(repr=False, default=b"")


ReplyFunction = Callable[[dict[str, Any]], "str | FakeReply | RawReply"]


class FakeServer:
    """A threaded HTTP server speaking one protocol; a context manager that starts and stops it."""

    def __init__(self, protocol: Protocol | str, reply: ReplyFunction, *, faults: Faults | None = None,
                 latency_ms: float = 0.0, record: bool = True, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: a server-side context to speak HTTPS with (the base URL's scheme is then https)."""
        self.protocol = PROTOCOLS[protocol] if isinstance(protocol, str) else protocol
        self.tls = tls
        self.reply = reply
        self.faults = faults or Faults()
        self.latency_ms = latency_ms
        """Added to every call, as model time."""
        self.record = record
        self.requests: list[RecordedRequest] = []
        self.injected: collections.Counter[str] = collections.Counter()
        """How many calls got each fault."""
        self._lock = threading.Lock()
        self._calls = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeServer:
        if self._httpd is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        httpd = _Server((LOOPBACK, 0), _handler_for(self))  # port 0: the OS picks a free port
        host = httpd.server_address[0]
        if host != LOOPBACK:  # never listen beyond the loopback interface
            httpd.server_close()
            raise RuntimeError(f"{type(self).__name__} bound {host!r}, not {LOOPBACK}")
        if self.tls is not None:  # each accepted connection's handshake runs in the server's thread
            httpd.socket = self.tls.wrap_socket(httpd.socket, server_side=True)
        self._stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-{self.protocol.name}-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening, wake calls held by a timeout fault and close open keep-alive connections."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            open_connections = list(self._connections)
        for connection in open_connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests read -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The server's root, e.g. http://127.0.0.1:PORT (https:// with `tls`)."""
        return f"{'https' if self.tls is not None else 'http'}://{LOOPBACK}:{self.port}"

    @property
    def base_url(self) -> str:
        """What a client of this protocol takes as its base URL (OpenAI's ends in /v1)."""
        return self.url + self.protocol.base_path

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The calls (requests to the protocol's call endpoint), in arrival order."""
        with self._lock:
            return [r for r in self.requests if self.protocol.is_call(r.method, r.path)]

    @property
    def calls(self) -> int:
        """How many calls arrived so far (recorded or not)."""
        with self._lock:
            return self._calls

    def clear(self) -> None:
        """Forget the recorded requests and fault counts (call numbers, and so the fault plan, go on)."""
        with self._lock:
            self.requests.clear()
            self.injected.clear()

    # -- answering -----------------------------------------------------------------------------

    def _answer(self, handler: _Handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        method, path = handler.command, handler.path
        if self.record:
            headers = {k.lower(): v for k, v in handler.headers.items()}
            with self._lock:
                self.requests.append(RecordedRequest(method, path, headers, body, raw))
        if not self.protocol.is_call(method, path):
            other = self.protocol.other(method, path)
            if other is None:
                handler.send(404, self.protocol.error(404, f"{method} {path} not found"))
            else:
                handler.send(*other)
            return

        with self._lock:
            n = self._calls
            self._calls += 1
        fault = self.faults.pick(n)
        if fault is not None:
            with self._lock:
                self.injected[fault.value] += 1
        delay_s = self.latency_ms / 1000 + (self.faults.slow_ms / 1000 if fault is Fault.SLOW else 0.0)
        if delay_s > 0 and self._stopping.wait(delay_s):
            handler.drop()
            return
        if fault is Fault.TIMEOUT:
            self._stopping.wait(self.faults.hang_s)
            handler.drop()
        elif fault is Fault.RESET:
            handler.reset()
        elif fault is Fault.MALFORMED:
            handler.send_bytes(200, MALFORMED_BODY, "application/json")
        elif fault is Fault.RATE_LIMIT:
            retry_after = self.faults.retry_after_header
            handler.send(429, self.protocol.error(429, "rate limit exceeded (injected fault)"),
                         {"Retry-After": retry_after} if retry_after is not None else {})
        elif fault is Fault.SERVER_ERROR:
            handler.send(500, self.protocol.error(500, "internal error (injected fault)"))
        else:
            self._reply(handler, path, body, n)

    def _reply(self, handler: _Handler, path: str, body: Any, n: int) -> None:
        refusal = self.protocol.refuse(path, body)
        if refusal is not None:
            handler.send(400, self.protocol.error(400, refusal))
            return
        try:
            produced = self.reply(body)
        except FakeError as error:
            handler.send(error.status, self.protocol.error(error.status, error.message), error.headers)
            return
        except Exception as error:  # a bug in the test's reply function: answer, don't hang
            handler.send(500, self.protocol.error(500, f"fake server: {type(error).__name__}: {error}"))
            return
        if isinstance(produced, RawReply):
            handler.send_bytes(produced.status, produced.body, produced.content_type, produced.headers)
            return
        reply = produced if isinstance(produced, FakeReply) else FakeReply(content=produced)
        handler.send(200, self.protocol.reply(path, body, reply, n))


class FakeOllama(FakeServer):
    """Ollama's POST /api/chat (and GET / and /api/version)."""

    def __init__(self, reply: ReplyFunction, **settings: Any) -> None:
        super().__init__("ollama", reply, **settings)


class FakeOpenAI(FakeServer):
    """OpenAI's POST /v1/chat/completions; clients take `base_url` (ending in /v1)."""

    def __init__(self, reply: ReplyFunction, **settings: Any) -> None:
        super().__init__("openai", reply, **settings)


class FakeGemini(FakeServer):
    """Gemini's POST /{version}/models/{model}:generateContent."""

    def __init__(self, reply: ReplyFunction, **settings: Any) -> None:
        super().__init__("gemini", reply, **settings)


class FakeAzureOpenAI(FakeServer):
    """Azure OpenAI's POST /openai/deployments/{deployment}/chat/completions?api-version=...; clients take `url`."""

    def __init__(self, reply: ReplyFunction, **settings: Any) -> None:
        super().__init__("azure", reply, **settings)


class FakeAnthropic(FakeServer):
    """Anthropic's POST /v1/messages; clients take `url` as their base URL."""

    def __init__(self, reply: ReplyFunction, **settings: Any) -> None:
        super().__init__("anthropic", reply, **settings)


class FakeBedrock(FakeServer):
    """Bedrock's POST /model/{modelId}/converse; boto3 takes `url` as its `endpoint_url`."""

    def __init__(self, reply: ReplyFunction, **settings: Any) -> None:
        super().__init__("bedrock", reply, **settings)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # a benchmark opens dozens of connections at once
    allow_reuse_address = True

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # skip HTTPServer's reverse DNS lookup of the host
        self.server_name, self.server_port = LOOPBACK, int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server_version = "FakeModelServer/1"
    disable_nagle_algorithm = True
    fake: FakeServer

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
        pass

    def do_GET(self) -> None:
        self.fake._answer(self)

    def do_POST(self) -> None:
        self.fake._answer(self)

    def send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        if isinstance(payload, str):
            self.send_bytes(status, payload.encode("utf-8"), "text/plain; charset=utf-8", headers)
        else:
            self.send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def send_bytes(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        """The whole reply in one write: status line, headers, body."""
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        lines = [f"HTTP/1.1 {status} {phrase}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if self.close_connection:
            lines.append("Connection: close")
        try:
            self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        except OSError:  # the client gave up (e.g. its timeout): nobody to answer
            self.close_connection = True

    def drop(self) -> None:
        """Close the connection without a reply (after a timeout fault, or when the server stops)."""
        self.close_connection = True

    def reset(self) -> None:
        """Close the connection with a TCP reset (RST), without a reply."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # the only other holder of the socket: close() below then really closes it
        self.connection.close()


def _handler_for(server: FakeServer) -> type[_Handler]:
    return type("Handler", (_Handler,), {"fake": server})
