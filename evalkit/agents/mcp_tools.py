"""Tools of an MCP server (Model Context Protocol), started over stdio with the `mcp` SDK (the `agents` extra).

A server is started once per run from its command (`agent.mcp.NAME.command`, run in the suite's folder; a leading
`python` is this interpreter), its session lives on an event loop of its own thread, and each of its tools is a
tool like a suite's Python function (evalkit.agents.tools.ToolImpl): offered with the schema the server lists,
called under `agent.tool_timeout_s`. Its fingerprint covers the server's command, the name and version the server
gives when it starts, the names of all its tools and this tool's description and schema: a server upgrade or a
changed tool is a changed tool (`tools.NAME`), never a stale result served as fresh.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from evalkit.agents.tools import ToolOutcome, failed
from evalkit.core.errors import InputError, one_line
from evalkit.core.fingerprint import fingerprint
from evalkit.records.call import TOOL_NAME, Tool

__all__ = ["McpServerTools", "McpTool", "start_mcp_server"]

STARTUP_S = 60
"""How long a server may take to start and list its tools."""


class McpTool:
    """One tool of a running MCP server."""

    def __init__(self, server: McpServerTools, tool: Tool, fingerprint_: str) -> None:
        self.server, self._tool, self._fingerprint = server, tool, fingerprint_

    @property
    def tool(self) -> Tool:
        return self._tool

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def invoke(self, arguments: Any, timeout: float) -> ToolOutcome:
        problem = _schema_problem(self._tool.parameters, arguments)
        if problem is not None:
            return failed(problem)
        return self.server.call(self._tool.name, dict(arguments), timeout)


def _schema_problem(schema: Mapping[str, Any], arguments: Any) -> str | None:
    """The arguments checked against the schema the server lists, as a Python tool's are (one line, or None)."""
    import jsonschema

    try:
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(e.path))
    except jsonschema.SchemaError:  # a server's schema evalkit cannot read: the server validates for itself
        return None
    if not errors:
        return None
    parts = [f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors[:5]]
    return "arguments do not match the tool's schema: " + "; ".join(parts)


class McpServerTools:
    """One MCP server over stdio: its session on an event loop of its own thread, and its tools."""

    def __init__(self, name: str, command: Sequence[str], cwd: Path, env: Mapping[str, str],
                 setting: str = "agent.mcp") -> None:
        self.name = name
        self.where = f"{setting}.{name}"  # the config setting a refusal names
        self.command = [sys.executable if i == 0 and part == "python" else part for i, part in enumerate(command)]
        self.cwd, self.env = cwd, dict(env)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._listed: list[Any] = []
        self._server: dict[str, Any] = {}
        self._error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"evalkit-mcp-{name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(STARTUP_S):
            self.close()
            raise InputError(f"{self.where}: the server did not start and list its tools within {STARTUP_S}s "
                             f"({' '.join(self.command)})")
        if self._error is not None:
            self.close()
            raise InputError(one_line(f"{self.where}: cannot start the server ({' '.join(self.command)}): "
                                      f"{self._error}", 600))

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as error:  # noqa: BLE001 - said to the starting thread, which refuses the run
            self._error = self._error or f"{type(error).__name__}: {error}"
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._stop = asyncio.Event()
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], cwd=str(self.cwd),
                                       env={**os.environ, **self.env})
        with open(os.devnull, "w", encoding="utf-8") as errlog:  # the server's own logging is not the run's
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                started = await session.initialize()
                info = started.server_info
                self._server = {"name": info.name, "version": info.version}
                self._listed = list((await session.list_tools()).tools)
                self._session = session
                self._ready.set()
                await self._stop.wait()

    def tools(self) -> list[McpTool]:
        """The server's tools, each with its fingerprint."""
        names = sorted(t.name for t in self._listed)
        out = []
        for listed in self._listed:
            if not TOOL_NAME.match(listed.name):
                raise InputError(f"{self.where}: tool {listed.name!r} has a name no provider accepts")
            schema = {k: v for k, v in dict(listed.input_schema or {}).items() if k != "title"}
            tool = Tool(name=listed.name, description=listed.description or "",
                        parameters=schema or {"type": "object", "properties": {}})
            out.append(McpTool(self, tool, fingerprint({
                "kind": "mcp", "command": self.command, "server": self._server, "tools": names,
                "tool": tool.model_dump(mode="json")})))
        return out

    @property
    def info(self) -> dict[str, Any]:
        """The name and version the server gave when it started."""
        return dict(self._server)

    def listing(self) -> list[dict[str, Any]]:
        """The tools as the server listed them, in the protocol's JSON (what a `tools/list` result carries)."""
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in self._listed]

    def call_result(self, name: str, arguments: Any, timeout: float, setting: str) -> dict[str, Any]:
        """The `tools/call` result as the protocol's JSON, unread (evalkit's MCP proxy hands it on as it came); a
        call that got no result is an error result saying why (`setting` names the timeout)."""
        result = self._request(name, arguments, timeout, setting)
        if isinstance(result, ToolOutcome):
            return {"content": [{"type": "text", "text": result.error_message or result.content}], "isError": True}
        return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    def _request(self, name: str, arguments: Any, timeout: float, setting: str) -> Any:
        """The SDK's CallToolResult, or a failed ToolOutcome saying why there is none."""
        session = self._session
        if session is None:
            return failed(f"the MCP server {self.name} is not running")
        future = asyncio.run_coroutine_threadsafe(session.call_tool(name, arguments, read_timeout_seconds=timeout),
                                                  self._loop)
        try:
            return future.result(timeout + 5)
        except (FutureTimeout, TimeoutError):
            future.cancel()
            return failed(f"timed out after {timeout:g}s ({setting})")
        except Exception as error:  # noqa: BLE001 - a failed request (the SDK's own timeout among them)
            text = str(error) or type(error).__name__
            if "timed out" in text.lower() or "timeout" in type(error).__name__.lower():
                return failed(f"timed out after {timeout:g}s ({setting})")
            return failed(f"{type(error).__name__}: {text}")

    def call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolOutcome:
        result = self._request(name, arguments, timeout, "agent.tool_timeout_s")
        if isinstance(result, ToolOutcome):
            return result
        parts = [getattr(block, "text", None) for block in result.content]
        text = "".join(part for part in parts if isinstance(part, str))
        if not text and result.structured_content is not None:
            import json
            text = json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
        if result.is_error:
            return failed(text or "the tool reported an error")
        return ToolOutcome(text)

    def close(self) -> None:
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


def start_mcp_server(name: str, command: Sequence[str], cwd: Path, env: Mapping[str, str],
                     setting: str = "agent.mcp") -> McpServerTools:
    """Start one MCP server; refused in one line (naming `setting`.NAME) when the `mcp` SDK is not installed."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise InputError(f"{setting}.{name}: MCP tools need the `mcp` SDK: pip install 'evalkit[agents]'") from None
    return McpServerTools(name, command, cwd, env, setting)
