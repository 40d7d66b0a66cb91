"""Agents declared in config (issue 37): a suite's Python tools (schema, fingerprint, calls under a deadline), the
loop driven through the run's call path (evalkit.run.agent_loop), tool results recorded and replayed, the tools in
the eval key and the gate, and the trajectory kinds of checks.yaml. In process; the CLI runs are in
tests/agents/test_agent_runs.py."""

from __future__ import annotations

import importlib.util
import json
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit.agents.tools import ToolBox, load_python_tools
from evalkit.core.config import BudgetConfig, Mode, ModelConfig, RunSettings
from evalkit.core.dataset import Case, load_dataset
from evalkit.core.errors import InputError
from evalkit.core.key import EvalKey
from evalkit.gate.comparable import changed_components, undeclared_tool_changes
from evalkit.judging.check_spec import parse_checks
from evalkit.judging.checks import judge_trajectory
from evalkit.live.budget import Budget
from evalkit.records.call import Reply, Request, ToolCall
from evalkit.records.trajectory import FinalAnswer, ModelCall, ToolResult
from evalkit.run.agent_loop import Agent
from evalkit.run.execute import LiveSetup, Source, Workload, execute
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.recording import Provenance, Recording, load_recording, save_recording
from evalkit.run.run_plan import CallSettings
from evalkit.run.suite import load_task

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "order_agent"
MODEL = ModelConfig(name="local-model", provider="openai", base_url="http://127.0.0.1:9/v1",
                    options={"temperature": 0, "seed": 7})
PROMPT = (SUITE / "prompts" / "v1.txt").read_text(encoding="utf-8")

FAULTY_TOOLS = '''

def broken_report(order_id: int = 0) -> str:
    """A report service that is down."""
    raise RuntimeError("the report service is down")


def slow_report(order_id: int = 0) -> str:
    """A report service that never answers."""
    import threading
    threading.Event().wait()
    return "never"
'''


