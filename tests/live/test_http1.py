"""evalkit.live.providers.http1: one HTTP/1.1 exchange, read as http.client reads it.

The replies are scripted byte for byte (an authored socket that hands them out in the pieces a test chooses), so
each framing rule is met exactly: chunked bodies with extensions and trailers, interim 1xx replies, bodies that run
to the connection's end, LF-only lines, and every malformed reply http.client refuses, refused with its exception.
The same transport against real servers (http.server, the fake model servers, a proxy) is in test_jsonhttp.py."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.http1 import Answer, DeadlinePassed, Exchange, ReplyTooLarge, request_head
from evalkit.live.providers.jsonhttp import JsonHttp, parse_target
from evalkit.live.providers.ollama import OllamaProvider
from evalkit.records.call import Message, Request

REQUEST = Request(model="m", messages=(Message(role="user", content="say ok"),))


class Scripted:
    """A socket whose peer has sent `pieces`, each arriving as its own read; then the connection's end."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)
        self.sent = b""

    def recv(self, size: int) -> bytes:
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        if len(piece) > size:
            piece, rest = piece[:size], piece[size:]
            self.pieces.insert(0, rest)
        return piece

    sends = 0
    send_limit: int | None = None
    """The most one send takes (None: all it is given), as a socket whose peer reads slowly takes part of it."""

    def send(self, data: bytes) -> int:
        taken = bytes(data[:self.send_limit] if self.send_limit is not None else data)
        self.sent += taken
        self.sends += 1
        return len(taken)

    def settimeout(self, seconds: float) -> None:
        assert 0 < seconds <= DEADLINE_S, "a read waits for what is left of the deadline, no more"


DEADLINE_S = 60.0
CAP = 32 * 2**20


def read(*pieces: bytes) -> Answer:
    return Exchange(Scripted(*pieces), CAP).reply(time.monotonic() + DEADLINE_S)


def test_a_reply_framed_by_its_length_keeps_the_connection() -> None:
    reply = read(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\": true}")
    assert (reply.status, reply.body, reply.keep_alive) == (200, b'{"a": true}', True)


def test_a_reply_in_pieces_of_one_byte_reads_the_same() -> None:
    whole = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nslow"
    reply = read(*(whole[i:i + 1] for i in range(len(whole))))
    assert (reply.status, reply.body, reply.retry_after, reply.location) == (429, b"slow", "3", None)


def test_a_chunked_body_is_joined_with_extensions_and_trailers_skipped() -> None:
    reply = read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                 b"4;ext=1\r\n{\"ok\r\n", b"3\r\n\": \r\n", b"5\r\ntrue}\r\n0\r\nX-Trailer: t\r\n\r\n")
    assert (reply.body, reply.keep_alive) == (b'{"ok": true}', True)


def test_interim_replies_are_skipped_for_the_final_one() -> None:
    reply = read(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
                 b"HTTP/1.1 308 Permanent Redirect\r\nLocation: http://elsewhere.invalid/\r\nContent-Length: 0\r\n\r\n")
    assert (reply.status, reply.location, reply.body) == (308, "http://elsewhere.invalid/", b"")


def test_a_body_without_length_runs_to_the_connection_s_end_and_the_connection_goes() -> None:
    reply = read(b"HTTP/1.0 200 OK\nContent-Type: application/json\n\n{\"a\"", b": 1}")
    assert (reply.status, reply.body, reply.keep_alive) == (200, b'{"a": 1}', False)


@pytest.mark.parametrize(("head", "kept"), [
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\n", False),
    (b"HTTP/1.0 200 OK\r\n", False),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n", True),
])
def test_the_connection_is_kept_only_where_the_reply_allows_it(head: bytes, kept: bool) -> None:
    assert read(head + b"Content-Length: 2\r\n\r\nok").keep_alive is kept


