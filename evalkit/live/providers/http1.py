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

What is read is bounded where `http.client` bounds nothing: every byte that arrives is hostile until read, and every
wait may never end. Each exchange has a deadline (a `time.monotonic()` instant): each read waits only for what is
left of it, so a reply dripped a byte at a time or an endless run of `100 Continue` ends at the deadline
(DeadlinePassed, a TimeoutError), not at the first read that waits too long. Each reply has a cap on its bytes as
they come over the wire (head, framing and body): a Content-Length over it is refused before the body is read, and a
body that streams past it is refused as it does (ReplyTooLarge), so no reply is held whole in memory that the cap
does not allow; no read asks the socket for more than 1 MiB at once, so no length, however absurd, sizes a buffer.
"""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "DeadlinePassed", "Exchange", "ReplyTooLarge", "request_head", "seconds_left"]

_MAX_HEADERS = 100  # as http.client
_MAX_INTERIM = 100  # 1xx replies before the final one (http.client takes any number)
_MAX_HEAD = 65536  # the status line and headers together (http.client allows 64 KiB per line)
_READ = 65536
_MAX_READ = 1 << 20  # the most one read asks for: a socket read allocates what it is asked for, up front
_MAX_DIGITS = 18  # a Content-Length longer than this (leading zeros aside) is over any cap, and int() may refuse it
_HEX = re.compile(rb"[0-9A-Fa-f]+")  # a chunk size (int(..., 16) also takes signs, spaces and underscores)
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
    headers: Mapping[str, str] = field(default_factory=dict)
    """Every header of the final reply, by lower-cased name (a repeated one: its last value; Transfer-Encoding's
    values joined), for a client library that reads more than the two above."""


class DeadlinePassed(TimeoutError):
    """The exchange's deadline passed before its reply was read whole: a TimeoutError, like a read that waited its
    whole timeout, so a caller that handles one handles both."""


class ReplyTooLarge(http.client.HTTPException):
    """The reply is over the bytes the exchange may read (`limit`): a declared length over it, refused before the
    body is read (`declared`, the header's text), or a reply that went past it as it streamed (`declared` None)."""

    def __init__(self, limit: int, declared: str | None = None) -> None:
        self.limit = limit
        self.declared = declared
        said = f"declares a body of {declared[:40]}{'...' if len(declared) > 40 else ''} bytes" if declared else \
            "went on past it"
        super().__init__(f"the reply is over {limit} bytes: it {said}")


def seconds_left(deadline: float) -> float:
    """The seconds left until `deadline` (a time.monotonic() instant); DeadlinePassed when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the call's deadline passed before its reply was read whole")
    return left


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
    """Requests and replies on one connected socket, one at a time, each reply read within the exchange's deadline
    and at most `max_reply_bytes` of it (head, framing and body, as they come over the wire)."""

    def __init__(self, sock: Any, max_reply_bytes: int) -> None:
        self._sock = sock
        self._max = max_reply_bytes
        self._buffer = bytearray()  # what was read past the reply so far; grows in place, not by copies
        self._deadline = 0.0
        self._left = max_reply_bytes  # what the reply being read may still take from the socket

    def send(self, head: bytes, body: bytes, deadline: float) -> None:
        """One request: `head` from request_head, then its length and body, in one send (no delayed segment),
        which waits no longer than the `deadline` (a time.monotonic() instant) for a server that does not read."""
        view = memoryview(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
        while view:  # not sendall: a TLS socket's gives each partial send the whole timeout again
            self._sock.settimeout(seconds_left(deadline))
            view = view[self._sock.send(view):]

    def tunnel_reply(self, deadline: float) -> tuple[int, bytes]:
        """A proxy's reply to CONNECT: its status, read by the `deadline` within the exchange's bytes, and whatever
        came after its head (which a proxy should not send before the client's first bytes)."""
        self._deadline = deadline
        self._left = self._max
        status, _, _ = self._head()
        return status, bytes(self._buffer)

    def reply(self, deadline: float) -> Answer:
        """Read the next final reply whole, by the `deadline` (a time.monotonic() instant)."""
        self._deadline = deadline
        self._left = self._max - len(self._buffer)
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
        return Answer(status, body, headers.get("retry-after"), headers.get("location"), keep_alive and status != 101,
                      headers)

    def _recv(self, size: int) -> bytes:
        """One read of at most `size` bytes (and 1 MiB), waiting no longer than the deadline leaves, counted against
        the reply's bytes."""
        self._sock.settimeout(seconds_left(self._deadline))
        chunk: bytes = self._sock.recv(size if size <= _MAX_READ else _MAX_READ)
        self._left -= len(chunk)
        if self._left < 0:
            raise ReplyTooLarge(self._max)
        return chunk

    def _head(self) -> tuple[int, str, dict[str, str]]:
        """The status, the version and the headers of the next reply; the buffer keeps what follows them."""
        searched = 0
        while (end := _HEAD_END.search(self._buffer, searched)) is None:
            if len(self._buffer) > _MAX_HEAD:
                raise http.client.LineTooLong("reply head")
            searched = max(0, len(self._buffer) - 3)
            chunk = self._recv(_READ)
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
            if len(length.lstrip("0")) > _MAX_DIGITS or int(length) - len(self._buffer) > self._left:
                raise ReplyTooLarge(self._max, length)  # refused before the body is read (beyond what came with
                # its head): the head and the body it declares would take more than the cap
            return self._exactly(int(length)), True
        while chunk := self._recv(_READ):
            self._buffer += chunk
        body = bytes(self._buffer)
        self._buffer.clear()
        return body, False

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = self._recv(max(_READ, size - len(self._buffer)))
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
            chunk = self._recv(_READ)
            if not chunk:
                raise http.client.IncompleteRead(bytes(self._buffer))
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        return line.rstrip(b"\r")

    def _chunked(self) -> bytes:
        body = bytearray()  # not a list of parts: a million one-byte chunks would cost 40 bytes of memory each
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            if not _HEX.fullmatch(size_text):
                raise http.client.IncompleteRead(bytes(body))
            size = int(size_text, 16)
            if size == 0:
                while self._line():  # trailer fields, up to the blank line that ends them
                    pass
                return bytes(body)
            if size - len(self._buffer) > self._left:
                raise ReplyTooLarge(self._max, str(len(body) + size))  # refused before the chunk is read
            body += self._exactly(size)
            self._line()  # the CRLF after the chunk's data
