"""One HTTP/1.1 exchange on a connected socket: the request in one send, the reply read in as few reads as it takes.

`http.client` spends about 0.2 ms of interpreter time per call on what a JSON call does not need: a buffered file
per reply, its status and header lines read one by one, and the headers parsed by the `email` package. At 64 calls
in flight and 50 ms per reply the client's whole budget is 0.78 ms per call (the calls share one interpreter
lock), so that is a quarter of it. Here the reply's head is found in what one `recv` brought (usually the whole
reply), split into lines once, and only the headers the transport acts on are kept.

What is read as `http.client` reads it: informational (1xx) replies are skipped, the body is framed by
`Transfer-Encoding: chunked`, else `Content-Length`, else the connection's end; lines may end in CRLF or LF;
a reply with more than 100 headers, or a head over 64 KiB, is refused. Errors are `http.client`'s own exceptions
(`RemoteDisconnected`, `BadStatusLine`, `IncompleteRead`, `LineTooLong`, `HTTPException`) and the socket's
(`OSError`, `TimeoutError`), so callers translate them as before.
"""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "Exchange", "request_head"]

_MAX_HEADERS = 100  # as http.client
_MAX_INTERIM = 100  # 1xx replies before the final one (http.client takes any number)
_MAX_HEAD = 65536  # the status line and headers together (http.client allows 64 KiB per line)
_READ = 65536
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LINE_END = re.compile(r"\r?\n")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name (RFC 9110's token)
_NO_CONTROL = re.compile(r"[^\x00-\x08\x0a-\x1f\x7f]*")  # a header value: tabs allowed, no CR, LF or NUL
_URL = re.compile(r"[^\x00-\x20\x7f]+")  # a request target: no whitespace or control character (as http.client)


@dataclass(frozen=True)
class Answer:
    """One reply: its status, its body and its Retry-After and Location headers (None when absent)."""

    status: int
    body: bytes
    retry_after: str | None = None
    location: str | None = None
    keep_alive: bool = True
    """Whether the connection may carry the next request."""


def _check_target(url: str) -> None:
    """Refuse a request target `http.client` would refuse (whitespace or a control character: header injection)."""
    if not _URL.fullmatch(url):
        raise ValueError(f"{url!r}: a request path may hold no whitespace or control character")


def request_head(method: str, url: str, headers: dict[str, str]) -> bytes:
    """The request line and headers, without Content-Length and the blank line that end them; refuses (ValueError)
    a name or value `http.client.putheader` would refuse, so a configured header can never split the request."""
    _check_target(url)
    lines = [f"{method} {url} HTTP/1.1"]
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"{name!r} is not an HTTP header name")
        if not _NO_CONTROL.fullmatch(value):
            raise ValueError(f"the value of the {name} header holds a line break or control character")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


class Exchange:
    """Requests and replies on one connected socket, one at a time."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._buffer = bytearray()  # what was read past the reply so far; grows in place, not by copies

    def send(self, head: bytes, body: bytes) -> None:
        """One request: `head` from request_head, then its length and body, in one send (no delayed segment)."""
        self._sock.sendall(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))

    def reply(self) -> Answer:
        """Read the next final reply whole."""
        for _ in range(_MAX_INTERIM + 1):
            status, version, headers = self._head()
            if status >= 200 or status == 101:
                break  # other 1xx replies are interim: a final one follows
        else:
            raise http.client.HTTPException(f"more than {_MAX_INTERIM} interim (1xx) replies and no final one")
        body, framed = self._body(status, headers)
        connection = headers.get("connection", "").lower()
        keep_alive = framed and not self._buffer and (
            "keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection)
        return Answer(status, body, headers.get("retry-after"), headers.get("location"), keep_alive and status != 101)

    def _head(self) -> tuple[int, str, dict[str, str]]:
        """The status, the version and the headers of the next reply; the buffer keeps what follows them."""
        searched = 0
        while (end := _HEAD_END.search(self._buffer, searched)) is None:
            if len(self._buffer) > _MAX_HEAD:
                raise http.client.LineTooLong("reply head")
            searched = max(0, len(self._buffer) - 3)
            chunk = self._sock.recv(_READ)
            if not chunk:
                if self._buffer.strip():
                    raise http.client.IncompleteRead(bytes(self._buffer))
                raise http.client.RemoteDisconnected("Remote end closed connection without response")
            self._buffer += chunk
        if end.start() > _MAX_HEAD:
            raise http.client.LineTooLong("reply head")
        lines = _LINE_END.split(self._buffer[:end.start()].decode("iso-8859-1"))
        del self._buffer[:end.end()]
        status_line = lines[0]
        version, _, rest = status_line.partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/") or not (code.isascii() and code.isdigit()) or rest[3:4] not in ("", " "):
            raise http.client.BadStatusLine(status_line)
        if len(lines) - 1 > _MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")
        headers: dict[str, str] = {}
        lengths: set[str] = set()
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                continue  # a folded or malformed line, which http.client keeps in no header this reads
            name = name.strip().lower()
            value = value.strip()
            if name == "content-length":
                lengths.add(value)
            headers[name] = f"{headers[name]}, {value}" if name == "transfer-encoding" and name in headers else value
        if len(lengths) > 1:  # two lengths: which frames the body is ambiguous, so trust neither
            raise http.client.HTTPException(f"the reply gives {len(lengths)} different Content-Length values")
        return int(code), version, headers

    def _body(self, status: int, headers: dict[str, str]) -> tuple[bytes, bool]:
        """The body and whether its end was framed (False: it ran to the connection's end)."""
        if status in (204, 304) or status < 200:
            return b"", True
        if headers.get("transfer-encoding", "").lower().rsplit(",", 1)[-1].strip() == "chunked":
            return self._chunked(), True
        length = headers.get("content-length")
        if length is not None:
            if not (length.isascii() and length.isdigit()):
                raise http.client.HTTPException(f"Content-Length {length!r} is not a number")
            return self._exactly(int(length)), True
        while chunk := self._sock.recv(_READ):
            self._buffer += chunk
        body = bytes(self._buffer)
        self._buffer.clear()
        return body, False

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = self._sock.recv(max(_READ, size - len(self._buffer)))
            if not chunk:
                raise http.client.IncompleteRead(bytes(self._buffer), size - len(self._buffer))
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def _line(self) -> bytes:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > _MAX_HEAD:
                raise http.client.LineTooLong("chunk size")
            chunk = self._sock.recv(_READ)
            if not chunk:
                raise http.client.IncompleteRead(bytes(self._buffer))
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        return line.rstrip(b"\r")

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise http.client.IncompleteRead(b"".join(parts)) from None
            if size == 0:
                while self._line():  # trailer fields, up to the blank line that ends them
                    pass
                return b"".join(parts)
            parts.append(self._exactly(size))
            self._line()  # the CRLF after the chunk's data
