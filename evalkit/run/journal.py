"""Crash-safe recording: an append-only journal of finished calls and a lock per recording file.

A live run appends each finished call to `<recording>.journal.jsonl` as one line, flushed at once,
so `kill -9` loses at most the calls in flight. At the end the journal is compacted into the
recording file (atomically) and removed; `+run.resume=true` continues from a journal left behind.
Two jobs writing the same recording take turns through an exclusive lock on `<recording>.lock`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from evalkit.core.errors import InputError, RecordingError
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_json
from evalkit.run.recording import Entry

__all__ = ["Journal", "journal_path", "read_journal", "recording_lock"]

_FSYNC_EVERY_S = 0.5  # flushes survive a killed process; fsyncs guard against power loss, so batch them


def journal_path(recording: Path) -> Path:
    return recording.with_name(recording.name + ".journal.jsonl")


def read_journal(path: Path) -> dict[str, Entry]:
    """The calls a journal holds; a torn last line (the process died mid-write) is dropped."""
    entries: dict[str, Entry] = {}
    if not os.path.lexists(path):
        return entries
    lines = read_text(path, "journal").splitlines()  # a folder, FIFO or non-UTF-8 journal is refused in one line
    for number, line in enumerate(lines, start=1):
        try:
            data = parse_json(line, f"{path}: line {number}", "journal entry")
            entries[data["call_id"]] = Entry.model_validate(data["entry"])
        except (InputError, KeyError, TypeError, ValidationError):
            if number == len(lines):
                break
            raise RecordingError(f"{path}: line {number} is not a journal entry; "
                                 "delete the journal to start the live run afresh") from None
    return entries


class Journal:
    """Appends finished calls, one JSON line each; safe to call from many threads."""

    def __init__(self, path: Path, redact: Callable[[str], str]) -> None:
        self.path = path
        self._redact = redact
        self._lock = threading.Lock()
        self._handle: IO[str] | None = None
        self._synced = time.monotonic()

    def __enter__(self) -> Journal:
        return self  # the file is opened at the first append: a run that calls nothing leaves none

    def append(self, call_id: str, entry: Entry) -> None:
        line = json.dumps({"call_id": call_id, "entry": entry.model_dump(mode="json")}, ensure_ascii=False)
        line = self._redact(line) + "\n"
        with self._lock:
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = self.path.open("a", encoding="utf-8")
            self._handle.write(line)
            self._handle.flush()
            if time.monotonic() - self._synced > _FSYNC_EVERY_S:
                os.fsync(self._handle.fileno())
                self._synced = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            self._handle = None


@contextmanager
def recording_lock(recording: Path, timeout_s: float, notify: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive lock on the recording while a live run writes it (POSIX `flock`)."""
    import fcntl

    path = recording.with_name(recording.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        deadline = time.monotonic() + timeout_s
        told = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RecordingError(f"{recording}: another run is writing this recording (lock {path} "
                                         f"held for over {timeout_s:g} s); wait for it or raise "
                                         "run.lock_timeout_s") from None
                if not told:
                    notify(f"waiting for another run that is writing {recording.name} ...")
                    told = True
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
