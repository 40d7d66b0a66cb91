"""evalkit/programs/endpoint/openai_responses.py: the OpenAI Responses API read into the call contract and answered as
the `openai` SDK parses it, whole and streamed, spoken to over the endpoint's Unix socket by the real client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from openai.types.responses import Response

from evalkit.live.providers.sdkwire import httpx_module
from evalkit.programs.endpoint import Endpoint, Unserved, openai_responses
from evalkit.programs.endpoint.wire import WireError
from evalkit.records.call import Message, NamedTool, Reply, Request, ToolCall, Usage

LOOKUP = {"type": "function", "name": "lookup", "description": "Find a row.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
# what an agent sends on its second call: its input so far, the model's output items, and the tool's output
AGENT_INPUT = [
    {"role": "user", "content": [{"type": "input_text", "text": "Who is "}, {"type": "input_text", "text": "Alice?"}]},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
    {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": "Alice"}',
     "status": "completed"},
    {"type": "function_call_output", "call_id": "c1", "output": "[[1, \"Lyon\"]]"},
]


def test_a_responses_body_becomes_the_call_with_its_tools_and_tool_results() -> None:
    body = {"model": "whatever-the-program-says", "instructions": "Be brief.", "input": AGENT_INPUT,
            "tools": [LOOKUP], "tool_choice": {"type": "function", "name": "lookup"}, "temperature": 0,
            "max_output_tokens": 64, "store": False, "stream": False,
            "text": {"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}}}
    request = openai_responses.read_request(body, "the-run's-model")
    assert request.model == "the-run's-model"
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[0].text == "Be brief." and request.messages[1].text == "Who is Alice?"
    # the turn's text and its function_call items are one assistant message, as every other wire format has it
    assert request.messages[2] == Message(role="assistant", content=(request.messages[2].content),
                                          tool_calls=(ToolCall(id="c1", tool="lookup", arguments={"q": "Alice"}),))
    assert request.messages[2].text == "Looking."
    assert request.messages[3] == Message(role="tool", tool_call_id="c1", content="[[1, \"Lyon\"]]")
    assert [t.name for t in request.tools] == ["lookup"] and request.tool_choice == NamedTool(name="lookup")
    assert request.response_schema == {"type": "object"}
    # transport fields are not asked for; max_output_tokens is the option evalkit's providers read
    assert request.options == {"temperature": 0, "max_tokens": 64}


def test_text_input_is_one_user_message() -> None:
    request = openai_responses.read_request({"input": "hello"}, "m")
    assert request.messages == (Message(role="user", content="hello"),)


@pytest.mark.parametrize(("body", "field"), [
    ({"input": "x", "previous_response_id": "resp_1"}, "body.previous_response_id"),
    ({"input": "x", "conversation": "conv_1"}, "body.conversation"),
    ({"input": "x", "background": True}, "body.background"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input[0]: item type 'reasoning'"),
    ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"input": [{"type": "function_call", "name": "f"}]}, "input[0]: a function_call item needs"),
    ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"input": "x", "tools": [{"type": "function", "name": "a b"}]}, "tools[0]: name"),
    ({"input": "x", "tool_choice": {"type": "allowed_tools"}}, "body.tool_choice"),
    ({"input": "x", "text": {"format": {"type": "json_object"}}}, "body.text.format"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AA"}]}]},
     "input[0].content[0]"),  # no media store: refused, never guessed
])
def test_an_unreadable_responses_body_is_refused_naming_the_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(WireError) as refused:
        openai_responses.read_request(body, "m")
    assert field in str(refused.value)


def test_a_reply_with_text_and_tool_calls_is_a_response_the_sdk_parses() -> None:
    reply = Reply(text="Checking.", tool_calls=(ToolCall(id="c2", tool="lookup", arguments={"q": "Bob"}),),
                  usage=Usage(input_tokens=11, output_tokens=4))
    parsed = Response.model_validate(openai_responses.reply_body(reply, "task/a@1", "m"))
    assert parsed.output_text == "Checking." and parsed.status == "completed"
    calls = [item for item in parsed.output if item.type == "function_call"]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [("c2", "lookup", {"q": "Bob"})]
    assert parsed.usage is not None and parsed.usage.total_tokens == 15
    cut = Response.model_validate(openai_responses.reply_body(Reply(text="Lyo", stop_reason="length"), "t", "m"))
    assert cut.status == "incomplete" and cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Endpoint, list[tuple[str, Request]]]]:
    asked: list[tuple[str, Request]] = []

    def answer(call_id: str, request: Request) -> Reply | Unserved:
        asked.append((call_id, request))
        if request.messages[-1].text == "refuse me":
            return Unserved("refused", f"{call_id} was recorded for another request: input[0].content")
        if not any(m.role == "tool" for m in request.messages) and request.tools:
            return Reply(text="Let me look.", tool_calls=(ToolCall(id="call-9", tool="lookup",
                                                                   arguments={"q": "Alice"}),))
        return Reply(text=f"reply {len(asked)}", usage=Usage(input_tokens=3, output_tokens=2))

    with Endpoint(tmp_path / "e.sock", "case-1", "run-model", answer) as endpoint:
        yield endpoint, asked


def _openai(endpoint: Endpoint) -> openai.OpenAI:
    httpx = httpx_module(getattr(openai, "DefaultHttpxClient", None))
    return openai.OpenAI(base_url="http://endpoint/v1", api_key="dummy", max_retries=0,
                         http_client=httpx.Client(transport=httpx.HTTPTransport(uds=str(endpoint.socket_path))))


def test_the_sdk_runs_a_tool_loop_through_responses_create_and_reads_a_stream(
        served: tuple[Endpoint, list[tuple[str, Request]]]) -> None:
    endpoint, asked = served
    client = _openai(endpoint)
    items: list[object] = [{"role": "user", "content": "Who is Alice?"}]
    first = client.responses.create(model="x", input=items, tools=[LOOKUP], store=False)  # type: ignore[arg-type]
    calls = [item for item in first.output if item.type == "function_call"]
    assert first.output_text == "Let me look." and [c.name for c in calls] == ["lookup"]
    items += [item.model_dump(exclude_none=True) for item in first.output]
    items.append({"type": "function_call_output", "call_id": calls[0].call_id, "output": "Lyon"})
    second = client.responses.create(model="x", input=items, tools=[LOOKUP], store=False)  # type: ignore[arg-type]
    assert second.output_text == "reply 2"
    # the SDK's stream helper checks the events' order and identities as it accumulates them
    with client.responses.stream(model="x", input="three") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert deltas == ["reply 3"] and final.output_text == "reply 3" and final.usage is not None
    streamed_calls = client.responses.create(model="x", input="four", tools=[LOOKUP], stream=True)  # type: ignore
    kinds = [event.type for event in streamed_calls]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert endpoint.calls == ["task/case-1", "task/case-1@1", "task/case-1@2", "task/case-1@3"]
    replayed = asked[1][1]
    assert [m.role for m in replayed.messages] == ["user", "assistant", "tool"]
    assert replayed.messages[1].tool_calls == (ToolCall(id="call-9", tool="lookup", arguments={"q": "Alice"}),)


def test_a_call_the_run_cannot_serve_is_an_error_the_sdk_raises(
        served: tuple[Endpoint, list[tuple[str, Request]]]) -> None:
    endpoint, _ = served
    with pytest.raises(openai.BadRequestError, match="recorded for another request: input"):
        _openai(endpoint).responses.create(model="x", input="refuse me")
    with pytest.raises(openai.BadRequestError, match="previous_response_id: evalkit's endpoint keeps no state"):
        _openai(endpoint).responses.create(model="x", input="x", previous_response_id="resp_1")
    assert endpoint.unserved is not None and endpoint.unserved.kind == "refused" and endpoint.calls == []