def _authored() -> Any:
    spec = importlib.util.spec_from_file_location("order_agent_author_test", SUITE / "author_recordings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AUTHORED = _authored()


class Counting:
    """The authored model as a provider, counting the steps it answered."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        reply: Reply = AUTHORED.authored_reply(request)
        return reply


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A copy of the order agent, with two faulty tools, that a test may edit."""
    copy = tmp_path / "order_agent"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    with (copy / "tools.py").open("a", encoding="utf-8") as tools:
        tools.write(FAULTY_TOOLS)
    return copy


def _agent(suite: Path, timeout_s: float = 20.0, max_steps: int = 4) -> Agent:
    tools, workers = load_python_tools(suite / "tools.py")
    return Agent(ToolBox(tools, timeout_s, workers.close), max_steps)


def _live(provider: Counting, budget: BudgetConfig | None = None) -> LiveSetup:
    return LiveSetup(providers={"model": provider}, settings=RunSettings(out="/tmp/unused", concurrency=4),
                     budget=Budget(budget or BudgetConfig()))


def _recording() -> Recording:
    key = EvalKey(suite="order_agent", dataset="order-agent@1", dataset_sha="0", model=MODEL.name,
                  prompt_version="v1", prompt_sha="0")
    return Recording(key=key, provenance=Provenance(kind="recorded"))


def _run(suite: Path, mode: Mode, recording: Recording, agent: Agent, provider: Counting | None = None,
         questions: dict[str, str] | None = None, budget: BudgetConfig | None = None) -> Any:
    dataset = load_dataset(suite / "datasets" / "v1.json")
    cases = list(dataset.cases)
    if questions:
        cases = [Case(case.id, {**case.fields, "question": questions[case.id]}) if case.id in questions else case
                 for case in cases]
    return execute(CallSettings(mode, MODEL, version="test"), Workload(load_task(suite), cases, PROMPT, agent),
                   Source(recording, "the recording",
                          _live(provider or Counting(), budget) if mode is not Mode.REPLAY else None))


# --- tools --------------------------------------------------------------------------------------------------------

def test_a_python_tool_is_offered_with_the_schema_of_its_signature_and_its_docstring(suite: Path) -> None:
    agent = _agent(suite)
    try:
        tool = next(t for t in agent.toolbox.tools if t.name == "lookup_order")
        assert tool.parameters == {"type": "object", "properties": {"order_id": {"type": "integer"}},
                                   "required": ["order_id"], "additionalProperties": False}
        assert tool.description.startswith("Look up a shop order by its number")
        assert [t.name for t in agent.toolbox.tools] == ["broken_report", "lookup_customer", "lookup_order",
                                                         "slow_report"]
    finally:
        agent.toolbox.close()


def _fingerprints(suite: Path) -> dict[str, str]:
    tools, workers = load_python_tools(suite / "tools.py")
    workers.close()
    return {tool.tool.name: tool.fingerprint for tool in tools}


def test_a_tool_fingerprint_moves_with_its_source_its_helpers_and_its_data_and_only_its_own(suite: Path) -> None:
    before = _fingerprints(suite)
    tools = suite / "tools.py"
    tools.write_text(tools.read_text().replace("WHERE id = ?\", (order_id,)", "WHERE id = ? \", (order_id,)"))
    after = _fingerprints(suite)
    assert after["lookup_order"] != before["lookup_order"]
    assert after["lookup_customer"] == before["lookup_customer"]  # another tool's edit is not this one's change
    # a helper both call (_db) is part of both
    tools.write_text(tools.read_text().replace("_DB.row_factory = sqlite3.Row",
                                               "_DB.row_factory = sqlite3.Row  # rows by name"))
    helper = _fingerprints(suite)
    assert helper["lookup_order"] != after["lookup_order"] and helper["lookup_customer"] != after["lookup_customer"]
    data = suite / "data" / "orders.sql"
    data.write_text(data.read_text().replace("'shipped'", "'lost'"))
    assert all(_fingerprints(suite)[name] != helper[name] for name in helper)  # TOOL_DATA: the database's rows


def test_every_failure_of_a_tool_call_is_an_error_result_never_an_exception(suite: Path) -> None:
    agent = _agent(suite, timeout_s=1.0)
    box = agent.toolbox
    try:
        assert json.loads(box.invoke("lookup_order", {"order_id": 1002}).content)["status"] == "delivered"
        unknown = box.invoke("issue_refund", {"order_id": 1})
        assert unknown.error and "no tool named 'issue_refund'" in unknown.content
        assert "lookup_order" in unknown.content  # names the tools there are
        bad = box.invoke("lookup_order", {"order_id": "number 1001"})
        assert bad.error and "arguments do not match the tool's schema: order_id" in bad.content
        extra = box.invoke("lookup_order", {"order_id": 1001, "force": True})
        assert extra.error and "force" in extra.content
        not_object = box.invoke("lookup_order", [1001])
        assert not_object.error and "must be a JSON object" in not_object.content
        raised = box.invoke("broken_report", {})
        assert raised.error and raised.error_message == "RuntimeError: the report service is down"
        started = time.monotonic()
        hung = box.invoke("slow_report", {})
        assert hung.error and "timed out after 1s (agent.tool_timeout_s)" in hung.content
        assert time.monotonic() - started < 15  # cut at its deadline (plus a worker's start), not left hanging
        # the pool replaced the stopped worker: the next call is answered
        assert json.loads(box.invoke("lookup_customer", {"customer_id": 3}).content)["name"] == "Alan Turing"
    finally:
        box.close()


def test_a_tools_file_that_cannot_be_loaded_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text("import no_such_module_anywhere\n")
    with pytest.raises(InputError, match=r"tools.py: cannot import the suite's tools: ModuleNotFoundError"):
        load_python_tools(tmp_path / "tools.py")
    (tmp_path / "tools.py").write_text("TOOL_DATA = ['../secrets.txt']\ndef f(x: int) -> int:\n    return x\n")
    with pytest.raises(InputError, match=r"TOOL_DATA names '../secrets.txt', which is not a file in"):
        load_python_tools(tmp_path / "tools.py")


# --- the loop --------------------------------------------------------------------------------------------------------

def test_a_live_agent_run_then_its_replay_give_the_same_trajectories_without_model_or_tools(suite: Path) -> None:
    agent = _agent(suite)
    provider = Counting()
    try:
        live = _run(suite, Mode.LIVE, _recording(), agent, provider)
    finally:
        agent.toolbox.close()
    assert live.recording is not None and len(provider.requests) == 14
    email = live.trajectories["task/email-1001"]
    assert [type(s).__name__ for s in email.steps] == ["ModelCall", "ToolCall", "ToolResult", "ModelCall",
                                                        "ToolCall", "ToolResult", "ModelCall", "FinalAnswer"]
    assert [s.call_id for s in email.steps if isinstance(s, ModelCall)] == [
        "task/email-1001@1", "task/email-1001@2", "task/email-1001@3"]
    assert email.steps[-1] == FinalAnswer(text="Order 1001 was placed by Ada Lovelace (ada@example.com).")
    assert live.finals["task/email-1001"].text == email.steps[-1].text
    # the second step's request carries the first step's tool call and its result, and the tools offered
    second = provider.requests[[r.messages[-1].role for r in provider.requests].index("tool")]
    assert second.messages[-2].tool_calls[0].tool == "lookup_order" and second.tools
    assert set(live.recording.tools) == {f"{s.call_id}|{c.id}" for t in live.trajectories.values()
                                         for s, c in zip(t.steps, t.steps[1:], strict=False)
                                         if isinstance(s, ModelCall) and isinstance(c, ToolCall)}

    # the replay: no provider, and the tools' processes are never started (the box is closed, its pool empty)
    closed = _agent(suite)
    closed.toolbox.close()
    closed.toolbox.invoke = None  # type: ignore[assignment,method-assign]  # a replay that calls a tool crashes
    replay = _run(suite, Mode.REPLAY, live.recording, closed)
    assert replay.trajectories == live.trajectories
    assert {cid: r.text for cid, r in replay.finals.items()} == {cid: r.text for cid, r in live.finals.items()}
    assert replay.stats["agent"]["tools_called_live"] == 0 and live.stats["agent"]["tools_called_live"] == 8


def test_a_replay_refuses_a_tool_result_recorded_for_another_implementation_naming_the_tool(suite: Path) -> None:
    agent = _agent(suite)
    try:
        live = _run(suite, Mode.LIVE, _recording(), agent)
    finally:
        agent.toolbox.close()
    tools = suite / "tools.py"
    tools.write_text(tools.read_text().replace("SELECT id, name, email FROM", "SELECT id, name, email  FROM"))
    changed = _agent(suite)
    try:
        with pytest.raises(ReplayRefusal, match=r"tool lookup_customer changed since task/\S+@2\|call_2 was recorded "
                                                r"\(implementation fingerprint: recorded \w+, now \w+\)"):
            _run(suite, Mode.REPLAY, live.recording, changed)
        # record-missing calls only the changed tool again, and the model only where what it reads changed: the
        # edit changed no result, so no step is asked again
        provider = Counting()
        again = _run(suite, Mode.RECORD_MISSING, live.recording, changed, provider)
    finally:
        changed.toolbox.close()
    assert again.stats["agent"]["tools_called_live"] == 2  # the two lookup_customer calls, no lookup_order
    assert provider.requests == []
    assert again.trajectories == live.trajectories
    assert again.recording is not None
    assert {e.fingerprint for e in again.recording.tools.values() if e.tool == "lookup_customer"} == \
        {changed.toolbox.fingerprint_of("lookup_customer")}


def test_record_missing_calls_the_model_only_for_the_cases_whose_steps_changed(suite: Path) -> None:
    agent = _agent(suite)
    try:
        live = _run(suite, Mode.LIVE, _recording(), agent)
    finally:
        agent.toolbox.close()
    data = suite / "data" / "orders.sql"  # the customers' rows change: only the customer lookups' results do
    data.write_text(data.read_text().replace("grace@example.com", "grace.hopper@example.com"))
    changed = _agent(suite)
    provider = Counting()
    try:
        again = _run(suite, Mode.RECORD_MISSING, live.recording, changed, provider)
    finally:
        changed.toolbox.close()
    # every tool's fingerprint moved (TOOL_DATA), so every tool was called again; the model was asked again only
    # where a result it reads changed: customer-1003's last step (Grace's email), nothing else
    asked = {req.messages[-1].tool_call_id for req in provider.requests}
    assert len(provider.requests) == 1 and asked == {"call_2"}
    assert again.trajectories["task/customer-1003"] != live.trajectories["task/customer-1003"]
    assert {k: v for k, v in again.trajectories.items() if k != "task/customer-1003"} == \
        {k: v for k, v in live.trajectories.items() if k != "task/customer-1003"}


@pytest.mark.parametrize(("directive", "why"), [
    ("[tool:broken_report]", "RuntimeError: the report service is down"),
    ("[tool:slow_report]", "timed out after 1s (agent.tool_timeout_s); the tool was stopped"),
    ("[unknown-tool]", "no tool named 'issue_refund'"),
    ("[bad-args]", "arguments do not match the tool's schema: order_id"),
])
def test_a_failing_tool_call_is_an_error_result_the_model_reads_and_the_trajectory_keeps(
        suite: Path, directive: str, why: str) -> None:
    agent = _agent(suite, timeout_s=1.0)
    try:
        done = _run(suite, Mode.LIVE, _recording(), agent,
                    questions={"status-1001": f"What is the status of order 1001? {directive}"})
    finally:
        agent.toolbox.close()
    trajectory = done.trajectories["task/status-1001"]
    errors = [s for s in trajectory.steps if isinstance(s, ToolResult) and s.error]
    assert len(errors) == 1 and why in (errors[0].error_message or "")
    assert why in (done.finals["task/status-1001"].text or "")  # the model read it and said so
    entry = next(e for k, e in done.recording.tools.items() if k.startswith("task/status-1001@"))
    assert entry.error and why in entry.content  # recorded: the replay serves the same error
    checks = parse_checks("checks:\n  - {name: ok, no-tool-errors: true}\n", "checks.yaml").checks[0]
    verdict = judge_trajectory(checks, trajectory.model_dump(mode="json"))
    assert not verdict.passed and "failed" in verdict.message and why in verdict.message
    assert done.finals["task/status-1002"].text == "Order 1002 is delivered; its total was 15.99 US dollars."


def test_an_agent_that_keeps_calling_tools_fails_at_max_steps_naming_the_limit(suite: Path) -> None:
    agent = _agent(suite, max_steps=3)
    try:
        done = _run(suite, Mode.LIVE, _recording(), agent,
                    questions={"status-1001": "What is the status of order 1001? [loop]"})
    finally:
        agent.toolbox.close()
    final = done.finals["task/status-1001"]
    assert final.status == "recorded" and final.text is None
    assert final.reason == ("task/status-1001: the agent reached agent.max_steps=3 still calling tools (last: "
                            "lookup_order); no final answer")
    assert len(done.trajectories["task/status-1001"].model_calls()) == 3
    assert done.finals["task/total-1004"].text is not None  # the others answered


def test_a_step_the_budget_denies_leaves_its_case_unscored_naming_the_step(suite: Path) -> None:
    agent = _agent(suite)
    try:
        done = _run(suite, Mode.LIVE, _recording(), agent, budget=BudgetConfig(max_calls=8))
    finally:
        agent.toolbox.close()
    denied = {cid: r for cid, r in done.finals.items() if r.status == "budget_denied"}
    assert denied and all(f"{cid}@" in (r.reason or "") and "budget" in (r.reason or "").lower()
                          for cid, r in denied.items())
    assert sum(1 for r in done.calls.values() if r.status == "recorded") == 8


# --- recordings, the key and the gate ------------------------------------------------------------------------------

def test_a_recording_made_before_agents_is_read_and_written_unchanged(tmp_path: Path) -> None:
    shipped = next((ROOT / "recordings" / "issue_triage").glob("*.json"))
    copy = tmp_path / shipped.name
    save_recording(load_recording(shipped), copy)
    assert copy.read_bytes() == shipped.read_bytes()
    assert '"tools"' not in copy.read_text()


def test_a_tool_changed_since_the_baseline_makes_the_runs_incomparable_unless_the_policy_declares_it() -> None:
    base = {"suite": "s", "components": {"model": "m@1"}, "tools": {"lookup_order": "aaa", "lookup_customer": "bbb"}}
    changed = {**base, "tools": {"lookup_order": "ccc", "lookup_customer": "bbb"}}
    reasons = undeclared_tool_changes(base, changed, ())
    assert len(reasons) == 1 and "tools.lookup_order (aaa -> ccc)" in reasons[0] and "tool_changes" in reasons[0]
    assert undeclared_tool_changes(base, changed, ("lookup_order",)) == []
    assert undeclared_tool_changes(base, changed, ("*",)) == []
    assert undeclared_tool_changes(base, base, ()) == []
    assert changed_components(base, changed) == {"tools.lookup_order": ("aaa", "ccc")}
    removed = {**base, "tools": {"lookup_order": "aaa"}}
    assert "tools.lookup_customer (bbb -> absent)" in undeclared_tool_changes(base, removed, ())[0]
    without = {"suite": "s", "components": {"model": "m@1"}}  # a baseline of the suite before it had tools
    assert undeclared_tool_changes(without, base, ())


def test_an_eval_key_without_tools_is_spelt_as_before() -> None:
    key = EvalKey(suite="s", dataset="d@1", dataset_sha="0", model="m", prompt_version="v1", prompt_sha="0")
    assert "tools" not in key.model_dump(mode="json")
    assert key.model_copy(update={"tools": {"t": "f"}}).model_dump(mode="json")["tools"] == {"t": "f"}


# --- checks.yaml -------------------------------------------------------------------------------------------------

def test_the_trajectory_kinds_of_checks_yaml_read_the_steps() -> None:
    checks = {spec.name: spec for spec in parse_checks(textwrap.dedent("""
        checks:
          - {name: called, tool-called: {tool: lookup_order, arguments: {order_id: 1001}}}
          - {name: never, tool-not-called: lookup_customer}
          - {name: order, tool-sequence: [lookup_order, lookup_customer]}
          - {name: exact, tool-sequence: {tools: [lookup_customer], mode: exact}}
          - {name: args, tool-args: {tool: lookup_order, schema: {properties: {order_id: {type: integer}}}}}
          - {name: few, steps: 2}
          - {name: clean, no-tool-errors: true}
        """), "checks.yaml").checks}
    trajectory = {"steps": [
        {"kind": "model_call", "call_id": "task/c@1"},
        {"kind": "tool_call", "id": "1", "tool": "lookup_order", "arguments": {"order_id": 1001}},
        {"kind": "tool_result", "call_id": "1", "content": "{}"},
        {"kind": "model_call", "call_id": "task/c@2"},
        {"kind": "tool_call", "id": "2", "tool": "lookup_customer", "arguments": {"customer_id": 1}},
        {"kind": "tool_result", "call_id": "2", "content": "no", "error": True, "error_message": "boom"},
        {"kind": "model_call", "call_id": "task/c@3"},
        {"kind": "final_answer", "text": "done"}]}
    verdicts = {name: judge_trajectory(spec, trajectory) for name, spec in checks.items()}
    assert {name: v.passed for name, v in verdicts.items()} == {
        "called": True, "never": False, "order": True, "exact": False, "args": True, "few": False, "clean": False}
    assert all(spec.call == "trajectory" for spec in checks.values())
    unseen = judge_trajectory(checks["called"], None)
    assert not unseen.passed and "no trajectory" in unseen.message


@pytest.mark.parametrize(("entry", "says"), [
    ("{name: x, tool-sequence: {tools: [a], mode: sideways}}", "mode"),
    ("{name: x, tool-args: {tool: a}}", "give one of 'subset'"),
    ("{name: x, steps: -1}", "steps"),
    ("{name: x, tool-called: a, field: label}", "takes no 'field'"),
])
def test_a_mistaken_trajectory_check_is_refused_in_one_line_naming_the_file(entry: str, says: str) -> None:
    with pytest.raises(InputError, match=r"checks.yaml") as refused:
        parse_checks(f"checks:\n  - {entry}\n", "checks.yaml")
    assert says in str(refused.value) and "\n" not in str(refused.value)
