"""evalkit/programs/endpoint: the wire formats read into the call contract and answered as the SDKs parse them, and
the endpoint's call ids, refusals and bounds, spoken to over its Unix socket by the real `openai` and `anthropic`
clients (through httpx's Unix-socket transport: no TCP, no network)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from openai.types.chat import ChatCompletion

from evalkit.live.providers.sdkwire import httpx_module
from evalkit.programs.endpoint import MAX_BODY_BYTES, Endpoint, Unserved, anthropic_messages, openai_chat
from evalkit.programs.endpoint.wire import WireError
from evalkit.records.call import Message, NamedTool, Reply, Request, ToolCall, Usage

LOOKUP = {"type": "function", "function": {"name": "lookup", "description": "Find a row.",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
AGENT_TURNS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Who is "}, {"type": "text", "text": "Alice?"}]},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "Alice"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "[[1, \"Lyon\"]]"},
]


def test_a_chat_completions_body_becomes_the_call_with_its_tools_and_tool_messages() -> None:
    body = {"model": "whatever-the-program-says", "messages": AGENT_TURNS, "tools": [LOOKUP],
            "tool_choice": {"type": "function", "function": {"name": "lookup"}}, "temperature": 0, "stream": False}
    request = openai_chat.read_request(body, "the-run's-model")
    assert request.model == "the-run's-model"  # the run's model component decides, not the program
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[1].text == "Who is Alice?"
    assert request.messages[2].tool_calls == (ToolCall(id="c1", tool="lookup", arguments={"q": "Alice"}),)
    assert request.messages[3].tool_call_id == "c1"
    assert [t.name for t in request.tools] == ["lookup"] and request.tools[0].parameters["properties"] == {
        "q": {"type": "string"}}
    assert request.tool_choice == NamedTool(name="lookup")
    assert request.options == {"temperature": 0}  # `stream` says how to deliver, not what to ask: not fingerprinted


def test_a_reply_with_tool_calls_is_a_chat_completion_the_sdk_parses() -> None:
    reply = Reply(text=None, tool_calls=(ToolCall(id="c2", tool="lookup", arguments={"q": "Bob"}),),
                  usage=Usage(input_tokens=11, output_tokens=4))
    parsed = ChatCompletion.model_validate(openai_chat.reply_body(reply, "task/a@1", "m"))
    choice = parsed.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"q": "Bob"}
    assert parsed.usage is not None and parsed.usage.total_tokens == 15


def test_a_messages_body_becomes_the_call_with_tool_use_and_tool_results() -> None:
    body = {"model": "claude-x", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
            "tools": [{"name": "lookup", "description": "Find a row.", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "messages": [{"role": "user", "content": "Who is Alice?"},
                         {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                                           {"type": "tool_use", "id": "t1", "name": "lookup",
                                                            "input": {"q": "Alice"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                       "content": "no such table", "is_error": True},
                                                      {"type": "text", "text": "Try again."}]}]}
    request = anthropic_messages.read_request(body, "m")
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool", "user"]
    assert request.messages[2].tool_calls == (ToolCall(id="t1", tool="lookup", arguments={"q": "Alice"}),)
    assert request.messages[3] == Message(role="tool", tool_call_id="t1", content="no such table", error=True)
    assert request.tool_choice == "required" and request.options == {"max_tokens": 64}
    out = anthropic.types.Message.model_validate(anthropic_messages.reply_body(
        Reply(text="Lyon", stop_reason="end_turn",
              tool_calls=(ToolCall(id="t2", tool="lookup", arguments={"q": "x"}),)), "task/a", "m"))
    assert out.stop_reason == "tool_use" and [b.type for b in out.content] == ["text", "tool_use"]


@pytest.mark.parametrize(("body", "field"), [
    ({"messages": "hello"}, "body.messages: expected list"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0]: "),  # a tool message without its call id
    ({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a b"}}]},
     "tools[0].function: name"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "body.n"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}, "messages[0].content[0]"),
])
def test_an_unreadable_chat_body_is_refused_naming_the_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(WireError) as refused:
        openai_chat.read_request(body, "m")
    assert field in str(refused.value)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Endpoint, list[tuple[str, Request]]]]:
    asked: list[tuple[str, Request]] = []

    def answer(call_id: str, request: Request) -> Reply | Unserved:
        asked.append((call_id, request))
        if request.messages[-1].text == "refuse me":
            return Unserved("refused", f"{call_id} was recorded for another request: messages[0].content")
        return Reply(text=f"reply {len(asked)}", usage=Usage(input_tokens=3, output_tokens=2))

    with Endpoint(tmp_path / "e.sock", "case-1", "run-model", answer) as endpoint:
        yield endpoint, asked


def _over_socket(sdk: object, endpoint: Endpoint) -> object:
    """An HTTP client of the httpx the SDK is built on, speaking to the endpoint's Unix socket."""
    httpx = httpx_module(getattr(sdk, "DefaultHttpxClient", None))
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(endpoint.socket_path)))


