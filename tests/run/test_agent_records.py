"""The agent loop's per-step records, made without validating again what was validated (evalkit.run.agent_loop's
`_trusted`): each equals the record pydantic validates from the same values, dumps alike, fingerprints alike, and
anything the shortcut cannot vouch for still goes through validation."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from evalkit.agents.tools import ToolOutcome
from evalkit.core.call_id import CallId
from evalkit.core.prices import PriceEntry
from evalkit.records.call import Message, Reply, Request, Tool, ToolCall, Usage
from evalkit.records.trajectory import MAX_TOOL_RESULT_CHARS, ModelCall, ToolResult
from evalkit.run import agent_loop
from evalkit.run.recording import GrowingRequests, request_fingerprint

CALL = ToolCall(id="call_1", tool="lookup", arguments={"id": 3, "tags": ["a", "b"]})


def same(made: BaseModel, validated: BaseModel) -> None:
    """Equal as values, in every dump, and in the fields set (what model_copy and exclude_unset read)."""
    assert type(made) is type(validated)
    assert made == validated
    assert made.model_dump() == validated.model_dump()
    assert made.model_dump(mode="json") == validated.model_dump(mode="json")
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_fields_set == validated.model_fields_set
    assert list(made.__dict__) == list(validated.__dict__)  # declaration order, as validation makes it


@pytest.mark.parametrize("reply", [
    Reply(tool_calls=(CALL,), usage=Usage(input_tokens=5, output_tokens=2), latency_ms=1.5),
    Reply(text="thinking out loud", tool_calls=(CALL, CALL.model_copy(update={"id": "call_2"}))),
    Reply(text="the answer"),
])
def test_the_assistant_turn_is_the_replys_message(reply: Reply) -> None:
    same(agent_loop._assistant(reply), reply.as_message())


@pytest.mark.parametrize("outcome", [ToolOutcome('{"status": "shipped"}'), ToolOutcome("no such id", True, "boom"),
                                     ToolOutcome("")])
def test_the_tool_message_and_result_are_the_validated_ones(outcome: ToolOutcome) -> None:
    same(agent_loop._tool_message(CALL, outcome),
         Message(role="tool", content=outcome.content, tool_call_id=CALL.id, error=outcome.error))
    same(agent_loop._tool_result(CALL, outcome),
         ToolResult(call_id=CALL.id, content=outcome.content, error=outcome.error, error_message=outcome.error_message))


def test_what_the_shortcut_cannot_vouch_for_is_validated() -> None:
    long = ToolOutcome("z" * (MAX_TOOL_RESULT_CHARS + 10))
    result = agent_loop._tool_result(CALL, long)
    assert len(result.content) <= MAX_TOOL_RESULT_CHARS and result.content.endswith("cut]")  # cut as ever
    assert result == ToolResult(call_id=CALL.id, content=long.content)
    with pytest.raises(ValidationError):  # a content that is no text is refused as before, never kept
        agent_loop._tool_message(CALL, ToolOutcome(["not", "text"]))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        agent_loop._tool_result(CALL, ToolOutcome("x", error_message=7))  # type: ignore[arg-type]


@pytest.mark.parametrize("price", [None, PriceEntry(input=1.0, output=2.0, cached_input=None, cache_write=None,
                                                                as_of="2026-12-01", source="https://example.com/p")])
@pytest.mark.parametrize("usage", [Usage(input_tokens=100, output_tokens=10), Usage()])
def test_the_model_call_step_is_the_validated_one(price: PriceEntry | None, usage: Usage) -> None:
    reply = Reply(text="ok", usage=usage, latency_ms=12.0)
    request = Request(model="m", messages=(Message(role="user", content="q " * 40),))
    made = agent_loop.model_call("task/c@2", "m", reply, request, price)
    assert (made.cost_usd is None) is (price is None)
    same(made, ModelCall(call_id="task/c@2", model="m", input_tokens=usage.input_tokens,
                         output_tokens=usage.output_tokens, cost_usd=made.cost_usd, milliseconds=12.0))


def test_the_next_request_is_model_copy_with_the_new_messages() -> None:
    tools = (Tool(name="lookup", parameters={"type": "object"}),)
    first = Request(model="m", options={"seed": 1}, tools=tools, tool_choice="required",
                    response_schema={"type": "object"},
                    messages=(Message(role="system", content="s"), Message(role="user", content="u")))
    messages = [agent_loop._assistant(Reply(tool_calls=(CALL,))), agent_loop._tool_message(CALL, ToolOutcome("r"))]
    made = agent_loop._next_request(first, messages)
    copied = first.model_copy(update={"messages": (*first.messages, *messages), "tool_choice": None})
    same(made, copied)
    # the objects GrowingRequests compares by identity are carried, not copied
    assert made.options is first.options and made.tools is first.tools
    assert made.response_schema is first.response_schema
    assert request_fingerprint(made) == request_fingerprint(copied) == GrowingRequests().fingerprint(made, "c")
    assert first.tool_choice == "required" and len(first.messages) == 2  # the step before is left as it was


@pytest.mark.parametrize("call_id", ["task/refund", "task/refund#3", "task/a.b-c_d#12"])
def test_a_steps_call_id_is_callids(call_id: str) -> None:
    which = CallId.parse(call_id)
    case = agent_loop._Case(call_id, which, Request(model="m", messages=(Message(role="user", content="q"),)))
    for step in (1, 2, 9, 10, 123):
        assert case.take(step) == case.step_id == str(CallId.agent_step(which.case, step, which.sample))
