"""The live-call progress bar: done / failed / retried counts and calls per second (rich).

Drawn only where someone watches: on a terminal and not in CI, unless `run.progress` says otherwise.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import Any

from evalkit.core.config import Progress

__all__ = ["CallProgress", "progress_enabled"]


def progress_enabled(setting: Progress) -> bool:
    if setting is Progress.AUTO:
        return sys.stderr.isatty() and not os.environ.get("CI")
    return setting is Progress.ON


class CallProgress:
    """Counts calls as they finish; draws a bar when enabled, and is a plain counter otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = self.failed = self.retried = 0
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        if enabled and total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("live calls"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=False)
            self._task = self._bar.add_task("calls", total=total, detail="")

    def __enter__(self) -> CallProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def finished(self, ok: bool) -> None:
        with self._lock:
            self.done += 1
            self.failed += 0 if ok else 1
            self._draw()

    def retrying(self) -> None:
        with self._lock:
            self.retried += 1
            self._draw()

    def rate(self) -> float:
        return self.done / max(time.monotonic() - self._started, 1e-9)

    def _draw(self) -> None:
        if self._bar is not None:
            detail = f"failed {self.failed} retried {self.retried} {self.rate():.1f} calls/s"
            self._bar.update(self._task, completed=self.done, detail=detail)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