def test_bytes_after_the_reply_end_the_connection() -> None:
    assert read(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokJUNK").keep_alive is False


@pytest.mark.parametrize(("pieces", "error", "match"), [
    ((), http.client.RemoteDisconnected, "closed connection without response"),
    ((b"HTTP/1.1 200 OK\r\nContent-Le",), http.client.IncompleteRead, None),
    ((b"ICY 200 OK\r\n\r\n",), http.client.BadStatusLine, "ICY 200 OK"),
    ((b"HTTP/1.1 2x0 OK\r\n\r\n",), http.client.BadStatusLine, None),
    (("HTTP/1.1 2\u00b2\u00b3 OK\r\n\r\n".encode("latin-1"),), http.client.BadStatusLine, None),  # digits, not ASCII
    ((b"HTTP/1.1 102 Processing\r\n\r\n" * 101,), http.client.HTTPException, "more than 100 interim"),
    ((b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",), http.client.IncompleteRead, "5 bytes read, 5 more"),
    ((b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",), http.client.HTTPException,
     "2 different Content-Length"),
    ((b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",), http.client.HTTPException, "not a number"),
    (("HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\n".encode("latin-1"),), http.client.HTTPException,
     "not a number"),
    ((b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n",), http.client.HTTPException, "more than 100 headers"),
    ((b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000,), http.client.LineTooLong, None),
    ((b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",), http.client.IncompleteRead, None),
    ((b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",), http.client.IncompleteRead, None),
])
def test_a_malformed_reply_is_refused_as_http_client_refuses_it(
        pieces: tuple[bytes, ...], error: type[Exception], match: str | None) -> None:
    with pytest.raises(error, match=match):
        read(*pieces)


def test_a_request_is_one_send_with_its_length() -> None:
    sock = Scripted()
    Exchange(sock, CAP).send(request_head("POST", "/api/chat", {"Host": "h:1"}), b'{"a": 1}',
                             time.monotonic() + DEADLINE_S)
    assert sock.sent == b'POST /api/chat HTTP/1.1\r\nHost: h:1\r\nContent-Length: 8\r\n\r\n{"a": 1}'
    assert sock.sends == 1


def test_a_request_sent_in_parts_gives_each_send_only_what_is_left_of_the_deadline() -> None:
    """A peer that reads slowly takes a request a few bytes per send; each send waits for what is left of the
    deadline (sendall on a TLS socket gave each partial send the whole timeout), and a passed one ends the call."""
    sock = Scripted()
    sock.send_limit = 7
    timeouts: list[float] = []
    sock.settimeout = timeouts.append  # type: ignore[method-assign]
    Exchange(sock, CAP).send(request_head("POST", "/", {}), b"x" * 40, time.monotonic() + DEADLINE_S)
    assert sock.sent.endswith(b"\r\n\r\n" + b"x" * 40) and sock.sends == len(timeouts) > 5
    assert timeouts == sorted(timeouts, reverse=True) and timeouts[0] <= DEADLINE_S  # the time left, falling
    with pytest.raises(DeadlinePassed):
        Exchange(Scripted(), CAP).send(request_head("POST", "/", {}), b"x", time.monotonic() - 1)


@pytest.mark.parametrize(("url", "headers", "match"), [
    ("/api/chat HTTP/1.1\r\nX: y", {}, "no whitespace or control"),
    ("/a b", {}, "no whitespace or control"),
    ("/api", {"Authorization": "Bearer k\r\nX-Injected: 1"}, "Authorization header holds a line break"),
    ("/api", {"Bad Name": "v"}, "not an HTTP header name"),
])
def test_a_request_that_could_be_split_is_refused(url: str, headers: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        request_head("POST", url, headers)


def test_a_key_with_a_line_break_is_refused_before_any_call_without_showing_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_TEST_OLLAMA_KEY", "secret-value\r\nX-Injected: 1")
    config = ModelConfig(name="m", provider="ollama", base_url="http://127.0.0.1:1",
                         api_key_env="EVALKIT_TEST_OLLAMA_KEY")
    with pytest.raises(ConfigError, match="Authorization header holds a line break") as raised:
        OllamaProvider(config)
    assert "secret-value" not in str(raised.value)


class Loopback:
    """A loopback server answering every request on a connection with `reply`, keeping the connection; `wrap` makes
    each accepted socket the one to talk over (TLS: a refused handshake closes it). Counts the connections. A
    context manager: on the way out every thread it started has ended (a later test's strict JSON check steps
    aside while other threads run)."""

    def __init__(self, reply: bytes, wrap: Callable[[socket.socket], socket.socket] = lambda sock: sock) -> None:
        self.reply, self.wrap = reply, wrap
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.connections = 0
        self.stopping = False
        self.threads = [threading.Thread(target=self._accept, daemon=True)]

    def __enter__(self) -> Loopback:
        self.threads[0].start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping = True
        socket.create_connection(("127.0.0.1", self.port), timeout=5).close()  # wakes the accept() it waits in
        for connection in self.accepted:  # wakes each recv() a kept connection waits in (plain, then as wrapped)
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its client
        for thread in self.threads:
            thread.join(timeout=5)
        self.listener.close()

    def _accept(self) -> None:
        while True:
            connection, _ = self.listener.accept()
            if self.stopping:
                connection.close()
                return
            self.connections += 1
            self.accepted.append(connection)
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            sock = self.wrap(connection)
        except (ssl.SSLError, OSError):
            connection.close()  # the client refused the certificate
            return
        self.accepted.append(sock)  # a TLS socket takes the connection's descriptor: shut down through it
        data = b""
        with sock:
            while True:
                while b"\r\n\r\n" not in data:
                    try:
                        chunk = sock.recv(65536)
                    except OSError:  # shut down by __exit__ mid-handshake or mid-read
                        return
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(data) < length:
                    data += sock.recv(65536)
                data = data[length:]
                sock.sendall(self.reply)


def test_chunked_replies_keep_one_connection() -> None:
    with Loopback(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n") as server:
        http = JsonHttp(parse_target(f"http://127.0.0.1:{server.port}", 11434), timeout_s=5, max_reply_bytes=CAP, headers={})
        answers = [http.post("/api/chat", {"n": n}) for n in range(3)]
    assert [(a.status, a.body) for a in answers] == [(200, b"ok")] * 3
    assert server.connections == 1  # the chunked replies kept the connection


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A loopback HTTPS server with a certificate made here for 127.0.0.1 (openssl), answering chat replies on
    one keep-alive connection per client; yields its port and the certificate to trust."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    body = json.dumps({"model": "m", "message": {"role": "assistant", "content": "over tls"}, "done": True}).encode()
    with Loopback(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
                  lambda sock: context.wrap_socket(sock, server_side=True)) as server:
        yield server.port, cert


def test_https_is_verified_and_read_through_the_exchange(tls_server: tuple[int, Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    port, cert = tls_server
    config = ModelConfig(name="m", provider="ollama", base_url=f"https://127.0.0.1:{port}")
    with pytest.raises(CallFailure, match="CERTIFICATE_VERIFY_FAILED") as raised:  # not trusted: refused
        OllamaProvider(config).complete(REQUEST)
    assert raised.value.retryable is False
    trusting = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr("evalkit.live.providers.jsonhttp.ssl.create_default_context", lambda: trusting)
    provider = OllamaProvider(config)
    assert [provider.complete(REQUEST).text for _ in range(3)] == ["over tls"] * 3


# -- bounds: the deadline of the whole exchange, the cap on a reply (issue 35) ------------------------------------


class Recording(Scripted):
    """A scripted socket that keeps what each read asked for and each timeout it was given."""

    def __init__(self, *pieces: bytes) -> None:
        super().__init__(*pieces)
        self.asked: list[int] = []
        self.timeouts: list[float] = []

    def recv(self, size: int) -> bytes:
        self.asked.append(size)
        return super().recv(size)

    def settimeout(self, seconds: float) -> None:
        self.timeouts.append(seconds)


@pytest.mark.parametrize("length", [str(10**30), "9" * 5000, str(CAP + 1), "0" * 40 + str(CAP + 1)])
def test_a_length_over_the_cap_is_refused_before_a_byte_of_its_body_is_read(length: str) -> None:
    sock = Recording(b"HTTP/1.1 200 OK\r\nContent-Length: " + length.encode() + b"\r\n\r\n", b"x" * 100)
    with pytest.raises(ReplyTooLarge, match=f"the reply is over {CAP} bytes: it declares a body of") as raised:
        Exchange(sock, CAP).reply(time.monotonic() + DEADLINE_S)
    assert raised.value.declared == length and raised.value.limit == CAP
    assert sock.pieces == [b"x" * 100], "the body was read"  # not an OverflowError, not a MemoryError


def test_a_reply_of_exactly_the_cap_is_read_and_one_byte_more_is_refused_unread() -> None:
    """The cap counts the reply as it comes over the wire: its head, and the body it declares."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    body = b"y" * 1000
    reply = Exchange(Scripted(head, body), len(head) + 1000).reply(time.monotonic() + DEADLINE_S)
    assert reply.body == body
    sock = Scripted(head, body)
    with pytest.raises(ReplyTooLarge, match="declares a body of 1000 bytes"):
        Exchange(sock, len(head) + 999).reply(time.monotonic() + DEADLINE_S)
    assert sock.pieces == [body]


@pytest.mark.parametrize("pieces", [
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", *[b"400\r\n" + b"z" * 1024 + b"\r\n"] * 64),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", *[b"1\r\nz\r\n"] * 20000),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n", b"z" * 100),
    (b"HTTP/1.1 200 OK\r\n\r\n", *[b"z" * 1024] * 64),  # no length: to the connection's end
])
def test_a_body_that_streams_past_the_cap_is_refused_as_it_does(pieces: tuple[bytes, ...]) -> None:
    sock = Scripted(*pieces)
    with pytest.raises(ReplyTooLarge):
        Exchange(sock, 32 * 1024).reply(time.monotonic() + DEADLINE_S)
    assert sock.pieces, "the reply was read to its end before it was refused"


@pytest.mark.parametrize("size", [b"-1", b"+5", b"1_0", b"0x5", b"5 5", b"\xb2"])
def test_a_chunk_size_is_hex_digits_only(size: bytes) -> None:
    with pytest.raises(http.client.IncompleteRead):
        read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size + b"\r\nabcdefghijklmnop\r\n0\r\n\r\n")


def test_no_read_asks_for_more_than_a_mebibyte() -> None:
    """A socket read allocates what it is asked for: a declared length never sizes one."""
    body = b"w" * (3 * 2**20)
    sock = Recording(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body), body)
    assert Exchange(sock, 4 * 2**20).reply(time.monotonic() + DEADLINE_S).body == body
    assert max(sock.asked) == 2**20


def test_a_passed_deadline_ends_the_exchange_as_a_timeout() -> None:
    sock = Scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    with pytest.raises(DeadlinePassed) as raised:
        Exchange(sock, CAP).reply(time.monotonic() - 0.001)
    assert isinstance(raised.value, TimeoutError)  # what callers already translate as a timeout
    with pytest.raises(DeadlinePassed):
        Exchange(sock, CAP).send(b"POST / HTTP/1.1\r\n", b"{}", time.monotonic() - 0.001)
    assert sock.sent == b""


def test_each_read_waits_only_for_what_is_left_of_the_deadline() -> None:
    whole = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow"
    sock = Recording(*(whole[i:i + 1] for i in range(len(whole))))
    deadline = time.monotonic() + 5.0
    Exchange(sock, CAP).reply(deadline)
    assert len(sock.timeouts) == len(sock.asked) and all(0 < t <= 5.0 for t in sock.timeouts)
    assert sock.timeouts == sorted(sock.timeouts, reverse=True)  # each what is left, never the whole again


def _serve_slowly(data: list[bytes], pause_s: float) -> tuple[socket.socket, threading.Thread]:
    """A connected socket whose peer sends each of `data` `pause_s` apart, then closes (or is closed)."""
    ours, theirs = socket.socketpair()

    def drip() -> None:
        with theirs:
            for piece in data:
                try:
                    theirs.sendall(piece)
                except OSError:
                    return
                time.sleep(pause_s)

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    return ours, thread


@pytest.mark.parametrize("data", [
    [b"HTTP/1.1 100 Continue\r\n\r\n"] * 100,
    [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", *[b"d"] * 99],
    [bytes([byte]) for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
], ids=["interim-replies", "dripped-body", "dripped-head"])
def test_a_reply_dripped_slower_than_the_deadline_ends_at_it(data: list[bytes]) -> None:
    """Each piece comes 50 ms after the last, far inside any per-read timeout; the exchange ends at its deadline."""
    sock, thread = _serve_slowly(data, 0.05)
    started = time.monotonic()
    with sock, pytest.raises(TimeoutError):  # DeadlinePassed, or the last read's own wait for what was left
        Exchange(sock, CAP).reply(started + 0.5)
    took = time.monotonic() - started
    thread.join(timeout=10)
    assert 0.45 <= took < 1.5, took


def test_the_answer_keeps_every_header_by_its_lower_cased_name() -> None:
    reply = read(b"HTTP/1.1 200 OK\r\nX-Request-Id: r1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                 b"\r\n{}")
    assert reply.headers == {"x-request-id": "r1", "content-type": "application/json", "content-length": "2"}


def test_a_server_s_text_in_a_failure_is_cut_to_one_short_line() -> None:
    """A status line of 60,000 characters (the head may hold 64 KiB) reaches the outage line as an excerpt."""
    from evalkit.live.providers.jsonhttp import Bounds

    with pytest.raises(http.client.BadStatusLine) as raised:
        read(b"HTTP/1.1 " + b"z" * 60000 + b"\r\n\r\n")
    failure = Bounds("m", "http://127.0.0.1:9", 5.0, CAP).failure(raised.value)
    assert failure is not None and failure.retryable
    assert len(str(failure)) < 400 and "\n" not in str(failure)
