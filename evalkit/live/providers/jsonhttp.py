"""The standard-library HTTP/1.1 transport every live provider's bytes go through: keep-alive connections to the
configured server, one per thread, each call one exchange (evalkit.live.providers.http1) within the call's deadline
and the reply's cap; and JSON over it, which is all the Ollama provider needs.

A concurrent live run spends the client's CPU time on every call while holding the interpreter lock, so that
time, not the server, sets the pace: at 64 calls in flight and 50 ms per reply the whole budget is under 0.8 ms
per call. The official Ollama client over httpx took 0.9 to 1.1 ms of it on its own (URL merging, header
models, the connection pool's checks, pydantic on the request and the reply); `http.client` took about 0.2, and
the exchange of evalkit.live.providers.http1 (the request in one send, the reply's head parsed once) under 0.1.
Connections are opened by evalkit.live.providers.connect, within the call's deadline: the name's resolution, a
proxy's CONNECT tunnel and the TLS handshake (`http.client` bounded none of them as a whole).

The providers built on a vendor's client library send that client's requests through these same connections
(evalkit.live.providers.sdkwire), so every provider has the same bounds: `model.timeout_s` is the deadline of the
whole call, from opening the connection to the reply's last byte, and `model.max_reply_bytes` the most a reply may
take (Bounds). `Connections.exchange` never retries and never follows a redirect; its errors are the standard
library's (`OSError`, `TimeoutError`, `http.client.HTTPException`) and http1's DeadlinePassed and ReplyTooLarge,
which `Bounds.failure` translates into the provider contract's CallFailure, once for every provider. Proxies are
taken from the environment as urllib reads them (`http_proxy`, `https_proxy`, `no_proxy`); HTTPS is verified against
the system's certificates (or a client library's own trust, where it brings one).
"""

from __future__ import annotations

import base64
import http.client
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from evalkit.live.providers.base import CallFailure, excerpt
from evalkit.live.providers.connect import open_socket
from evalkit.live.providers.http1 import Answer, DeadlinePassed, Exchange, ReplyTooLarge, request_head

__all__ = ["Answer", "Bounds", "Connections", "DeadlinePassed", "JsonHttp", "ReplyTooLarge", "Target", "parse_target",
           "shown_bytes"]


@dataclass(frozen=True)
class Target:
    """Where requests go: scheme, host, port and the path prefix every request path is appended to."""

    scheme: str
    host: str
    port: int
    prefix: str

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_target(url: str, default_port: int) -> Target:
    """A base URL as `http://host:port/path`; without a scheme it is http on `default_port` (Ollama's reading:
    `example.com` is http://example.com:11434, `https://example.com` port 443). ValueError when it is no URL."""
    given = url.strip()
    scheme_given = "://" in given
    parts = urllib.parse.urlsplit(given if scheme_given else f"http://{given}")
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url!r}: the scheme must be http or https")
    port = parts.port  # ValueError for a port that is not a number
    if port is None:
        port = (443 if parts.scheme == "https" else 80) if scheme_given else default_port
    return Target(parts.scheme, parts.hostname or "127.0.0.1", port, parts.path.rstrip("/"))


