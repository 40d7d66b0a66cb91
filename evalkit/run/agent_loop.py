"""The agent loop of a suite with tools: model -> tool calls -> tool results -> model, up to `agent.max_steps`.

Each model step is a call of its own, `task/<case>@<step>` (evalkit.core.call_id), obtained through the run's one
call path (evalkit.run.execute's waves): budgets, retries, rate limits, `run.concurrency`, outage rules, recording
and replay apply per step exactly as to a single call. The steps go in waves: step 1 of every case, then each case's
tools, then step 2 of the cases still calling tools, and so on, so a run's concurrency is used across cases.

Every tool result is recorded beside the calls (`tools` in the recording, by `<step call id>|<tool call id>`), with
the implementation's fingerprint and the arguments, so a replay needs neither the model nor the tools' backends. A
replay serves a tool result only to the same implementation asked with the same arguments; anything else is refused
naming the tool (exit 3), and mode=record-missing calls that tool again (and then the model, only where its result
changed what the model is asked). A live run journals each tool result as it comes (evalkit.run.journal), so a run
resumed after an interruption serves its finished steps' tool results from there, never calling those tools again.

A case ends with its final answer (a reply without tool calls), which is what the checks read as `task/<case>`. It
fails, naming why, when it reaches `agent.max_steps` still calling tools; a step the budget denies leaves it
unscored like any denied call, naming the step. The model's mistakes and the tools' (an unknown tool, arguments
that fail the schema, a tool that raises or hangs) are error results the model reads, and the trajectory keeps them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from evalkit.agents.mcp_tools import start_mcp_server
from evalkit.agents.tools import ToolBox, ToolImpl, ToolOutcome, load_python_tools
from evalkit.core.call_id import STEP_MARK, CallId
from evalkit.core.config import AgentConfig, Mode
from evalkit.core.errors import InputError
from evalkit.core.money import Tokens, call_cost
from evalkit.core.prices import PriceEntry
from evalkit.live.budget import estimate_tokens
from evalkit.records.call import Message, Reply, Request, ToolCall
from evalkit.records.trajectory import MAX_TOOL_RESULT_CHARS, FinalAnswer, ModelCall, Step, ToolResult, Trajectory
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.recording import GrowingRequests, Miss, Recording, ToolEntry, check_tool, lookup_tool, tool_key

if TYPE_CHECKING:
    from evalkit.run.execute import CallResult
    from evalkit.run.journal import Journal

__all__ = ["Agent", "AgentOutcome", "TOOLS_FILE", "ToolResults", "agent_metrics", "model_call", "run_agents",
           "suite_agent", "trajectories_json"]

TOOLS_FILE = "tools.py"
"""A suite with this file beside its task.py is an agent (unless `agent.tools` names another file)."""


@dataclass(frozen=True)
class Agent:
    """What a suite with tools runs: its tools and the loop's settings (`agent.*`)."""

    toolbox: ToolBox
    max_steps: int
    tool_choice: str | None = None


@dataclass
class AgentOutcome:
    """What the agent loop gives the run: every step's call, each case's outcome and trajectory."""

    steps: dict[str, CallResult] = field(default_factory=dict)
    """`task/<case>@<step>` -> the step's call, as any call of the run (statistics, cost, latency)."""
    finals: dict[str, CallResult] = field(default_factory=dict)
    """`task/<case>` -> the case's outcome: its final answer, or why there is none."""
    trajectories: dict[str, Trajectory] = field(default_factory=dict)
    """`task/<case>` -> what the case did, step by step."""


