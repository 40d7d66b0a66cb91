"""Crash-safe recording: an append-only journal of finished calls and a lock per recording file.

A live run appends each finished call to `<recording>.journal.jsonl` as one line, flushed at once,
so `kill -9` loses at most the calls in flight. An agent's tool results are journaled the same way, each as its
own line, as the tool returns it: a resumed run serves them instead of calling the tools of finished steps again
(a tool may write, charge or send: running it twice is not a retry the user asked for). At the end the journal is
compacted into the recording file (atomically) and removed; `+run.resume=true` continues from a journal left behind.
Two jobs writing the same recording take turns through an exclusive lock on `<recording>.lock`, a file that
exists only while a run holds it.

Both files are opened with O_NOFOLLOW: a committed symbolic link in their place is refused in one line, never
followed (it would send full requests and replies to any file). A write that fails (a full disk) ends the run
with one line and leaves the journal resumable: on resume, a torn last line is cut off (`cut_torn_tail`) and
every complete line kept, and appends always start on a fresh line.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalkit.core.errors import InputError, RecordingError
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_json
from evalkit.live.redact import Redactor
from evalkit.records.journal import JournalLine
from evalkit.records.recording import Entry, ToolEntry

__all__ = ["Journal", "JournalLine", "cut_torn_tail", "journal_path", "read_journal", "read_journal_tools",
           "recording_lock"]

_FSYNC_EVERY_S = 0.5  # writes survive a killed process; fsyncs guard against power loss, so batch them
# read too (the fresh-line check); never through a link; never inherited by the programs a run starts
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def journal_path(recording: Path) -> Path:
    return recording.with_name(recording.name + ".journal.jsonl")


def read_journal(path: Path) -> dict[str, Entry]:
    """The calls a journal holds; a torn last line (the process died mid-write) is dropped."""
    return _read(path)[0]


def read_journal_tools(path: Path) -> tuple[dict[str, Entry], dict[str, ToolEntry]]:
    """The calls and the agents' tool results (by tool key) a journal holds, read in one pass."""
    return _read(path)


def _read(path: Path) -> tuple[dict[str, Entry], dict[str, ToolEntry]]:
    entries: dict[str, Entry] = {}
    tools: dict[str, ToolEntry] = {}
    if not os.path.lexists(path):
        return entries, tools
    lines = read_text(path, "journal").splitlines()  # a folder, FIFO or non-UTF-8 journal is refused in one line
    for number, line in enumerate(lines, start=1):
        try:
            read = JournalLine.model_validate(parse_json(line, f"{path}: line {number}", "journal entry"))
        except (InputError, ValidationError):
            if number == len(lines):
                break
            raise RecordingError(f"{path}: line {number} is not a journal entry; "
                                 "delete the journal to start the live run afresh") from None
        if read.entry is not None:
            entries[read.call_id] = read.entry
        if read.tool is not None:
            tools[read.call_id] = read.tool
    return entries, tools


class Journal:
    """Appends finished calls, one JSON line each, with unbuffered writes; safe to call from many threads."""

    def __init__(self, path: Path, redact: Redactor | None = None) -> None:
        self.path = path
        self._redact = redact
        """Masks each line's data before it is serialised, so it stays one valid JSON line (Redactor.masked: one
        scan of the line, the walk only where a secret may be; the walk alone was a sixth of a live call's CPU)."""
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._synced = time.monotonic()

    def __enter__(self) -> Journal:
        return self  # the file is opened at the first append: a run that calls nothing leaves none

    def append(self, call_id: str, entry: Entry) -> None:
        self._append(JournalLine(call_id=call_id, entry=entry).model_dump(mode="json", exclude={"tool"}))

    def append_tool(self, key: str, tool: ToolEntry) -> None:
        """An agent's tool result, by its key in the recording's `tools`, as the tool returned it."""
        self._append(JournalLine(call_id=key, tool=tool).model_dump(mode="json", exclude={"entry"}))

    def _append(self, line: dict[str, Any]) -> None:
        text = _line_text(line) if self._redact is None else self._redact.masked(line, _line_text)[1]
        data = (text + "\n").encode("utf-8")
        try:
            with self._lock:
                if self._fd is None:
                    self._fd = self._open()
                _write_all(self._fd, data)
                sync = time.monotonic() - self._synced > _FSYNC_EVERY_S
                if sync:
                    self._synced = time.monotonic()  # the other threads go on writing while this one syncs
                fd = self._fd
            if sync:
                os.fsync(fd)
        except OSError as error:
            raise RecordingError(f"{self.path}: cannot append to the journal ({error.strerror or error}); the "
                                 "calls journaled so far are kept: free space (or fix the folder), then continue "
                                 "with +run.resume=true") from None

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_no_link(self.path, _APPEND_FLAGS, "journal")
        try:  # a fragment left by an earlier write must not fuse with this run's first line
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                _write_all(fd, b"\n")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError:
                pass  # every line was written unbuffered; what power loss would take is not this run's to fix
            finally:
                os.close(self._fd)
                self._fd = None


