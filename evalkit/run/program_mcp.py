"""The run's side of evalkit's MCP proxy (evalkit.programs.endpoint.mcp_proxy): the MCP servers a candidate program
uses (`suite.program.mcp`), their tool lists and tool results recorded in a live run and served in replay.

Each server is started once per run from its command, in the suite's folder and outside the sandbox (as an agent's
MCP server is: evalkit.agents.mcp_tools), in replay too: it is asked only for its name, version and tool list, never
to call a tool, so a replay needs neither the model nor the backends the tools reach. Its implementation fingerprint
covers the command, that name and version and the whole tool list; every recorded list and result carries it, so a
server that now lists other tools (or another version) is refused as stale, naming the server, exactly like a stale
model call, and never serves an old result as fresh.

What is kept, in the recording's `tools` (records of one case's program by `mcp/<case>/<server>`): `|tools/list` for
each list the program asked, `|<n>` for its n-th tool call to that server, with the tool's name, the arguments and
the whole `tools/call` result as JSON text (its content blocks, structured content and error flag, as the program's
MCP client reads them), masked by the run's redaction as a reply is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalkit.agents.mcp_tools import McpServerTools, start_mcp_server
from evalkit.core.config import McpServerConfig, Mode
from evalkit.core.fingerprint import fingerprint
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.recording import Miss, Recording, ToolEntry, lookup_tool, tool_key

__all__ = ["TOOL_TIMEOUT_S", "ProgramMcp"]

TOOL_TIMEOUT_S = 300.0
"""The longest one proxied tool call may take in a live run; the program's own timeout usually ends it first."""


class ProgramMcp:
    """The proxied MCP servers of one run (see the module's docstring); `new` holds what a live run records."""

    def __init__(self, servers: Mapping[str, McpServerConfig], cwd: Path, mode: Mode, recording: Recording,
                 where: str, redact: Callable[[str], str], new: dict[str, ToolEntry]) -> None:
        self.mode, self.recording, self.where, self.redact, self.new = mode, recording, where, redact, new
        self.misses: list[Miss] = []
        self._lock = threading.Lock()
        self._started: dict[str, McpServerTools] = {}
        self._fingerprints: dict[str, str] = {}
        try:
            for name, server in servers.items():
                started = start_mcp_server(name, server.command, cwd, server.env, "suite.program.mcp")
                self._started[name] = started
                self._fingerprints[name] = fingerprint({"kind": "mcp-proxy", "command": list(server.command),
                                                        "server": started.info, "tools": started.listing()})
        except BaseException:
            self.close()
            raise

    def servers(self) -> Mapping[str, Mapping[str, Any]]:
        return {name: started.info for name, started in self._started.items()}

    def list_tools(self, case: str, server: str) -> dict[str, Any] | str:
        return self._answer(tool_key(f"mcp/{case}/{server}", "tools/list"), server, "tools/list", None,
                            lambda: {"tools": self._started[server].listing()})

    def call_tool(self, case: str, server: str, n: int, name: str, arguments: Any) -> dict[str, Any] | str:
        return self._answer(tool_key(f"mcp/{case}/{server}", str(n)), server, name, arguments,
                            lambda: self._started[server].call_result(name, arguments, TOOL_TIMEOUT_S,
                                                                      "the proxy's tool timeout"))

    def _answer(self, key: str, server: str, tool: str, arguments: Any,
                ask: Callable[[], dict[str, Any]]) -> dict[str, Any] | str:
        implementation = self._fingerprints[server]
        if self.mode is not Mode.LIVE:
            found = lookup_tool(self.recording, key, tool, arguments, implementation)
            if isinstance(found, ToolEntry):
                return dict(json.loads(found.content))
            if self.mode is Mode.REPLAY:
                miss = Miss(found.kind, f"{found.reason} (MCP server {server})", found.call_id)
                with self._lock:
                    self.misses.append(miss)
                return f"{miss.reason}; {self.where} cannot serve it"
        text = json.dumps(ask(), ensure_ascii=False, sort_keys=True)
        masked = self.redact(text)
        try:  # a key value the server echoed is masked as it arrives, as a reply's is
            result = json.loads(masked)
        except ValueError:  # a mask that broke the JSON (a key with a quote in it): the text alone, as an error
            result = {"content": [{"type": "text", "text": masked}], "isError": True}
            masked = json.dumps(result, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self.new[key] = ToolEntry(tool=tool, fingerprint=implementation, arguments=arguments, content=masked,
                                      error=bool(result.get("isError")))
        return dict(result)

    def refuse_misses(self) -> None:
        """A replay that could not serve a list or a tool call: exit 3, naming the first."""
        if self.misses:
            raise ReplayRefusal(f"cannot replay from {self.where}: {self.misses[0].reason} ({len(self.misses)} MCP "
                                "request(s) cannot be served)")

    def close(self) -> None:
        for started in self._started.values():
            started.close()
