"""Recordings: replay hits, misses and stale entries; atomic saves; foreign keys refused."""

from __future__ import annotations

import json
import os

import pytest

from evalkit.core.errors import RecordingError
from evalkit.core.key import EvalKey
from evalkit.live.providers.base import Message, Reply, Request
from evalkit.run.recording import (
    Entry,
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
    found = lookup(recording(), "rec.json", "task/c1", request())
    assert isinstance(found, Hit) and found.reply.text == "hi"


def test_miss_names_the_call_the_file_the_closest_call_and_how_to_record():
    found = lookup(recording(), "rec.json", "task/c2", request())
    assert isinstance(found, Miss) and found.kind == "missing"
    assert found.reason.startswith("no recording for task/c2 in rec.json (closest recorded call: task/c1);")
    assert "mode=record-missing" in found.reason


def test_changed_prompt_makes_the_entry_stale_and_says_which_part_changed():
    found = lookup(recording(), "rec.json", "task/c1", request(system="a new prompt"))
    assert isinstance(found, Miss) and found.kind == "stale"
    assert "made for another request (differs in: messages[0])" in found.reason


def test_options_change_is_stale_too():
    changed = request().model_copy(update={"options": {"temperature": 1}})
    found = lookup(recording(), "rec.json", "task/c1", changed)
    assert isinstance(found, Miss) and "differs in: options" in found.reason


def test_save_then_load_round_trips_sorted(tmp_path):
    path = tmp_path / "r" / "rec.json"
    save_recording(recording(), path)
    assert load_recording(path, KEY) == recording()
    assert json.loads(path.read_text())["provenance"]["kind"] == "authored"
    assert [p.name for p in path.parent.iterdir()] == ["rec.json"]  # no temp file left behind


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
    with pytest.raises(RecordingError, match=r"belongs to another eval key \(prompt_sha 'p' != 'zzz'\)"):
        load_recording(path, other)


@pytest.mark.parametrize("text, message", [("{", r"rec\.json: not valid JSON.*; restore it from git or re-record"),
                                           ('{"format": "evalkit-recording/1"}', r"missing key 'key'")])
def test_malformed_recording(tmp_path, text, message):
    path = tmp_path / "rec.json"
    path.write_text(text)
    with pytest.raises(RecordingError, match=message):
        load_recording(path, KEY)


def test_provenance_kind_is_required_to_be_recorded_or_authored():
    with pytest.raises(ValueError):
        Provenance(kind="generated")  # type: ignore[arg-type]
