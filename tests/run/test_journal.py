"""The live-run journal and lock (evalkit.run.journal): links never followed, a torn tail cut on resume, appends on
a fresh line, a full disk ending the run in one line with the journal kept and resumable."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from helpers.live import TOTAL_TESTS, Evalkit, FakeOllama, read_json, replies, task_calls

from evalkit.core.errors import RecordingError
from evalkit.live.redact import Redactor
from evalkit.records.call import Message, Reply, Request
from evalkit.run.journal import Journal, cut_torn_tail, read_journal, recording_lock
from evalkit.run.recording import Entry, Failure

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


def entry(text: str = "ok") -> Entry:
    return Entry(request_sha="s", request=Request(model="m", messages=(Message(role="user", content="q"),)),
                 reply=Reply(text=text))


def write_calls(path: Path, *call_ids: str) -> bytes:
    with Journal(path) as journal:
        for call_id in call_ids:
            journal.append(call_id, entry(call_id))
    return path.read_bytes()


# --- links ------------------------------------------------------------------------------------------------------

def test_a_journal_that_is_a_symbolic_link_is_refused_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    journal = tmp_path / "rec.json.journal.jsonl"
    journal.symlink_to(target)
    with pytest.raises(RecordingError, match="the journal is a symbolic link"), Journal(journal) as j:
        j.append("task/a", entry())
    assert target.read_text() == "precious\n"
    dangling = tmp_path / "other.json.journal.jsonl"
    dangling.symlink_to(tmp_path / "created-elsewhere.txt")
    with pytest.raises(RecordingError, match="symbolic link"), Journal(dangling) as j:
        j.append("task/a", entry())
    assert not (tmp_path / "created-elsewhere.txt").exists()
    with pytest.raises(RecordingError, match="symbolic link"):
        cut_torn_tail(journal)


def test_a_lock_file_that_is_a_symbolic_link_is_refused_not_followed(tmp_path: Path) -> None:
    (tmp_path / "rec.json.lock").symlink_to(tmp_path / "created-elsewhere.txt")
    with pytest.raises(RecordingError, match="the lock file is a symbolic link"), \
            recording_lock(tmp_path / "rec.json", 1, print):
        pass
    assert not (tmp_path / "created-elsewhere.txt").exists()


# --- the lock ---------------------------------------------------------------------------------------------------

def test_the_lock_file_exists_only_while_a_run_holds_it(tmp_path: Path) -> None:
    lock = tmp_path / "rec.json.lock"
    with recording_lock(tmp_path / "rec.json", 1, print):
        assert lock.is_file()
    assert not lock.exists()
    with pytest.raises(ZeroDivisionError), recording_lock(tmp_path / "rec.json", 1, print):
        assert lock.is_file()
        1 / 0  # noqa: B018 - a run that ends by an error lets go the same way
    assert not lock.exists()


def test_a_lock_file_left_by_a_killed_run_is_taken_over_and_removed(tmp_path: Path) -> None:
    lock = tmp_path / "rec.json.lock"
    lock.write_text("")  # what kill -9 leaves: the file, with no lock on it
    with recording_lock(tmp_path / "rec.json", 1, print):
        assert _held_by_another(lock)
    assert not lock.exists()


def _held_by_another(lock: Path) -> bool:
    """Whether a newcomer that opens the lock file now finds it locked."""
    with lock.open("a") as probe:
        try:
            fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe.fileno(), fcntl.LOCK_UN)
        return False


def test_a_waiter_whose_lock_file_was_removed_locks_the_new_one(tmp_path: Path) -> None:
    """The waiter locks the removed file when the first run lets go; it must start over on the file at the path,
    or a third run would lock a new file at the same time as it."""
    recording, lock = tmp_path / "rec.json", tmp_path / "rec.json.lock"
    told = threading.Event()
    inside = threading.Event()
    leave = threading.Event()
    found: list[bool] = []

    def waiter() -> None:
        with recording_lock(recording, 30, lambda message: told.set()):
            found.append(_held_by_another(lock))
            inside.set()
            leave.wait(30)

    with recording_lock(recording, 1, print):
        thread = threading.Thread(target=waiter)
        thread.start()
        assert told.wait(30)  # it waits on the file the first run holds
    assert inside.wait(30)
    assert found == [True] and lock.is_file() and _held_by_another(lock)
    leave.set()
    thread.join(30)
    assert not lock.exists()


# --- torn tails -------------------------------------------------------------------------------------------------

def test_a_complete_journal_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    whole = write_calls(path, "task/a", "task/b")
    assert cut_torn_tail(path) == 0 and path.read_bytes() == whole
    assert cut_torn_tail(tmp_path / "none.jsonl") == 0 and not (tmp_path / "none.jsonl").exists()


@pytest.mark.parametrize("fragment", [b'{"call_id": "task/c", "ent', b'{"call_id": "task/c"}',  # no newline
                                      b'{"call_id": "task/c", "ent\n', b"\xe2\x82\n"])        # not JSON
def test_resume_cuts_a_torn_last_line_and_keeps_every_complete_one(tmp_path: Path, fragment: bytes) -> None:
    path = tmp_path / "j.jsonl"
    whole = write_calls(path, "task/a", "task/b")
    with path.open("ab") as handle:
        handle.write(fragment)
    assert cut_torn_tail(path) == len(fragment)
    assert path.read_bytes() == whole
    write_calls(path, "task/c", "task/d")  # the next run appends; the run after reads every call
    assert sorted(read_journal(path)) == ["task/a", "task/b", "task/c", "task/d"]


def test_a_torn_last_line_longer_than_the_read_window_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    whole = write_calls(path, "task/a")
    with path.open("ab") as handle:
        handle.write(b'{"call_id": "task/b", "entry": "' + b"x" * (3 << 20))
    assert cut_torn_tail(path) == (3 << 20) + 32
    assert path.read_bytes() == whole


def test_a_bad_line_in_the_middle_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    write_calls(path, "task/a")
    with path.open("ab") as handle:
        handle.write(b"garbage\n")
    write_calls(path, "task/b")
    assert cut_torn_tail(path) == 0
    with pytest.raises(RecordingError, match="line 2 is not a journal entry"):
        read_journal(path)


def test_appends_start_on_a_fresh_line_after_a_fragment(tmp_path: Path) -> None:
    """Without cutting (the fused-line finding): the fragment becomes its own bad last line, never part of a call."""
    path = tmp_path / "j.jsonl"
    write_calls(path, "task/a")
    with path.open("ab") as handle:
        handle.write(b'{"call_id": "task/b", "ent')
    write_calls(path, "task/c")
    lines = path.read_bytes().splitlines()
    assert lines[1] == b'{"call_id": "task/b", "ent' and json.loads(lines[2])["call_id"] == "task/c"


# --- a full disk ------------------------------------------------------------------------------------------------

def test_a_full_disk_while_journaling_is_one_refusal_and_the_journal_stays_resumable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "j.jsonl"
    whole = write_calls(path, "task/a")
    real_write = os.write

    calls: list[int] = []

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:10]))  # a short write: part of the line reached the disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(RecordingError, match=r"cannot append to the journal \(No space left on device\).*"
                                             r"\+run\.resume=true"), Journal(path) as journal:
        journal.append("task/b", entry())
    monkeypatch.undo()
    assert path.read_bytes().startswith(whole) and len(path.read_bytes()) == len(whole) + 10
    assert cut_torn_tail(path) == 10 and path.read_bytes() == whole
    assert list(read_journal(path)) == ["task/a"]


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("size, full_at", [("8k", "cannot append to the journal"),   # mid-run, mid-line
                                           ("32k", "cannot write the recording")])  # every call journaled
def test_a_live_run_on_a_full_disk_ends_in_one_line_and_resumes(evalkit: Evalkit, tmp_path: Path,
                                                                size: str, full_at: str) -> None:
    """A real full filesystem: the recordings folder on a small tmpfs (needs root; skipped where mounting is
    impossible). The run ends with exit 3 and one line, the journal is kept, and after room is made the resume
    keeps every complete journaled call (a torn last line is cut, and says so)."""
    disk = tmp_path / "rec"
    if not _mount_tmpfs(disk, size):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        evalkit.recordings = disk
        journal = evalkit.recording.with_name(evalkit.recording.name + ".journal.jsonl")
        with FakeOllama(replies()) as server:
            evalkit.judge_at(server.url)
            full = evalkit("live", "run.concurrency=1", url=server.url)
            sent = len(task_calls(server))
        assert full.code == 3, full.explain()
        assert "Traceback" not in full.done.stderr and len(full.done.stderr.splitlines()) == 1, full.done.stderr
        assert full_at in full.done.stderr and "No space left on device" in full.done.stderr
        assert "+run.resume=true" in full.done.stderr
        assert journal.is_file() and not evalkit.recording.exists()
        text = journal.read_bytes()
        kept = [line for line in text.split(b"\n") if line.endswith(b"}")]
        assert kept, "nothing was journaled before the disk filled"
        torn = not text.endswith(b"\n")
        assert torn or size == "32k"  # the 8 KiB disk filled in the middle of a line

        subprocess.run(["mount", "-o", "remount,size=4m", str(disk)], check=True)  # room is made
        with FakeOllama(replies()) as server:
            evalkit.judge_at(server.url)
            resumed = evalkit("live", "+run.resume=true", url=server.url)
            again = task_calls(server)
        assert resumed.code == 0, resumed.explain()
        assert resumed.report["execution"]["calls"]["resumed"] == len(kept)
        assert len(again) == 12 - len([k for k in kept if b'"task/' in k[:40]])
        assert sent + len(task_calls(server)) >= 12
        assert ("cut a torn last line" in resumed.done.stderr) == torn
        assert f"{TOTAL_TESTS} of {TOTAL_TESTS} tests passed" in resumed.done.stdout
        assert len(read_json(evalkit.recording)["calls"]) == 15 and not journal.exists()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.slow
def test_a_committed_journal_link_makes_a_live_run_refuse_before_any_call(evalkit: Evalkit,
                                                                          tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    evalkit.recording.parent.mkdir(parents=True)
    journal = evalkit.recording.with_name(evalkit.recording.name + ".journal.jsonl")
    journal.symlink_to(target)
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        for extra in ((), ("+run.resume=true",)):
            run = evalkit("live", *extra, url=server.url)
            assert run.code == 3 and len(run.done.stderr.splitlines()) == 1, run.explain()
            assert "symbolic link" in run.done.stderr
        assert server.requests == []
    assert target.read_text() == "precious\n"


# --- redaction ----------------------------------------------------------------------------------------------------

def test_a_journal_line_is_masked_where_it_holds_a_secret_and_written_as_is_where_not(tmp_path: Path) -> None:
    """The journal scans each line once (Redactor.masked) and walks it (scrub) only where something may be masked:
    a key value in a request, a bearer token in a failure reason; a line with neither is written unchanged."""
    key = "k3y-value-0123456789"
    redactor = Redactor(["EVALKIT_TEST_KEY"], environ={"EVALKIT_TEST_KEY": key})
    path = tmp_path / "rec.json.journal.jsonl"
    leaking = Entry(request_sha="s", request=Request(model="m", messages=(Message(role="user", content=f"use {key}"),)),
                    failure=Failure(kind="failed", reason="401: Authorization: Bearer abcdefgh12345678 refused"))
    walked: list[object] = []
    walk = redactor.scrub

    def scrub(data: object, messages: bool = True) -> object:
        walked.append(data)
        return walk(data, messages)

    redactor.scrub = scrub  # type: ignore[method-assign]  # counts the walks
    with Journal(path, redactor) as journal:
        journal.append("task/clean", entry("nothing to hide"))
        journal.append("task/leaky", leaking)
    clean, leaky = path.read_text().splitlines()
    assert clean == json.dumps({"call_id": "task/clean", "entry": entry("nothing to hide").model_dump(mode="json")},
                               ensure_ascii=False)
    assert len(walked) == 1  # the clean line was not walked
    assert key not in leaky and "abcdefgh12345678" not in leaky
    assert json.loads(leaky)["entry"]["request"]["messages"][0]["content"] == "use [REDACTED]"
    assert read_journal(path)["task/leaky"].failure is not None
