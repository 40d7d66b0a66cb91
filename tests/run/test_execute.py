"""The call engine with in-process stand-in providers: concurrency, retries, budget, journal, resume."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from evalkit.core.config import BudgetConfig, Mode, ModelConfig, RunSettings
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError, OutageError
from evalkit.core.key import EvalKey
from evalkit.live.budget import Budget
from evalkit.live.providers.base import CallFailure
from evalkit.records.call import Message, Reply, Request, Usage
from evalkit.render.sections import latency_rows
from evalkit.run.execute import LiveSetup, Source, Workload, execute, provider_limits
from evalkit.run.journal import Journal, read_journal
from evalkit.run.recording import Provenance, Recording
from evalkit.run.run_plan import CallSettings
from evalkit.run.suite import SuiteTask

# The stand-in providers below are handed to the engine directly; a config's provider only has to be installed.
MODEL = ModelConfig(name="m", provider="openai")
JUDGE = ModelConfig(name="j", provider="openai")
KEY = EvalKey(suite="s", dataset="d@1", dataset_sha="a", model="m", prompt_version="v1", prompt_sha="p")
CASES = [Case(f"c{i}", {}) for i in range(20)]


def build_task(case: Case, prompt: str, model: ModelConfig) -> Request:
    return Request(model=model.name, messages=(Message(role="user", content=f"{prompt}:{case.id}"),))


def build_judge(case: Case, output: str, judge: ModelConfig) -> dict[str, Request]:
    return {"q": Request(model=judge.name, messages=(Message(role="user", content=f"judge {output}"),))}


class StandIn:
    """Answers each request with its last message; `script` makes chosen call ids fail first."""

    def __init__(self, script: dict[str, list[CallFailure]] | None = None, delay: float = 0.0) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.delay = delay
        self.calls: list[str] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()

    def complete(self, request: Request) -> Reply:
        content = request.messages[-1].content
        with self.lock:
            self.calls.append(content)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            failures = self.script.get(content)
            failure = failures.pop(0) if failures else None
        try:
            time.sleep(self.delay)
            if failure is not None:
                raise failure
            return Reply(text=f"out:{content}", stop_reason="stop", usage=Usage(input_tokens=5, output_tokens=2))
        finally:
            with self.lock:
                self.in_flight -= 1


def empty() -> Recording:
    return Recording(key=KEY, provenance=Provenance(kind="recorded"), calls={})


def run(provider: StandIn, *, mode: Mode = Mode.LIVE, recording: Recording | None = None, judge: bool = False,
        budget: BudgetConfig | None = None, journal: Journal | None = None, resumed=None, at_once=None,
        **settings):
    slept: list[float] = []
    live = LiveSetup(providers={"model": provider, "judge": provider},
                     settings=RunSettings(out="unused", **settings), budget=Budget(budget or BudgetConfig()),
                     journal=journal, resumed=resumed or {}, sleep=slept.append, at_once=at_once or {})
    task = SuiteTask(build_task, build_judge if judge else None)
    execution = execute(CallSettings(mode, MODEL, JUDGE if judge else None, version="test"),
                        Workload(task, CASES, "p"), Source(recording or empty(), "rec.json", live))
    return execution, slept


def test_calls_run_concurrently_up_to_the_limit():
    provider = StandIn(delay=0.05)  # long enough for five calls to overlap; speed itself is benchmarks/live.py's job
    execution, _ = run(provider, concurrency=5)
    assert provider.most_in_flight == 5
    assert {r.status for r in execution.calls.values()} == {"recorded"}
    assert execution.recording is not None and len(execution.recording.calls) == 20
    assert execution.recording.provenance.kind == "recorded"


class Timed(StandIn):
    """A stand-in whose replies carry their time in flight, as a real provider's do."""

    def complete(self, request: Request) -> Reply:
        started = time.perf_counter()
        reply = super().complete(request)
        return reply.model_copy(update={"latency_ms": round((time.perf_counter() - started) * 1000, 1)})


