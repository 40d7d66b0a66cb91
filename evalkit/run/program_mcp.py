"""The run's side of evalkit's MCP proxy (evalkit.programs.endpoint.mcp_proxy): the MCP servers a candidate program
uses (`suite.program.mcp`), their tool lists and tool results recorded in a live run and served in replay.

Each server is started once per run from its command, in the suite's folder and outside the sandbox (as an agent's
MCP server is: evalkit.agents.mcp_tools), in replay too: it is asked only for its name, version and tool list, never
to call a tool, so a replay needs neither the model nor the backends the tools reach. Its implementation fingerprint
covers the command, that name and version and the whole tool list; every recorded list and result carries it, so a
server that now lists other tools (or another version) is refused as stale, naming the server, exactly like a stale
model call, and never serves an old result as fresh.

The servers are started before the run's eval key is built (`McpServers`), so their tools are in it as an agent's
are: `tools.<server>.<tool>`, each the fingerprint of the command, the server's name and version, the names of all
its tools and this tool's listing. A baseline made with another server version or tool list is then incomparable,
or a change the policy's `tool_changes` declares, exactly as for an agent's tools (evalkit.gate.comparable).

What is kept, in the recording's `tools` (records of one case's program by `mcp/<case>/<server>`): `|tools/list` for
each list the program asked, `|<n>` for its n-th tool call to that server, with the tool's name, the arguments and
the `tools/call` result as JSON text (its content blocks, structured content and error flag, as the program's MCP
client reads them), masked by the run's redaction as a reply is and cut as an agent's tool result is (`cut_result`):
the program reads the same cut result live and in replay.
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
from evalkit.records.trajectory import MAX_TOOL_RESULT_CHARS, ToolResult
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.recording import Miss, Recording, ToolEntry, lookup_tool, tool_key

__all__ = ["TOOL_TIMEOUT_S", "McpServers", "ProgramMcp", "cut_result"]

TOOL_TIMEOUT_S = 300.0
"""The longest one proxied tool call may take in a live run; the program's own timeout usually ends it first."""


class McpServers:
    """A run's proxied MCP servers, started (from `suite.program.mcp`, in `cwd`) and listed: each server's
    fingerprint, which its recorded entries carry, and its tools' identity, which the eval key carries. The run
    closes them when its cases are done."""

    def __init__(self, servers: Mapping[str, McpServerConfig], cwd: Path) -> None:
        self.started: dict[str, McpServerTools] = {}
        self.fingerprints: dict[str, str] = {}
        self._tools: dict[str, str] = {}
        try:
            for name, server in servers.items():
                started = start_mcp_server(name, server.command, cwd, server.env, "suite.program.mcp")
                self.started[name] = started
                listing = started.listing()
                # the command as configured (not the interpreter `python` resolves to): a key stable across machines
                self.fingerprints[name] = fingerprint({"kind": "mcp-proxy", "command": list(server.command),
                                                       "server": started.info, "tools": listing})
                names = sorted(str(tool.get("name")) for tool in listing)
                for tool in listing:  # as an agent's MCP tool (evalkit.agents.mcp_tools): an upgrade changes each
                    self._tools[f"{name}.{tool.get('name')}"] = fingerprint({
                        "kind": "mcp-proxy", "command": list(server.command), "server": started.info,
                        "tools": names, "tool": tool})
        except BaseException:
            self.close()
            raise

    def identity(self) -> dict[str, str]:
        """The eval key's `tools`: `<server>.<tool>` -> its fingerprint (server names hold no dot)."""
        return dict(sorted(self._tools.items()))

    def close(self) -> None:
        for started in self.started.values():
            started.close()


class ProgramMcp:
    """The proxied MCP servers of one run as the endpoint's McpBackend (see the module's docstring); `new` holds what
    a live run records."""

    def __init__(self, servers: McpServers, mode: Mode, recording: Recording, where: str,
                 redact: Callable[[str], str], new: dict[str, ToolEntry]) -> None:
        self.mode, self.recording, self.where, self.redact, self.new = mode, recording, where, redact, new
        self.misses: list[Miss] = []
        self._lock = threading.Lock()
        self.running = servers
        """The servers it answers from; their owner (the runner) closes them."""
        self._started = servers.started
        self._fingerprints = servers.fingerprints

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
        if tool != "tools/list":  # a list is the server's identity (and small): kept whole, as the key holds it
            result = cut_result(result)
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



def cut_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """A `tools/call` result cut as an agent's tool result is (records.trajectory.MAX_TOOL_RESULT_CHARS): a tool may
    return a whole file or a screenshot, and the recording is evidence read by people and diffed in reviews. Each
    text block is cut, with its marker; a block whose base64 (`data`, a resource's `blob`) or text would pass the
    bound becomes a text block naming what it was and how long; structured content whose JSON passes it is dropped,
    a text block saying so. What is within the bound is kept as it came."""
    out = dict(result)
    content = result.get("content")
    if isinstance(content, list):
        out["content"] = [_cut_block(block) for block in content]
    structured = result.get("structuredContent")
    if structured is not None:
        size = len(json.dumps(structured, ensure_ascii=False, sort_keys=True))
        if size > MAX_TOOL_RESULT_CHARS:
            del out["structuredContent"]
            out["content"] = [*out.get("content", []), {
                "type": "text", "text": f"[structured content of {size:,} characters as JSON, cut]"}]
    return out


def _cut_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return {**block, "text": ToolResult(call_id="", content=block["text"]).content}
    inner = block.get("resource") if block.get("type") == "resource" else block
    if not isinstance(inner, dict):
        return block
    for field in ("data", "blob", "text"):
        value = inner.get(field)
        if isinstance(value, str) and len(value) > MAX_TOOL_RESULT_CHARS:
            what = " ".join(str(part) for part in (block.get("type"), inner.get("mimeType"), inner.get("uri"))
                            if part)
            return {"type": "text", "text": f"[{what}: {len(value):,} characters of {field}, cut]"}
    return block