def suite_agent(settings: AgentConfig, suite_dir: Path) -> Agent | None:
    """The suite's agent: its tools file loaded (evalkit.agents.tools) and its MCP servers started
    (evalkit.agents.mcp_tools), with the loop's settings; None for a suite without tools. The caller closes its
    toolbox (the tools' worker processes, the servers) when the run's calls are done."""
    path = suite_dir / (settings.tools or TOOLS_FILE)
    if not path.resolve().is_relative_to(suite_dir.resolve()):
        raise InputError(f"agent.tools={settings.tools}: the tools file must be inside the suite's folder {suite_dir}")
    if not path.is_file() and settings.tools is not None:
        raise InputError(f"agent.tools={settings.tools}: no such file in {suite_dir}; name the suite's tools "
                         f"file, or leave agent.tools null to use {TOOLS_FILE} when there is one")
    impls: list[ToolImpl] = []
    closers: list[Callable[[], None]] = []

    def close() -> None:
        for closer in closers:
            closer()

    try:
        if path.is_file():
            tools, workers = load_python_tools(path)
            closers.append(workers.close)
            impls += tools
        for name, server in settings.mcp.items():
            started = start_mcp_server(name, server.command, suite_dir, server.env)
            closers.append(started.close)
            impls += started.tools()
        if not impls:
            return None
        return Agent(ToolBox(impls, settings.tool_timeout_s, close), settings.max_steps, settings.tool_choice)
    except BaseException:
        close()
        raise


class ToolResults:
    """Answers tool calls: from the recording in replay, by calling the tool in live runs (and, in record-missing,
    where the recording cannot serve one); collects what a live run adds to the recording.

    A live run journals each result as the tool returns it (`journal`), and a resumed one (`+run.resume=true`) takes
    the results its interrupted run journaled (`resumed`) under the replay's rules (the same implementation asked
    with the same arguments) instead of calling those tools again: a finished step's tools ran once."""

    def __init__(self, mode: Mode, recording: Recording, toolbox: ToolBox, redact: Callable[[str], str],
                 resumed: Mapping[str, ToolEntry] | None = None, journal: Journal | None = None) -> None:
        self.mode, self.recording, self.toolbox, self.redact = mode, recording, toolbox, redact
        self.resumed = resumed or {}
        self.journal = journal
        self.new: dict[str, ToolEntry] = {}
        self.misses: list[Miss] = []
        self.called = 0
        self.taken = 0
        """Results taken from the journal of the interrupted run this one resumes."""
        self._lock = threading.Lock()  # the cases' tools are answered on worker threads

    def answer(self, step_call_id: str, call: ToolCall) -> ToolOutcome | None:
        """The call's result; None when a replay cannot serve it (kept in `misses`)."""
        key = tool_key(step_call_id, call.id)
        implementation = self.toolbox.fingerprint_of(call.tool)
        if self.mode is not Mode.LIVE:
            found = lookup_tool(self.recording, key, call.tool, call.arguments, implementation)
            if isinstance(found, ToolEntry):
                return ToolOutcome(found.content, found.error, found.error_message)
            if self.mode is Mode.REPLAY:
                self.misses.append(found)
                return None
        if key in self.resumed:
            kept = check_tool(self.resumed[key], key, call.tool, call.arguments, implementation)
            if isinstance(kept, ToolEntry):  # journaled by the run this one resumes (already redacted and cut)
                with self._lock:
                    self.new[key] = kept
                    self.taken += 1
                return ToolOutcome(kept.content, kept.error, kept.error_message)
        outcome = self.toolbox.invoke(call.tool, call.arguments)
        with self._lock:
            self.called += 1
        # a tool may echo a key value it was handed: masked as it arrives, as a reply is, so the model, the
        # recording and the checks all read the same text
        content = self.redact(outcome.content)
        if content != outcome.content:
            outcome = ToolOutcome(content, outcome.error, outcome.error_message)
        result = ToolResult(call_id=call.id, content=outcome.content)  # cut as the trajectory keeps it
        outcome = ToolOutcome(result.content, outcome.error, outcome.error_message)
        entry = ToolEntry(tool=call.tool, fingerprint=implementation, arguments=call.arguments,
                          content=outcome.content, error=outcome.error, error_message=outcome.error_message)
        if self.journal is not None:
            self.journal.append_tool(key, entry)
        with self._lock:
            self.new[key] = entry
        return outcome

    def refuse_misses(self, where: str) -> None:
        if self.misses:
            first = self.misses[0]
            raise ReplayRefusal(f"cannot replay from {where}: {first.reason} ({len(self.misses)} tool call(s) cannot "
                                "be served)")


