"""Requests-per-minute and tokens-per-minute limits, as token buckets shared by all call threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["RateLimiter"]


class _Bucket:
    """Holds up to `per_minute` units, refilled continuously at per_minute / 60 per second."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute
        self.stamp = now

    def wait_for(self, units: float, now: float) -> float:
        """Seconds until `units` are available (0 when they are); units larger than the bucket wait for a full one."""
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        needed = min(units, self.capacity)
        return 0.0 if self.level >= needed else (needed - self.level) / self.rate

    def take(self, units: float) -> None:
        self.level -= min(units, self.capacity)


class RateLimiter:
    """Blocks each call until both its request and its tokens fit the per-minute limits."""

    def __init__(self, rpm: float | None, tpm: float | None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        now = clock()
        self._requests = _Bucket(rpm, now) if rpm else None
        self._tokens = _Bucket(tpm, now) if tpm else None
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self._requests is not None or self._tokens is not None

    def acquire(self, tokens: float) -> None:
        if not self.active:
            return
        while True:
            with self._lock:
                now = self._clock()
                wait = max(self._requests.wait_for(1, now) if self._requests else 0.0,
                           self._tokens.wait_for(tokens, now) if self._tokens else 0.0)
                if wait <= 0:
                    if self._requests:
                        self._requests.take(1)
                    if self._tokens:
                        self._tokens.take(tokens)
                    return
            self._sleep(wait)
