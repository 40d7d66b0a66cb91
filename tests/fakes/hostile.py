"""A loopback server that misbehaves on the wire, for the live fault-injection tests (tests/live/test_live_faults.py).

    with HostileServer(Hostile.DRIP_BODY, interval_s=0.5) as server:
        ...  # point any provider at server.url (plus its protocol's base path)

It reads each request whole (its head and its Content-Length body), whatever its path, and then answers in the
one way it was made for: a reply dripped a byte at a time, `100 Continue` without end, a body of gigabytes (chunked
or with its length), a Content-Length no memory could hold, a redirect to another server, a connection reset in
the middle of the body, or an HTML page with status 200. It speaks raw bytes on a socket (http.server would frame
them for it), binds 127.0.0.1 only, and stops every answer it is sending when it stops.
"""

from __future__ import annotations

import enum
import socket
import socketserver
import struct
import threading
from typing import Any

__all__ = ["Hostile", "HostileServer", "GIANT_BYTES", "ABSURD_LENGTH"]

LOOPBACK = "127.0.0.1"
GIANT_BYTES = 3 * 2**29
"""1.5 GiB: what the probe of issue 35 sent, 4 to 9 GB of a client's memory before evalkit refused it."""
ABSURD_LENGTH = str(10**30)
"""A Content-Length no machine holds: `recv(10**30)` is an OverflowError, a few GB a MemoryError."""
_BLOCK = b"x" * 2**20
_WRONG_SHAPE = (b'{"choices": [1, "x"], "content": 7, "stop_reason": [], "usage": "many", "candidates": 1, '
                b'"message": 1, "output": {"message": 1}, "done": "yes", "error": null}')
_HTML = (b"<!doctype html><html><head><title>Sign in</title></head>"
         b"<body><h1>Sign in to continue</h1><form action=/login></form></body></html>")


class Hostile(enum.StrEnum):
    """One way a server can misbehave after it has read the request."""

    DRIP_HEAD = "drip-head"
    """The status line and headers, one byte every `interval_s`: each read gets a byte, none waits long."""
    DRIP_BODY = "drip-body"
    """A 200 head with a Content-Length, then the body one byte every `interval_s`."""
    INTERIM = "interim"
    """`HTTP/1.1 100 Continue` every `interval_s`, and never a final reply."""
    GIANT_CHUNKED = "giant-chunked"
    """200 with `Transfer-Encoding: chunked`, then GIANT_BYTES of body in 1 MiB chunks."""
    GIANT_LENGTH = "giant-length"
    """200 with `Content-Length: GIANT_BYTES`, then those bytes."""
    ABSURD_LENGTH = "absurd-length"
    """200 with `Content-Length: 10**30`, then bytes for as long as the client reads."""
    REDIRECT = "redirect"
    """307 to the same path on another server (`redirect_to`): another host name and port."""
    RESET_MID_BODY = "reset-mid-body"
    """A 200 head with a Content-Length of 1000, 100 bytes of body, then a TCP reset."""
    HTML = "html"
    """200 with `Content-Type: text/html` and a sign-in page: a captive portal or a proxy's login."""
    WRONG_SHAPE = "wrong-shape"
    """200 with `Content-Type: application/json` and JSON that names every protocol's fields with the wrong types."""


