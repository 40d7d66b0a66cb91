"""An agent's MCP tools (agent.mcp, evalkit/agents/mcp_tools.py) against a real MCP server the test starts over
stdio with the `mcp` SDK: offered with the schema the server lists, fingerprinted by command, server version and
tools, every failure an error result, and recorded and replayed like a Python tool's results."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from evalkit.core.config import AgentConfig, McpServerConfig, Mode
from evalkit.core.errors import InputError
from evalkit.records.trajectory import ToolResult
from evalkit.run.agent_loop import suite_agent
from evalkit.run.mismatch import ReplayRefusal

pytest.importorskip("mcp", reason="the `agents` extra (in `test` too) installs the MCP SDK")

from test_agents import SUITE, _recording, _run  # noqa: E402 - the order agent's in-process harness

SERVER = '''
import threading
from mcp.server.mcpserver import MCPServer

server = MCPServer("stock", version="{version}")


@server.tool()
def stock_level(sku: str = "A1") -> int:
    """How many of the item are in the warehouse."""
    return {{"A1": 4, "B2": 0}}.get(sku, 0)


@server.tool()
def reorder(sku: str, quantity: int) -> str:
    """Order more of an item."""
    raise RuntimeError("the supplier is closed")


@server.tool()
def audit() -> str:
    """Count everything (never ends)."""
    threading.Event().wait()
    return "never"


if __name__ == "__main__":
    server.run("stdio")
'''


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    copy = tmp_path / "order_agent"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    (copy / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="1.2.0")))
    return copy


def _settings(timeout_s: float = 20.0) -> AgentConfig:
    return AgentConfig(tool_timeout_s=timeout_s, max_steps=4,
                       mcp={"stock": McpServerConfig(command=("python", "stock_server.py"))})


def test_an_mcp_servers_tools_are_offered_called_and_fingerprinted_by_its_version(suite: Path) -> None:
    agent = suite_agent(_settings(timeout_s=6), suite)  # room for a loaded machine; `audit` never answers
    assert agent is not None
    box = agent.toolbox
    try:
        assert [t.name for t in box.tools] == ["audit", "lookup_customer", "lookup_order", "reorder", "stock_level"]
        stock = next(t for t in box.tools if t.name == "stock_level")
        assert stock.description == "How many of the item are in the warehouse."
        assert stock.parameters["properties"]["sku"]["type"] == "string"
        assert box.invoke("stock_level", {"sku": "A1"}).content == "4"
        bad = box.invoke("stock_level", {"sku": 5})
        assert bad.error and "arguments do not match the tool's schema: sku" in bad.content
        raised = box.invoke("reorder", {"sku": "A1", "quantity": 3})
        assert raised.error and "Error executing tool reorder" in raised.content  # what the server says
        hung = box.invoke("audit", {})
        assert hung.error and "timed out after 6s" in hung.content
        assert box.invoke("stock_level", {"sku": "B2"}).content == "0"  # the server still answers
        before = box.identity()
    finally:
        box.close()
    (suite / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="1.3.0")))
    upgraded = suite_agent(_settings(), suite)
    assert upgraded is not None
    try:
        after = upgraded.toolbox.identity()
    finally:
        upgraded.toolbox.close()
    assert after["stock_level"]["fingerprint"] != before["stock_level"]["fingerprint"]  # the server's version
    assert after["lookup_order"] == before["lookup_order"]  # the Python tools are not the server's


def test_an_mcp_tools_results_are_recorded_and_a_replay_needs_no_call_and_refuses_an_upgraded_server(
        suite: Path) -> None:
    agent = suite_agent(_settings(), suite)
    assert agent is not None
    question = {"status-1001": "What is the status of order 1001? [tool:stock_level]"}
    try:
        live = _run(suite, Mode.LIVE, _recording(), agent, questions=question)
    finally:
        agent.toolbox.close()
    steps = live.trajectories["task/status-1001"].steps
    stock = [s for s in steps if isinstance(s, ToolResult)][0]
    assert stock.content == "4" and not stock.error
    replayed = suite_agent(_settings(), suite)
    assert replayed is not None
    try:
        replayed.toolbox.invoke = None  # type: ignore[assignment,method-assign]  # a replay that calls a tool crashes
        again = _run(suite, Mode.REPLAY, live.recording, replayed, questions=question)
    finally:
        replayed.toolbox.close()
    assert again.trajectories == live.trajectories
    (suite / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="2.0.0")))
    upgraded = suite_agent(_settings(), suite)
    assert upgraded is not None
    try:
        with pytest.raises(ReplayRefusal, match=r"tool stock_level changed since task/status-1001@1\|call_1"):
            _run(suite, Mode.REPLAY, live.recording, upgraded, questions=question)
    finally:
        upgraded.toolbox.close()


def test_a_server_that_cannot_start_is_refused_in_one_line_naming_it(suite: Path) -> None:
    settings = AgentConfig(mcp={"gone": McpServerConfig(command=("python", "no_such_server.py"))})
    with pytest.raises(InputError, match=r"agent.mcp.gone: cannot start the server") as refused:
        suite_agent(settings, suite)
    assert "\n" not in str(refused.value)
