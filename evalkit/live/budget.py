"""The spending budget of a live run: reserve before a call, settle after it.

A call is admitted only if its reservation fits every limit together with what is already spent
and reserved. A call whose usage never became known (timeout, dropped connection, killed) keeps its
reservation: the provider may have done, and billed, the work.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evalkit.core.config import BudgetConfig, Price
from evalkit.core.money import Tokens, call_cost, reserve_cost
from evalkit.core.prices import PriceEntry
from evalkit.records.call import Usage

__all__ = ["Budget", "Reservation", "UNIT", "UnitBudget", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """A provider-neutral estimate: about four characters per token for English text."""
    return max(1, (len(text) + 3) // 4)


@dataclass(frozen=True)
class Reservation:
    input_tokens: int
    output_tokens: int
    cost: float
    usd: Decimal = Decimal(0)
    """US dollars held at the price table's figures (`budget.max_usd`); 0 for a model without an entry."""


@dataclass
class _Totals:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    usd: Decimal = Decimal(0)


class Budget:
    """Thread-safe ledger of calls, tokens and cost against the configured limits."""

    def __init__(self, limits: BudgetConfig) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._spent = _Totals()  # settled and kept reservations
        self._held = _Totals()  # reservations of calls in flight
        self.unknown = 0  # calls whose usage stayed unknown; their reservations count as spent
        self._kept = _Totals()  # those reservations, reported apart: reserved is not used
        self._unpriced = False  # a call of a model without a price table entry was reserved: dollars unknown

    def reserve(self, input_tokens: int, price: Price | None, listed: PriceEntry | None = None) -> Reservation | str:
        """Reserve one call; returns the reservation, or why the budget denies it. `listed` is the model's entry in
        the price table (for `budget.max_usd`), `price` its deprecated own price block (`budget.max_cost`)."""
        output = self.limits.reserve_output_tokens
        cost = _cost(price, input_tokens, output)
        if self.limits.max_usd is not None and listed is None:  # the config refuses this; never spend unpriced
            return f"budget_denied: budget.max_usd={self.limits.max_usd:g} cannot price this call (no price)"
        usd = reserve_cost(listed, input_tokens, output) if listed is not None else Decimal(0)
        with self._lock:
            self._unpriced = self._unpriced or listed is None
            after = _Totals(self._spent.calls + self._held.calls + 1,
                            self._spent.input_tokens + self._held.input_tokens + input_tokens,
                            self._spent.output_tokens + self._held.output_tokens + output,
                            self._spent.cost + self._held.cost + cost,
                            self._spent.usd + self._held.usd + usd)
            denial = self._exceeded(after, usd)
            if denial:
                return denial
            self._held.calls += 1
            self._held.input_tokens += input_tokens
            self._held.output_tokens += output
            self._held.cost += cost
            self._held.usd += usd
            return Reservation(input_tokens, output, cost, usd)

    def settle(self, reservation: Reservation, usage: Usage | None, price: Price | None,
               output_estimate: int | None = None, *, listed: PriceEntry | None = None) -> None:
        """Replace a reservation by what the call used. A reply's unreported output is estimated from its text
        (`output_estimate`); a call without a reply (`usage` None) keeps its whole reservation, counted as spent
        against the limits but reported apart (`kept_reservations`), since reserved is not used. Its dollars are
        those of its usage at `listed`'s prices, cache reads and writes included."""
        used_in = usage.input_tokens if usage and usage.input_tokens is not None else reservation.input_tokens
        used_out = (usage.output_tokens if usage and usage.output_tokens is not None
                    else output_estimate if usage and output_estimate is not None else reservation.output_tokens)
        used_usd = reservation.usd
        if usage is not None and listed is not None:
            tokens = Tokens(used_in, used_out, usage.cache_read_tokens or 0, usage.cache_write_tokens or 0)
            priced = call_cost(listed, tokens)
            if priced is None:  # cache tokens its entry has no price for: at the input price, never below reserved
                priced = max(reservation.usd, reserve_cost(listed, used_in + tokens.cache_read + tokens.cache_write,
                                                           used_out))
            used_usd = priced
        with self._lock:
            self._release(reservation)
            if usage is None:
                self.unknown += 1
                self._kept.calls += 1
                self._kept.input_tokens += used_in
                self._kept.output_tokens += used_out
            self._spent.calls += 1
            self._spent.input_tokens += used_in
            self._spent.output_tokens += used_out
            self._spent.cost += _cost(price, used_in, used_out) if usage else reservation.cost
            self._spent.usd += used_usd

    def refund(self, reservation: Reservation) -> None:
        """The server refused the call before doing any work (429): only the call itself counts."""
        with self._lock:
            self._release(reservation)
            self._spent.calls += 1

    def summary(self) -> dict[str, Any]:
        with self._lock:
            # tokens used by calls that got a reply (reported, or estimated where the provider said nothing);
            # reservations of calls without one are apart: they bound the budget, they were not used
            return {"calls": self._spent.calls,
                    "input_tokens": self._spent.input_tokens - self._kept.input_tokens,
                    "output_tokens": self._spent.output_tokens - self._kept.output_tokens,
                    # dollars at the price table's figures; None once a call had no price: never 0 for unknown
                    "cost": round(self._spent.cost, 6), "usd": None if self._unpriced else float(self._spent.usd),
                    "unknown_usage_calls": self.unknown,
                    "kept_reservations": {"input_tokens": self._kept.input_tokens,
                                          "output_tokens": self._kept.output_tokens}}

    def _release(self, reservation: Reservation) -> None:
        self._held.calls -= 1
        self._held.input_tokens -= reservation.input_tokens
        self._held.output_tokens -= reservation.output_tokens
        self._held.cost -= reservation.cost
        self._held.usd -= reservation.usd

    def _exceeded(self, after: _Totals, usd: Decimal) -> str | None:
        limits = self.limits
        for name, value, limit in (("max_calls", after.calls, limits.max_calls),
                                   ("max_input_tokens", after.input_tokens, limits.max_input_tokens),
                                   ("max_output_tokens", after.output_tokens, limits.max_output_tokens),
                                   ("max_cost", after.cost, limits.max_cost)):
            if limit is not None and value > limit:
                return f"budget_denied: budget.{name}={limit} would be exceeded"
        if limits.max_usd is not None and after.usd > Decimal(repr(limits.max_usd)):
            before = after.usd - usd
            return (f"budget_denied: budget.max_usd={limits.max_usd:g} would be exceeded (${before:.6f} spent or held "
                    f"by calls in flight, and this call reserves ${usd:.6f})")
        return None


UNIT = "byte of public task JSON or of response JSON (not model tokens, not money)"


class UnitBudget:
    """The budget of a candidate-program run, in units (see UNIT): reserve the task's input plus the largest
    allowed response before running a case, settle on a valid response, keep the reservation when the outcome
    is unknown (timeout, crash, invalid response: the work may have been done)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.spent = 0
        self.unknown = 0  # reservations kept because the usage never became known
        self.denied = 0

    def reserve(self, units: int) -> str | None:
        """Hold `units` for one case; returns why the budget denies it, or None when it fits."""
        if self.limit is not None and self.spent + self.unknown + units > self.limit:
            self.denied += 1
            return f"budget_denied: budget.max_units={self.limit} would be exceeded"
        self.unknown += units  # held as unknown until settled
        return None

    def settle(self, reserved: int, used: int) -> None:
        self.unknown -= reserved
        self.spent += used

    def summary(self) -> dict[str, object]:
        return {"unit": UNIT, "limit_units": self.limit, "spent_units": self.spent,
                "unknown_reservations": self.unknown, "denied_cases": self.denied}


def _cost(price: Price | None, input_tokens: int, output_tokens: int) -> float:
    if price is None:
        return 0.0
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000