def shown_bytes(count: int) -> str:
    """A byte count as a person reads it: `32 MiB`, `1.5 KiB`, `700 bytes`."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


@dataclass(frozen=True)
class Bounds:
    """What one call of a provider may take (`timeout_s`, `max_reply_bytes`), and how a call that breaks them or
    breaks down is said: the one translation of the transport's errors into CallFailure, for every provider.

    Every message starts with the model's name, names the server (`where`) or the setting that was broken, and
    goes through `clean` (the provider's masking of its credential)."""

    name: str
    where: str
    timeout_s: float
    max_reply_bytes: int
    clean: Callable[[str], str] = str

    def failure(self, error: Exception) -> CallFailure | None:
        """The CallFailure a transport error means; None for anything else (a bug, a bad argument)."""
        if isinstance(error, ReplyTooLarge):
            digits = (error.declared or "").lstrip("0")
            declared = "" if error.declared is None else (
                f": it declares {shown_bytes(int(digits or 0))}" if len(digits) < 19 else
                f": it declares a length of {len(digits)} digits")
            return CallFailure(self.clean(
                f"{self.name}: the reply is over {shown_bytes(self.max_reply_bytes)} (model.max_reply_bytes = "
                f"{self.max_reply_bytes}){declared}; refused before it was read whole"), retryable=True)
        if isinstance(error, TimeoutError):  # socket.timeout is TimeoutError, and so is DeadlinePassed
            return CallFailure(self.clean(f"{self.name}: no reply within {self.timeout_s:g} s (model.timeout_s, the "
                                          "deadline of the whole call)"), retryable=True)
        if isinstance(error, ssl.SSLCertVerificationError):  # trying again cannot help
            return CallFailure(self.clean(f"{self.name}: connection to {self.where} failed: {excerpt(str(error))}"),
                               retryable=False)
        if isinstance(error, OSError | http.client.HTTPException):  # refused, reset, dropped, cut off
            return CallFailure(self.clean(f"{self.name}: connection to {self.where} failed: "
                                          f"{type(error).__name__}: {excerpt(str(error))}"), retryable=True)
        return None

    def redirected(self, answer: Answer) -> CallFailure:
        """A redirect, which no provider follows: an API call the server sends elsewhere is sent to the wrong
        address (or to one that hands calls to another host), and the reply must come from the server configured."""
        where = excerpt(answer.location, 200) if answer.location else "(no Location given)"
        return CallFailure(self.clean(f"{self.name}: HTTP {answer.status}: the server redirects to {where}; "
                                      "evalkit follows no redirect: set model.base_url to where it redirects"),
                           retryable=False, status=answer.status)

    def elsewhere(self, url: str) -> CallFailure:
        """A client library asked for an address other than the configured server's: not sent."""
        return CallFailure(self.clean(f"{self.name}: the client asked for {excerpt(url, 200)}, not {self.where}; "
                                      "evalkit sends a call only to model.base_url"), retryable=False)


class Connections:
    """Keep-alive connections to one target, one per thread, each call one exchange within its deadline and cap.

    Safe to call from many threads. `timeout_s` is the deadline of each exchange, counted from its start:
    connecting (TCP, a proxy's tunnel, TLS), sending and reading the whole reply; `max_reply_bytes` bounds each reply
    (evalkit.live.providers.http1). `tls` is the context HTTPS is verified with (default: the system's certificates).
    """

    def __init__(self, target: Target, *, timeout_s: float, max_reply_bytes: int,
                 tls: ssl.SSLContext | None = None) -> None:
        self.target = target
        self._timeout_s = timeout_s
        self._max_reply_bytes = max_reply_bytes
        self._tls = (tls or ssl.create_default_context()) if target.scheme == "https" else None
        self._proxy, self.proxy_headers = _proxy_for(target)
        default_port = 443 if target.scheme == "https" else 80
        host = f"[{target.host}]" if ":" in target.host else target.host
        self.host = host if target.port == default_port else f"{host}:{target.port}"
        """The Host header of a request to the target, as http.client writes it."""
        self.plain_proxy = self._proxy is not None and target.scheme == "http"
        """Whether requests go through a plain HTTP proxy: absolute request targets and its Proxy-Authorization
        (an HTTPS target goes through a tunnel, whose credentials only the proxy sees)."""
        self._local = threading.local()

    def request_target(self, path: str) -> str:
        """The request line's target for `path` (from the server's root): the absolute form through a plain
        proxy."""
        return self.target.origin + path if self.plain_proxy else path

    def exchange(self, head: bytes, body: bytes) -> Answer:
        """One request (`head` from http1.request_head) and its whole reply, within the deadline and the cap."""
        deadline = time.monotonic() + self._timeout_s
        held = self._held()
        try:
            exchange = held.exchange(deadline)
            exchange.send(head, body, deadline)
            answer = exchange.reply(deadline)
        except BaseException:
            held.close()  # a half-used connection is never reused; the next call opens a fresh one
            raise
        if not answer.keep_alive:
            held.close()
        return answer

    def close(self) -> None:
        """Close this thread's connection (the next call opens another)."""
        held: _Held | None = getattr(self._local, "held", None)
        if held is not None:
            held.close()

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection, open (tests look at its socket)."""
        held = self._held()
        held.exchange(time.monotonic() + self._timeout_s)
        return held.connection

    def _held(self) -> _Held:
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = _Held(self._open(), self._max_reply_bytes, self._dial)
        return held

    def _dial(self, deadline: float) -> socket.socket:
        """A socket to the target (or its proxy, through a tunnel for HTTPS), TLS verified, by the deadline."""
        target, proxy = self.target, self._proxy
        if proxy is None:
            return open_socket(target.host, target.port, deadline, tls=self._tls, server_hostname=target.host)
        tunnel = (target.host, target.port, self.proxy_headers) if target.scheme == "https" else None
        return open_socket(proxy.hostname or target.host, proxy.port or 80, deadline, tunnel=tunnel, tls=self._tls,
                           server_hostname=target.host)

    def _open(self) -> http.client.HTTPConnection:
        target, proxy = self.target, self._proxy
        host, port = (proxy.hostname or target.host, proxy.port or 80) if proxy is not None else (target.host,
                                                                                                   target.port)
        connection: http.client.HTTPConnection
        if target.scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=self._timeout_s, context=self._tls)
            if proxy is not None:
                connection.set_tunnel(target.host, target.port, headers=self.proxy_headers)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=self._timeout_s)
        return connection


class JsonHttp(Connections):
    """POSTs JSON to one server; safe to call from many threads, each of which keeps its own connection."""

    def __init__(self, target: Target, *, timeout_s: float, max_reply_bytes: int, headers: dict[str, str]) -> None:
        """ValueError when a header or the target's path could split a request (a line break, a space)."""
        super().__init__(target, timeout_s=timeout_s, max_reply_bytes=max_reply_bytes)
        fixed = {"Host": self.host,
                 "Accept-Encoding": "identity",  # as http.client sent it: a body is never compressed
                 "Content-Type": "application/json", "Accept": "application/json", **headers}
        if self.plain_proxy:
            fixed.update(self.proxy_headers)
        self._fixed = fixed
        request_head("POST", target.prefix or "/", fixed)  # refused here, before any call, rather than on the first
        self._heads: dict[str, bytes] = {}

    def post(self, path: str, payload: Any) -> Answer:
        """POST `payload` as JSON to the target's prefix + `path`; the whole reply is read before returning."""
        body = msgspec.json.encode(payload)
        head = self._heads.get(path)
        if head is None:
            head = self._heads[path] = request_head("POST", self.request_target(self.target.prefix + path),
                                                    self._fixed)
        return self.exchange(head, body)


def _readable(sock: Any) -> bool:
    """Whether a socket between replies has something to read: only an end-of-file (or a reset) can be there."""
    if hasattr(select, "poll"):  # no limit on the descriptor's number, unlike select()
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class _Held:
    """A thread's connection, closed when the thread ends and its thread-local data goes (no stray sockets)."""

    def __init__(self, connection: http.client.HTTPConnection, max_reply_bytes: int,
                 dial: Callable[[float], socket.socket]) -> None:
        self.connection = connection
        """The connection's address and socket (its own `connect` is never called: it waits without a deadline)."""
        self._max_reply_bytes = max_reply_bytes
        self._dial = dial
        self._exchange: Exchange | None = None

    def exchange(self, deadline: float) -> Exchange:
        """The exchange on this thread's connection, opened again when the server has closed it since the last
        reply (an idle keep-alive connection the server dropped reads as end-of-file at once). Opening waits no
        longer than the deadline leaves: the name's resolution, the connection, a proxy's tunnel and TLS."""
        sock = self.connection.sock
        if sock is not None and _readable(sock):
            self.close()
            sock = None
        if sock is None or self._exchange is None:
            self.close()
            # resolved, connected, tunnelled and shaken hands within the deadline (evalkit.live.providers.connect)
            self.connection.sock = self._dial(deadline)
            self._exchange = Exchange(self.connection.sock, self._max_reply_bytes)
        return self._exchange

    def close(self) -> None:
        self.connection.close()
        self._exchange = None

    def __del__(self) -> None:
        self.connection.close()


def _proxy_for(target: Target) -> tuple[urllib.parse.SplitResult | None, dict[str, str]]:
    """The environment's proxy for the target, as urllib reads it, and the Proxy-Authorization its URL carries."""
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(target.scheme)
    if url is None or urllib.request.proxy_bypass(target.host):
        return None, {}
    proxy = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    headers = {}
    if proxy.username is not None:
        user = urllib.parse.unquote(proxy.username)
        password = urllib.parse.unquote(proxy.password or "")
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    return proxy, headers