def cut_torn_tail(path: Path) -> int:
    """Cut a torn last line off a journal (the process died mid-write, or the disk filled): a last line without
    its newline, or one that is not JSON. Keeps every complete line; returns how many bytes were cut.
    A bad line before the last is left for `read_journal` to refuse."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    except OSError as error:
        raise RecordingError(f"{path}: cannot open the journal ({_why(error)})") from None
    try:
        size = os.fstat(fd).st_size
        tail_start = max(0, size - _TAIL_WINDOW)
        tail = os.pread(fd, size - tail_start, tail_start)
        keep = _complete_length(tail, tail_start, size)
        if keep is None:  # the last line is longer than the window: read it whole
            data = os.pread(fd, size, 0)
            keep = _complete_length(data, 0, size)
            assert keep is not None
        if keep < size:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        return size - keep
    except OSError as error:
        raise RecordingError(f"{path}: cannot repair the journal's torn last line ({_why(error)})") from None
    finally:
        os.close(fd)


_TAIL_WINDOW = 1 << 20


def _complete_length(tail: bytes, offset: int, size: int) -> int | None:
    """The journal's length without a torn last line, from its last bytes `tail` (starting at `offset`); None when
    the tail does not reach back to the line before the last."""
    body = tail[:-1] if tail.endswith(b"\n") else tail
    newline = body.rfind(b"\n")
    if newline < 0 and offset > 0:
        return None
    last = body[newline + 1:]
    start = offset + newline + 1
    if not tail.endswith(b"\n"):
        return start  # no newline: the write was cut short
    try:
        json.loads(last)
    except ValueError:  # not JSON, or not UTF-8 (a multi-byte character cut in two)
        return start
    return size


def _line_text(line: Any) -> str:
    return json.dumps(line, ensure_ascii=False, allow_nan=False)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _open_no_link(path: Path, flags: int, what: str) -> int:
    try:
        return os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno == errno.ELOOP or path.is_symlink():
            raise RecordingError(f"{path}: the {what} is a symbolic link; evalkit never follows one there (it could "
                                 "send requests and replies anywhere): remove the link") from None
        raise


def _why(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "it is a symbolic link, which evalkit never follows: remove it"
    return str(error.strerror or error)


@contextmanager
def recording_lock(recording: Path, timeout_s: float, notify: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive lock on the recording while a live run writes it (POSIX `flock` on `<recording>.lock`).

    The lock file exists only while a run holds it: the holder removes it before it lets go, however the run
    ends, so no file is left that reads as a run still writing. A waiter may then hold a lock on the removed
    file: it checks, once it has the lock, that the path still names the file it locked, and starts over if not.
    """
    import fcntl

    path = recording.with_name(recording.name + ".lock")
    deadline = time.monotonic() + timeout_s
    told = False
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = _open_no_link(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, "lock file")
        except OSError as error:
            raise RecordingError(f"{path}: cannot create the recording's lock file ({error.strerror or error})") \
                from None
        with os.fdopen(fd, "w") as handle:
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
            if not _same_file(handle.fileno(), path):  # its holder removed it while this run waited
                continue
            try:
                yield
            finally:
                path.unlink(missing_ok=True)  # before the lock is let go: a waiter then sees it is stale
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return


def _same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the open file `fd`."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)
