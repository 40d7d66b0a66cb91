"""Recordings: replay hits, misses and stale entries; atomic saves; foreign keys refused."""

from __future__ import annotations

import copy
import json
import os

import pytest

from evalkit.core.errors import RecordingError
from evalkit.core.key import EvalKey
from evalkit.live.redact import Redactor
from evalkit.records.call import Message, Reply, Request
from evalkit.run.recording import (
    Entry,
    ForeignRecording,
    Hit,
    Miss,
    Provenance,
    Recording,
    load_recording,
    lookup,
    request_fingerprint,
    save_recording,
)

KEY = EvalKey(suite="s", dataset="d@1", dataset_sha="aaa", model="m", prompt_version="v1", prompt_sha="p")


def request(text: str = "hello", system: str = "sys") -> Request:
    return Request(model="m", messages=(Message(role="system", content=system), Message(role="user", content=text)))


def recording() -> Recording:
    entry = Entry(request_sha=request_fingerprint(request()), request=request(), reply=Reply(text="hi"))
    return Recording(key=KEY, provenance=Provenance(kind="authored", note="test"), calls={"task/c1": entry})


def test_hit_returns_the_recorded_reply():
    found = lookup(recording(), "task/c1", request())
    assert isinstance(found, Hit) and found.reply.text == "hi"


def test_miss_names_the_call_and_the_closest_call():
    found = lookup(recording(), "task/c2", request())
    assert isinstance(found, Miss) and found.kind == "missing" and found.call_id == "task/c2"
    assert found.reason == "task/c2 is not recorded (closest recorded call: task/c1)"


def test_changed_prompt_makes_the_entry_stale_and_names_the_first_differing_field():
    found = lookup(recording(), "task/c1", request(system="a new prompt"))
    assert isinstance(found, Miss) and found.kind == "stale"
    assert found.reason == ('task/c1 was recorded for another request: messages[0].content: recorded "sys", '
                            'asked "a new prompt"')


def test_an_option_never_recorded_is_named_with_both_sides():
    changed = request().model_copy(update={"options": {"max_tokens": 17}})
    found = lookup(recording(), "task/c1", changed)
    assert isinstance(found, Miss) and found.reason.endswith("options.max_tokens: recorded (absent), asked 17")


def test_load_options_are_no_part_of_a_calls_identity():
    # n_ctx, n_batch, n_ubatch, n_threads change how llama.cpp computes, not what is asked
    loaded = request().model_copy(update={"options": {"n_ctx": 512, "n_batch": 8, "n_ubatch": 1, "n_threads": 2}})
    assert request_fingerprint(loaded) == request_fingerprint(request())
    assert isinstance(lookup(recording(), "task/c1", loaded), Hit)
    seeded = request().model_copy(update={"options": {"seed": 1}})
    assert request_fingerprint(seeded) != request_fingerprint(request())


def test_save_then_load_round_trips_sorted(tmp_path):
    path = tmp_path / "r" / "rec.json"
    save_recording(recording(), path)
    assert load_recording(path, KEY) == recording()
    assert json.loads(path.read_text())["provenance"]["kind"] == "authored"
    assert [p.name for p in path.parent.iterdir()] == ["rec.json"]  # no temp file left behind


def test_a_saved_recording_is_scrubbed_only_where_it_holds_a_secret(tmp_path):
    """save_recording scans the text once (Redactor.masked) and walks the data only where a key value may be."""
    key = "k3y-value-0123456789"
    redactor = Redactor(["EVALKIT_TEST_KEY"], environ={"EVALKIT_TEST_KEY": key})
    walked = []
    walk = redactor.scrub

    def scrub(data, messages=True):
        walked.append(True)
        return walk(data, messages)

    redactor.scrub = scrub  # counts the walks

    clean, leaky = tmp_path / "clean.json", tmp_path / "leaky.json"
    save_recording(recording(), clean, redactor)
    save_recording(recording(), tmp_path / "plain.json")
    assert clean.read_bytes() == (tmp_path / "plain.json").read_bytes() and walked == []
    holding = recording().model_copy(update={"calls": {"task/c1": Entry(
        request_sha="s", request=request(f"use {key}"), reply=Reply(text="hi"))}})
    save_recording(holding, leaky, redactor)
    assert walked == [True] and key not in leaky.read_text()
    assert "use [REDACTED]" in leaky.read_text()


