"""A fake Ollama server on the loopback interface, for tests of evalkit's live call path.

It speaks `POST /api/chat` the way the official `ollama` Python client (0.4+) calls it without
streaming: the client posts `ChatRequest(...).model_dump(exclude_none=True)` as JSON, i.e.
`{"model", "messages": [{"role", "content"}], "tools": [], "stream": false, "format": <schema>,
"options": {...}, "think": ...}`, and parses the body of a 200 reply as `ChatResponse(**json)`:
`{"model", "created_at", "message": {"role": "assistant", "content"}, "done": true,
"done_reason", "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
"eval_count", "eval_duration"}`. A non-2xx reply becomes `ollama.ResponseError(body text, status)`.

Every request (method, path, lower-cased headers, parsed body) is recorded so that tests can
assert on what the client sent. The reply content comes from a function the test supplies.

    with FakeOllama(lambda body: '{"ok": true}') as server:
        ...  # point a client at server.url
        assert server.requests[0].body["model"] == "gemma4:e2b"

The server binds 127.0.0.1 only, on a port the OS chooses.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOllama", "FakeReply", "FakeOllamaError", "RecordedRequest", "LOOPBACK"]

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class FakeReply:
    """A reply with more than its content: a stop reason or token counts of the test's choosing."""

    content: str
    done_reason: str = "stop"
    prompt_eval_count: int | None = None
    """None: count the words of the request's messages."""
    eval_count: int | None = None
    """None: count the words of the content."""


class FakeOllamaError(Exception):
    """Raise from a reply function to answer with an HTTP error, as Ollama does: `{"error": message}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body (None when there was none or it was not JSON)."""
    raw: bytes = field(repr=False, default=b"")


ReplyFunction = Callable[[dict[str, Any]], "str | FakeReply"]


def word_count(text: str | None) -> int:
    return len((text or "").split())


class FakeOllama:
    """A threaded HTTP server answering `/api/chat`; a context manager that starts and stops it."""

    created_at = "2026-01-01T00:00:00.000000Z"

    def __init__(self, reply: ReplyFunction) -> None:
        self.reply = reply
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeOllama:
        if self._httpd is not None:
            raise RuntimeError("FakeOllama is already running")
        handler = _handler_for(self)
        httpd = ThreadingHTTPServer((LOOPBACK, 0), handler)  # port 0: the OS picks a free port
        httpd.daemon_threads = True
        host = httpd.server_address[0]
        if host != LOOPBACK:  # never listen beyond the loopback interface
            httpd.server_close()
            raise RuntimeError(f"FakeOllama bound {host}, not {LOOPBACK}")
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-ollama-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests read -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOllama is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests to POST /api/chat, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path == "/api/chat"]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- the protocol --------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _chat(self, body: Any) -> tuple[int, dict[str, Any]]:
        """The status and JSON body Ollama would answer to one non-streaming chat request."""
        if not isinstance(body, dict):
            return 400, {"error": "invalid request body"}
        if not body.get("model"):
            return 400, {"error": "model is required"}
        if body.get("stream", True) is not False:
            # The client always sends `stream` explicitly; evalkit must never ask for a stream.
            return 400, {"error": "this fake server only answers non-streaming requests (stream: false)"}
        try:
            produced = self.reply(body)
        except FakeOllamaError as error:
            return error.status, {"error": error.message}
        reply = produced if isinstance(produced, FakeReply) else FakeReply(content=produced)
        messages = body.get("messages") or []
        prompt_tokens = reply.prompt_eval_count
        if prompt_tokens is None:
            prompt_tokens = sum(word_count(m.get("content")) for m in messages if isinstance(m, dict))
        output_tokens = reply.eval_count if reply.eval_count is not None else word_count(reply.content)
        return 200, {
            "model": body["model"],
            "created_at": self.created_at,
            "message": {"role": "assistant", "content": reply.content},
            "done": True,
            "done_reason": reply.done_reason,
            "total_duration": 1_500_000,
            "load_duration": 100_000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 400_000,
            "eval_count": output_tokens,
            "eval_duration": 1_000_000,
        }


def _handler_for(server: FakeOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "FakeOllama/0"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`
            pass

        def _send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (e.g. its timeout): nobody to answer

        def _read(self) -> tuple[bytes, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            try:
                body = json.loads(raw) if raw else None
            except (json.JSONDecodeError, UnicodeDecodeError):
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            server._record(RecordedRequest(self.command, self.path, headers, body, raw))
            return raw, body

        def do_GET(self) -> None:
            self._read()
            if self.path == "/":
                data = b"Ollama is running"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif self.path == "/api/version":
                self._send_json(200, {"version": "0.0.0-fake"})
            else:
                self._send_json(404, {"error": f"{self.path} not found"})

        def do_POST(self) -> None:
            _, body = self._read()
            if self.path != "/api/chat":
                self._send_json(404, {"error": f"{self.path} not found"})
                return
            try:
                status, payload = server._chat(body)
            except Exception as error:  # a bug in the test's reply function: answer, don't hang
                status, payload = 500, {"error": f"fake server: {type(error).__name__}: {error}"}
            self._send_json(status, payload)

    return Handler