@dataclass
class _Case:
    base: str
    """`task/<case>` (with `#<i>` for sample i)."""
    which: CallId
    request: Request
    steps: list[Step] = field(default_factory=list)
    final: CallResult | None = None
    step_id: str = ""
    """The call id of the step being taken (`task/<case>@<step>`, with `#<i>` for sample i)."""
    _around: tuple[str, str] = ("", "")

    def __post_init__(self) -> None:
        # CallId writes step 1's id once; a later step's differs only in the number after the step mark (a case id
        # never holds one), so it is spliced in, not made and written again for every step of every case
        head, _, rest = str(CallId.agent_step(self.which.case, 1, self.which.sample)).partition(STEP_MARK)
        self._around = (head + STEP_MARK, rest[1:])

    def take(self, step: int) -> str:
        """Start step `step` (from 1): its call id."""
        head, tail = self._around
        self.step_id = f"{head}{step}{tail}"
        return self.step_id


def run_agents(planned: Sequence[tuple[str, Request]], agent: Agent, *,
               wave: Callable[[Sequence[tuple[str, Request, str]], Mapping[str, str]], dict[str, CallResult]],
               settle: Callable[[int], None], tools: ToolResults, where: str, model: str,
               price: PriceEntry | None, concurrency: int) -> AgentOutcome:
    """Run the loop for each planned case (its `task/<case>` id and its first request). `wave` obtains one step of
    many cases through the run's call path, given each step's request fingerprint (made incrementally: step n
    resends the n-1 steps before it, GrowingRequests); `settle` refuses a replay's misses and ends the run on an
    outage."""
    from evalkit.run.execute import CallResult  # the call result type of the path this loop drives

    cases: list[_Case] = []
    offered = agent.toolbox.tools  # one tuple for every case: its JSON is made once (GrowingRequests)
    for call_id, request in planned:
        first = request.model_copy(update={"tools": offered, "tool_choice": agent.tool_choice})
        if not cases:  # the tools and the choice, checked together: they are every case's, the rest is validated
            Request.model_validate(first.model_dump())
        cases.append(_Case(call_id, CallId.parse(call_id), first))
    out = AgentOutcome()
    growing = GrowingRequests()
    active = list(cases)
    for step in range(1, agent.max_steps + 1):
        if not active:
            break
        shas: dict[str, str] = {}
        for case in active:
            shas[case.take(step)] = growing.fingerprint(case.request, case.base)
        results = wave([(case.step_id, case.request, "model") for case in active], shas)
        settle(len(active))
        out.steps |= results
        calling: list[tuple[_Case, str, Reply]] = []
        for case in active:
            step_id = case.step_id
            result = results[step_id]
            reply = result.reply
            if reply is None:
                case.final = CallResult(result.status, reason=f"{step_id}: {result.reason}")
                continue
            case.steps.append(model_call(step_id, model, reply, case.request, price))
            if not reply.tool_calls:
                case.steps.append(FinalAnswer(text=reply.text or ""))
                case.final = CallResult(result.status, reply)
            else:
                case.steps.extend(reply.tool_calls)
                calling.append((case, step_id, reply))
        answered = _answer_all(calling, tools, concurrency)
        tools.refuse_misses(where)
        for (case, _, reply), outcomes in zip(calling, answered, strict=True):
            messages = [_assistant(reply)]
            for call, outcome in zip(reply.tool_calls, outcomes, strict=True):
                assert outcome is not None
                case.steps.append(_tool_result(call, outcome))
                messages.append(_tool_message(call, outcome))
            case.request = _next_request(case.request, messages)
        active = [case for case in active if case.final is None]
    for case in active:  # still calling tools after the last step it may take
        last = [step.tool for step in case.steps if isinstance(step, ToolCall)][-1:]
        reason = (f"{case.base}: the agent reached agent.max_steps={agent.max_steps} still calling tools "
                  f"(last: {', '.join(last) or 'none'}); no final answer")
        status = out.steps[str(CallId.agent_step(case.which.case, agent.max_steps, case.which.sample))].status
        case.final = CallResult(status, reason=reason)
    for case in cases:
        assert case.final is not None
        out.finals[case.base] = case.final
        # each step was validated as it was made: the tuple of them is not validated again, step by step
        out.trajectories[case.base] = Trajectory.model_construct(steps=tuple(case.steps))
    return out


