"""Resuming an interrupted agent run (`+run.resume=true`, evalkit.run.journal): the journal keeps each finished
step's call and each tool result as it comes, and the resumed run serves them, so it ends with the trajectories and
the recording of a run never interrupted, without calling a finished step's tools (or model) again. A tool whose
implementation changed since is called again: a journaled result is served under the replay's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.agents.tools import ToolBox, ToolOutcome
from evalkit.core.config import BudgetConfig, Mode, ModelConfig, RunSettings
from evalkit.core.dataset import Case
from evalkit.core.key import EvalKey
from evalkit.live.budget import Budget
from evalkit.records.call import Message, Reply, Request, Tool, ToolCall, Usage
from evalkit.run.agent_loop import Agent
from evalkit.run.execute import Execution, LiveSetup, Source, Workload, execute
from evalkit.run.journal import Journal, read_journal_tools
from evalkit.run.recording import Entry, Provenance, Recording, ToolEntry, request_fingerprint
from evalkit.run.run_plan import CallSettings
from evalkit.run.suite import SuiteTask

MODEL = ModelConfig(name="m", provider="openai", base_url="http://127.0.0.1:9/v1", options={"seed": 1})
CASES = [Case(f"c{i}", {"question": f"c{i}"}) for i in range(6)]
LOOKUPS = 2  # each case looks two records up, then answers from what it read


class Killed(BaseException):
    """The process dying mid-run (kill -9, a power cut): nothing of the run after it happens."""


class Lookup:
    """A tool whose every execution is counted (a real one may write, charge or send); `kill_at` kills the run as its
    execution number `kill_at` starts."""

    tool = Tool(name="lookup", description="A record by reference.",
                parameters={"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]})

    def __init__(self, kill_at: int | None = None, fingerprint: str = "lookup-v1") -> None:
        self.ran: list[str] = []
        self.kill_at = kill_at
        self.fingerprint = fingerprint

    def invoke(self, arguments: Any, timeout: float) -> ToolOutcome:
        if len(self.ran) == self.kill_at:
            raise Killed
        self.ran.append(arguments["ref"])
        return ToolOutcome(f"record {arguments['ref']}: {len(arguments['ref']) * 7}")


class Model:
    """LOOKUPS lookups, then an answer quoting what the tools said; `kill_at` = (case, step) kills the run there."""

    def __init__(self, kill_at: tuple[str, int] | None = None) -> None:
        self.asked: list[tuple[str, int]] = []
        self.kill_at = kill_at

    def complete(self, request: Request) -> Reply:
        case = request.messages[1].text
        read = [m.text for m in request.messages if m.role == "tool"]
        step = len(read) + 1
        if (case, step) == self.kill_at:
            raise Killed
        self.asked.append((case, step))
        usage = Usage(input_tokens=50, output_tokens=5)
        if len(read) < LOOKUPS:
            return Reply(tool_calls=(ToolCall(id=f"call{step}", tool="lookup", arguments={"ref": f"{case}-{step}"}),),
                         usage=usage)
        return Reply(text="; ".join(read), usage=usage)


def build_task(case: Case, prompt: str, model: ModelConfig) -> Request:
    return Request(model=model.name, options=model.options,
                   messages=(Message(role="system", content=prompt), Message(role="user", content=case.question)))


def _run(model: Model, tool: Lookup, journal: Journal, resumed: dict[str, Entry] | None = None,
         resumed_tools: dict[str, ToolEntry] | None = None) -> Execution:
    live = LiveSetup(providers={"model": model}, settings=RunSettings(out="/tmp/unused", concurrency=1),
                     budget=Budget(BudgetConfig()), journal=journal, resumed=resumed or {},
                     resumed_tools=resumed_tools or {})
    key = EvalKey(suite="s", dataset="d@1", dataset_sha="0", model="m", prompt_version="v1", prompt_sha="0")
    return execute(CallSettings(Mode.LIVE, MODEL, version="t"),
                   Workload(SuiteTask(build_task, None), CASES, "Look it up.",
                            agent=Agent(ToolBox([tool], 5.0), max_steps=LOOKUPS + 1)),
                   Source(Recording(key=key, provenance=Provenance(kind="recorded")), "r", live))


def _kept(execution: Execution) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the run leaves in its recording: every call's request and outcome, every tool result."""
    assert execution.recording is not None
    return ({cid: e.model_dump(mode="json") for cid, e in execution.recording.calls.items()},
            {key: t.model_dump(mode="json") for key, t in execution.recording.tools.items()})


