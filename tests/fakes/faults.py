"""Which calls a fake server spoils, and how: a seeded plan, so a run's faults can be replayed."""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass

__all__ = ["Fault", "Faults"]


class Fault(enum.StrEnum):
    """One way a call can go wrong on the server's side."""

    SLOW = "slow"
    """Answer correctly, `slow_ms` later than usual."""
    RATE_LIMIT = "429"
    """429 in the protocol's error format, with `Retry-After: retry_after_s` when that is set."""
    SERVER_ERROR = "500"
    """500 in the protocol's error format."""
    TIMEOUT = "timeout"
    """Say nothing for `hang_s` (longer than the client's timeout), then close the connection."""
    RESET = "reset"
    """Close the connection with a TCP reset, without a reply."""
    MALFORMED = "malformed"
    """200 with a JSON content type and a cut-off body that is not JSON."""


@dataclass(frozen=True)
class Faults:
    """The fault plan of a fake server.

    Call n (0-based, counted over the protocol's call endpoint in arrival order) gets `script[n]`
    while the script lasts (None: no fault), then a fault drawn with probability `rate` from
    `kinds`. The draw for call n depends only on `seed` and n, so a run's faults are reproducible
    (which concurrent request arrives n-th is up to the clients).
    """

    rate: float = 0.0
    kinds: tuple[Fault, ...] = tuple(Fault)
    seed: int = 0
    script: tuple[Fault | None, ...] = ()
    slow_ms: float = 500.0
    hang_s: float = 5.0
    retry_after_s: float | None = 1.0
    """Sent as Retry-After with a 429 (an integer when it is one); None: no header."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be within [0, 1], got {self.rate}")
        if self.rate > 0 and not self.kinds:
            raise ValueError("a positive fault rate needs at least one fault kind")

    @classmethod
    def always(cls, kind: Fault, *, slow_ms: float = 500.0, hang_s: float = 5.0,
               retry_after_s: float | None = 1.0) -> Faults:
        """Every call gets `kind`."""
        return cls(rate=1.0, kinds=(kind,), slow_ms=slow_ms, hang_s=hang_s, retry_after_s=retry_after_s)

    def pick(self, n: int) -> Fault | None:
        """The fault for call n, or None."""
        if n < len(self.script):
            return self.script[n]
        if self.rate <= 0:
            return None
        draw = random.Random(f"{self.seed}/{n}")
        return draw.choice(self.kinds) if draw.random() < self.rate else None

    @property
    def retry_after_header(self) -> str | None:
        if self.retry_after_s is None:
            return None
        seconds = self.retry_after_s
        return str(int(seconds)) if float(seconds).is_integer() else str(seconds)
