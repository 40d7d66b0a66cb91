"""The progress bar is drawn only where someone watches."""

from __future__ import annotations

import io
import sys

from evalkit.core.config import Progress
from evalkit.live.progress import CallProgress, progress_enabled


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_draws_on_a_terminal_but_never_in_ci(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Tty())
    monkeypatch.delenv("CI", raising=False)
    assert progress_enabled(Progress.AUTO)
    monkeypatch.setenv("CI", "true")
    assert not progress_enabled(Progress.AUTO)
    assert progress_enabled(Progress.ON) and not progress_enabled(Progress.OFF)


def test_auto_is_off_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.delenv("CI", raising=False)
    assert not progress_enabled(Progress.AUTO)


def test_counts_done_failed_and_retried():
    with CallProgress(3, enabled=False) as progress:
        progress.finished(ok=True)
        progress.retrying()
        progress.finished(ok=False)
    assert (progress.done, progress.failed, progress.retried) == (2, 1, 1) and progress.rate() > 0


def test_the_bar_shows_counts_and_rate(monkeypatch):
    out = Tty()
    monkeypatch.setattr(sys, "stderr", out)
    with CallProgress(2, enabled=True) as progress:
        progress.retrying()
        progress.finished(ok=True)
        progress.finished(ok=False)
    text = out.getvalue()
    assert "2/2" in text and "failed 1 retried 1" in text and "calls/s" in text