def _answer_all(calling: Sequence[tuple[_Case, str, Reply]], tools: ToolResults,
                concurrency: int) -> list[list[ToolOutcome | None]]:
    """Each calling case's tool results, in its calls' order; the cases' tools run concurrently (a case's own
    calls one after another, in the order the model made them, as a conversation would run them)."""

    def one(item: tuple[_Case, str, Reply]) -> list[ToolOutcome | None]:
        _, step_id, reply = item
        return [tools.answer(step_id, call) for call in reply.tool_calls]

    if len(calling) <= 1 or concurrency <= 1:
        return [one(item) for item in calling]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(calling)), thread_name_prefix="evalkit-tool") as pool:
        return list(pool.map(one, calling))


def model_call(step_id: str, model: str, reply: Reply, request: Request, price: PriceEntry | None) -> ModelCall:
    """One model call as a trajectory's step: its tokens (estimated where the reply gave none), cost and time."""
    usage = reply.usage
    input_tokens = usage.input_tokens
    output_tokens = usage.output_tokens
    cost = None
    if price is not None:
        tokens = Tokens(input_tokens if input_tokens is not None else
                        estimate_tokens(" ".join(m.text for m in request.messages)),
                        output_tokens if output_tokens is not None else estimate_tokens(reply.text or ""),
                        usage.cache_read_tokens or 0, usage.cache_write_tokens or 0)
        figure = call_cost(price, tokens)
        cost = float(figure) if figure is not None else None
    if cost is None or (type(cost) is float and cost >= 0):  # NaN is not >= 0: validated below, and refused
        # the tokens and the time are the reply's, validated with it under the same bounds (ints >= 0, a time >= 0)
        return _trusted(ModelCall, {"kind": "model_call", "call_id": step_id, "model": model,
                                    "input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost,
                                    "milliseconds": reply.latency_ms}, _MODEL_CALL_SET)
    return ModelCall(call_id=step_id, model=model, input_tokens=input_tokens, output_tokens=output_tokens,
                     cost_usd=cost, milliseconds=reply.latency_ms)


# An agent's step makes four records of values validated already (the reply's, the tool result's), and pydantic's
# validation of them, with a Request copied per step, was a third of what a replayed step cost beyond a single call.
# model_construct costs more than validating here (it searches each field's aliases), so `_trusted` sets what it
# sets directly: every field, in declaration order, and the fields set as validation would have set them. Tests
# (tests/run/test_agent_records.py) pin each record equal to the validated one, dumped alike.
_Record = TypeVar("_Record", bound=BaseModel)
_MODEL_CALL_SET = frozenset({"call_id", "model", "input_tokens", "output_tokens", "cost_usd", "milliseconds"})
_ASSISTANT_SET = frozenset({"role", "content", "tool_calls"})
_TOOL_MESSAGE_SET = frozenset({"role", "content", "tool_call_id", "error"})
_TOOL_RESULT_SET = frozenset({"call_id", "content", "error", "error_message"})
_setattr = object.__setattr__


def _trusted(cls: type[_Record], fields: dict[str, Any], given: frozenset[str]) -> _Record:
    """A record of `cls` holding `fields` (all of them, each valid for it), with `given` as its fields set."""
    made = cls.__new__(cls)
    _setattr(made, "__dict__", fields)
    _setattr(made, "__pydantic_fields_set__", set(given))
    _setattr(made, "__pydantic_extra__", None)
    _setattr(made, "__pydantic_private__", None)
    return made


# none of these has private attributes, a post-init hook or a field alias, which _trusted would skip
assert not any(cls.__private_attributes__ or cls.__pydantic_post_init__ or
               any(f.alias or f.validation_alias for f in cls.model_fields.values())
               for cls in (Message, ModelCall, ToolResult, Request))


def _assistant(reply: Reply) -> Message:
    """`reply.as_message()`: its text and tool calls are the validated reply's, and an assistant turn may call tools."""
    return _trusted(Message, {"role": "assistant", "content": reply.text or "", "tool_calls": reply.tool_calls,
                              "tool_call_id": None, "error": False}, _ASSISTANT_SET)


