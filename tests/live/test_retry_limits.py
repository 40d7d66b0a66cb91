"""Backoff with jitter and Retry-After; requests- and tokens-per-minute limits (with a fake clock)."""

from __future__ import annotations

import random

from evalkit.live.limits import RateLimiter
from evalkit.live.retry import RetryPolicy, backoff_seconds

POLICY = RetryPolicy(retries=4, base_s=0.5, max_s=4.0)


def test_retry_after_is_honoured_exactly():
    assert backoff_seconds(POLICY, 0, 7.0, random.Random(1)) == 7.0
    assert backoff_seconds(POLICY, 3, 0.0, random.Random(1)) == 0.0


def test_backoff_is_exponential_with_full_jitter_and_capped():
    rng = random.Random(3)
    for attempt, ceiling in ((0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)):
        waits = [backoff_seconds(POLICY, attempt, None, rng) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling * 0.8 and min(waits) < ceiling * 0.2  # jittered over the whole range


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_requests_per_minute():
    clock = FakeClock()
    limiter = RateLimiter(rpm=60, tpm=None, clock=clock, sleep=clock.sleep)
    for _ in range(60):
        limiter.acquire(0)
    assert clock.now == 0  # a full bucket admits a burst of one minute's requests
    limiter.acquire(0)
    assert clock.now == 1.0  # then one per second


def test_tokens_per_minute():
    clock = FakeClock()
    limiter = RateLimiter(rpm=None, tpm=600, clock=clock, sleep=clock.sleep)
    limiter.acquire(600)
    limiter.acquire(300)
    assert clock.now == 30.0  # 300 tokens at 10 per second


def test_no_limits_never_wait():
    clock = FakeClock()
    limiter = RateLimiter(rpm=None, tpm=None, clock=clock, sleep=clock.sleep)
    for _ in range(1000):
        limiter.acquire(10**6)
    assert clock.slept == [] and not limiter.active
