"""When to try a failed call again, and how long to wait first. Pure: the caller sleeps."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["RetryPolicy", "backoff_seconds"]


@dataclass(frozen=True)
class RetryPolicy:
    retries: int
    """Further attempts after the first."""
    base_s: float
    max_s: float


def backoff_seconds(policy: RetryPolicy, attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Wait before attempt `attempt + 1` (attempt counts from 0).

    A server's Retry-After is honoured as given: it knows when capacity returns. Otherwise the wait
    is exponential with full jitter (uniform in [0, base * 2**attempt], capped), so that many
    concurrent calls that failed together do not come back together.
    """
    if retry_after is not None:
        return max(0.0, retry_after)
    ceiling = min(policy.max_s, policy.base_s * (2 ** attempt))
    return rng.uniform(0.0, ceiling)
