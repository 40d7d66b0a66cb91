"""Recording identity end to end, against a loopback Ollama server: runs differing in anything that changes a reply
never share a recording, a replay the recording cannot serve is a refusal (exit 3) and never a verdict, and
re-recording is never refused."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.live import (
    PROJECT_ROOT,
    RECORDING_NAME,
    TOTAL_TESTS,
    Evalkit,
    FakeOllama,
    recording_name,
    replies,
    task_calls,
)


def _run(evalkit: Evalkit, mode: str, *overrides: str, url: str | None = None,
         baseline: str = "none", multirun: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m evalkit` as the harness runs it, gated against `baseline`."""
    command, env, _ = evalkit.command(mode, *overrides, url=url)
    command = [arg for arg in command if arg != "baseline=none"] + [f"baseline={baseline}"]
    if multirun:
        command.insert(3, "-m")
    return subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.slow
def test_a_live_run_at_another_temperature_leaves_the_first_recording_byte_identical(
        evalkit: Evalkit, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        first = _run(evalkit, "live", f"run.save_report={baseline}", url=server.url)
        assert first.returncode == 0, first.stderr
        before = evalkit.recording.read_bytes()
        # the hotter run's replies differ: were they written over the temperature-0 file, its replay would block
        with FakeOllama(replies({"import-drops-tasks": json.dumps({"label": "question", "priority": "p3",
                                                                   "summary": "x"})})) as hot:
            evalkit.judge_at(hot.url)
            warm = _run(evalkit, "live", "model.options.temperature=0.8", url=hot.url)
        assert warm.returncode == 0, warm.stderr
        assert {b["options"]["temperature"] for b in task_calls(hot)} == {0.8}
    assert evalkit.recording.read_bytes() == before
    hotter = evalkit.recordings / "issue_triage" / recording_name(temperature=0.8)
    assert hotter.is_file() and hotter.name != RECORDING_NAME
    assert f"recording: new file {hotter}" in warm.stderr
    assert "other recordings are unchanged" in warm.stderr and "model.options.temperature: recorded 0, asked 0.8" \
        in warm.stderr

    # the replay at temperature 0 decides as before; at 0.8, against the temperature-0 baseline, it says what changed
    again = _run(evalkit, "replay", baseline=str(baseline))
    assert again.returncode == 0, again.stderr
    assert "decision: GO" in again.stdout and f"{TOTAL_TESTS} of {TOTAL_TESTS} tests passed" in again.stdout
    hot_replay = _run(evalkit, "replay", "model.options.temperature=0.8", baseline=str(baseline))
    assert hot_replay.returncode == 1, hot_replay.stdout + hot_replay.stderr
    assert "model.options.temperature 0 -> 0.8" in hot_replay.stdout


@pytest.mark.slow
def test_a_replay_asking_an_option_never_recorded_is_refused_naming_it(evalkit: Evalkit) -> None:
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert _run(evalkit, "live", url=server.url).returncode == 0
    refused = _run(evalkit, "replay", "+model.options.max_tokens=17")
    assert refused.returncode == 3 and refused.stdout == "", refused.stdout + refused.stderr
    assert len(refused.stderr.splitlines()) == 1
    assert "no recording of this identity" in refused.stderr
    assert f"the closest, {RECORDING_NAME}, was recorded with model.options.max_tokens: recorded (absent), asked 17" \
        in refused.stderr
    # the command, as a shell reads it: this run's overrides (and where its judge option lives), in record-missing
    words = shlex.split(refused.stderr.split("`")[1])
    assert words[:2] == ["evalkit", "run"] and words[-1] == "mode=record-missing"
    assert "+model.options.max_tokens=17" in words and "mode=replay" not in words
    assert any(w.startswith("hydra.searchpath=") and f"file://{evalkit.conf}'" in w for w in words)
    assert not any((evalkit.tmp / f"job{evalkit.runs}").glob("report.json"))  # nothing was scored


@pytest.mark.slow
def test_a_prompt_edited_in_place_is_recorded_by_record_missing_and_nothing_else_changes(
        evalkit: Evalkit, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text((PROJECT_ROOT / "suites/issue_triage/prompts/v1.txt").read_text(encoding="utf-8"))
    (evalkit.conf / "prompt").mkdir(parents=True)
    (evalkit.conf / "prompt" / "mine.yaml").write_text(f"version: v1\nfile: {prompt}\n", encoding="utf-8")
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert _run(evalkit, "live", "prompt=mine", url=server.url).returncode == 0
        files = {p: p.read_bytes() for p in (evalkit.recordings / "issue_triage").glob("*.json")}
        asked = len(server.chat_requests)
        prompt.write_text(prompt.read_text(encoding="utf-8") + "\nAnswer in English.\n", encoding="utf-8")
        stale = _run(evalkit, "replay", "prompt=mine")
        assert stale.returncode == 3 and "prompt_sha: recorded" in stale.stderr, stale.stderr
        done = _run(evalkit, "record-missing", "prompt=mine", url=server.url)
        sent = server.chat_requests[asked:]
    assert done.returncode in (0, 1), done.stderr
    assert {p: p.read_bytes() for p in files} == files  # the other prompt's recording is byte-identical
    new = set((evalkit.recordings / "issue_triage").glob("*.json")) - set(files)
    assert len(new) == 1 and "differs in prompt_sha: recorded" in done.stderr
    # only this prompt's calls were sent: its task calls; the judge was asked the very same requests as before, so
    # their recorded replies were taken over, not asked again
    bodies = [r.body for r in sent if r.body is not None]
    assert len(bodies) == len(task_calls_of(files)) and all(
        "Answer in English." in body["messages"][0]["content"] for body in bodies)
    assert "reused from other recordings of the same requests" in done.stderr


def task_calls_of(files: dict[Path, bytes]) -> list[str]:
    """The task call ids of the one recording in `files`."""
    (data,) = (json.loads(raw) for raw in files.values())
    return [call_id for call_id in data["calls"] if call_id.startswith("task/")]


@pytest.mark.slow
def test_a_sweep_over_temperature_names_it_in_changed(evalkit: Evalkit, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert _run(evalkit, "live", f"run.save_report={baseline}", url=server.url).returncode == 0
        sweep = _run(evalkit, "record-missing", "model.options.temperature=0,0.8",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}", url=server.url, baseline=str(baseline), multirun=True)
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text(encoding="utf-8"))
    assert [row.get("changed") for row in rows][0] == ""
    assert "model.options.temperature 0 -> 0.8" in rows[1]["changed"]


@pytest.mark.slow
def test_mode_live_rerecords_its_own_identity_and_says_so(evalkit: Evalkit) -> None:
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert _run(evalkit, "live", url=server.url).returncode == 0
        # a file of an older format at this identity's path: replay refuses it, a live run records in its place
        evalkit.recording.write_text(json.dumps({"format": "evalkit-recording/1", "key": {}, "calls": {}}))
        assert _run(evalkit, "replay").returncode == 3
        again = _run(evalkit, "live", url=server.url)
    assert again.returncode == 0, again.stderr
    assert f"recording: replaced {evalkit.recording}" in again.stderr and "evalkit-recording/1" in again.stderr
    assert json.loads(evalkit.recording.read_text())["format"] == "evalkit-recording/2"
