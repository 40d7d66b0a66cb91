"""Opening a connection within a call's deadline: the name resolved, TCP connected, a proxy's tunnel set up and TLS
shaken hands, each waiting only for what is left of the deadline.

`http.client` bounds none of these as a whole: `socket.getaddrinfo` blocks for as long as the system's resolver
takes (no timeout can be given to it), a proxy's reply to `CONNECT` is read a line at a time with each read waiting
the full timeout (a proxy that drips a byte a second holds the call for ever, and the reply's length is bounded
only per line), and a TLS socket's `sendall` gives each partial send the full timeout. Here the name is resolved in
a worker thread that the call waits on only until its deadline (the thread is left to finish on its own: no
resolver call can be interrupted), every read and send of the tunnel and the handshake is given the time left, and
the proxy's reply head is read by the same bounded reader as any reply (evalkit.live.providers.http1), at most
64 KiB. Errors are the standard library's (`OSError`, `ssl.SSLError`, `http.client.HTTPException`) and http1's
DeadlinePassed, as before.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
from typing import Any

from evalkit.live.providers.http1 import DeadlinePassed, Exchange, request_head, seconds_left

__all__ = ["MAX_TUNNEL_REPLY", "open_socket", "resolve"]

MAX_TUNNEL_REPLY = 65536
"""The most a proxy's reply to CONNECT may take (its status line and headers): it has no body."""

AddrInfo = tuple[Any, ...]


def resolve(host: str, port: int, deadline: float) -> list[AddrInfo]:
    """The addresses of `host` (as `socket.getaddrinfo` gives them, for a stream socket), waiting no longer than the
    `deadline` leaves: past it, DeadlinePassed; the resolver's own error as it raised it."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:  # a literal address: nothing to look up, nothing that can wait
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    found: dict[str, Any] = {}
    done = threading.Event()

    def look_up() -> None:
        try:
            found["addresses"] = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        except BaseException as error:  # handed to the caller, which raises it  # noqa: BLE001
            found["error"] = error
        finally:
            done.set()

    threading.Thread(target=look_up, name=f"evalkit-resolve-{host[:40]}", daemon=True).start()
    if not done.wait(seconds_left(deadline)):
        raise DeadlinePassed(f"resolving {host[:100]} took longer than the call's deadline")
    if "error" in found:
        raise found["error"]
    addresses: list[AddrInfo] = found["addresses"]
    return addresses


def _connect(host: str, port: int, deadline: float) -> socket.socket:
    """A TCP connection to the first of `host`'s addresses that accepts one, as `socket.create_connection` makes
    it, by the deadline."""
    error: OSError | None = None
    for family, kind, proto, _, address in resolve(host, port, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(seconds_left(deadline))
            sock.connect(address)
        except DeadlinePassed:
            sock.close()
            raise
        except OSError as failed:
            sock.close()
            error = failed
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client: no delayed request segment
        return sock
    raise error if error is not None else OSError(f"getaddrinfo returned no address for {host[:100]}")


def _tunnel(sock: socket.socket, host: str, port: int, headers: dict[str, str], deadline: float) -> None:
    """Ask the proxy on `sock` for a tunnel to host:port; its reply's head is read whole by the deadline, at most
    MAX_TUNNEL_REPLY bytes, and anything but a 2xx is an OSError as http.client words it."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    head = request_head("CONNECT", where, {"Host": where, **headers}) + b"\r\n"
    view = memoryview(head)
    while view:
        sock.settimeout(seconds_left(deadline))
        view = view[sock.send(view):]
    status, extra = Exchange(sock, MAX_TUNNEL_REPLY).tunnel_reply(deadline)
    if not 200 <= status < 300:
        raise OSError(f"Tunnel connection failed: {status}")
    if extra:  # the target's bytes before the client's first: not a tunnel evalkit can trust
        raise OSError("Tunnel connection failed: the proxy sent data before the tunnel was used")


def open_socket(host: str, port: int, deadline: float, *, tunnel: tuple[str, int, dict[str, str]] | None = None,
                tls: ssl.SSLContext | None = None, server_hostname: str | None = None) -> socket.socket:
    """A connected socket to host:port (a proxy's, with `tunnel` the target's host, port and CONNECT headers),
    TLS-wrapped and shaken hands with `tls` (verifying `server_hostname`), all by the `deadline`."""
    sock: socket.socket = _connect(host, port, deadline)
    try:
        if tunnel is not None:
            _tunnel(sock, *tunnel, deadline)
        if tls is None:
            return sock
        sock = tls.wrap_socket(sock, server_hostname=server_hostname, do_handshake_on_connect=False)
        # CPython bounds a handshake as a whole by the socket's timeout (one deadline over all its reads and writes)
        sock.settimeout(seconds_left(deadline))
        sock.do_handshake()
        return sock
    except BaseException:
        sock.close()  # the wrapped socket once there is one (wrapping detaches the plain one from its descriptor)
        raise