def _tool_message(call: ToolCall, outcome: ToolOutcome) -> Message:
    """The tool message answering `call`: its content a text and its error a bool as a recording or a tool gave them
    (anything else is validated, and refused, as before)."""
    if type(outcome.content) is not str or type(outcome.error) is not bool:
        return Message(role="tool", content=outcome.content, tool_call_id=call.id, error=outcome.error)
    return _trusted(Message, {"role": "tool", "content": outcome.content, "tool_calls": (), "tool_call_id": call.id,
                              "error": outcome.error}, _TOOL_MESSAGE_SET)


def _tool_result(call: ToolCall, outcome: ToolOutcome) -> ToolResult:
    """The trajectory's step for `outcome`; a content longer than a trajectory keeps is validated, and so cut."""
    content, error, message = outcome.content, outcome.error, outcome.error_message
    if type(content) is not str or len(content) > MAX_TOOL_RESULT_CHARS or type(error) is not bool or \
            (message is not None and type(message) is not str):
        return ToolResult(call_id=call.id, content=content, error=error, error_message=message)
    return _trusted(ToolResult, {"kind": "tool_result", "call_id": call.id, "content": content, "error": error,
                                 "error_message": message}, _TOOL_RESULT_SET)


def _next_request(request: Request, messages: Sequence[Message]) -> Request:
    """`request.model_copy(update={"messages": ... + messages, "tool_choice": None})`: the next step's request (its
    tool choice was for the first step only). The same objects but the two fields, as model_copy leaves them
    (GrowingRequests compares the options, schema and tools by identity)."""
    fields = dict(request.__dict__)
    fields["messages"] = (*request.messages, *messages)
    fields["tool_choice"] = None
    return _trusted(Request, fields, frozenset(request.__pydantic_fields_set__ | {"messages", "tool_choice"}))


def agent_metrics(cases: Sequence[Mapping[str, Any]], trajectories: Mapping[str, Trajectory]) -> dict[str, Any]:
    """The suite's agent metrics, each as a run report's metric (`mean`, `count`, `unmeasured`) and each read as
    higher-is-better, as the gate reads every metric, so a policy blocks on its drop (`block_on_drop`):
    `agent.solved_rate` (cases whose every check passed), `agent.tool_success_rate` (1 - the tool-error rate),
    `agent.step_efficiency` (1 / the mean model steps per case) and `agent.solved_per_usd` (1 / the cost per solved
    case; unmeasured when a step has no price or nothing was solved). Sample 0 of each case, as the case table."""
    plain = {call_id.removeprefix("task/"): t for call_id, t in trajectories.items() if "#" not in call_id}
    scored = [c for c in cases if c.get("id") in plain and c.get("status") != "unscored"]
    solved = sum(1 for c in scored if c.get("passed") is True)
    results = [r for t in plain.values() for _, r in t.tool_results()]
    steps = [len(t.model_calls()) for t in plain.values()]
    costs = [m.cost_usd for t in plain.values() for _, m in t.model_calls()]
    unpriced = not costs or any(c is None for c in costs)
    spent = sum(c for c in costs if c is not None)

    def metric(value: float | None, count: int) -> dict[str, Any]:
        return {"mean": None if value is None else round(value, 6), "count": count if value is not None else 0,
                "unmeasured": 0 if value is not None else max(count, 1)}

    return {
        "agent.solved_rate": metric(solved / len(scored) if scored else None, len(scored)),
        "agent.tool_success_rate": metric(1 - sum(r.error for r in results) / len(results) if results else None,
                                          len(results)),
        "agent.step_efficiency": metric(len(steps) / sum(steps) if steps and sum(steps) else None, len(steps)),
        "agent.solved_per_usd": metric(solved / spent if solved and spent > 0 and not unpriced else None, len(scored)),
    }


def trajectories_json(trajectories: Mapping[str, Trajectory]) -> dict[str, Any]:
    """The trajectories as the run input and the run report hold them, by `task/<case>`."""
    return {call_id: trajectory.model_dump(mode="json", exclude_none=True)
            for call_id, trajectory in sorted(trajectories.items())}
