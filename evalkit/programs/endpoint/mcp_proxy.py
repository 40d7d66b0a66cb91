"""evalkit's MCP proxy: the MCP servers (stdio) a candidate program uses, answered by the run instead of by servers in
the sandbox, so their tool results are recorded in a live run and served in replay.

The program starts the command in `EVALKIT_MCP_<NAME>` where it would start the server (evalkit.programs.launcher's
relay): each JSON-RPC message its MCP client writes is POSTed to `/evalkit/mcp/<name>` on the endpoint, and read
here. The proxy answers the tools part of the protocol: `initialize` (with the real server's name and version),
`ping`, `tools/list` and `tools/call`; notifications are taken and dropped; anything else (resources, prompts,
sampling) is a JSON-RPC "method not found" naming what is served. Each list and each call goes to the run's
`McpBackend` under the case and the server, calls numbered in order of arrival per server (a replay serves the n-th
call the n-th recorded result, and one asked with other arguments is stale).

A list or call the run cannot serve (not recorded, a changed tool list, other arguments) is a JSON-RPC error the
program's MCP client raises, and, as for a model call, it ends the case's trajectory: every later call of the case is
refused too, and the run says why.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from evalkit.programs.endpoint.wire import WireError

__all__ = ["PREFIX", "McpBackend", "McpProxy"]

PREFIX = "/evalkit/mcp/"
_NOT_FOUND, _INVALID, _SERVER = -32601, -32600, -32000


class McpBackend(Protocol):
    """The run's side of the proxy: each server's identity, and its tool list and tool results (replayed, or
    asked of the real server and recorded). An outcome the run cannot serve is a str: why."""

    def servers(self) -> Mapping[str, Mapping[str, Any]]:
        """Server name -> its `serverInfo` (name and version)."""
        ...

    def list_tools(self, case: str, server: str) -> dict[str, Any] | str:
        """The `tools/list` result."""
        ...

    def call_tool(self, case: str, server: str, n: int, name: str, arguments: Any) -> dict[str, Any] | str:
        """The `tools/call` result of the case's n-th call to `server` (0-based)."""
        ...


class McpProxy:
    """The proxy of one case: a counter per server, and the first thing it could not serve."""

    def __init__(self, case: str, backend: McpBackend) -> None:
        self.case, self.backend = case, backend
        self.calls: list[str] = []
        """`<server>: <tool>` for each tool call served, in order."""
        self.unserved: str | None = None
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def handle(self, server: str, body: bytes) -> dict[str, Any] | None:
        """The JSON-RPC answer to one message (None: a notification, or a response, which is answered by nothing)."""
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return _error(None, _INVALID, "the message is not JSON")
        if not isinstance(message, dict):
            return _error(None, _INVALID, "expected one JSON-RPC message (an object), not a batch")
        method, ident = message.get("method"), message.get("id")
        if not isinstance(method, str) or "id" not in message:
            return None  # a notification (initialized, cancelled, progress) or a response: nothing to say
        known = self.backend.servers()
        if server not in known:
            return _error(ident, _INVALID, f"evalkit's MCP proxy has no server {server[:40]!r}")
        given = message.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            return {"jsonrpc": "2.0", "id": ident, "result": self._answer(server, method, params, known[server])}
        except WireError as error:
            return _error(ident, _INVALID, str(error))
        except _Refused as error:
            return _error(ident, _SERVER, str(error))
        except _Unknown as error:
            return _error(ident, _NOT_FOUND, str(error))

    def _answer(self, server: str, method: str, params: dict[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            version = params.get("protocolVersion")
            return {"protocolVersion": version if isinstance(version, str) else "2025-06-18",
                    "capabilities": {"tools": {"listChanged": False}}, "serverInfo": dict(info)}
        if method == "ping":
            return {}
        if method not in ("tools/list", "tools/call"):
            raise _Unknown(f"evalkit's MCP proxy serves initialize, ping, tools/list and tools/call, not "
                           f"{method[:60]}")
        with self._lock:
            if self.unserved is not None:
                raise _Refused(f"an earlier call of this case was not served: {self.unserved}")
        if method == "tools/list":
            return self._served(self.backend.list_tools(self.case, server))
        name = params.get("name")
        if not isinstance(name, str):
            raise WireError("tools/call: params.name must be the tool's name")
        with self._lock:
            n = self._counts.get(server, 0)
            self._counts[server] = n + 1
        result = self._served(self.backend.call_tool(self.case, server, n, name, params.get("arguments")))
        with self._lock:
            self.calls.append(f"{server}: {name}")
        return result

    def _served(self, outcome: dict[str, Any] | str) -> dict[str, Any]:
        if isinstance(outcome, str):
            with self._lock:
                self.unserved = self.unserved or outcome
            raise _Refused(outcome)
        return outcome

    def refuse(self, reason: str) -> None:
        """End the case's trajectory here (a model call of the case was not served)."""
        with self._lock:
            self.unserved = self.unserved or reason


class _Unknown(Exception):
    pass


class _Refused(Exception):
    pass


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