class HostileServer:
    """A threaded TCP server answering every request with one hostile behaviour; a context manager."""

    def __init__(self, behaviour: Hostile, *, interval_s: float = 0.5, redirect_to: str | None = None,
                 giant_bytes: int = GIANT_BYTES, give_up_s: float = 120.0) -> None:
        """`redirect_to`: the origin a redirect points at (`http://localhost:PORT`); `give_up_s`: the longest the
        server drips or streams one answer (a client that never gives up cannot hold a test for ever)."""
        if behaviour is Hostile.REDIRECT and redirect_to is None:
            raise ValueError("a redirect needs redirect_to, the other server's origin")
        self.behaviour = behaviour
        self.interval_s = interval_s
        self.redirect_to = redirect_to
        self.giant_bytes = giant_bytes
        self.give_up_s = give_up_s
        self.requests: list[tuple[str, str]] = []
        """(method, path) of each request read."""
        self.sent_bytes = 0
        """Bytes of answers written so far (all connections)."""
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _TCPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the hostile server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> HostileServer:
        server = _TCPServer((LOOPBACK, 0), _handler_for(self))
        self._stopping.clear()
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"hostile-{self.behaviour}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening, end every answer being sent and wait for the threads that sent them (none outlives the
        test: a later one may check that it runs alone)."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        with self._lock:
            open_connections = list(self._connections)
        for connection in open_connections:  # wakes a read waiting for a kept connection's next request
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()  # joins the handler threads (block_on_close)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- answering -----------------------------------------------------------------------------

    def _answer(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)
        try:
            self._converse(connection)
        finally:
            with self._lock:
                self._connections.discard(connection)

    def _converse(self, connection: socket.socket) -> None:
        reader = connection.makefile("rb")
        while not self._stopping.is_set():
            request = _read_request(reader)
            if request is None:
                return
            with self._lock:
                self.requests.append(request)
            if not self._behave(connection, request[1]):
                if self.behaviour is Hostile.RESET_MID_BODY:  # SO_LINGER 0: closing sends a reset, not an end
                    reader.close()  # the other holder of the socket: close() below then really closes it
                    connection.close()
                return

    def _send(self, connection: socket.socket, data: bytes) -> bool:
        """Write `data`; False once the client is gone."""
        try:
            connection.sendall(data)
        except OSError:
            return False
        with self._lock:
            self.sent_bytes += len(data)
        return True

    def _drip(self, connection: socket.socket, data: bytes) -> bool:
        """`data` one byte per interval, for at most give_up_s; False once the client is gone or time is up."""
        waited = 0.0
        for byte in data:
            if not self._send(connection, bytes([byte])) or self._stopping.wait(self.interval_s):
                return False
            waited += self.interval_s
            if waited > self.give_up_s:
                return False
        return True

    def _stream(self, connection: socket.socket, framed: bool) -> None:
        """giant_bytes of body in 1 MiB pieces (chunks when `framed`), while the client reads."""
        left = self.giant_bytes
        while left > 0 and not self._stopping.is_set():
            block = _BLOCK[:left]
            data = b"%x\r\n%s\r\n" % (len(block), block) if framed else block
            if not self._send(connection, data):
                return
            left -= len(block)
        if framed:
            self._send(connection, b"0\r\n\r\n")

    def _behave(self, connection: socket.socket, path: str) -> bool:
        """Answer one request; True when the connection may carry another."""
        body = b'{"ok": true}'
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        match self.behaviour:
            case Hostile.DRIP_HEAD:
                return self._drip(connection, head + body)
            case Hostile.DRIP_BODY:
                body = b'{"ok": true, "padding": "%s"}' % (b"." * 1000)
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                return self._send(connection, head) and self._drip(connection, body)
            case Hostile.INTERIM:
                interim = b"HTTP/1.1 100 Continue\r\n\r\n"
                waited = 0.0
                while waited < self.give_up_s and self._send(connection, interim):
                    if self._stopping.wait(self.interval_s):
                        break
                    waited += self.interval_s
                return False
            case Hostile.GIANT_CHUNKED:
                if self._send(connection, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                          b"Transfer-Encoding: chunked\r\n\r\n"):
                    self._stream(connection, framed=True)
                return False
            case Hostile.GIANT_LENGTH | Hostile.ABSURD_LENGTH:
                length = str(self.giant_bytes) if self.behaviour is Hostile.GIANT_LENGTH else ABSURD_LENGTH
                if self._send(connection, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                          b"Content-Length: %s\r\n\r\n" % length.encode()):
                    self._stream(connection, framed=False)
                return False
            case Hostile.REDIRECT:
                location = f"{self.redirect_to}{path}".encode("latin-1")
                return self._send(connection, b"HTTP/1.1 307 Temporary Redirect\r\nLocation: %s\r\n"
                                              b"Content-Length: 0\r\n\r\n" % location)
            case Hostile.RESET_MID_BODY:
                self._send(connection, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                       b"Content-Length: 1000\r\n\r\n" + b'{"choices": [' + b" " * 87)
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return False
            case Hostile.HTML:
                return self._send(connection, b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                                              b"Content-Length: %d\r\n\r\n%s" % (len(_HTML), _HTML))
            case Hostile.WRONG_SHAPE:
                return self._send(connection, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                              b"Content-Length: %d\r\n\r\n%s" % (len(_WRONG_SHAPE), _WRONG_SHAPE))
        raise AssertionError(self.behaviour)


def _read_request(reader: Any) -> tuple[str, str] | None:
    """Read one request (head and Content-Length body); its method and path, or None at the connection's end."""
    line = reader.readline(65537)
    if not line:
        return None
    method, _, rest = line.decode("latin-1").partition(" ")
    path = rest.rsplit(" ", 1)[0]
    length = 0
    while (header := reader.readline(65537)) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length:
        reader.read(length)
    return method, path


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = False
    block_on_close = True  # server_close() waits for every handler thread
    allow_reuse_address = True


def _handler_for(server: HostileServer) -> type[socketserver.BaseRequestHandler]:
    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            try:
                server._answer(self.request)
            except OSError:
                pass

    return Handler
