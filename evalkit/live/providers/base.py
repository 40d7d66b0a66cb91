"""The provider contract: a request in, a reply out (evalkit.records.call). A new provider is one module that
meets it."""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from evalkit.records.call import Message, Reply, Request, Usage  # noqa: F401  (the call types' old home, kept

# importable while code written against it is merged; evalkit.records.call owns them)

__all__ = ["Provider", "CallFailure", "MISSHAPEN", "excerpt", "service_ms", "timed_call"]

_T = TypeVar("_T")


class CallFailure(Exception):
    """A call that produced no reply, classified so the runner knows whether to try again.

    Providers translate their SDK's errors into this: timeouts, dropped connections, 429 and 5xx
    are `retryable` (429 with the server's Retry-After in seconds, when it sent one); other 4xx
    (bad request, auth, schema) are not. `for_status` is that rule for an HTTP status, so every
    provider applies it alike. The message must not contain credentials.
    """

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status

    @classmethod
    def for_status(cls, status: int, message: str, *, retry_after: str | None = None) -> CallFailure:
        """The failure an HTTP error status means, the same for every provider.

        429, 408 (the server's own timeout) and 5xx are retryable; any other status is not.
        `retry_after` is the raw Retry-After header (seconds or an HTTP date); it is kept, in
        seconds, only on a retryable failure.
        """
        retryable = status in (408, 429) or 500 <= status <= 599
        return cls(message, retryable=retryable, status=status,
                   retry_after=_retry_after_seconds(retry_after) if retryable else None)


def _retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds from now; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": a UTC time without zone information
            when = when.replace(tzinfo=dt.UTC)
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


class Provider(Protocol):
    """Calls one kind of server. Construction must not touch the network; `complete` does.

    `complete` returns a Reply, or raises CallFailure; it never retries by itself (the runner
    owns retries, so backoff, budgets and progress stay in one place). It must be safe to call
    from several threads at once. A provider may also have `describe() -> dict`: what produced its
    replies (model file and hash, runtime, settings), which a live run writes into the recording's
    provenance (`producer`).
    """

    def complete(self, request: Request) -> Reply: ...


MISSHAPEN: tuple[type[Exception], ...] = (AttributeError, TypeError, KeyError, IndexError, ValueError)
"""What reading a reply of the wrong shape raises (ValueError: bad JSON, a pydantic ValidationError too). The client
libraries build their reply types leniently: a field the server sent with the wrong type stays as it came (`choices:
[1]`, `content: 7`), so the first read of it fails with one of these, in the library or in the provider. A provider
turns them into a retryable CallFailure saying the body is not a reply, never lets them out as a crash."""


def service_ms(reported_ms: object, latency_ms: float) -> float | None:
    """A server's own report of its time on a call, in ms (one decimal), where it is a number; never more than the
    time in flight (the two clocks differ), and None for anything else, so a strange field cannot fail a call."""
    if isinstance(reported_ms, bool) or not isinstance(reported_ms, int | float) or not math.isfinite(reported_ms):
        return None
    return round(min(max(float(reported_ms), 0.0), latency_ms), 1)


def timed_call(call: Callable[[], _T], failure: Callable[[Exception], CallFailure | None]) -> tuple[_T, float]:
    """Run one SDK call; return its result and latency in ms (one decimal). A CallFailure raised underneath the
    SDK (by evalkit's transport: a deadline, a reply cap, a redirect) is that failure, whatever the SDK wrapped it
    in; an exception the provider's `failure` translates becomes that CallFailure; any other is a bug and
    propagates unchanged."""
    started = time.perf_counter()
    try:
        result = call()
    except CallFailure:
        raise
    except Exception as error:
        translated = _underneath(error) or failure(error)
        if translated is None:
            raise
        raise translated from None
    return result, round((time.perf_counter() - started) * 1000, 1)


def _underneath(error: BaseException) -> CallFailure | None:
    """The CallFailure an SDK's exception wraps (as its cause, a few levels down at most), or None."""
    seen: BaseException | None = error.__cause__
    for _ in range(4):
        if seen is None or isinstance(seen, CallFailure):
            return seen
        seen = seen.__cause__
    return None


def excerpt(text: str, limit: int = 300) -> str:
    """A server's error text for a CallFailure message: whitespace collapsed, at most `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " ..."
