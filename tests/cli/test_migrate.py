"""`evalkit migrate` (evalkit/cli/migrate.py, evalkit/run/migrate.py): a converted recording never overwrites a
recording of the same identity; its calls are added to it, or the conversion is refused with nothing written
and nothing removed (issue 35: 5 recorded calls became 1, exit 0, and the source was deleted)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalkit.cli.migrate import main

SHIPPED = Path(__file__).resolve().parents[2] / "recordings/issue_triage"


def current() -> dict[str, Any]:
    path, = SHIPPED.glob("SmolLM2-135M-Instruct-Q4_1-v1-issue-triage@1-*.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def format_1(data: dict[str, Any], calls: list[str]) -> dict[str, Any]:
    """`data` as format 1 wrote it, holding only `calls` (the form test_recording's migration test uses)."""
    old = {**copy.deepcopy(data), "format": "evalkit-recording/1",
           "key": {**{k: v for k, v in data["key"].items() if k != "judge_sha"}, "key_version": 1, "components": {}}}
    del old["settings"]
    old["calls"] = {call: {**old["calls"][call], "request_sha": "0123456789ab"} for call in calls}
    return old


def folder(tmp_path: Path, target_calls: list[str], old: dict[str, Any]) -> tuple[Path, Path]:
    suite = tmp_path / "recordings" / "issue_triage"
    suite.mkdir(parents=True)
    data = current()
    data["calls"] = {call: data["calls"][call] for call in target_calls}
    target = suite / next(SHIPPED.glob("SmolLM2-*.json")).name
    target.write_text(json.dumps(data, indent=2), encoding="utf-8")
    source = suite / "old-format.json"
    source.write_text(json.dumps(old), encoding="utf-8")
    return source, target


def test_a_recording_of_the_same_identity_keeps_every_call(tmp_path: Path) -> None:
    calls = sorted(current()["calls"])
    assert len(calls) >= 5
    one_each = [next(call for call in calls if call.startswith(side)) for side in ("task/", "judge/")]
    source, target = folder(tmp_path, calls, format_1(current(), one_each))
    assert main([str(source)]) == 0
    assert sorted(json.loads(target.read_text(encoding="utf-8"))["calls"]) == calls
    assert not source.exists()


def test_calls_the_recording_lacks_are_added_to_it(tmp_path: Path) -> None:
    calls = sorted(current()["calls"])
    source, target = folder(tmp_path, calls[:2], format_1(current(), calls[1:]))
    assert main([str(source)]) == 0
    assert sorted(json.loads(target.read_text(encoding="utf-8"))["calls"]) == calls
    assert not source.exists()


def changed_reply(old: dict[str, Any], call: str) -> dict[str, Any]:
    old["calls"][call]["reply"]["text"] = "another answer"
    return old


@pytest.mark.parametrize(("change", "message"), [
    (lambda old, calls: changed_reply(old, calls[0]), r"recorded differently in .*the recording of the same identity"),
    (lambda old, calls: {**old, "provenance": {**old["provenance"], "note": "another run"}},
     r"of its calls are not in .*another provenance"),
])
def test_a_merge_that_would_lose_something_is_refused_leaving_both_files(
        change: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls = sorted(current()["calls"])
    source, target = folder(tmp_path, calls[:2], change(format_1(current(), calls), calls))
    before = (source.read_bytes(), target.read_bytes())
    assert main([str(source)]) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "old-format.json" in err
    assert re.search(message, err), err
    assert (source.read_bytes(), target.read_bytes()) == before
