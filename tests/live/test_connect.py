"""Opening a connection within the call's deadline (evalkit.live.providers.connect), against servers the tests start
on 127.0.0.1: a resolver that never answers (socket.getaddrinfo stubbed to block), a proxy that drips its reply to
CONNECT or sends an endless head (both held `http.client`'s tunnel for as long as the proxy went on), a TLS server
(a self-signed certificate made here) that never finishes its handshake or reads a request slowly (both bounded by
CPython already; kept here so that no change of the opening path loses it). Each ends at the deadline as a TimeoutError (DeadlinePassed), which every
provider reports as `no reply within N s (model.timeout_s ...)`, retryable."""

from __future__ import annotations

import datetime as dt
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from evalkit.live.providers.connect import MAX_TUNNEL_REPLY, resolve
from evalkit.live.providers.http1 import DeadlinePassed, request_head
from evalkit.live.providers.jsonhttp import Bounds, Connections, parse_target

DEADLINE_S = 1.0
SLACK_S = 3.0  # generous for a loaded machine; every server below would hold a call for a minute or more


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


@contextmanager
def listening(serve: Callable[[socket.socket], None], rcvbuf: int | None = None) -> Iterator[int]:
    """A TCP server on 127.0.0.1 whose one connection `serve` handles; yields its port. Closed (and its thread
    joined) when the block ends, which also ends a `serve` that is still waiting."""
    server = socket.socket()
    if rcvbuf is not None:  # inherited by the accepted socket: a peer that reads slowly fills it at once
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    stop = threading.Event()
    accepted: list[socket.socket] = []

    def run() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        accepted.append(conn)
        try:
            serve(conn)
        except OSError:
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        for conn in accepted:
            conn.close()
        server.close()
        thread.join(timeout=10)


def timed(call: Callable[[], Any]) -> float:
    """Seconds `call` took to raise a TimeoutError (it must): DeadlinePassed, or a socket's read or write that
    waited for what was left of the deadline."""
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        call()
    return time.monotonic() - start


# -- name resolution -------------------------------------------------------------------------------------------------