def _openai(endpoint: Endpoint) -> openai.OpenAI:
    return openai.OpenAI(base_url="http://endpoint/v1", api_key="dummy", max_retries=0,
                         http_client=_over_socket(openai, endpoint))  # type: ignore[arg-type]


def test_call_ids_follow_the_order_of_arrival_across_both_wire_formats_and_streaming(
        served: tuple[Endpoint, list[tuple[str, Request]]]) -> None:
    endpoint, asked = served
    client = _openai(endpoint)
    first = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "one"}])
    stream = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "two"}], stream=True,
                                            stream_options={"include_usage": True})
    streamed = [chunk for chunk in stream]
    claude = anthropic.Anthropic(base_url="http://endpoint", api_key="dummy", max_retries=0,
                                 http_client=_over_socket(anthropic, endpoint))  # type: ignore[arg-type]
    third = claude.messages.create(model="y", max_tokens=5, messages=[{"role": "user", "content": "three"}])
    assert first.choices[0].message.content == "reply 1"
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == "reply 2"
    assert streamed[-1].usage is not None and streamed[-1].usage.total_tokens == 5
    assert third.content[0].type == "text" and third.content[0].text == "reply 3"
    assert endpoint.calls == ["task/case-1", "task/case-1@1", "task/case-1@2"]
    assert [request.messages[-1].text for _, request in asked] == ["one", "two", "three"]


def test_a_call_the_run_cannot_serve_is_an_error_the_sdk_raises_and_ends_the_case(
        served: tuple[Endpoint, list[tuple[str, Request]]]) -> None:
    endpoint, asked = served
    client = _openai(endpoint)
    client.chat.completions.create(model="x", messages=[{"role": "user", "content": "fine"}])
    with pytest.raises(openai.BadRequestError, match="recorded for another request: messages"):
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": "refuse me"}])
    with pytest.raises(openai.BadRequestError, match="an earlier call of this case was not served"):
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": "after"}])
    assert endpoint.calls == ["task/case-1"] and len(asked) == 2  # the later call never reached the run
    assert endpoint.unserved is not None and endpoint.unserved.kind == "refused"


def test_a_call_arriving_while_another_of_the_case_is_in_flight_is_refused(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def answer(call_id: str, request: Request) -> Reply:
        entered.set()
        assert release.wait(10)
        return Reply(text="slow")

    with Endpoint(tmp_path / "e.sock", "c", "m", answer) as endpoint:
        client = _openai(endpoint)
        first: list[object] = []
        worker = threading.Thread(target=lambda: first.append(
            client.chat.completions.create(model="x", messages=[{"role": "user", "content": "a"}])))
        worker.start()
        assert entered.wait(10)
        with pytest.raises(openai.BadRequestError, match="concurrent calls within one case are refused"):
            _openai(endpoint).chat.completions.create(model="x", messages=[{"role": "user", "content": "b"}])
        release.set()
        worker.join(10)
    assert endpoint.calls == ["task/c"] and len(first) == 1
    assert endpoint.rejected and "in flight" in endpoint.rejected[0]


def _raw(path: Path, request: bytes) -> bytes:
    """The whole answer to `request`: the server sends its head and body in separate writes and keeps the
    connection open, so read the head, then as many bytes as its Content-Length says."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(path))
        try:
            conn.sendall(request)
        except BrokenPipeError:  # the server answered (413) and closed before reading a body it refuses
            pass
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := conn.recv(65536)):
            answer += chunk
        head = answer.partition(b"\r\n\r\n")[0].lower()
        length = int(head.partition(b"content-length:")[2].split(b"\r\n")[0] or 0)
        while len(answer.partition(b"\r\n\r\n")[2]) < length and (chunk := conn.recv(65536)):
            answer += chunk
        return answer


def test_bodies_that_are_not_calls_are_answered_without_reaching_the_run(
        served: tuple[Endpoint, list[tuple[str, Request]]]) -> None:
    endpoint, asked = served
    huge = _raw(endpoint.socket_path, f"POST /v1/chat/completions HTTP/1.1\r\nHost: e\r\nContent-Length: "
                                      f"{MAX_BODY_BYTES + 1}\r\n\r\n".encode())
    assert huge.startswith(b"HTTP/1.1 413")
    not_json = b"{not json"
    bad = _raw(endpoint.socket_path, b"POST /v1/messages HTTP/1.1\r\nHost: e\r\nContent-Length: %d\r\n\r\n%s"
               % (len(not_json), not_json))
    assert bad.startswith(b"HTTP/1.1 400") and b"the body is not JSON" in bad and b'"type": "error"' in bad
    other = _raw(endpoint.socket_path, b"POST /v1/embeddings HTTP/1.1\r\nHost: e\r\nContent-Length: 2\r\n\r\n{}")
    assert other.startswith(b"HTTP/1.1 404")
    assert asked == [] and endpoint.calls == []