@pytest.mark.parametrize(("where", "tool_kill", "model_kill", "journaled_tools"), [
    # killed in the second tool wave, as case c2's second lookup starts: c0's and c1's are journaled, the rest not
    ("in a tool", 8, None, 8),
    # killed as the model is asked c3's last step: every tool result and c0-c2's answers are journaled
    ("in a model step", None, ("c3", 3), 12),
])
def test_a_resumed_agent_run_serves_the_journaled_tool_results_and_ends_as_an_uninterrupted_run(
        tmp_path: Path, where: str, tool_kill: int | None, model_kill: tuple[str, int] | None,
        journaled_tools: int) -> None:
    whole_tool, whole_model = Lookup(), Model()
    with Journal(tmp_path / "whole.jsonl") as journal:
        whole = _run(whole_model, whole_tool, journal)

    path = tmp_path / "rec.json.journal.jsonl"
    first_tool, first_model = Lookup(kill_at=tool_kill), Model(kill_at=model_kill)
    with Journal(path) as journal, pytest.raises(Killed):
        _run(first_model, first_tool, journal)
    calls, tools = read_journal_tools(path)
    assert len(tools) == journaled_tools == len(first_tool.ran)
    for line in path.read_text().splitlines():  # a call's line reads as before agents existed; a tool's is apart
        assert set(json.loads(line)) in ({"call_id", "entry"}, {"call_id", "tool"})

    again_tool, again_model = Lookup(), Model()
    with Journal(path) as journal:
        resumed = _run(again_model, again_tool, journal, resumed=calls, resumed_tools=tools)

    # no tool ran twice, and none was skipped: the two runs together ran exactly what the whole run ran
    assert sorted(first_tool.ran + again_tool.ran) == sorted(whole_tool.ran)
    assert not set(first_tool.ran) & set(again_tool.ran)
    # nor was the model asked a journaled step again
    assert sorted(first_model.asked + again_model.asked) == sorted(whole_model.asked)
    assert resumed.trajectories == whole.trajectories
    assert {cid: r.text for cid, r in resumed.finals.items()} == {cid: r.text for cid, r in whole.finals.items()}
    assert _kept(resumed) == _kept(whole)
    # each step's fingerprint, made from the last step's (GrowingRequests), is the request's own
    assert whole.recording is not None
    assert all(e.request_sha == request_fingerprint(e.request) for e in whole.recording.calls.values())
    assert resumed.stats["agent"]["tools_resumed"] == journaled_tools
    assert resumed.stats["agent"]["tools_called_live"] == 12 - journaled_tools
    assert "tools_resumed" not in whole.stats["agent"]  # a run that resumed nothing reports as before
    assert resumed.stats["calls"]["resumed"] == len(calls)
    # the journal now holds the whole run, so a second interruption would lose nothing either
    assert len(read_journal_tools(path)[1]) == 12


def test_a_journaled_tool_result_of_a_changed_tool_is_not_served_on_resume(tmp_path: Path) -> None:
    path = tmp_path / "rec.json.journal.jsonl"
    with Journal(path) as journal, pytest.raises(Killed):
        _run(Model(kill_at=("c3", 3)), Lookup(), journal)
    calls, tools = read_journal_tools(path)
    assert len(tools) == 12
    changed = Lookup(fingerprint="lookup-v2")
    with Journal(path) as journal:
        resumed = _run(Model(), changed, journal, resumed=calls, resumed_tools=tools)
    assert len(changed.ran) == 12  # each result journaled for the old implementation is stale: called again
    assert "tools_resumed" not in resumed.stats["agent"]
    assert resumed.recording is not None
    assert {t.fingerprint for t in resumed.recording.tools.values()} == {"lookup-v2"}