def test_a_resolver_that_never_answers_ends_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    released = threading.Event()
    real = socket.getaddrinfo

    def blocked(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "model.example":
            released.wait(60)  # a resolver that does not answer (the stub lets go when the test ends)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", blocked)
    try:
        start = time.monotonic()
        with pytest.raises(DeadlinePassed, match="resolving model.example took longer than the call's deadline"):
            resolve("model.example", 80, start + DEADLINE_S)
        assert DEADLINE_S * 0.9 <= time.monotonic() - start < DEADLINE_S + SLACK_S
        # through a provider's transport: the same deadline, said as every provider says it
        connections = Connections(parse_target("http://model.example:8080", 80), timeout_s=DEADLINE_S,
                                  max_reply_bytes=1 << 20)
        start = time.monotonic()
        with pytest.raises(TimeoutError) as raised:
            connections.exchange(request_head("POST", "/", {"Host": "model.example"}), b"{}")
        assert time.monotonic() - start < DEADLINE_S + SLACK_S
        failure = Bounds("m", "model.example", DEADLINE_S, 1 << 20).failure(raised.value)
        assert failure is not None and failure.retryable
        assert "no reply within 1 s (model.timeout_s" in str(failure)
    finally:
        released.set()


def test_a_resolver_error_is_the_resolvers_and_an_address_needs_no_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: Any, **__: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    assert resolve("127.0.0.1", 80, time.monotonic() + DEADLINE_S)[0][4] == ("127.0.0.1", 80)
    monkeypatch.setattr(socket, "getaddrinfo", refused)
    with pytest.raises(socket.gaierror, match="not known"):
        resolve("nowhere.example", 80, time.monotonic() + DEADLINE_S)


# -- a proxy's CONNECT reply -----------------------------------------------------------------------------------------

def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk


def dripping_proxy(conn: socket.socket) -> None:
    """Answers CONNECT one byte every 0.2 s, for up to a minute: never a whole head within a second."""
    _read_request(conn)
    reply = b"HTTP/1.1 200 Connection established\r\n" + b"X-Pad: " + b"." * 400 + b"\r\n\r\n"
    for byte in reply:
        conn.sendall(bytes([byte]))
        time.sleep(0.2)


def endless_proxy(conn: socket.socket) -> None:
    """Answers CONNECT with a head that never ends, as fast as it is read."""
    _read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    line = b"X-More: " + b"y" * 1000 + b"\r\n"
    for _ in range(100_000):
        conn.sendall(line)


def through_proxy(port: int, monkeypatch: pytest.MonkeyPatch, timeout_s: float = DEADLINE_S) -> Connections:
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
    return Connections(parse_target("https://model.example", 443), timeout_s=timeout_s, max_reply_bytes=1 << 20)


def test_a_proxy_that_drips_its_connect_reply_ends_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    with listening(dripping_proxy) as port:
        connections = through_proxy(port, monkeypatch)
        took = timed(lambda: connections.exchange(request_head("POST", "/", {"Host": "model.example"}), b"{}"))
    assert took < DEADLINE_S + SLACK_S  # http.client read it a line at a time, each read given the full timeout


def test_a_proxy_whose_connect_reply_never_ends_is_refused_at_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    with listening(endless_proxy) as port:
        connections = through_proxy(port, monkeypatch, timeout_s=30)
        start = time.monotonic()
        with pytest.raises((OSError, http.client.HTTPException), match="reply head|over 65536 bytes") as raised:
            connections.exchange(request_head("POST", "/", {"Host": "model.example"}), b"{}")
    assert time.monotonic() - start < 10 and MAX_TUNNEL_REPLY == 65536
    failure = Bounds("m", "model.example", 30, 1 << 20).failure(raised.value)
    assert failure is not None and failure.retryable


def test_a_proxy_that_refuses_the_tunnel_is_a_failed_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refusing(conn: socket.socket) -> None:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")

    with listening(refusing) as port:
        connections = through_proxy(port, monkeypatch)
        with pytest.raises(OSError, match="Tunnel connection failed: 407"):
            connections.exchange(request_head("POST", "/", {"Host": "model.example"}), b"{}")


# -- TLS ---------------------------------------------------------------------------------------------------------------

def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key, made here: (certificate, key) as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def tls_connections(port: int, cert: Path, timeout_s: float = DEADLINE_S) -> Connections:
    trust = ssl.create_default_context(cafile=str(cert))
    return Connections(parse_target(f"https://127.0.0.1:{port}", 443), timeout_s=timeout_s,
                       max_reply_bytes=1 << 20, tls=trust)


def test_a_tls_server_that_never_finishes_its_handshake_ends_at_the_deadline(tmp_path: Path) -> None:
    cert, _ = self_signed(tmp_path)

    def silent(conn: socket.socket) -> None:
        conn.recv(65536)  # the client's hello, then nothing: the next read ends when the client gives up
        conn.recv(65536)

    with listening(silent) as port:
        connections = tls_connections(port, cert)
        took = timed(lambda: connections.exchange(request_head("POST", "/", {"Host": "127.0.0.1"}), b"{}"))
    assert took < DEADLINE_S + SLACK_S


def test_a_tls_server_that_reads_slowly_ends_the_send_at_the_deadline(tmp_path: Path) -> None:
    """A server that takes 16 KiB every 0.2 s of a 16 MiB request: the send ends at the deadline. (CPython's TLS
    write already waits one deadline over the whole of its data; the send loop gives every send only what is left
    of the call's deadline, so a socket that takes part of the data per send is bounded too: test_http1.)"""
    cert, key = self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    def slow_reader(conn: socket.socket) -> None:
        with server_tls.wrap_socket(conn, server_side=True) as tls:
            tls.settimeout(70)
            for _ in range(300):
                if not tls.recv(16384):
                    return
                time.sleep(0.2)

    with listening(slow_reader, rcvbuf=4096) as port:
        connections = tls_connections(port, cert, timeout_s=2.0)
        took = timed(lambda: connections.exchange(request_head("POST", "/", {"Host": "127.0.0.1"}),
                                                  b"x" * (16 << 20)))
    assert took < 2.0 + SLACK_S


def test_a_tls_server_is_reached_and_verified(tmp_path: Path) -> None:
    """The same path that bounds the handshake makes a working call: verified, the reply read."""
    cert, key = self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    def answering(conn: socket.socket) -> None:
        with server_tls.wrap_socket(conn, server_side=True) as tls:
            _read_request(tls)  # type: ignore[arg-type]
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    with listening(answering) as port:
        answer = tls_connections(port, cert, timeout_s=10).exchange(
            request_head("POST", "/", {"Host": "127.0.0.1"}), b"")
    assert (answer.status, answer.body) == (200, b"ok")
    with listening(answering) as port:  # another certificate than the one trusted: refused, not retried
        (tmp_path / "other").mkdir()
        other, _ = self_signed(tmp_path / "other")
        with pytest.raises(ssl.SSLCertVerificationError):
            tls_connections(port, other, timeout_s=10).exchange(request_head("POST", "/", {"Host": "h"}), b"")