def test_an_in_process_provider_is_sent_one_call_at_a_time_and_the_run_says_so_once():
    local = ModelConfig(name="m", provider="llamacpp")  # its spec: one call at a time
    at_once, said = provider_limits(8, {"model": local, "judge": JUDGE})
    assert at_once == {"model": 1}
    assert said == ("run.concurrency=8 lowered to 1 for the model under test (provider llamacpp serves one call at "
                    "a time): more calls in flight would only queue behind it, and be timed as latency")
    assert provider_limits(8, {"model": MODEL, "judge": JUDGE}) == ({}, None)  # a server: run.concurrency holds
    assert provider_limits(1, {"model": local}) == ({}, None)  # nothing lowered, nothing said
    alone = Timed(delay=0.05)
    lowered, _ = run(alone, concurrency=4, at_once=at_once)
    assert alone.most_in_flight == 1 and lowered.stats["latency"]["pace"]["concurrency"] == 1
    # the judge's wave, on a provider that serves many, keeps run.concurrency
    judged = Timed(delay=0.05)
    execution, _ = run(judged, judge=True, concurrency=4, at_once=at_once)
    assert judged.most_in_flight == 4 and execution.stats["latency"]["pace"]["concurrency"] == 4


def test_retryable_failures_are_retried_with_backoff_and_retry_after():
    script = {"p:c3": [CallFailure("429", retryable=True, retry_after=2.5, status=429),
                       CallFailure("reset", retryable=True)]}
    provider = StandIn(script)
    execution, slept = run(provider, retries=3, backoff_s=0.1)
    assert execution.calls["task/c3"].status == "recorded"
    assert provider.calls.count("p:c3") == 3
    assert slept[0] == 2.5 and 0 <= slept[1] <= 0.2
    assert execution.stats["live"]["retried"] == 2 and execution.stats["live"]["sent"] == 22


def test_a_failed_call_ends_the_run_as_an_outage_and_no_further_call_starts():
    provider = StandIn({"p:c1": [CallFailure("400 bad schema", retryable=False, status=400)]})
    with pytest.raises(OutageError) as outage:
        run(provider, retries=3, concurrency=1)
    assert str(outage.value).startswith("task/c1: no reply after 1 attempt(s) (not retryable): 400 bad schema "
                                        "(1 call(s) failed, 1 succeeded, the rest not started; nothing was gated")
    assert provider.calls == ["p:c0", "p:c1"]  # not retried, and nothing sent after the failure


def test_retries_run_out_into_an_outage():
    failures = [CallFailure("500", retryable=True, status=500)] * 3
    slept: list[float] = []
    with pytest.raises(OutageError, match=r"task/c0: no reply after 3 attempt\(s\) \(retryable\): 500"):
        live = LiveSetup(providers={"model": StandIn({"p:c0": failures})},
                         settings=RunSettings(out="unused", retries=2, backoff_s=0.01, concurrency=1),
                         budget=Budget(BudgetConfig()), sleep=slept.append)
        execute(CallSettings(Mode.LIVE, MODEL, version="test"), Workload(SuiteTask(build_task, None), CASES, "p"),
                Source(empty(), "rec.json", live))
    assert len(slept) == 2


def test_budget_denied_calls_stay_in_the_run_as_unscored():
    provider = StandIn()
    execution, _ = run(provider, budget=BudgetConfig(max_calls=12), concurrency=1)
    statuses = [execution.calls[f"task/c{i}"].status for i in range(20)]
    assert statuses.count("recorded") == 12 and statuses.count("budget_denied") == 8
    assert len(provider.calls) == 12
    assert execution.recording is not None and len(execution.recording.calls) == 20  # denials recorded too
    denied = execution.calls["task/c19"]
    assert denied.reason == "budget_denied: budget.max_calls=12 would be exceeded"


def test_judge_calls_follow_their_task():
    provider = StandIn()
    execution, _ = run(provider, judge=True)
    assert execution.calls["judge/q/c0"].status == "recorded"
    assert provider.calls.index("judge out:p:c0") > max(provider.calls.index(f"p:c{i}") for i in range(20))


def test_a_judge_call_whose_task_the_budget_denied_is_denied_too_not_sent():
    provider = StandIn()
    execution, _ = run(provider, judge=True, budget=BudgetConfig(max_calls=19), concurrency=1)
    task, judge = execution.calls["task/c19"], execution.calls["judge/q/c19"]
    assert task.status == "budget_denied"
    # unscored for the same reason, so its test is skipped as the task's are, never a failure of its own
    assert (judge.status, judge.reason) == ("budget_denied", task.reason) and judge.reason.startswith("budget_denied:")
    assert "judge out:p:c19" not in provider.calls


