"""evalkit's MCP proxy end to end: a candidate program in the sandbox uses the real `mcp` SDK's stdio client on the
command evalkit gives it (EVALKIT_MCP_STOCK); its messages reach a real MCP server the test starts (outside the
sandbox) through the endpoint. A live run records the tool list and each result; a replay serves them without
calling the server's tools; a server with another tool list (a new version), and a call the recording does not hold,
are refused like a stale model call."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the `agents` extra (in `test` too) installs the MCP SDK")

from evalkit.core.config import McpServerConfig, Mode  # noqa: E402
from evalkit.core.key import EvalKey  # noqa: E402
from evalkit.gate.comparable import changed_components, undeclared_tool_changes  # noqa: E402
from evalkit.programs.endpoint import Endpoint  # noqa: E402
from evalkit.programs.endpoint.mcp_proxy import McpProxy  # noqa: E402
from evalkit.programs.sandbox import run_program  # noqa: E402
from evalkit.records.call import Reply, Request  # noqa: E402
from evalkit.records.trajectory import MAX_TOOL_RESULT_CHARS  # noqa: E402
from evalkit.run.mismatch import ReplayRefusal  # noqa: E402
from evalkit.run.program_mcp import McpServers, ProgramMcp, cut_result  # noqa: E402
from evalkit.run.recording import Provenance, Recording, ToolEntry  # noqa: E402

SERVER = '''
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("stock", version="{version}")


@server.tool()
def stock_level(sku: str = "A1") -> int:
    """How many of the item are in the warehouse."""
    with open(Path(__file__).with_name("calls.log"), "a") as log:  # the backend: a replay must never reach it
        log.write(sku + "\\n")
    return {{"A1": 4, "B2": 0}}.get(sku, 0)


@server.tool()
def reorder(sku: str, quantity: int) -> str:
    """Order more of an item."""
    raise RuntimeError("the supplier is closed")


if __name__ == "__main__":
    server.run("stdio")
'''

# the team's own code: the mcp SDK's stdio client, started on the command evalkit gives instead of the server
PROGRAM = '''
import asyncio, json, os, shlex
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    command, *args = shlex.split(os.environ["EVALKIT_MCP_STOCK"])
    out = {}
    async with stdio_client(StdioServerParameters(command=command, args=args)) as (read, write):
        async with ClientSession(read, write) as session:
            started = await session.initialize()
            out["server"] = [started.server_info.name, started.server_info.version]
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            level = await session.call_tool("stock_level", {"sku": SKU})
            out["level"] = [level.structured_content, level.is_error]
            failed = await session.call_tool("reorder", {"sku": "B2", "quantity": 3})
            out["reorder"] = [failed.content[0].text, failed.is_error]
    json.dump(out, open("response.json", "w"))

try:
    asyncio.run(main())
except BaseException as error:
    json.dump({"error": repr(error)[:2000]}, open("response.json", "w"))
'''


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder bubblewrap's user may enter (pytest's own base folder is private), for the socket and the server."""
    with tempfile.TemporaryDirectory(prefix="evalkit-mcp-proxy-test-") as made:
        os.chmod(made, 0o755)
        yield Path(made).resolve()


@pytest.fixture
def venv() -> Iterator[Path]:
    """This venv (it has the mcp SDK), shown read-only to the program; the folders above it get the search bit
    for the test where they lack it (as tests/product/test_sql_agent.py's reachable_venv)."""
    changed = []
    for above in Path(sys.prefix).resolve().parents:
        mode = above.stat().st_mode
        if above.owner() == Path.home().owner() and not mode & stat.S_IXOTH:
            above.chmod(mode | stat.S_IXOTH)
            changed.append((above, mode))
    yield Path(sys.prefix)
    for above, mode in changed:
        above.chmod(mode)


def _recording() -> Recording:
    key = EvalKey(suite="mcp_agent", dataset="d@1", dataset_sha="0", model="m", prompt_version="none",
                  prompt_sha="0")
    return Recording(key=key, provenance=Provenance(kind="recorded"))


