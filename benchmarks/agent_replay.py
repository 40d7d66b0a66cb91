"""Benchmark: what replaying agents' trajectories costs against replaying single calls (issue 37).

Replays, in process through evalkit.run.execute (the call path every run takes: lookup, request fingerprints, tool
results from the recording), 1,000 agent cases of 5 model steps each (4 tool calls, then the answer) and 5,000
single-call cases: the same number of model calls. Each recording is made first, untimed, by a live run against a
scripted model (and, for the agents, an in-process tool), then the replay is timed a few times, interleaved, and
the minimum kept. The replays run with Python's cyclic garbage collector paused, as `evalkit run` runs them
(evalkit.core.collector.paused around the whole run); the first line gives the same ratio with the
collector on, for comparison (an agent's steps build more containers, which the collector rescans with the
recording's), and the one before the last the ratio of the replays' CPU time (the process's, min of the
rounds), steadier than the wall clock on a shared machine. The last line is
`agent_vs_single=<agent replay / single replay>` (target, issue 37: <= 1.2).
The checks' pytest process is not part of it: it reads one final answer per case either way.

Run from the project root:  .venv/bin/python benchmarks/agent_replay.py
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from typing import Any

from evalkit.agents.tools import ToolBox, ToolOutcome
from evalkit.core import collector
from evalkit.core.config import BudgetConfig, Mode, ModelConfig, RunSettings
from evalkit.core.dataset import Case
from evalkit.core.key import EvalKey
from evalkit.live.budget import Budget
from evalkit.records.call import Message, Reply, Request, Tool, ToolCall, Usage
from evalkit.run.agent_loop import Agent
from evalkit.run.execute import LiveSetup, Source, Workload, execute
from evalkit.run.recording import Provenance, Recording
from evalkit.run.run_plan import CallSettings
from evalkit.run.suite import SuiteTask

MODEL = ModelConfig(name="bench-model", provider="openai", base_url="http://127.0.0.1:9/v1", options={"seed": 1})
STEPS = 5
AGENT_CASES = 1000
SINGLE_CASES = AGENT_CASES * STEPS
ROUNDS = 3


class Lookup:
    """An in-process tool: a record by id (the benchmark times evalkit, not a tool's process)."""

    tool = Tool(name="lookup", description="A record by its id.",
                parameters={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]})
    fingerprint = "bench-lookup"

    def invoke(self, arguments: Any, timeout: float) -> ToolOutcome:
        return ToolOutcome(f'{{"id": {arguments["id"]}, "status": "shipped", "note": "{"x" * 200}"}}')


class Scripted:
    """STEPS - 1 tool calls, then an answer; a single call's answer at once."""

    def complete(self, request: Request) -> Reply:
        done = sum(len(m.tool_calls) for m in request.messages)
        if request.tools and done < STEPS - 1:
            return Reply(tool_calls=(ToolCall(id=f"c{done}", tool="lookup", arguments={"id": done}),),
                         usage=Usage(input_tokens=100, output_tokens=10), latency_ms=5.0)
        return Reply(text=f"answer after {done} lookups " + "y" * 200, usage=Usage(input_tokens=100, output_tokens=40),
                     latency_ms=5.0)


def build_task(case: Case, prompt: str, model: ModelConfig) -> Request:
    return Request(model=model.name, options=model.options,
                   messages=(Message(role="system", content=prompt), Message(role="user", content=case.question)))


def _execute(mode: Mode, cases: list[Case], recording: Recording, agent: Agent | None) -> Any:
    live = None if mode is Mode.REPLAY else LiveSetup(
        providers={"model": Scripted()}, settings=RunSettings(out="/tmp/unused", concurrency=8),
        budget=Budget(BudgetConfig()))
    return execute(CallSettings(mode, MODEL, version="bench"),
                   Workload(SuiteTask(build_task, None), cases, "You look records up. " * 20, agent),
                   Source(recording, "bench", live))


def _recorded(cases: list[Case], agent: Agent | None) -> Recording:
    key = EvalKey(suite="bench", dataset="bench@1", dataset_sha="0", model=MODEL.name, prompt_version="v1",
                  prompt_sha="0")
    made = _execute(Mode.LIVE, cases, Recording(key=key, provenance=Provenance(kind="authored")), agent)
    assert made.recording is not None
    recording: Recording = made.recording
    return recording


def main() -> None:
    agent = Agent(ToolBox([Lookup()], 10.0), max_steps=STEPS)
    agent_cases = [Case(f"a{i}", {"question": f"What is the status of record {i}?"}) for i in range(AGENT_CASES)]
    single_cases = [Case(f"s{i}", {"question": f"What is the status of record {i}?"}) for i in range(SINGLE_CASES)]
    agent_recording, single_recording = _recorded(agent_cases, agent), _recorded(single_cases, None)
    assert len(agent_recording.calls) == len(single_recording.calls) == SINGLE_CASES
    times: dict[tuple[str, bool], list[float]] = {}
    cpus: dict[tuple[str, bool], list[float]] = {}  # the process's CPU time: steadier than the wall on a shared machine
    for _ in range(ROUNDS):
        for paused in (False, True):
            with collector.paused() if paused else contextlib.nullcontext():
                started, cpu = time.perf_counter(), time.process_time()
                replayed = _execute(Mode.REPLAY, agent_cases, agent_recording, agent)
                times.setdefault(("agent", paused), []).append(time.perf_counter() - started)
                cpus.setdefault(("agent", paused), []).append(time.process_time() - cpu)
                assert len(replayed.finals) == AGENT_CASES and replayed.stats["agent"]["tools_called_live"] == 0
                started, cpu = time.perf_counter(), time.process_time()
                _execute(Mode.REPLAY, single_cases, single_recording, None)
                times.setdefault(("single", paused), []).append(time.perf_counter() - started)
                cpus.setdefault(("single", paused), []).append(time.process_time() - cpu)
            gc.collect()  # what a round left, outside the timed replays
    best = {side: min(values) for side, values in times.items()}
    on = best["agent", False] / best["single", False]
    print(f"collector on (evalkit run pauses it): agent replay {best['agent', False]:.3f} s, single replay "
          f"{best['single', False]:.3f} s: agent_vs_single_collector_on={on:.2f}")
    print(f"agent replay: {AGENT_CASES} cases x {STEPS} steps = {SINGLE_CASES} calls + "
          f"{AGENT_CASES * (STEPS - 1)} tool results in {best['agent', True]:.3f} s; single replay: {SINGLE_CASES} "
          f"calls in {best['single', True]:.3f} s (collector paused, as evalkit run; min of {ROUNDS}; cpus "
          f"{os.cpu_count()}, load {os.getloadavg()[0]:.2f})")
    least = {side: min(values) for side, values in cpus.items()}
    print(f"cpu time (collector paused): agent replay {least['agent', True]:.3f} s, single replay "
          f"{least['single', True]:.3f} s: agent_vs_single_cpu={least['agent', True] / least['single', True]:.2f}")
    print(f"agent_vs_single={best['agent', True] / best['single', True]:.2f}")


if __name__ == "__main__":
    main()