def test_a_failed_save_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "rec.json"
    save_recording(recording(), path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        save_recording(recording().model_copy(update={"calls": {}}), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["rec.json"]


def test_missing_recording_file_says_how_to_record(tmp_path):
    with pytest.raises(RecordingError, match=r"no recording for this eval key; run with mode=record-missing"):
        load_recording(tmp_path / "absent.json", KEY)


def test_recording_of_another_key_at_the_expected_path_is_refused(tmp_path):
    path = tmp_path / "rec.json"
    save_recording(recording(), path)
    other = KEY.model_copy(update={"prompt_sha": "zzz"})
    with pytest.raises(ForeignRecording, match=r'belongs to another eval key \(prompt_sha: recorded "p", asked "zzz"\)'):
        load_recording(path, other)


def test_a_recording_of_the_older_format_is_refused_naming_the_migration(tmp_path):
    path = tmp_path / "rec.json"
    path.write_text(json.dumps({"format": "evalkit-recording/1", "key": {}, "calls": {}}))
    with pytest.raises(ForeignRecording, match=r"format evalkit-recording/1.*evalkit migrate "):
        load_recording(path, KEY)


@pytest.mark.parametrize("text, message", [("{", r"rec\.json: not valid JSON.*; restore it from git or re-record"),
                                           ('{"format": "evalkit-recording/2"}', r"missing key 'key'")])
def test_malformed_recording(tmp_path, text, message):
    path = tmp_path / "rec.json"
    path.write_text(text)
    with pytest.raises(RecordingError, match=message):
        load_recording(path, KEY)


def test_provenance_kind_is_required_to_be_recorded_or_authored():
    with pytest.raises(ValueError):
        Provenance(kind="generated")  # type: ignore[arg-type]


def test_a_format_1_recording_migrates_to_the_identity_its_requests_were_sent_with():
    from pathlib import Path

    from evalkit.run.migrate import migrate_recording

    shipped = Path(__file__).resolve().parents[2] / "recordings/issue_triage"
    current, = shipped.glob("SmolLM2-135M-Instruct-Q4_1-v1-issue-triage@1-*.json")
    data = json.loads(current.read_text(encoding="utf-8"))
    # the same recording as format 1 wrote it: no settings, no judge_sha nor model component, other request_shas
    old = {**copy.deepcopy(data), "format": "evalkit-recording/1",
           "key": {**{k: v for k, v in data["key"].items() if k != "judge_sha"}, "key_version": 1, "components": {}}}
    del old["settings"]
    for entry in old["calls"].values():
        entry["request_sha"] = "0123456789ab"
    assert migrate_recording(old, "old.json") == Recording.model_validate(data)
    assert migrate_recording(old, "old.json").settings["model"]["options"] == {"max_tokens": 96, "seed": 7,
                                                                             "temperature": 0}
    with pytest.raises(RecordingError, match="not a recording of an older format"):
        migrate_recording(data, "new.json")


def _grown_lines() -> list[list[Request]]:
    """Agents' step requests as the loop grows them (each step the last one's copy with messages added), over the
    shapes a message takes: tool calls with every kind of JSON argument (floats, -0.0, NaN, unicode, nesting), a
    signature, error results, content parts, options a local runtime loads (left out of the identity) and options
    that are not JSON as they are."""
    from evalkit.records.call import ImagePart, NamedTool, TextPart, Tool, ToolCall

    tools = (Tool(name="lookup", description="Looks \"it\" up.\n", parameters={"type": "object"}),
             Tool(name="other"))
    image = ImagePart(media_type="image/png", sha256="a" * 64, size=3, path="img/a.png")
    arguments: list[object] = [{"id": 1}, {"id": 1.0}, {"id": True}, {"x": -0.0}, {"x": float("nan")}, "not json",
                               None, [1, "é\u2028", {"b": [None, 2.5e300]}], {"q": "a\"b\\c\n\t\u00e9\U0001f600"}]
    lines = []
    for n, argument in enumerate(arguments):
        options: dict[str, object] = {"seed": n, "temperature": 0.5, "n_ctx": 4096}
        if n % 3 == 1:
            options["stop"] = ("a", "b")
        if n % 3 == 2:
            options["odd"] = {1, 2}  # not JSON as it is: pydantic's dump writes it
        content: object = "Question é" if n % 2 else (TextPart(text="See:"), image)
        first = Request(model="m", options=options, tools=tools,
                        tool_choice=NamedTool(name="lookup") if n % 4 == 0 else "auto",
                        messages=(Message(role="system", content="sys"), Message(role="user", content=content)))
        line = [first]
        for step in range(3):
            call = ToolCall(id=f"c{step}", tool="lookup", arguments=argument,
                            signature="c2lnbg==" if (n + step) % 5 == 0 else None)
            said = Message(role="assistant", content="" if step else "thinking \u2603", tool_calls=(call,))
            result = Message(role="tool", content=f"result {step} \"x\"", tool_call_id=call.id, error=step == 1)
            line.append(line[-1].model_copy(update={"messages": (*line[-1].messages, said, result),
                                                    "tool_choice": None}))
        lines.append(line)
    return lines


def test_growing_requests_fingerprint_exactly_as_request_fingerprint():
    from evalkit.run.recording import GrowingRequests

    growing = GrowingRequests()
    checked = 0
    for n, line in enumerate(_grown_lines()):
        for step in line:
            assert growing.fingerprint(step, f"task/c{n}") == request_fingerprint(step)
            checked += 1
    # a line whose next request is not its last one grown (another case's, a shorter one) is made afresh
    lines = _grown_lines()
    assert growing.fingerprint(lines[1][1], "task/c0") == request_fingerprint(lines[1][1])
    assert growing.fingerprint(lines[1][0], "task/c0") == request_fingerprint(lines[1][0])
    assert growing.fingerprint(lines[2][1], "task/c0") == request_fingerprint(lines[2][1])  # longer, not grown
    # options equal by value share the request's rest; options unequal by value (1 and 1.0) do not
    for value in (1, 1.0, True, 1):
        same = Request(model="m", options={"seed": value}, messages=(Message(role="user", content="q"),))
        assert growing.fingerprint(same, f"v{value!r}") == request_fingerprint(same)
    assert checked == 36


def test_growing_requests_take_the_new_messages_only():
    """What makes agent replay cheap: a step dumps only the messages the last one lacked."""
    from evalkit.run import recording as module

    line = _grown_lines()[1]
    dumped: list[Message] = []
    real = module._message_json

    def counting(message: Message) -> str:
        dumped.append(message)
        return real(message)

    growing = module.GrowingRequests()
    try:
        module._message_json = counting
        for step in line:
            growing.fingerprint(step, "task/c1")
    finally:
        module._message_json = real
    assert len(dumped) == len(line[-1].messages) == 8


def test_a_tool_result_is_served_only_for_arguments_of_the_same_json():
    from evalkit.run.recording import ToolEntry, lookup_tool

    for recorded, asked, served in [({"id": 1}, {"id": 1}, True), ({"id": 1}, {"id": 1.0}, False),
                                    ({"id": 1}, {"id": True}, False), ({"x": 0.0}, {"x": -0.0}, False),
                                    ({"a": 1, "b": [2]}, {"b": [2], "a": 1}, True), ([1], (1,), True),
                                    ({"x": float("nan")}, {"x": float("nan")}, True), ("1", 1, False),
                                    (1, "1", False), ("a", "a", True)]:
        entry = ToolEntry(tool="t", fingerprint="f", arguments=recorded, content="r")
        rec = Recording(key=KEY, provenance=Provenance(kind="authored"), tools={"k": entry})
        found = lookup_tool(rec, "k", "t", asked, "f")
        assert isinstance(found, ToolEntry) is served, (recorded, asked)


def test_a_tool_calls_arguments_are_written_as_canonical_json():
    """The encoder made once for the arguments (recording._arguments_json) writes what canonical_json writes."""
    from evalkit.core.fingerprint import canonical_json
    from evalkit.run.recording import _arguments_json

    values = [{"id": 3}, {"b": [1, {"z": None, "a": True}], "a": "é\n\"x\"\u2028"}, "not json", None, False, 0,
              -(10**30), [], {}, {"k": ["", "\x00"]}, {"ü": {"nested": {"deeper": [1, 2, [3]]}}}]
    for value in values:
        assert _arguments_json(value) == canonical_json(value), value