def _run_case(folder: Path, venv: Path, backend: ProgramMcp, sku: str = "A1") -> tuple[dict[str, object], McpProxy]:
    program = folder / "agent.py"
    program.write_text(f"SKU = {sku!r}\n{PROGRAM}", encoding="utf-8")

    def answer(call_id: str, request: Request) -> Reply:
        raise AssertionError("this program makes no model call")

    with Endpoint(folder / "e.sock", "case-1", "m", answer, mcp=backend) as endpoint:
        ran = run_program(program, [], b"{}", {}, [], timeout_s=60, max_response_bytes=1 << 20,
                          endpoint=folder / "e.sock", python_env=venv, mcp=["stock"])
    assert ran.status == "finished", ran.reason
    assert ran.response is not None and endpoint.mcp is not None
    return ran.response, endpoint.mcp


def _proxy(folder: Path, mode: Mode, recording: Recording, new: dict[str, ToolEntry]) -> ProgramMcp:
    servers = McpServers({"stock": McpServerConfig(command=("python", "stock_server.py"))}, folder)
    return ProgramMcp(servers, mode, recording, "the recording", lambda text: text, new)


def test_a_program_s_mcp_calls_are_recorded_live_replayed_without_the_tools_and_refused_when_stale(
        folder: Path, venv: Path) -> None:
    (folder / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="1.2.0")), encoding="utf-8")
    log = folder / "calls.log"
    new: dict[str, ToolEntry] = {}
    live = _proxy(folder, Mode.LIVE, _recording(), new)
    try:
        seen, proxy = _run_case(folder, venv, live)
    finally:
        live.running.close()
    assert "reorder" in seen, seen
    assert seen == {"server": ["stock", "1.2.0"], "tools": ["reorder", "stock_level"], "level": [{"result": 4}, False],
                    "reorder": [seen["reorder"][0], True]}, seen  # type: ignore[index]
    assert "reorder" in seen["reorder"][0]  # type: ignore[index]  # the server's own error text, as it gave it
    assert proxy.calls == ["stock: stock_level", "stock: reorder"]
    assert sorted(new) == ["mcp/case-1/stock|0", "mcp/case-1/stock|1", "mcp/case-1/stock|tools/list"]
    assert new["mcp/case-1/stock|0"].arguments == {"sku": "A1"} and new["mcp/case-1/stock|1"].error
    assert log.read_text(encoding="utf-8") == "A1\n"  # the live run reached the backend once

    recorded = _recording().model_copy(update={"tools": new})
    replay = _proxy(folder, Mode.REPLAY, recorded, {})
    try:
        again, _ = _run_case(folder, venv, replay)
        replay.refuse_misses()  # nothing missed
        assert again == seen
        assert log.read_text(encoding="utf-8") == "A1\n"  # the replay called no tool

        other, refused = _run_case(folder, venv, replay, sku="B2")  # arguments never recorded
        assert "recorded with other arguments" in str(other.get("error")), other
        assert refused.unserved is not None and "mcp/case-1/stock|0 (stock_level)" in refused.unserved
        with pytest.raises(ReplayRefusal, match=r"tool call mcp/case-1/stock\|0 \(stock_level\) was recorded with "
                                                 r"other arguments \(MCP server stock\)"):
            replay.refuse_misses()
    finally:
        replay.running.close()

    # a new version of the server, whose tool list the program would read: refused at the list, naming it
    (folder / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="2.0.0")), encoding="utf-8")
    upgraded = _proxy(folder, Mode.REPLAY, recorded, {})
    try:
        stale, _ = _run_case(folder, venv, upgraded)
        assert "tools/list changed since" in str(stale.get("error")), stale
        with pytest.raises(ReplayRefusal, match=r"tool tools/list changed since mcp/case-1/stock\|tools/list was "
                                                 r"recorded"):
            upgraded.refuse_misses()
    finally:
        upgraded.running.close()
    assert log.read_text(encoding="utf-8") == "A1\n"


