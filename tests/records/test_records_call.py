"""The call contract (evalkit.records.call): tools, tool calls and tool messages join without moving an identity."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalkit.core.errors import InputError
from evalkit.records.call import (
    ImagePart,
    Message,
    NamedTool,
    Reply,
    Request,
    TextPart,
    Tool,
    ToolCall,
    parse_arguments,
)
from evalkit.run.recording import request_fingerprint

PLAIN = Request(model="m", messages=(Message(role="system", content="be brief"), Message(role="user", content="hi")),
                options={"temperature": 0})


def test_a_request_without_tools_dumps_as_it_did_before_tools_existed() -> None:
    # the shape every recording made before this contract grew stores, and the one its fingerprints cover
    assert PLAIN.model_dump(mode="json") == {
        "model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "response_schema": None, "options": {"temperature": 0}}
    assert Reply(text="hello").model_dump(mode="json", exclude_none=True) == {"text": "hello", "usage": {}}


def test_a_fingerprint_made_before_tools_existed_still_matches() -> None:
    # computed at 180e0c4, before evalkit.records.call existed; a change here orphans every recording
    assert request_fingerprint(PLAIN) == request_fingerprint(Request.model_validate(PLAIN.model_dump(mode="json")))
    assert request_fingerprint(PLAIN) == "5f35a91646c3"


def _agent_request() -> Request:
    lookup = Tool(name="lookup_order", description="Find an order by id.",
                  parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})
    call = ToolCall(id="call_1", tool="lookup_order", arguments={"id": "A-7"})
    return Request(model="m", tools=(lookup,), tool_choice="auto", messages=(
        Message(role="user", content=(TextPart(text="where is "), TextPart(text="A-7?"))),
        Message(role="assistant", content="", tool_calls=(call,)),
        Message(role="tool", content='{"status": "shipped"}', tool_call_id="call_1")))


def test_tools_tool_calls_and_tool_messages_round_trip_and_change_the_identity() -> None:
    request = _agent_request()
    again = Request.model_validate(request.model_dump(mode="json"))
    assert again == request
    assert request.messages[0].text == "where is A-7?"
    assert request.tool("lookup_order") is request.tools[0] and request.tool("nope") is None
    changed = request.model_copy(update={"tools": (request.tools[0].model_copy(update={"description": "Find it."}),)})
    assert request_fingerprint(changed) != request_fingerprint(request)


def test_a_reply_with_tool_calls_and_no_text_reads_back_and_continues_the_conversation() -> None:
    reply = Reply(text=None, stop_reason="tool_calls", tool_calls=(ToolCall(id="c", tool="f", arguments={"a": 1}),))
    assert Reply.model_validate(reply.model_dump(mode="json", exclude_none=True)) == reply
    turn = reply.as_message()
    assert turn.role == "assistant" and turn.content == "" and turn.tool_calls == reply.tool_calls


@pytest.mark.parametrize(("message", "why"), [
    ({"role": "user", "content": "x", "tool_calls": [{"id": "c", "tool": "f"}]}, "only an assistant message"),
    ({"role": "tool", "content": "x"}, "needs tool_call_id"),
    ({"role": "user", "content": "x", "tool_call_id": "c"}, "needs tool_call_id"),
    ({"role": "assistant", "content": "x", "error": True}, "only a tool message can be an error"),
])
def test_a_message_that_does_not_fit_its_role_is_refused(message: dict, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Message.model_validate(message)


def test_tool_names_and_choices_are_checked() -> None:
    with pytest.raises(ValidationError, match="tool name"):
        Tool(name="has space")
    with pytest.raises(ValidationError, match="tools named twice"):
        Request(model="m", messages=(Message(role="user", content="x"),), tools=(Tool(name="f"), Tool(name="f")))
    with pytest.raises(ValidationError, match="not among the tools"):
        Request(model="m", messages=(Message(role="user", content="x"),), tools=(Tool(name="f"),),
                tool_choice=NamedTool(name="g"))


def test_arguments_that_are_not_json_are_kept_as_text() -> None:
    assert parse_arguments('{"a": [1, 2]}') == {"a": [1, 2]}
    assert parse_arguments('{"a": ') == '{"a": '
    assert parse_arguments("[" * 100_000) == "[" * 100_000  # too deep for the parser: kept, not a crash


# -- image parts (issue 39): the hash and the size in the identity, never the bytes --------------------------------

def _image(sha: str = "ab" * 32, **changes: object) -> ImagePart:
    return ImagePart(**({"media_type": "image/png", "sha256": sha, "size": 4, "path": "images/r1.png"} | changes))


def test_an_image_part_round_trips_by_its_description_and_its_hash_is_in_the_identity() -> None:
    request = Request(model="m", messages=(Message(role="user", content=(TextPart(text="Total?"), _image())),))
    dumped = request.model_dump(mode="json")
    assert dumped["messages"][0]["content"][1] == {"kind": "image", "media_type": "image/png", "sha256": "ab" * 32,
                                                   "size": 4, "path": "images/r1.png"}
    again = Request.model_validate(dumped)
    assert again == request and again.images == (_image(),) and again.messages[0].text == "Total?"
    other = request.model_copy(update={"messages": (Message(role="user", content=(TextPart(text="Total?"),
                                                                                  _image("cd" * 32))),)})
    assert request_fingerprint(other) != request_fingerprint(request)


@pytest.mark.parametrize("changes", [{"sha256": "AB" * 32}, {"sha256": "ab"}, {"size": -1}, {"path": ""},
                                     {"media_type": "text/html"}, {"media_type": "image/svg+xml"}])
def test_an_image_part_that_is_not_one_is_refused(changes: dict) -> None:
    with pytest.raises(ValidationError):
        _image(**changes)


def test_a_part_read_back_from_a_recording_has_no_bytes_to_send(tmp_path) -> None:
    with pytest.raises(InputError, match="image images/r1.png: no file to read it from"):
        _image().data()
    (tmp_path / "r1.png").write_bytes(b"abcd")
    import hashlib
    located = _image(hashlib.sha256(b"abcd").hexdigest()).located(tmp_path / "r1.png")
    assert located.data() == b"abcd" and located == _image(hashlib.sha256(b"abcd").hexdigest())
