"""The vendors' client libraries, with evalkit's own transport underneath: what an official client sends goes over
the connections of evalkit.live.providers.jsonhttp, so every provider's call has the same bounds, tested once.

The clients bound each read, not the call: `timeout=5` lets a server that drips a byte every 1.5 s, or sends
`100 Continue` every 1.5 s, hold a call for ever, and they read a body of any length into memory (1.5 GiB took
4 to 9 GB; issue 35). The OpenAI and Anthropic clients also follow a redirect to another host and return that
host's reply. So the client keeps what it is good at (building the request, signing it, reading the reply into its
types, its errors for an error status) and hands the bytes to a transport that holds `model.timeout_s` as the
deadline of the whole call, refuses a reply over `model.max_reply_bytes` before reading it whole, follows no
redirect, asks for no compression (so no small reply inflates past the cap) and sends only to the configured server.

- The clients on httpx (`openai`, which `azure` uses too, `anthropic`, `google-genai`) take an httpx client whose
  transport is `_Transport` (`httpx_client`); httpx's own proxy and .netrc handling is off (`trust_env=False`):
  the connections take proxies from the environment as urllib reads them, as every other provider's.
- botocore (`bedrock`) lets a `before-send` event handler answer a request instead of its own HTTP session
  (`send_with`); the handler is registered for every operation of the client's service.

A transport failure is raised as the provider contract's CallFailure (evalkit.live.providers.jsonhttp.Bounds), which
the clients let through untouched: none catches an exception it does not know.
"""

from __future__ import annotations

import importlib
import ssl
import urllib.parse
from types import ModuleType
from typing import Any

from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.http1 import Answer, request_head
from evalkit.live.providers.jsonhttp import Bounds, Connections, parse_target

__all__ = ["httpx_client", "httpx_module", "send_with"]

_NOT_PASSED = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "accept-encoding",
                         "proxy-authorization", "te", "upgrade", "expect"})
"""Request headers the transport writes itself (the body's length, identity encoding, keep-alive) or never sends."""
_NOT_RETURNED = frozenset({"content-encoding", "transfer-encoding"})
"""Reply headers that described bytes the transport has already undone (the chunks) or refused (an encoding)."""


def httpx_module(client_class: type | None = None) -> ModuleType:
    """The httpx a client library is built on: httpx2, or httpx for older releases (`client_class`: the library's
    own httpx client class, which says; None: httpx2 where installed)."""
    for cls in client_class.__mro__ if client_class is not None else ():
        package = (cls.__module__ or "").split(".")[0]
        if package in ("httpx2", "httpx"):
            return importlib.import_module(package)
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


def httpx_client(httpx: ModuleType, base_url: str, bounds: Bounds) -> Any:
    """An httpx (or httpx2) client for a client library, sending through evalkit's bounded connections to the
    origin of `base_url`; HTTPS verified as that httpx would verify it."""
    target = parse_target(base_url, 443)
    trust = getattr(httpx, "create_ssl_context", ssl.create_default_context)
    tls = trust() if target.scheme == "https" else None
    connections = Connections(target, timeout_s=bounds.timeout_s, max_reply_bytes=bounds.max_reply_bytes, tls=tls)
    transport = _transport_class(httpx)(connections, bounds)
    return httpx.Client(transport=transport, trust_env=False, follow_redirects=False, timeout=bounds.timeout_s)


def send_with(client: Any, bounds: Bounds, tls: ssl.SSLContext) -> None:
    """Make a botocore client send every request of its service through evalkit's bounded connections to its
    endpoint (`client.meta.endpoint_url`), answering botocore's `before-send` event."""
    from botocore.awsrequest import AWSResponse

    connections = Connections(parse_target(client.meta.endpoint_url, 443), timeout_s=bounds.timeout_s,
                              max_reply_bytes=bounds.max_reply_bytes, tls=tls)

    def send(request: Any, **_: Any) -> Any:
        headers = {str(name): value.decode("latin-1") if isinstance(value, bytes) else str(value)
                   for name, value in request.headers.items()}
        answer = _exchange(connections, bounds, request.method, request.url, headers, _body(request.body))
        return AWSResponse(request.url, answer.status, _returned(answer), _Raw(answer.body))

    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(f"before-send.{service}", send, unique_id="evalkit-bounded-send")


def _exchange(connections: Connections, bounds: Bounds, method: str, url: str, headers: dict[str, str],
              body: bytes) -> Answer:
    """Send one request of a client library over the connections; its reply, or the CallFailure it means."""
    parts = urllib.parse.urlsplit(url)
    target = connections.target
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = -1
    if (parts.scheme, parts.hostname, port) != (target.scheme, target.host, target.port):
        raise bounds.elsewhere(url)
    sent = {"Host": connections.host, **{name: value for name, value in headers.items()
                                         if name.lower() not in _NOT_PASSED and name.lower() != "host"},
            "Accept-Encoding": "identity"}
    if connections.plain_proxy:
        sent.update(connections.proxy_headers)
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    try:
        head = request_head(method, connections.request_target(path), sent)
    except ValueError as error:  # a header that could split the request: a key or setting with a line break
        raise CallFailure(bounds.clean(f"{bounds.name}: {error}; fix the model's settings or the credential the "
                                       "header is built from"), retryable=False) from None
    try:
        answer = connections.exchange(head, body)
    except Exception as error:
        failure = bounds.failure(error)
        if failure is None:
            raise
        raise failure from None
    if 300 <= answer.status < 400:
        raise bounds.redirected(answer)
    encoding = answer.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise CallFailure(bounds.clean(f"{bounds.name}: the server answered with a body encoded as "
                                       f"{encoding[:40]!r}, though asked for none (Accept-Encoding: identity); "
                                       "refused unread"), retryable=True, status=answer.status)
    return answer


def _returned(answer: Answer) -> list[tuple[str, str]]:
    return [(name, value) for name, value in answer.headers.items() if name not in _NOT_RETURNED]


def _body(body: Any) -> bytes:
    """A request body as bytes, whatever form the client library holds it in."""
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    data = body.read()  # a file-like body
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


class _Raw:
    """A reply body already read whole, as botocore's AWSResponse reads its `raw`."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def _transport_class(httpx: ModuleType) -> type:
    """The httpx transport over bounded connections, for the given httpx module (httpx2 or httpx)."""
    cached: type | None = _TRANSPORTS.get(httpx.__name__)
    if cached is not None:
        return cached

    class Transport(httpx.BaseTransport):  # type: ignore[misc,name-defined]
        """Sends an httpx request over evalkit's connections and hands back the whole reply."""

        def __init__(self, connections: Connections, bounds: Bounds) -> None:
            self._connections = connections
            self._bounds = bounds

        def handle_request(self, request: Any) -> Any:
            headers: dict[str, str] = {}
            for raw_name, raw_value in request.headers.raw:
                name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            answer = _exchange(self._connections, self._bounds, request.method, str(request.url), headers,
                               request.read())
            return httpx.Response(answer.status, headers=_returned(answer), content=answer.body, request=request)

        def close(self) -> None:
            self._connections.close()

    _TRANSPORTS[httpx.__name__] = Transport
    return Transport


_TRANSPORTS: dict[str, type] = {}
