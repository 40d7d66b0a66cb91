"""evalkit's loopback endpoint for one case of a candidate program: an HTTP server on a Unix socket speaking the
OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs, handing each call to the run's `answer` under
the next call id. Images and audio in a call are kept in the case's media folder for a live call to send
(evalkit.programs.endpoint.media); `/evalkit/mcp/<name>` is the MCP proxy (evalkit.programs.endpoint.mcp_proxy).

Call ids are the case's task call ids in order of arrival (`task/<case>`, `task/<case>@1`, ...: evalkit.core.call_id),
so a replay serves the n-th call the n-th recorded reply, and a call that differs is stale. Concurrent calls within one
case would take their ids in whatever order the scheduler let them arrive, which a replay could not reproduce: the
endpoint refuses a call that arrives while another of the same case is in flight (HTTP 400, which no SDK retries).
Once a call of the case was not served (refused by the recording, denied by the budget, an outage), every later call
of the case is refused too: the program's trajectory has ended there, and the run says why (`unserved`).

The socket is the only way out of the sandbox (evalkit.programs.sandbox binds it in); the request bodies are a
program's, so they are read bounded, and anything unreadable is a 400 naming the field.
"""

from __future__ import annotations

import json
import os
import shutil
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from evalkit.core.call_id import CallId
from evalkit.programs.endpoint import anthropic_messages, mcp_proxy, openai_chat, openai_responses
from evalkit.programs.endpoint.mcp_proxy import McpBackend, McpProxy
from evalkit.programs.endpoint.media import MediaStore
from evalkit.programs.endpoint.wire import WireError
from evalkit.records.call import Reply, Request

__all__ = ["MAX_BODY_BYTES", "Answer", "Endpoint", "Unserved"]

MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body read; a longer conversation is refused unread."""
_READ_TIMEOUT_S = 60.0  # a connection that sends nothing this long is closed: the program holds no thread forever


@dataclass(frozen=True)
class Unserved:
    """Why the run did not serve a call: `refused` (the recording cannot serve it), `denied` (the budget) or
    `failed` (no reply after the retries: an outage)."""

    kind: str
    reason: str


Answer = Callable[[str, Request], Reply | Unserved]
"""The run's side: the reply to this call under this call id (replayed, or called live and recorded)."""


class Endpoint:
    """The endpoint of one case: start it, run the program, stop it; `calls` and `unserved` say what happened."""

    def __init__(self, socket_path: Path, case: str, model: str, answer: Answer, media: MediaStore | None = None,
                 mcp: McpBackend | None = None) -> None:
        self.socket_path, self.case, self.model, self.answer = socket_path, case, model, answer
        self.mcp = McpProxy(case, mcp) if mcp is not None else None
        """The case's MCP proxy (evalkit.programs.endpoint.mcp_proxy), when the suite routes MCP servers."""
        self.media = media or MediaStore(socket_path.with_name(socket_path.name + ".media"))
        """Where the images and audio of the case's calls are kept while it runs (removed when it stops)."""
        self.calls: list[str] = []
        """The call ids served a reply, in order."""
        self.unserved: Unserved | None = None
        """The first call not served, if any."""
        self.rejected: list[str] = []
        """Why each request that never became a call was turned away (unreadable, concurrent), in order."""
        self._lock = threading.RLock()  # _reject takes it again when called under it
        self._busy = False
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Endpoint:
        self._server = _Server(str(self.socket_path), _Handler)
        self._server.endpoint = self
        os.chmod(self.socket_path, 0o666)  # the sandbox's user (nobody) must be able to connect
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"evalkit-endpoint-{self.case}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self.socket_path.unlink(missing_ok=True)
        shutil.rmtree(self.media.folder, ignore_errors=True)

    def handle(self, path: str, body: bytes) -> tuple[int, Any]:
        """(HTTP status, JSON body, a list of SSE events, or None for no body) for one POST."""
        if path.startswith(mcp_proxy.PREFIX) and self.mcp is not None:
            answer = self.mcp.handle(path.removeprefix(mcp_proxy.PREFIX), body)
            with self._lock:
                if self.mcp.unserved is not None and self.unserved is None:  # the trajectory ends here
                    self.unserved = Unserved("refused", self.mcp.unserved)
            return (202, None) if answer is None else (200, answer)
        wire = _WIRES.get(path)
        if wire is None:
            return 404, openai_chat.error_body(f"evalkit's endpoint serves POST {', '.join(_WIRES)}, not "
                                               f"{path[:100]}", "not_found")
        try:
            data = json.loads(body)
            request = wire.read_request(data, self.model, self.media)
        except (ValueError, RecursionError) as error:  # WireError is a ValueError
            why = str(error) if isinstance(error, WireError) else "the body is not JSON"
            return self._reject(wire, f"unreadable call: {why}", "invalid_request_error")
        with self._lock:
            if self._busy:
                return self._reject(wire, "a call arrived while another call of this case was in flight: evalkit's "
                                          "endpoint numbers a case's calls in order of arrival, so concurrent calls "
                                          "within one case are refused (make them one after another)",
                                    "concurrent_call")
            if self.unserved is not None:
                return 400, wire.error_body(f"an earlier call of this case was not served: {self.unserved.reason}",
                                            f"evalkit_{self.unserved.kind}")
            self._busy = True
            call_id = str(CallId.task(self.case, step=len(self.calls)))
        try:
            outcome = self.answer(call_id, request)
        finally:
            with self._lock:
                self._busy = False
        if isinstance(outcome, Unserved):
            with self._lock:
                self.unserved = self.unserved or outcome
            if self.mcp is not None:
                self.mcp.refuse(outcome.reason)
            return 400, wire.error_body(outcome.reason, f"evalkit_{outcome.kind}")
        with self._lock:
            self.calls.append(call_id)
        if wire is not anthropic_messages and wire.streamed(data):  # Anthropic's reader refuses stream=True
            return 200, wire.reply_events(outcome, call_id, self.model, data)
        return 200, wire.reply_body(outcome, call_id, self.model)

    def _reject(self, wire: Any, reason: str, kind: str) -> tuple[int, Any]:
        with self._lock:
            self.rejected.append(reason)
        return 400, wire.error_body(reason, kind)


_WIRES: dict[str, Any] = {openai_chat.PATH: openai_chat, openai_responses.PATH: openai_responses,
                          anthropic_messages.PATH: anthropic_messages}


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    endpoint: Endpoint


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDKs reuse one connection for a whole agent loop
    timeout = _READ_TIMEOUT_S
    server: _Server

    def address_string(self) -> str:  # a Unix socket's peer has no address
        return "sandbox"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the endpoint's record is `calls`
        pass

    def do_GET(self) -> None:
        self._send(404, openai_chat.error_body("evalkit's endpoint serves POST calls only", "not_found"))

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            self._send(411, openai_chat.error_body("send the body with a Content-Length", "length_required"))
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            self._send(413, openai_chat.error_body(f"the body must be at most {MAX_BODY_BYTES} bytes",
                                                   "request_too_large"))
            return
        body = self.rfile.read(length)
        status, payload = self.server.endpoint.handle(self.path.split("?", 1)[0], body)
        if isinstance(payload, list):
            self._send_events(payload)
        elif payload is None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[bytes]) -> None:
        data = b"".join(events)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