def test_live_then_replay_gives_the_same_results():
    provider = StandIn()
    live, _ = run(provider, judge=True, budget=BudgetConfig(max_calls=30), concurrency=1)  # 10 judge calls denied
    assert live.recording is not None
    replay, _ = run(StandIn(), mode=Mode.REPLAY, recording=live.recording, judge=True)
    assert {k: (v.status if v.status != "recorded" else "replayed", v.text, v.reason) for k, v in live.calls.items()} \
        == {k: (v.status, v.text, v.reason) for k, v in replay.calls.items()}


def test_record_missing_calls_only_missing_or_denied_calls():
    first, _ = run(StandIn(), budget=BudgetConfig(max_calls=19), concurrency=1)
    assert first.recording is not None
    partial = first.recording.model_copy(update={"calls": {k: v for k, v in first.recording.calls.items()
                                                          if k != "task/c1"}})
    provider = StandIn()
    second, _ = run(provider, mode=Mode.RECORD_MISSING, recording=partial)
    assert sorted(provider.calls) == ["p:c1", "p:c19"]
    assert {r.status for k, r in second.calls.items() if k not in ("task/c1", "task/c19")} == {"replayed"}
    assert second.recording is not None and all(e.reply for e in second.recording.calls.values())


def test_a_denied_call_never_replaces_a_good_recorded_reply():
    good, _ = run(StandIn())
    assert good.recording is not None
    again, _ = run(StandIn(), recording=good.recording, budget=BudgetConfig(max_calls=19), concurrency=1)
    assert again.calls["task/c19"].status == "budget_denied"  # this run could not measure it ...
    assert again.recording is not None  # ... but the recording keeps the reply it had
    assert again.recording.calls["task/c19"] == good.recording.calls["task/c19"]


def test_the_journal_keeps_what_succeeded_before_an_outage_and_resume_continues(tmp_path: Path):
    path = tmp_path / "rec.json.journal.jsonl"
    with Journal(path) as journal, pytest.raises(OutageError, match="task/c5"):
        run(StandIn({"p:c5": [CallFailure("400", retryable=False)]}), journal=journal, concurrency=1)
    entries = read_journal(path)
    assert len(entries) == 6 and entries["task/c5"].failure is not None
    assert all(entries[f"task/c{i}"].reply is not None for i in range(5))
    provider = StandIn()
    resumed, _ = run(provider, resumed=entries, concurrency=1)
    assert provider.calls == [f"p:c{i}" for i in range(5, 20)]  # the failed call and those never started
    assert resumed.calls["task/c0"].status == "resumed" and resumed.calls["task/c5"].status == "recorded"


def test_a_torn_last_journal_line_is_dropped(tmp_path: Path):
    path = tmp_path / "j.jsonl"
    with Journal(path) as journal:
        run(StandIn(), journal=journal)
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:40])  # killed in the middle of a write
    assert len(read_journal(path)) == 20


def test_live_needs_a_live_setup():
    with pytest.raises(ValueError, match="needs a LiveSetup"):
        execute(CallSettings(Mode.LIVE, MODEL, version="t"), Workload(SuiteTask(build_task, None), CASES, "p"),
                Source(empty(), "r", None))


def test_a_task_that_fails_on_a_case_is_one_line_naming_the_case():
    def picky(case: Case, prompt: str, model: ModelConfig) -> Request:
        if case.id == "c3":
            return case.text  # type: ignore[no-any-return]  # a case without the field the task reads
        return build_task(case, prompt, model)

    live = LiveSetup(providers={"model": StandIn()}, settings=RunSettings(out="unused"), budget=Budget(BudgetConfig()))
    with pytest.raises(InputError, match=r"test_execute\.py: picky failed on case c3: AttributeError: .*"
                                         r"check that every case has the fields it reads"):
        execute(CallSettings(Mode.LIVE, MODEL, version="test"), Workload(SuiteTask(picky, None), CASES, "p"),
                Source(empty(), "rec.json", live))


@pytest.mark.parametrize("latency", [float("nan"), float("inf"), -1.0])
def test_a_latency_that_is_not_a_finite_duration_is_refused(latency: float):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="latency_ms"):
        Reply(text="x", latency_ms=latency)  # it would reach the report's latency section: NaN is not JSON


class OneAtATime(StandIn):
    """A server that answers one call at a time: concurrent calls queue inside it, as behind a local model."""

    def __init__(self, delay: float) -> None:
        super().__init__(delay=0.0)
        self.serve = threading.Lock()
        self.service = delay

    def complete(self, request: Request) -> Reply:
        started = time.perf_counter()  # as a provider's timed_call measures: send to reply, queue included
        with self.serve:
            time.sleep(self.service)
            reply = super().complete(request)
        return reply.model_copy(update={"latency_ms": round((time.perf_counter() - started) * 1000, 1)})


