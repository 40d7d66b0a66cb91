"""JSON over HTTP/1.1 on one keep-alive connection per thread, with the standard library only.

A concurrent live run spends the client's CPU time on every call while holding the interpreter lock, so that
time, not the server, sets the pace: at 64 calls in flight and 50 ms per reply the whole budget is under 0.8 ms
per call. The official Ollama client over httpx took 0.9 to 1.1 ms of it on its own (URL merging, header
models, the connection pool's checks, pydantic on the request and the reply); `http.client` took about 0.2, and
the exchange of evalkit.live.providers.http1 (the request in one send, the reply's head parsed once) under 0.1.
`http.client` still opens the connections: proxies, CONNECT tunnels and TLS are its, as they were.

`JsonHttp.post` sends one JSON body and returns the status, the headers that matter here and the body; it never
retries and never follows a redirect. Errors are the standard library's (`OSError`, `TimeoutError`,
`http.client.HTTPException`): the provider translates them. Proxies are taken from the environment as urllib
reads them (`http_proxy`, `https_proxy`, `no_proxy`); HTTPS is verified against the system's certificates.
"""

from __future__ import annotations

import base64
import http.client
import select
import ssl
import threading
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import msgspec

from evalkit.live.providers.http1 import Answer, Exchange, request_head

__all__ = ["Answer", "JsonHttp", "Target", "parse_target"]


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


class JsonHttp:
    """POSTs JSON to one server; safe to call from many threads, each of which keeps its own connection."""

    def __init__(self, target: Target, *, timeout_s: float, headers: dict[str, str]) -> None:
        """ValueError when a header or the target's path could split a request (a line break, a space)."""
        self.target = target
        self._timeout_s = timeout_s
        self._tls = ssl.create_default_context() if target.scheme == "https" else None
        self._proxy, self._proxy_headers = _proxy_for(target)
        default_port = 443 if target.scheme == "https" else 80
        host = f"[{target.host}]" if ":" in target.host else target.host
        fixed = {"Host": host if target.port == default_port else f"{host}:{target.port}",
                 "Accept-Encoding": "identity",  # as http.client sent it: a body is never compressed
                 "Content-Type": "application/json", "Accept": "application/json", **headers}
        if self._proxy is not None and target.scheme == "http":  # through an HTTPS tunnel it goes to the proxy only
            fixed.update(self._proxy_headers)
        self._fixed = fixed
        request_head("POST", target.prefix or "/", fixed)  # refused here, before any call, rather than on the first
        self._heads: dict[str, bytes] = {}
        self._local = threading.local()

    def post(self, path: str, payload: Any) -> Answer:
        """POST `payload` as JSON to the target's prefix + `path`; the whole reply is read before returning."""
        body = msgspec.json.encode(payload)
        head = self._heads.get(path)
        if head is None:
            url = self.target.prefix + path
            if self._proxy is not None and self.target.scheme == "http":
                url = self.target.origin + url  # a plain HTTP proxy takes the absolute form
            head = self._heads[path] = request_head("POST", url, self._fixed)
        held = self._held()
        try:
            exchange = held.exchange()
            exchange.send(head, body)
            answer = exchange.reply()
        except BaseException:
            held.close()  # a half-used connection is never reused; the next call opens a fresh one
            raise
        if not answer.keep_alive:
            held.close()
        return answer

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection, open (tests look at its socket)."""
        held = self._held()
        held.exchange()
        return held.connection

    def _held(self) -> _Held:
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = _Held(self._open())
        return held

    def _open(self) -> http.client.HTTPConnection:
        target, proxy = self.target, self._proxy
        host, port = (proxy.hostname or target.host, proxy.port or 80) if proxy is not None else (target.host,
                                                                                                   target.port)
        connection: http.client.HTTPConnection
        if target.scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=self._timeout_s, context=self._tls)
            if proxy is not None:
                connection.set_tunnel(target.host, target.port, headers=self._proxy_headers)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=self._timeout_s)
        return connection


def _readable(sock: Any) -> bool:
    """Whether a socket between replies has something to read: only an end-of-file (or a reset) can be there."""
    if hasattr(select, "poll"):  # no limit on the descriptor's number, unlike select()
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class _Held:
    """A thread's connection, closed when the thread ends and its thread-local data goes (no stray sockets)."""

    def __init__(self, connection: http.client.HTTPConnection) -> None:
        self.connection = connection
        self._exchange: Exchange | None = None

    def exchange(self) -> Exchange:
        """The exchange on this thread's connection, opened again when the server has closed it since the last
        reply (an idle keep-alive connection the server dropped reads as end-of-file at once)."""
        sock = self.connection.sock
        if sock is not None and _readable(sock):
            self.close()
            sock = None
        if sock is None or self._exchange is None:
            self.connection.connect()  # http.client's: through the proxy or its tunnel, TLS verified
            self._exchange = Exchange(self.connection.sock)
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
