"""A child process that evalkit supervises: one question at a time as a JSON line, one JSON line back.

Providers that run native code (llama.cpp) put it in such a process, so a crash there (a signal no Python code
can catch) ends the child, never the run. When the child's output closes before its answer, the question
raises `WorkerEnded`, which says how the child ended: the signal's name, or the exit code, and the last line
it wrote to stderr. The child's stderr goes to an unnamed temporary file, so its output never mixes with
evalkit's one-line messages; only that last line is read, and only when the child ended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

from evalkit.core.errors import one_line

__all__ = ["Worker", "WorkerEnded"]

_LAST_WORDS_BYTES = 4096
_LAST_WORDS_CHARS = 300


class WorkerEnded(Exception):
    """The child ended before it answered."""

    def __init__(self, how: str, last_words: str) -> None:
        super().__init__(how + (f" (its last output: {last_words})" if last_words else ""))
        self.how = how
        """`SIGSEGV` (killed by that signal) or `exit code 1`."""
        self.last_words = last_words

    @property
    def by_signal(self) -> bool:
        return self.how.startswith("SIG")


class Worker:
    """One supervised child process; `ask` sends a message and waits for its answer. Safe to call from many
    threads: the questions take turns, so one child never works for two callers at once."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None, grace_s: float = 10.0) -> None:
        self._grace_s = grace_s
        """How long a child whose output has closed, or that was asked to stop, gets to exit before it is
        killed."""
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - open for the child's whole life, closed in close()
        self._process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
            text=True, encoding="utf-8", bufsize=1, close_fds=True)
        self._lock = threading.Lock()
        self._ended: WorkerEnded | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._ended is None and self._process.poll() is None

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        """The child's answer to `message`; `WorkerEnded` if it ended first (then and ever after)."""
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        with self._lock:
            if self._ended is not None:
                raise self._ended
            try:
                stdin.write(json.dumps(message) + "\n")
                stdin.flush()
                line = stdout.readline()
            except (BrokenPipeError, ConnectionResetError):
                line = ""
            try:
                answer = json.loads(line) if line else None
            except ValueError:  # a line cut short by the child's death
                answer = None
            if not isinstance(answer, dict):
                self._ended = self._how_it_ended()
                raise self._ended
            return answer

    def close(self) -> None:
        """Ask the child to stop (its input closes) and wait for it; kill it if it does not.

        It does not wait for a question in flight (at exit, a call's thread may still be waiting for its answer):
        that question gets its answer or, once the child is gone, `WorkerEnded`."""
        if self._process.stdin is not None:
            try:
                self._process.stdin.close()
            except OSError:  # the child is gone already
                pass
        try:
            self._process.wait(timeout=self._grace_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.close()

    def _how_it_ended(self) -> WorkerEnded:
        try:
            code = self._process.wait(timeout=self._grace_s)
        except subprocess.TimeoutExpired:  # it closed its output but lives on: it cannot answer any more
            self._process.kill()
            code = self._process.wait()
        if code < 0:
            try:
                how = signal.Signals(-code).name
            except ValueError:
                how = f"signal {-code}"
        else:
            how = f"exit code {code}"
        return WorkerEnded(how, self._last_words())

    def _last_words(self) -> str:
        """The last non-blank line the child wrote to stderr, cut to one short line."""
        try:
            size = os.fstat(self._stderr.fileno()).st_size
            self._stderr.seek(max(0, size - _LAST_WORDS_BYTES))
            tail = self._stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        return one_line(lines[-1], _LAST_WORDS_CHARS) if lines else ""