def test_latency_keeps_time_in_flight_apart_from_the_wait_for_a_slot_and_the_pace():
    provider = OneAtATime(0.02)
    execution, _ = run(provider, concurrency=4)
    latency = execution.stats["latency"]
    assert latency["measured_calls"] == 20 and latency["recorded_calls"] == 0
    # 20 calls over 4 slots: the last ones waited for a slot at least 4 service times (4 x 20 ms)
    assert latency["wait"]["calls"] == 20 and latency["wait"]["p95_ms"] >= 80
    pace = latency["pace"]
    assert pace["concurrency"] == 4 and pace["calls"] == 20
    assert pace["ms_per_call"] >= 20
    # four calls in flight while the server serves one: in flight is mostly the server's queue, and the rows say so
    assert pace["in_flight_mean"] > 1.5 and latency["mean_ms"] > 1.5 * pace["ms_per_call"]
    rows = dict(latency_rows(latency))
    assert "queueing there" in rows["pace"] and "measured in this run" in rows["in flight (send to reply)"]
    assert "server's own time" not in rows


def test_replayed_latency_is_marked_as_recorded_and_has_no_wait_or_pace():
    timed = Recording(key=KEY, provenance=Provenance(kind="recorded"), calls={})
    live, _ = run(StandIn(), concurrency=2)
    assert live.recording is not None
    calls = {cid: e.model_copy(update={"reply": e.reply.model_copy(update={"latency_ms": 100.0 + n,
                                                                            "service_ms": 40.0})})
             for n, (cid, e) in enumerate(live.recording.calls.items()) if e.reply is not None}
    timed = timed.model_copy(update={"calls": calls})
    replay, _ = run(StandIn(), mode=Mode.REPLAY, recording=timed)
    latency = replay.stats["latency"]
    assert latency["measured_calls"] == latency["recorded_calls"] == 20
    assert "wait" not in latency and "pace" not in latency
    assert latency["service"] == {"calls": 20, "mean_ms": 40.0, "p95_ms": 40.0}
    rows = dict(latency_rows(latency))
    assert rows["in flight (send to reply)"].startswith("mean 109.5 ms, p95 119.0 ms over 20 calls; all recorded")
    assert "queueing at the server" in rows["server's own time"]


def test_the_agent_section_counts_each_cases_steps():
    """Model steps per case (mean, most), tool results and the errors among them; a conversation's turns and the
    final answers are no model steps of their own."""
    from evalkit.records.call import ToolCall
    from evalkit.records.trajectory import AssistantTurn, FinalAnswer, ModelCall, ToolResult, Trajectory, UserTurn
    from evalkit.run.execute import agent_section

    def case(n: int, failing: int) -> Trajectory:  # n model steps, n - 1 tool calls, `failing` of them errors
        steps: list = []
        for i in range(n - 1):
            steps += [ModelCall(call_id=f"task/c@{i + 1}"), ToolCall(id=f"t{i}", tool="lookup"),
                      ToolResult(call_id=f"t{i}", content="r", error=i < failing)]
        return Trajectory(steps=(*steps, ModelCall(call_id=f"task/c@{n}"), FinalAnswer(text="done")))

    talk = Trajectory(steps=(UserTurn(turn=1, text="hi"), ModelCall(call_id="task/t@1"), AssistantTurn(turn=1, text="x")))
    trajectories = {"task/a": case(5, 2), "task/b": case(1, 0), "task/c": case(3, 1), "task/t": talk}
    assert agent_section(trajectories, None) == {
        "cases": 4, "mean_steps": round((5 + 1 + 3 + 1) / 4, 3), "most_steps": 5, "tool_calls": 4 + 0 + 2,
        "tool_errors": 3, "tool_error_rate": round(3 / 6, 4), "tools_called_live": 0}
    # the figures read each trajectory as its own accessors do
    for trajectory in trajectories.values():
        one = agent_section({"task/x": trajectory}, None)
        assert one["most_steps"] == len(trajectory.model_calls())
        assert one["tool_calls"] == len(trajectory.tool_results())
    assert agent_section({}, None) == {"cases": 0, "mean_steps": None, "most_steps": 0, "tool_calls": 0,
                                       "tool_errors": 0, "tool_error_rate": None, "tools_called_live": 0}
