"""Drive the calls of a run: replay each from the recording, or call the provider and record it.

With `run.repeats=N` each call is sampled N times, each sample its own call (evalkit.run.samples). A replay
the recording cannot serve (a call missing, or recorded for another request) is refused (ReplayRefusal) before
any check runs: it measured nothing, so it must not become case failures or a decision.
Two waves: every task call first (concurrently, in live modes), then the judge calls, which are
built from the task replies — so a changed reply makes its judge call stale instead of silently
reusing an old verdict. A call the budget denies is a result: it is recorded and leaves its case
unscored. A call that fails after its retries is an outage, never a verdict: no further call starts,
and the run ends with an OutageError naming the first failure; the journal keeps what succeeded.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, get_args

from evalkit.core import collector
from evalkit.core.call_id import CallId
from evalkit.core.config import Mode, ModelConfig, RunSettings
from evalkit.core.dataset import Case
from evalkit.core.errors import EvalkitError, InputError, OutageError, one_line
from evalkit.core.money import Side, Tokens, money_section
from evalkit.core.prices import PriceEntry, price_of
from evalkit.core.provider_specs import provider_spec
from evalkit.live.budget import Budget, estimate_tokens
from evalkit.live.limits import RateLimiter
from evalkit.live.progress import CallProgress
from evalkit.live.providers.base import CallFailure, Provider
from evalkit.live.retry import RetryPolicy, backoff_seconds
from evalkit.programs.endpoint import Unserved
from evalkit.records.call import Reply, Request
from evalkit.records.trajectory import ModelCall, ToolResult
from evalkit.run.agent_loop import Agent, ToolResults, run_agents
from evalkit.run.conversation import Script, run_conversations
from evalkit.run.journal import Journal
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.program_mcp import ProgramMcp
from evalkit.run.recording import (
    Entry,
    Failure,
    FailureKind,
    Hit,
    Miss,
    Provenance,
    Recording,
    ToolEntry,
    lookup,
    request_fingerprint,
)
from evalkit.run.run_plan import CallSettings
from evalkit.run.samples import seeded
from evalkit.run.suite import SuiteTask

__all__ = ["CallResult", "Execution", "LiveSetup", "ProgramCalls", "Source", "Workload", "execute", "provider_limits",
           "UNSCORED"]

Status = Literal["replayed", "recorded", "resumed", "reused", "failed", "budget_denied", "blocked"]
# Statuses that leave a case unscored: the run could not measure it, which the gate treats as incomplete.
UNSCORED = frozenset(get_args(FailureKind))


@dataclass(frozen=True)
class CallResult:
    """The outcome of one call id: a reply, or the reason there is none."""

    status: Status
    reply: Reply | None = None
    reason: str | None = None
    wait_ms: float | None = None
    """Live calls only: from the start of the call's wave until its answered attempt was sent, i.e. queued behind
    the other calls for one of `run.concurrency` slots, the rate limiter and retry pauses. Never recorded: it is
    this run's scheduling, not the reply's."""
    sent_ns: int | None = None
    """Live calls only: when the answered attempt was sent (nanoseconds since the epoch), for the trace export
    (evalkit.run.otel_export). Never recorded, like `wait_ms`."""

    @property
    def text(self) -> str | None:
        return self.reply.text if self.reply else None


@dataclass
class LiveSetup:
    """Everything a live or record-missing run needs to call models; built by the runner."""

    providers: Mapping[str, Provider]
    """By role: `model`, and `judge` when the suite judges; set up before the first call, so a missing
    extra or credential is refused before any model is called."""
    settings: RunSettings
    budget: Budget
    journal: Journal | None = None
    resumed: Mapping[str, Entry] = field(default_factory=dict)
    """Finished calls from the journal of an interrupted run (`+run.resume=true`)."""
    resumed_tools: Mapping[str, ToolEntry] = field(default_factory=dict)
    """An agent suite: the tool results that journal holds, by tool key (evalkit.run.agent_loop.ToolResults)."""
    reusable: Mapping[tuple[str, str], Entry] = field(default_factory=dict)
    """(call id, request fingerprint) -> a reply another recording holds to this very request, sent to a model of
    the same settings (evalkit.run.identity.reusable_calls): record-missing takes it instead of calling again."""
    redact: Callable[[str], str] = lambda text: text
    """Masks secrets in failure reasons: the key values, credential shapes and `run.secret_patterns`."""
    redact_reply: Callable[[str], str] = lambda text: text
    """Masks only the key values in a reply, as it arrives: the checks of this run, the recording and the checks of
    its replay then all read the same text (credential shapes in a reply are the model's output, graded as is)."""
    at_once: Mapping[str, int] = field(default_factory=dict)
    """By role, fewer calls in flight than `run.concurrency` where its provider serves no more at once
    (provider_limits); a role not listed sends `run.concurrency`."""
    progress: bool = False
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class Execution:
    """All calls of a run, the recording to save (None when nothing new was recorded), and statistics."""

    calls: dict[str, CallResult]
    recording: Recording | None
    stats: dict[str, Any]
    caller: _Caller | None = field(default=None, repr=False, compare=False)
    """What obtained the calls, for the next round of a run sampled in rounds (`prior` of `execute`)."""
    samples: dict[str, int] | None = None
    """For a run sampled in rounds (evalkit.run.rounds): case id -> the samples it took."""
    rounds: int = 1
    """The rounds that took them."""
    finals: dict[str, CallResult] = field(default_factory=dict)
    """An agent suite (evalkit.run.agent_loop): `task/<case>` -> the case's outcome (its final answer, or why there
    is none); its steps' calls are in `calls` as `task/<case>@<step>`."""
    trajectories: dict[str, Any] = field(default_factory=dict)
    """An agent suite: `task/<case>` -> its trajectory (records.trajectory.Trajectory)."""
    reached: dict[str, int | None] = field(default_factory=dict)
    """A suite of simulated conversations: `task/<case>` -> the assistant turns to its goal (None: not reached)."""

    def checked_calls(self) -> dict[str, CallResult]:
        """What the checks read: every call, an agent case's outcome in place of its steps (a conversation's in
        place of its turns, the simulated user's among them)."""
        if not self.finals:
            return self.calls
        return {cid: r for cid, r in self.calls.items() if CallId.parse(cid).step == 0} | self.finals


Planned = tuple[str, Request, str]  # call id, request, role ("model", "judge" or "simulator")


_ROLES = {"model": "the model under test", "judge": "the judge", "simulator": "the simulated user"}


def provider_limits(concurrency: int, models: Mapping[str, ModelConfig | None]) -> tuple[dict[str, int], str | None]:
    """By role (`model`, `judge`), the calls in flight where its provider serves fewer at once than `concurrency`
    (its spec's `max_concurrency`), and the line that says so (None when nothing is lowered). More would only
    queue inside the provider, and each call's time in flight would count that queue as its latency."""
    limits: dict[str, int] = {}
    parts = []
    for role, config in models.items():
        most = provider_spec(config.provider).max_concurrency if config is not None else None
        if config is not None and most is not None and most < concurrency:
            limits[role] = most
            parts.append(f"to {most} for {_ROLES.get(role, role)} (provider {config.provider} serves "
                         + ("one call at a time)" if most == 1 else f"{most} calls at once)"))
    if not limits:
        return {}, None
    return limits, (f"run.concurrency={concurrency} lowered {'; '.join(parts)}: more calls in flight would only "
                    "queue behind it, and be timed as latency")


@dataclass(frozen=True)
class Workload:
    """What a model suite asks of each case: its cases, the task that builds each case's request from the prompt,
    and, for an agent suite, its tools (or for a conversation suite, each case's script)."""

    task: SuiteTask
    cases: Sequence[Case]
    prompt: str
    agent: Agent | None = None
    """A suite with tools: each task call is an agent's loop (evalkit.run.agent_loop)."""
    conversations: Mapping[str, Script] | None = None
    """Case id -> its script: each task call is a conversation (evalkit.run.conversation)."""


@dataclass(frozen=True)
class Source:
    """Where a run's replies come from: its recording (`where` names it in a refusal) and, in a live or
    record-missing run, the providers and what goes with them."""

    recording: Recording
    where: str
    live: LiveSetup | None = None


def execute(settings: CallSettings, work: Workload, source: Source, *, samples: Mapping[str, int] | None = None,
            prior: Execution | None = None) -> Execution:
    """Obtain every call of the run, each sampled `settings.repeats` times (evalkit.run.samples), and every judge
    call of each sample's reply `settings.judge_repeats` times (`judge.repeats`: repeat r is
    `judge/<metric>/<case>~<r>`, sent with seed `options.seed + r`, so the judge's own samples are distinct calls,
    each recorded and replayed). With `settings.prices` (the price table), the statistics hold the cost in money
    (`money`) and `budget.max_usd` is enforced at those prices.

    A run sampled in rounds (evalkit.run.rounds) gives `samples` (case id -> how many of its calls' samples, in
    place of `repeats`, which is then the most a case may take) and, after its first round, `prior`: the previous
    round's execution, whose calls are kept as they are and whose new recording entries are saved with this
    round's. With `work.agent` (a suite with tools), each task call is an agent's loop (evalkit.run.agent_loop);
    with `work.conversations` (case id -> its script), each is a conversation (evalkit.run.conversation), its
    simulated users played by `settings.simulator`."""
    # the waves below read the plan's parts by the names they had as parameters
    mode, model, judge, simulator = settings.mode, settings.model, settings.judge, settings.simulator
    repeats, judge_repeats, prices, version = (settings.repeats, settings.judge_repeats, settings.prices,
                                               settings.version)
    task, cases, prompt, agent, conversations = work.task, work.cases, work.prompt, work.agent, work.conversations
    recording, where, live = source.recording, source.where, source.live
    if mode is not Mode.REPLAY and live is None:
        raise ValueError(f"mode={mode} needs a LiveSetup")
    judged = task.judged and judge is not None
    caller = prior.caller if prior is not None and prior.caller is not None else \
        _Caller(mode, recording, where, live, model, judge if judged else None, prices or {})
    calls: dict[str, CallResult] = dict(prior.calls) if prior is not None else {}
    finals: dict[str, CallResult] = dict(prior.finals) if prior is not None else {}
    trajectories: dict[str, Any] = dict(prior.trajectories) if prior is not None else {}
    if simulator is not None:
        caller.configs["simulator"] = simulator
        caller.listed["simulator"] = price_of(prices or {}, simulator.name)
    reached: dict[str, int | None] = dict(prior.reached) if prior is not None else {}
    if agent is not None and caller.tools is None:
        caller.tools = ToolResults(mode, recording, agent.toolbox,
                                   live.redact_reply if live is not None else (lambda text: text),
                                   resumed=live.resumed_tools if live is not None else None,
                                   journal=live.journal if live is not None else None)

    def count(case: Case) -> int:
        return repeats if samples is None else samples.get(case.id, repeats)

    planned: list[Planned] = []
    asked: dict[str, Request] = {}  # each case's task request: a conversation judge is shown its system prompt
    for case in cases:
        request = asked[case.id] = _built(task.build_task, case, prompt, model)
        for sample in range(count(case)):
            call_id = str(CallId.task(case.id, sample))
            if call_id not in calls and call_id not in finals:
                planned.append((call_id, seeded(request, sample, repeats, call_id), "model"))

    def settle(planned: int) -> None:  # after each wave: a replay miss or an outage ends the run
        caller.refuse_misses(planned)
        caller.raise_outage()

    if conversations is not None:
        talked = run_conversations([(call_id, request) for call_id, request, _ in planned], conversations,
                                   simulator=simulator, wave=caller.wave, settle=settle, model=model.name,
                                   price=caller.listed["model"])
        calls |= talked.steps
        finals |= talked.finals
        trajectories |= talked.trajectories
        reached |= talked.reached
    elif agent is None:
        calls |= caller.wave(planned)
        settle(len(planned))
    else:
        assert caller.tools is not None
        looped = run_agents([(call_id, request) for call_id, request, _ in planned], agent, wave=caller.wave,
                            settle=settle, tools=caller.tools, where=where, model=model.name,
                            price=caller.listed["model"], concurrency=live.settings.concurrency if live else 1)
        calls |= looped.steps
        finals |= looped.finals
        trajectories |= looped.trajectories
    if judged:
        assert judge is not None
        unsent, planned = _judge_calls(task, cases, count, judge, judge_repeats, calls, finals, trajectories, asked)
        calls |= unsent
        calls |= caller.wave(planned)
        settle(len(planned))
    stats = _statistics(settings, calls, caller, live, judged=judged)
    if agent is not None:
        stats["agent"] = agent_section(trajectories, caller.tools)
    return Execution(calls, caller.recording_to_save(version), stats, caller, finals=finals,
                     trajectories=trajectories, reached=reached)


def _judge_calls(task: SuiteTask, cases: Sequence[Case], count: Callable[[Case], int], judge: ModelConfig,
                 judge_repeats: int, calls: Mapping[str, CallResult], finals: Mapping[str, CallResult],
                 trajectories: Mapping[str, Any], asked: Mapping[str, Request]
                 ) -> tuple[dict[str, CallResult], list[Planned]]:
    """Each sample's judge calls: those settled without being sent (their input was never made), and those to
    send. Each sample's reply is judged on its own; a trajectory's judge reads the steps, so an agent stopped at
    max_steps without an answer is judged."""
    unsent: dict[str, CallResult] = {}
    planned: list[Planned] = []
    for case in cases:
        for sample in range(count(case)):
            task_id = str(CallId.task(case.id, sample))
            output = finals.get(task_id) or calls[task_id]
            built = dict(_built(task.build_judge, case, output.text or "", judge)) if task.build_judge else {}
            traced = dict(task.build_trajectory_judge(case, trajectories[task_id], judge, asked[case.id])) \
                if task.build_trajectory_judge is not None and task_id in trajectories else {}
            for metric, request in (built | traced).items():
                for repeat in range(judge_repeats):
                    call_id = str(CallId.judge(metric, case.id, sample, repeat))
                    if call_id in calls:
                        continue
                    if output.status in UNSCORED:
                        # never sent because its input was never made: unscored for the same reason (the
                        # budget's denial), so its test is skipped like the task's, never a failure the gate counts
                        unsent[call_id] = CallResult(output.status, reason=output.reason)
                    elif output.text is None and metric not in traced:
                        unsent[call_id] = CallResult("blocked", reason=f"{call_id} needs {task_id}, which has no reply")
                    else:
                        sent = seeded(request, repeat, judge_repeats, call_id, "judge.repeats")
                        planned.append((call_id, sent, "judge"))
    return unsent, planned


def _statistics(settings: CallSettings, calls: Mapping[str, CallResult], caller: _Caller, live: LiveSetup | None,
                *, judged: bool) -> dict[str, Any]:
    """The run's call statistics (the report's `execution` section, but an agent's loop): statuses, cost, latency,
    money at the price table's prices, and a live run's figures."""
    counts: dict[str, int] = {}
    for result in calls.values():
        counts[result.status] = counts.get(result.status, 0) + 1
    stats: dict[str, Any] = {"calls": dict(sorted(counts.items())),
                             "cost": cost_section(calls, caller.requests),
                             "latency": latency_section(calls, caller.live_seconds if live else None,
                                                        caller.most_at_once if live else None)}
    if settings.prices is not None:
        prices = settings.prices
        sides = {"model": Side(settings.model.name, price_of(prices, settings.model.name))}
        if judged:
            assert settings.judge is not None
            sides["judge"] = Side(settings.judge.name, price_of(prices, settings.judge.name))
        if settings.simulator is not None:
            sides["simulator"] = Side(settings.simulator.name, price_of(prices, settings.simulator.name))
        stats["money"] = money_section(call_tokens(calls, caller.requests), sides)
    if live is not None:
        stats["live"] = {"sent": caller.sent, "retried": caller.retried,
                         "seconds": round(caller.live_seconds, 3), "cpu_seconds": round(caller.live_cpu_seconds, 3),
                         "budget": live.budget.summary()}
        if caller.denied:
            stats["live"]["denied"] = {"calls": len(caller.denied), "first": caller.denied[0]}
    return stats


class ProgramCalls:
    """The model calls of a candidate program, answered one by one as evalkit's endpoint receives them
    (evalkit.programs.endpoint): each is looked up, or called live, exactly as a model suite's task call, with the
    budget, rate limits, retries, redaction, journal and recording of `execute`. The program's options ride over the
    model's configured ones; the model is the run's, whatever name the program sends."""

    def __init__(self, settings: CallSettings, source: Source) -> None:
        mode, model, live = settings.mode, settings.model, source.live
        if mode is not Mode.REPLAY and live is None:
            raise ValueError(f"mode={mode} needs a LiveSetup")
        self.model, self.live, self.version = model, live, settings.version
        # the program's calls are all the model's: a judge of the run's config has no part in them
        self.caller = _Caller(mode, source.recording, source.where, live, model, None, settings.prices or {})
        if settings.simulator is not None:  # a simulated user's turns (evalkit.run.program_runner) are the run's too
            self.caller.configs["simulator"] = settings.simulator
            self.caller.listed["simulator"] = price_of(settings.prices or {}, settings.simulator.name)
        self.calls: dict[str, CallResult] = {}
        self.mcp: ProgramMcp | None = None
        """The program's proxied MCP servers, when the suite routes any (set by the runner)."""

    def answer(self, call_id: str, request: Request) -> Reply | Unserved:
        request = request.model_copy(update={"options": {**self.model.options, **request.options}})
        result = self.caller.wave([(call_id, request, "model")]).get(call_id)
        if result is None:  # a replay the recording cannot serve: refuse_misses names it once the cases ran
            return Unserved("refused", f"{self.caller.misses[-1].reason}; {self.caller.where} cannot serve it")
        self.calls[call_id] = result
        if result.reply is not None:
            return result.reply
        return Unserved("denied" if result.status == "budget_denied" else "failed", result.reason or result.status)

    def simulate(self, call_id: str, request: Request) -> CallResult | None:
        """A simulated user's turn (`user/<case>@<n>`), asked of the run's simulator through the same path; None
        where a replay cannot serve it (refuse_misses names it once the cases ran)."""
        result = self.caller.wave([(call_id, request, "simulator")]).get(call_id)
        if result is not None:
            self.calls[call_id] = result
        return result

    @property
    def ended(self) -> bool:
        """A call was refused, or failed after its retries: running further cases measures nothing."""
        return bool(self.caller.misses or self.caller.outages or (self.mcp is not None and self.mcp.misses))

    def finish(self) -> Execution:
        """The run's calls once every case ran: a refusal (exit 3) or an outage ends the run here."""
        caller = self.caller
        caller.refuse_misses(len(caller.requests))
        if self.mcp is not None:
            self.mcp.refuse_misses()
        caller.raise_outage()
        counts: dict[str, int] = {}
        for result in self.calls.values():
            counts[result.status] = counts.get(result.status, 0) + 1
        stats: dict[str, Any] = {"calls": dict(sorted(counts.items())),
                                 "cost": cost_section(self.calls, caller.requests),
                                 "latency": latency_section(self.calls, caller.live_seconds if self.live else None,
                                                            caller.most_at_once if self.live else None)}
        if self.live is not None:
            stats["live"] = {"sent": caller.sent, "retried": caller.retried,
                             "seconds": round(caller.live_seconds, 3),
                             "cpu_seconds": round(caller.live_cpu_seconds, 3), "budget": self.live.budget.summary()}
        return Execution(dict(self.calls), caller.recording_to_save(self.version), stats, caller)


_Built = TypeVar("_Built")


def _built(build: Callable[[Case, str, ModelConfig], _Built], case: Case, text: str, config: ModelConfig) -> _Built:
    """A suite's build_task or build_judge for one case. Its failure (typically a case lacking a field the task
    reads) is the suite's input, not evalkit's bug: one line naming the function, its file and the case."""
    try:
        return build(case, text, config)
    except EvalkitError:
        raise
    except Exception as error:
        code = getattr(build, "__code__", None)
        where = f"{code.co_filename}: " if code is not None else ""
        raise InputError(one_line(f"{where}{getattr(build, '__name__', 'the task')} failed on case {case.id}: "
                                  f"{type(error).__name__}: {error}; check that every case has the fields it "
                                  "reads", limit=600)) from None


class _Caller:
    """Obtains calls wave by wave and collects what a live run adds to the recording."""

    def __init__(self, mode: Mode, recording: Recording, where: str, live: LiveSetup | None,
                 model: ModelConfig, judge: ModelConfig | None, prices: Mapping[str, PriceEntry]) -> None:
        self.mode, self.recording, self.where, self.live = mode, recording, where, live
        self.configs = {"model": model, "judge": judge}
        self.listed = {"model": price_of(prices, model.name),
                       "judge": price_of(prices, judge.name) if judge is not None else None}
        """Each side's entry in the price table, for `budget.max_usd`."""
        self.new_entries: dict[str, Entry] = {}
        self.requests: dict[str, Request] = {}
        self.sent = self.retried = 0
        self.live_seconds = 0.0
        self.live_cpu_seconds = 0.0
        """The process's CPU time over the call phase: what the calls cost on this side, all threads together."""
        self.outages: list[str] = []
        """Reasons of calls that failed after their retries: once there is one, no further call starts."""
        self.denied: list[str] = []
        """Why the budget refused each call it refused, in the order refused."""
        self.misses: list[Miss] = []
        """Calls a replay could not serve, in the order planned."""
        self._shas: dict[str, str] = {}
        """The request fingerprint of each call to be made, by call id."""
        self.most_at_once = 0
        """The most calls a wave sent at once: `run.concurrency`, or less where a provider serves fewer."""
        self._lock = threading.Lock()
        self._wave_started = time.monotonic()
        self.tools: ToolResults | None = None
        """An agent suite's tool results (evalkit.run.agent_loop), saved with the calls."""
        self.proxied: dict[str, ToolEntry] = {}
        """What a candidate program's MCP servers answered through evalkit's proxy in this run
        (evalkit.run.program_mcp), saved with the calls."""
        if live is not None and mode is not Mode.REPLAY:
            self.providers = live.providers
            self.limiter = RateLimiter(live.settings.rpm, live.settings.tpm)
            self.retry = RetryPolicy(live.settings.retries, live.settings.backoff_s, live.settings.backoff_max_s)

    def wave(self, planned: Sequence[Planned], shas: Mapping[str, str] | None = None) -> dict[str, CallResult]:
        """Obtain the planned calls; `shas` holds request fingerprints a caller already made (the agent loop's,
        evalkit.run.recording.GrowingRequests), by call id: each is compared exactly as one made here."""
        results: dict[str, CallResult] = {}
        pending: list[Planned] = []
        for call_id, request, role in planned:
            self.requests[call_id] = request
            known = shas.get(call_id) if shas else None
            found = None if self.mode is Mode.LIVE else lookup(self.recording, call_id, request, known)
            if isinstance(found, Hit) and (self.mode is Mode.REPLAY or found.entry.failure is None):
                results[call_id] = _from_entry(call_id, found.entry, "replayed")
                continue
            if self.mode is Mode.REPLAY:
                assert found is not None and not isinstance(found, Hit)
                self.misses.append(found)
                continue
            assert self.live is not None
            # computed here once, not on a call's thread
            sha = self._shas[call_id] = known or request_fingerprint(request)
            earlier = self.live.resumed.get(call_id)
            if earlier is not None and earlier.failure is None and earlier.request_sha == sha:
                self.new_entries[call_id] = earlier
                results[call_id] = _from_entry(call_id, earlier, "resumed")
                continue
            reused = self.live.reusable.get((call_id, sha))
            if reused is not None and self.mode is Mode.RECORD_MISSING:
                self.new_entries[call_id] = reused
                results[call_id] = _from_entry(call_id, reused, "reused")
                continue
            pending.append((call_id, request, role))
        if pending:
            results |= self._call_all(pending)
        return results

    def _call_all(self, pending: Sequence[Planned]) -> dict[str, CallResult]:
        """Run the pending calls on `run.concurrency` worker threads that share one queue.

        Workers pull the next call themselves: no future per call, and the main thread stays idle
        instead of competing with the calls for the interpreter lock.
        """
        assert self.live is not None
        started, cpu_started = time.monotonic(), time.process_time()
        self._wave_started = started
        queue = iter(pending)
        results: dict[str, CallResult] = {}
        errors: list[BaseException] = []
        # a retried call leaves a cycle (its exception's traceback holds its frame): collected as the calls go
        with CallProgress(len(pending), self.live.progress) as progress, collector.running():

            def work() -> None:
                try:
                    while True:
                        with self._lock:
                            planned = None if self.outages else next(queue, None)
                        if planned is None or errors:
                            return
                        call_id, request, role = planned
                        result = self._call(call_id, request, role, progress)
                        with self._lock:
                            results[call_id] = result
                except BaseException as error:  # a bug in evalkit: stop the others and re-raise below
                    errors.append(error)

            roles = {role for _, _, role in pending}
            at_once = min([self.live.settings.concurrency,
                           *(n for role, n in self.live.at_once.items() if role in roles)])
            self.most_at_once = max(self.most_at_once, at_once)
            workers = [threading.Thread(target=work, name=f"evalkit-call-{n}", daemon=True)
                       for n in range(min(at_once, len(pending)))]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        self.live_seconds += time.monotonic() - started
        self.live_cpu_seconds += time.process_time() - cpu_started
        if errors:
            raise errors[0]
        # after an outage the calls never started have no result; raise_outage ends the run before they matter
        return {call_id: results[call_id] for call_id, _, _ in pending if call_id in results}

    def _call(self, call_id: str, request: Request, role: str, progress: CallProgress) -> CallResult:
        """One call with budget, rate limit and retries; runs on a worker thread."""
        live = self.live
        assert live is not None
        config = self.configs[role]
        assert config is not None
        estimate = estimate_tokens(request_text(request))
        attempt = 0
        while True:
            reservation = live.budget.reserve(estimate, config.price, self.listed[role])
            if isinstance(reservation, str):
                with self._lock:
                    self.denied.append(reservation)
                return self._end(call_id, request, progress, failure=Failure(kind="budget_denied", reason=reservation))
            self.limiter.acquire(estimate + live.budget.limits.reserve_output_tokens)
            sent_at, sent_ns = time.monotonic(), time.time_ns()
            with self._lock:
                self.sent += 1
            try:
                reply = self.providers[role].complete(request)
            except CallFailure as error:
                if error.status == 429:
                    live.budget.refund(reservation)  # refused before any work was done
                else:
                    live.budget.settle(reservation, None, config.price, listed=self.listed[role])  # work may be done
                if error.retryable and attempt < self.retry.retries:
                    with self._lock:
                        self.retried += 1
                    progress.retrying()
                    live.sleep(backoff_seconds(self.retry, attempt, error.retry_after, live.rng))
                    attempt += 1
                    continue
                kind = "retryable" if error.retryable else "not retryable"
                reason = f"{call_id}: no reply after {attempt + 1} attempt(s) ({kind}): {error}"
                return self._outage(call_id, request, progress, live.redact(reason))
            except Exception as error:  # an error outside the provider contract: the call could not be made
                live.budget.settle(reservation, None, config.price, listed=self.listed[role])
                reason = f"{call_id}: live call failed: {type(error).__name__}: {error}"
                return self._outage(call_id, request, progress, live.redact(reason))
            live.budget.settle(reservation, reply.usage, config.price, estimate_tokens(reply.text or ""),
                               listed=self.listed[role])
            if reply.text is not None and (text := live.redact_reply(reply.text)) != reply.text:
                reply = reply.model_copy(update={"text": text})
            answered = self._end(call_id, request, progress, reply=reply)
            return replace(answered, wait_ms=round((sent_at - self._wave_started) * 1000, 1), sent_ns=sent_ns)

    def _outage(self, call_id: str, request: Request, progress: CallProgress, reason: str) -> CallResult:
        """A call that failed after its retries: journaled (resume calls it again), and no further call starts."""
        with self._lock:
            self.outages.append(reason)
        return self._end(call_id, request, progress, failure=Failure(kind="failed", reason=reason))

    def refuse_misses(self, planned: int) -> None:
        """Refuse a replay that missed any call: name the first miss and how many there were."""
        if not self.misses:
            return
        first = self.misses[0]
        held = self.recording.provenance.samples or 1
        asked = max(CallId.parse(miss.call_id).sample for miss in self.misses) + 1
        samples = (f"; the recording holds {held} sample(s) of each call and this run asks for {asked} "
                   "(run.repeats)" if asked > held else "")
        if not samples and any(CallId.parse(miss.call_id).repeat for miss in self.misses):
            samples = ("; the judge's repeats (judge.repeats) are calls of their own: record them with "
                       "mode=record-missing")
        raise ReplayRefusal(f"cannot replay from {self.where}: {first.reason} ({len(self.misses)} of {planned} "
                            f"calls cannot be served{samples})")

    def raise_outage(self) -> None:
        """End the run as an outage if any call failed: the server failed, so nothing may be gated."""
        if not self.outages:
            return
        sent = sum(1 for e in self.new_entries.values() if e.failure is None)
        journaled = self.live is not None and self.live.journal is not None
        journal = (" the journal keeps the calls that succeeded; fix the cause named first (the server, or the "
                   "local runtime) and continue with +run.resume=true" if journaled else "")
        raise OutageError(f"{self.outages[0]} ({len(self.outages)} call(s) failed, {sent} succeeded, the rest "
                          f"not started; nothing was gated, the recording is unchanged;{journal})")

    def _end(self, call_id: str, request: Request, progress: CallProgress, reply: Reply | None = None,
             failure: Failure | None = None) -> CallResult:
        """Record the call's outcome and tick the progress bar: the one way out of `_call`."""
        result = self._finish(call_id, request, reply, failure)
        progress.finished(ok=failure is None)
        return result

    def _finish(self, call_id: str, request: Request, reply: Reply | None, failure: Failure | None) -> CallResult:
        sha = self._shas.get(call_id) or request_fingerprint(request)
        entry = Entry(request_sha=sha, request=request, reply=reply, failure=failure)
        assert self.live is not None
        if self.live.journal is not None:
            self.live.journal.append(call_id, entry)
        with self._lock:
            self.new_entries[call_id] = entry
        return _from_entry(call_id, entry, "recorded")

    def recording_to_save(self, version: str) -> Recording | None:
        new_tools = {**(self.tools.new if self.tools is not None else {}), **self.proxied}
        if not self.new_entries and not new_tools:
            return None
        kept = {} if self.mode is Mode.LIVE else dict(self.recording.calls)
        tools = new_tools if self.mode is Mode.LIVE else {**self.recording.tools, **new_tools}
        # a failure entry (a budget denial) never replaces a good recorded reply of the same call
        good = {cid: e for cid, e in self.recording.calls.items() if e.failure is None}
        new = {cid: good[cid] if e.failure is not None and cid in good else e for cid, e in self.new_entries.items()}
        # how many samples of a call the file now holds (it may keep more than this run asked for); None for one
        most = max((CallId.parse(call_id).sample for call_id in kept | new), default=0) + 1
        samples = most if most > 1 else None
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        if kept and self.recording.provenance.kind == "authored":
            # Adding live calls to a fixture does not make the fixture's other replies a model's.
            earlier = self.recording.provenance.note or "authored fixture"
            provenance = Provenance(kind="authored", evalkit_version=version, recorded_at=now,
                                    note=f"{earlier}; {len(self.new_entries)} call(s) recorded live at {now}",
                                    samples=samples)
        else:
            provenance = Provenance(kind="recorded", note="recorded by a live evalkit run",
                                    evalkit_version=version, recorded_at=now, producer=self.producer(),
                                    samples=samples)
        return self.recording.model_copy(update={"calls": kept | new, "tools": tools, "provenance": provenance})


    def producer(self) -> dict[str, dict[str, Any]] | None:
        """What each provider of this run says about itself (its optional `describe()`), by role."""
        providers = self.live.providers if self.live is not None else {}
        described = {role: describe() for role, provider in sorted(providers.items())
                     if (describe := getattr(provider, "describe", None)) is not None}
        return described or None


def agent_section(trajectories: Mapping[str, Any], tools: ToolResults | None) -> dict[str, Any]:
    """An agent suite's loop in figures: cases, model steps (mean and most), tool calls and the share of them that
    were errors, and the tools called live by this run (none in a replay; in a resumed run, those taken from the
    interrupted run's journal are `tools_resumed`)."""
    steps: list[int] = []
    results = errors = 0
    for trajectory in trajectories.values():  # one pass over each case's steps (a replay's figures are this cheap)
        calls = 0
        for step in trajectory.steps:
            if isinstance(step, ModelCall):
                calls += 1
            elif isinstance(step, ToolResult):
                results += 1
                errors += bool(step.error)
        steps.append(calls)
    return {"cases": len(steps), "mean_steps": round(sum(steps) / len(steps), 3) if steps else None,
            "most_steps": max(steps, default=0), "tool_calls": results, "tool_errors": errors,
            "tool_error_rate": round(errors / results, 4) if results else None,
            "tools_called_live": tools.called if tools is not None else 0,
            # only in a resumed run: the results its interrupted run journaled, served instead of called again
            **({"tools_resumed": tools.taken} if tools is not None and tools.taken else {})}


def request_text(request: Request) -> str:
    return " ".join(m.text for m in request.messages) + json.dumps(request.response_schema or "")


def call_tokens(calls: Mapping[str, CallResult], requests: Mapping[str, Request]) -> dict[str, Tokens]:
    """The tokens of every call that got a reply, as its cost is computed: the provider's usage where it reported
    some, estimated (characters / 4) where not; cache reads and writes where it reports them apart."""
    out = {}
    for call_id, result in calls.items():
        reply = result.reply
        if reply is None:
            continue
        usage = reply.usage
        estimated = usage.input_tokens is None or usage.output_tokens is None
        input_tokens = usage.input_tokens
        if input_tokens is None:
            input_tokens = estimate_tokens(request_text(requests[call_id])) if call_id in requests else 0
        output_tokens = usage.output_tokens if usage.output_tokens is not None else estimate_tokens(reply.text or "")
        out[call_id] = Tokens(input_tokens, output_tokens, usage.cache_read_tokens or 0,
                              usage.cache_write_tokens or 0, estimated)
    return out


def cost_section(calls: Mapping[str, CallResult], requests: Mapping[str, Request]) -> dict[str, Any]:
    """Calls and tokens of the model under test (task calls), and of the judge (and a simulated user) apart, from the
    provider's usage where it reported some and estimated (characters / 4) where not; says how many were
    estimated. Never a quality figure."""
    kinds = {cid: CallId.parse(cid).kind for cid in calls}
    task = _usage({cid: r for cid, r in calls.items() if kinds[cid] == "task"}, requests)
    judge = _usage({cid: r for cid, r in calls.items() if kinds[cid] == "judge"}, requests)
    section = {"model_calls": task["calls"], "input_tokens": task["input_tokens"],
               "output_tokens": task["output_tokens"], "estimated_calls": task["estimated_calls"],
               "judge_calls": judge["calls"], "judge_input_tokens": judge["input_tokens"],
               "judge_output_tokens": judge["output_tokens"]}
    if "user" in kinds.values():  # a simulated user's calls (evalkit.run.conversation), apart from both
        user = _usage({cid: r for cid, r in calls.items() if kinds[cid] == "user"}, requests)
        section |= {"simulator_calls": user["calls"], "simulator_input_tokens": user["input_tokens"],
                    "simulator_output_tokens": user["output_tokens"]}
    return section


def _usage(calls: Mapping[str, CallResult], requests: Mapping[str, Request]) -> dict[str, Any]:
    replies = {cid: r.reply for cid, r in calls.items() if r.reply is not None}
    totals = {"input_tokens": 0, "output_tokens": 0}
    estimated = {"input_tokens": 0, "output_tokens": 0}
    for call_id, reply in replies.items():
        reported = {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}
        for name in totals:
            value = reported[name]
            if value is None:  # estimated only where the provider reported nothing (an agent's step is long)
                estimated[name] += 1
                if name == "output_tokens":
                    value = estimate_tokens(reply.text or "")
                else:
                    value = estimate_tokens(request_text(requests[call_id])) if call_id in requests else 0
            totals[name] += value
    return {"calls": len(replies), **totals, "estimated_calls": {k: v for k, v in estimated.items() if v}}


def latency_section(calls: Mapping[str, CallResult], live_seconds: float | None = None,
                    concurrency: int | None = None) -> dict[str, Any]:
    """Per-call latency where it is known, kept apart by what it measures.

    `mean_ms`/`p95_ms` are times in flight (send to reply), which include any queueing at the server;
    `recorded_calls` of them come from a recording (replayed, resumed, reused), measured when it was made.
    `service` is the server's own time where it reports one, `wait` the live calls' wait for a concurrency slot,
    and `pace` the live wave's wall time per call with the mean number of calls in flight (Little's law), which
    tells a server answering one call at a time from a slow one. Authored replies carry no latency.
    """
    timed = [r for r in calls.values() if r.reply is not None and r.reply.latency_ms is not None]
    if not timed:
        return {"measured_calls": 0}
    in_flight = [r.reply.latency_ms for r in timed if r.reply is not None and r.reply.latency_ms is not None]
    section: dict[str, Any] = {"measured_calls": len(timed), **_spread(in_flight),
                               "recorded_calls": sum(1 for r in timed if r.status != "recorded")}
    served = [r.reply.service_ms for r in timed if r.reply is not None and r.reply.service_ms is not None]
    if served:
        section["service"] = {"calls": len(served), **_spread(served)}
    live = [r for r in timed if r.status == "recorded" and r.wait_ms is not None]
    if live:
        section["wait"] = {"calls": len(live), **_spread([r.wait_ms for r in live if r.wait_ms is not None])}
    if live and live_seconds:
        busy = sum(r.reply.latency_ms for r in live if r.reply and r.reply.latency_ms is not None)
        section["pace"] = {"calls": len(live), "seconds": round(live_seconds, 3), "concurrency": concurrency,
                           "ms_per_call": round(live_seconds * 1000 / len(live), 1),
                           "in_flight_mean": round(busy / 1000 / live_seconds, 2)}
    return section


def _spread(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"mean_ms": round(sum(ordered) / len(ordered), 1),
            "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]}


def _from_entry(call_id: str, entry: Entry, status: Status) -> CallResult:
    if entry.failure is not None:
        return CallResult(entry.failure.kind, reason=entry.failure.reason)
    return CallResult(status, entry.reply)