def test_the_proxy_answers_what_it_serves_and_names_what_it_does_not() -> None:
    class Backend:
        def servers(self) -> dict[str, dict[str, str]]:
            return {"stock": {"name": "stock", "version": "1"}}

        def list_tools(self, case: str, server: str) -> dict[str, object]:
            return {"tools": []}

        def call_tool(self, case: str, server: str, n: int, name: str, arguments: object) -> str:
            return f"{case}: call {n} of {name} is not recorded"

    proxy = McpProxy("c", Backend())

    def ask(method: str, params: dict[str, object] | None = None, server: str = "stock") -> object:
        return proxy.handle(server, json.dumps({"jsonrpc": "2.0", "id": 7, "method": method,
                                                "params": params or {}}).encode())

    started = ask("initialize", {"protocolVersion": "2025-06-18"})
    assert started == {"jsonrpc": "2.0", "id": 7, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "stock", "version": "1"}}}
    assert proxy.handle("stock", b'{"jsonrpc": "2.0", "method": "notifications/initialized"}') is None
    assert ask("resources/list") == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32601, "message": "evalkit's MCP proxy serves initialize, ping, tools/list and tools/call, not "
                                   "resources/list"}}
    assert "no server 'other'" in json.dumps(ask("tools/list", server="other"))
    refused = ask("tools/call", {"name": "stock_level", "arguments": {}})
    assert refused == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32000,
                                                            "message": "c: call 0 of stock_level is not recorded"}}
    after = ask("tools/list")  # the case's trajectory ended at the refusal
    assert "an earlier call of this case was not served" in json.dumps(after)
    assert ask("ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}


def _identity(folder: Path, version: str, server: str = SERVER) -> dict[str, str]:
    (folder / "stock_server.py").write_text(textwrap.dedent(server.format(version=version)), encoding="utf-8")
    servers = McpServers({"stock": McpServerConfig(command=("python", "stock_server.py"))}, folder)
    try:
        return servers.identity()
    finally:
        servers.close()


def test_the_proxied_servers_tools_are_in_the_eval_key_as_an_agents_are(folder: Path) -> None:
    first = _identity(folder, "1.2.0")
    assert sorted(first) == ["stock.reorder", "stock.stock_level"]
    assert _identity(folder, "1.2.0") == first  # a restarted server of the same version and tools: the same key
    upgraded = _identity(folder, "2.0.0")  # the server's version is in each of its tools' fingerprints
    assert sorted(upgraded) == sorted(first) and all(upgraded[name] != first[name] for name in first)
    renamed = _identity(folder, "1.2.0", SERVER.replace("def reorder(", "def restock("))
    assert sorted(renamed) == ["stock.restock", "stock.stock_level"]

    def key(tools: dict[str, str]) -> dict[str, Any]:
        return EvalKey(suite="mcp_agent", dataset="d@1", dataset_sha="0", model="m", prompt_version="none",
                       prompt_sha="0", tools=tools).model_dump(mode="json")

    # a baseline made with another server version: incomparable unless the policy declares the change
    reasons = undeclared_tool_changes(key(first), key(upgraded), ())
    assert len(reasons) == 1 and "tools.stock.reorder" in reasons[0] and "tools.stock.stock_level" in reasons[0]
    assert "tool_changes ([stock.reorder, stock.stock_level])" in reasons[0]
    assert undeclared_tool_changes(key(first), key(upgraded), ("stock.reorder", "stock.stock_level")) == []
    assert undeclared_tool_changes(key(first), key(upgraded), ("*",)) == []
    assert set(changed_components(key(first), key(upgraded))) == {"tools.stock.reorder", "tools.stock.stock_level"}
    # another tool list: the tool gone and the tool added are each a change
    assert "tools.stock.restock (absent -> " in undeclared_tool_changes(key(first), key(renamed), ())[0]
    assert undeclared_tool_changes(key(first), key(first), ()) == []


PICTURES = '''
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer("pictures", version="1")


@server.tool()
def photo() -> Image:
    """A shelf's photo."""
    return Image(data=bytes(range(256)) * 64, format="png")


@server.tool()
def page(token: str) -> str:
    """A long page that echoes what it was given."""
    return "token " + token + " " + "x" * 9000


if __name__ == "__main__":
    server.run("stdio")
'''


def test_a_proxied_tool_result_is_cut_and_masked_as_an_agents_tool_result_is(folder: Path) -> None:
    (folder / "pictures.py").write_text(textwrap.dedent(PICTURES), encoding="utf-8")
    servers = McpServers({"pictures": McpServerConfig(command=("python", "pictures.py"))}, folder)
    new: dict[str, ToolEntry] = {}
    try:
        live = ProgramMcp(servers, Mode.LIVE, _recording(), "the recording",
                          lambda text: text.replace("sk-secret", "[redacted]"), new)
        image = live.call_tool("case-1", "pictures", 0, "photo", {})
        page = live.call_tool("case-1", "pictures", 1, "page", {"token": "sk-secret"})
        replay = ProgramMcp(servers, Mode.REPLAY, _recording().model_copy(update={"tools": new}), "the recording",
                            lambda text: text, {})
        assert replay.call_tool("case-1", "pictures", 0, "photo", {}) == image  # replay serves what live gave
        assert replay.call_tool("case-1", "pictures", 1, "page", {"token": "sk-secret"}) == page
    finally:
        servers.close()
    assert isinstance(image, dict) and isinstance(page, dict)
    # the base64 is not kept: the program reads what the recording holds, a note naming what was cut
    data = len(base64.b64encode(bytes(range(256)) * 64))
    assert image["content"] == [{"type": "text", "text": f"[image image/png: {data:,} characters of data, cut]"}]
    text = page["content"][0]["text"]
    assert len(text) == MAX_TOOL_RESULT_CHARS and text.endswith(" characters in all, cut]")
    assert text.startswith("token [redacted] x") and "sk-secret" not in json.dumps(page)
    assert "structuredContent" not in page  # `{"result": <the page>}` is over the bound too: dropped, said so
    size = len(json.dumps({"result": "token [redacted] " + "x" * 9000}))
    assert page["content"][-1] == {"type": "text", "text": f"[structured content of {size:,} characters as JSON, cut]"}
    recorded = {key: json.loads(entry.content) for key, entry in new.items()}
    assert recorded == {"mcp/case-1/pictures|0": image, "mcp/case-1/pictures|1": page}
    assert max(len(entry.content) for entry in new.values()) < 2 * MAX_TOOL_RESULT_CHARS


def test_a_result_within_the_bound_is_kept_as_it_came() -> None:
    small = {"content": [{"type": "text", "text": "4"}, {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                         {"type": "resource", "resource": {"uri": "file:///a", "text": "short"}}],
             "structuredContent": {"result": 4}, "isError": False}
    assert cut_result(small) == small
    blob = {"content": [{"type": "resource", "resource": {"uri": "file:///big", "mimeType": "application/pdf",
                                                          "blob": "A" * 5000}}]}
    assert cut_result(blob) == {"content": [{"type": "text", "text": "[resource application/pdf file:///big: 5,000 "
                                                                     "characters of blob, cut]"}]}


RUN_PROGRAM = '''
import asyncio, json, os, shlex
import openai
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def stock():
    command, *args = shlex.split(os.environ["EVALKIT_MCP_STOCK"])
    async with stdio_client(StdioServerParameters(command=command, args=args)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return (await session.call_tool("stock_level", {"sku": "A1"})).structured_content["result"]

task = json.load(open("task.json"))
level = asyncio.run(stock())
reply = openai.OpenAI().chat.completions.create(model="x", messages=[
    {"role": "user", "content": f"{task['question']} (stock: {level})"}])
json.dump({"answer": reply.choices[0].message.content, "stock": level, "tools": [], "steps": 1},
          open("response.json", "w"))
'''


@pytest.mark.slow
@pytest.mark.usefixtures("hydra_conf")
def test_a_suite_routing_an_mcp_server_records_live_and_replays_from_the_cli_and_refuses_an_upgraded_server(
        folder: Path, venv: Path, run_evalkit: Any) -> None:
    from fakes.server import FakeOpenAI
    from fakes.tool_model import shop_model
    from helpers.compose import composed

    from evalkit.core.config import validate_config
    from evalkit.run.runner import run_suite

    (folder / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="1.2.0")), encoding="utf-8")
    program = folder / "agent.py"
    program.write_text(RUN_PROGRAM, encoding="utf-8")
    common = [f"run.recordings={folder / 'recordings'}", f"suite.program.python_env={venv}",
              f"agent_code.program={program}", f"+suite.program.mcp.stock.command=[python,{folder}/stock_server.py]"]
    with FakeOpenAI(shop_model) as model:
        live = run_suite(validate_config(composed("suite=sql_agent", "mode=live", f"model.base_url={model.base_url}",
                                                  f"run.out={folder / 'live'}", *common),
                                         {"agent_code": "baseline", "model": "shop-agent", "dataset": "sql_agent"}))
        assert "(stock: 4)" in json.dumps(model.chat_requests[0].body)
    assert live.recording_path is not None
    recorded = json.loads(live.recording_path.read_text(encoding="utf-8"))
    proxied = sorted(key for key in recorded["tools"] if key.startswith("mcp/"))
    # per case: the tool call, and the list the SDK's client asks for itself (to check results against schemas)
    assert proxied[:2] == ["mcp/alice-orders/stock|0", "mcp/alice-orders/stock|tools/list"] and len(proxied) == 6
    assert (folder / "calls.log").read_text(encoding="utf-8") == "A1\n" * 3

    replay = run_evalkit("suite=sql_agent", "baseline=none", f"run.out={folder / 'replay'}", *common)
    assert replay.returncode in (0, 1), replay.stdout[-2000:] + replay.stderr[-2000:]  # a decision, not a refusal
    report = json.loads((folder / "replay" / "report.json").read_text(encoding="utf-8"))
    assert report["provenance"]["mode"] == "replay"
    assert (folder / "calls.log").read_text(encoding="utf-8") == "A1\n" * 3  # no tool was called

    (folder / "stock_server.py").write_text(textwrap.dedent(SERVER.format(version="2.0.0")), encoding="utf-8")
    refused = run_evalkit("suite=sql_agent", "baseline=none", f"run.out={folder / 'upgraded'}", *common)
    assert refused.returncode == 3, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert "tool stock_level changed since mcp/alice-orders/stock|0 was recorded" in refused.stderr
    assert "(MCP server stock)" in refused.stderr
    assert not (folder / "upgraded" / "report.json").exists()

    # the servers' tools are in the run's eval key, as an agent's: a baseline made with the other server version is
    # incomparable, unless the policy declares the change
    baseline = folder / "live" / "report.json"
    assert sorted(json.loads(baseline.read_text(encoding="utf-8"))["eval"]["tools"]) == ["stock.reorder",
                                                                                         "stock.stock_level"]
    with FakeOpenAI(shop_model) as model:
        run_suite(validate_config(composed("suite=sql_agent", "mode=live", f"model.base_url={model.base_url}",
                                           f"run.out={folder / 'live2'}", *common),
                                  {"agent_code": "baseline", "model": "shop-agent", "dataset": "sql_agent"}))
    gated = run_evalkit("suite=sql_agent", f"baseline={baseline}", f"run.out={folder / 'gated'}", *common)
    assert gated.returncode == 2, gated.stdout[-2000:] + gated.stderr[-2000:]
    decision = json.loads((folder / "gated" / "decision.json").read_text(encoding="utf-8"))
    assert decision["decision"] == "incomparable"
    assert "tools.stock.stock_level" in json.dumps(decision) and "tool_changes" in json.dumps(decision)
    declared = run_evalkit("suite=sql_agent", f"baseline={baseline}", f"run.out={folder / 'declared'}",
                           "+policy.tool_changes=[stock.reorder,stock.stock_level]", *common)
    assert declared.returncode in (0, 1), declared.stdout[-2000:] + declared.stderr[-2000:]
    decision = json.loads((folder / "declared" / "decision.json").read_text(encoding="utf-8"))
    assert decision["decision"] != "incomparable" and "tools.stock.stock_level" in decision["changed"]


def test_a_proxied_server_that_cannot_start_is_refused_in_one_line_naming_its_setting(folder: Path) -> None:
    from evalkit.core.errors import InputError

    servers = {"gone": McpServerConfig(command=("python", "no_such_server.py"))}
    with pytest.raises(InputError, match=r"^suite.program.mcp.gone: cannot start the server") as refused:
        McpServers(servers, folder)
    assert "\n" not in str(refused.value)
