"""Python's cyclic garbage collector, paused while a run builds large trees of data.

A run reads and builds hundreds of thousands of containers that live on: the recording parsed and validated into
models, the baseline and the checks' reports, the run's report and its page. The collector counts them as they
come and rescans the whole growing heap each time it grows by a quarter: at 10,000 cases that was 2.7 s of the 6.7
to 7.6 s of CPU evalkit's own process took for a gated replay (3.9 to 5.0 s paused), and half of loading the
recording (0.6 to 0.8 s against 0.23 to 0.34 s). JSON values and the models made from them are trees, so the pause
loses nothing there. Live calls are the exception: a call that fails and is retried leaves a reference cycle (an
exception's traceback holds the frame that holds it), so the call phase runs with the collector on (`running`),
over only what the calls make: what was built before is set apart meanwhile (without that, the CPU of
benchmarks/live.py's 2,000 calls rose from 0.87-0.89 s to 0.95-1.08 s; with it, 0.80-0.93 s in runs alternating
with the code before the pause, which gave 0.80-0.93 s too). Either restores the collector as it found it, so they
nest."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused", "running"]


@contextmanager
def paused() -> Iterator[None]:
    """Build without the collector; it is restored on the way out (what was built stays, its cycles are
    collected once it runs again)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def running() -> Iterator[None]:
    """Run with the collector on, inside a paused block: work that leaves cycles behind (live calls' retries)."""
    enabled = gc.isenabled()
    # What the paused block built is young to the collector and would be rescanned as it ages; set apart for the
    # block (gc.freeze), it costs the calls nothing, and goes back to the oldest generation after (gc.unfreeze)
    gc.freeze()
    gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()
        if not enabled:
            gc.disable()
