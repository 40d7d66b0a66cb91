"""Cost in money: token counts times the price table's figures, per call, per case and per run. Pure: no I/O.

Amounts are `Decimal`s (a price of 0.3 dollars is three tenths, not the float nearest to it), summed exactly and
written to the report once as numbers. A call is priced only when every kind of token it used has a price: a
model without an entry, or cache reads without a `cached_input` figure, make the call's cost unknown (None), and
a sum with an unknown part is unknown too. Evalkit says "no price" then; it never writes 0 for a cost it does not
know.

Token kinds follow the providers' usage (evalkit.live.providers.base.Usage): Anthropic and Bedrock count cache
reads and cache writes apart from `input_tokens`; OpenAI-compatible servers, Azure and Gemini count cached reads
inside the input and evalkit does not read them apart, so their input is priced whole at the `input` figure (an
upper bound when the provider's cache was hit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from evalkit.core.call_id import CallId
from evalkit.core.prices import PriceEntry

__all__ = ["CURRENCY", "Tokens", "Side", "call_cost", "unpriced_reason", "money_section", "reserve_cost"]

CURRENCY = "USD"
_MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Tokens:
    """What one call used, as its cost is computed from it."""

    input: int
    """Input tokens billed at the `input` price (for Anthropic and Bedrock: without cache reads and writes)."""
    output: int
    cache_read: int = 0
    cache_write: int = 0
    estimated: bool = False
    """Some count was estimated (characters / 4) because the provider reported none."""


@dataclass(frozen=True)
class Side:
    """One side of a run that makes calls (the model under test, or the judge): its name and its price entry."""

    name: str
    price: PriceEntry | None


def _figure(value: float) -> Decimal:
    # the figure as written in the price file (0.3 -> Decimal("0.3")), not the binary float nearest to it
    return Decimal(repr(value))


def unpriced_reason(side: Side, tokens: Tokens) -> str | None:
    """Why a call of `side` that used `tokens` cannot be priced; None when it can."""
    if side.price is None:
        return f"no entry for {side.name} in the price table"
    if tokens.cache_read and side.price.cached_input is None:
        return f"{side.name} read {tokens.cache_read} input tokens from its cache and its entry has no cached_input"
    if tokens.cache_write and side.price.cache_write is None:
        return f"{side.name} wrote {tokens.cache_write} input tokens to its cache and its entry has no cache_write"
    return None


def call_cost(price: PriceEntry | None, tokens: Tokens) -> Decimal | None:
    """The cost of one call in US dollars; None when it cannot be known (see unpriced_reason)."""
    if price is None or unpriced_reason(Side("", price), tokens) is not None:
        return None
    total = tokens.input * _figure(price.input) + tokens.output * _figure(price.output)
    if tokens.cache_read:
        assert price.cached_input is not None
        total += tokens.cache_read * _figure(price.cached_input)
    if tokens.cache_write:
        assert price.cache_write is not None
        total += tokens.cache_write * _figure(price.cache_write)
    return total / _MILLION


def reserve_cost(price: PriceEntry, input_tokens: int, output_tokens: int) -> Decimal:
    """What a call is assumed to cost before its usage is known: its estimated input at the `input` price (a prompt
    evalkit sends is never marked for caching) and the reserved output at the `output` price."""
    cost = call_cost(price, Tokens(input_tokens, output_tokens))
    assert cost is not None
    return cost


def _sum(values: list[Decimal | None]) -> Decimal | None:
    if any(v is None for v in values):
        return None
    return sum((v for v in values if v is not None), Decimal(0))


def _number(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


_SIDE_OF = {"task": "model", "user": "simulator"}
"""Which side pays for a call, by its kind (evalkit.core.call_id); the judge's calls are the rest."""


def money_section(calls: Mapping[str, Tokens], sides: Mapping[str, Side]) -> dict[str, Any]:
    """The run report's `execution.money`: the cost of every call (by call id), of every case (the model under
    test's calls of it, all samples; the judge is apart), of each side and of the run, with the price entry each
    side was priced at, so that a report read later is never repriced at another table's figures.

    `calls` maps each call that got a reply to its tokens; `sides` maps `model` (and `judge`, if it judged, and
    `simulator`, if it simulated a user) to its
    name and entry. A side or a case with any call that cannot be priced has no cost (None), and the side says why;
    the calls of a side without an entry are not listed one by one, and without the model's entry `cases` is None."""
    per_call: dict[str, Decimal | None] = {}
    per_case: dict[str, list[Decimal | None]] = {}
    by_side: dict[str, list[Decimal | None]] = {role: [] for role in sides}
    estimated = dict.fromkeys(sides, 0)
    reasons: dict[str, str] = {}
    for call_id, tokens in calls.items():
        which = CallId.parse(call_id)
        role = _SIDE_OF.get(which.kind, "judge")
        side = sides[role]
        cost = call_cost(side.price, tokens)
        if side.price is not None:  # a side without an entry says so once, not once per call
            per_call[call_id] = cost
        by_side[role].append(cost)
        estimated[role] += tokens.estimated
        if cost is None:
            reasons.setdefault(role, unpriced_reason(side, tokens) or "unknown")
        if role == "model":
            per_case.setdefault(which.case, []).append(cost)
    section: dict[str, Any] = {"currency": CURRENCY}
    totals = []
    for role, side in sides.items():
        if role != "model" and not by_side[role]:
            continue  # a suite that judges (or simulates) nothing shows no such cost
        # a side without an entry has no cost even when none of its calls got a reply: never 0 for "unknown"
        total = _sum(by_side[role]) if side.price is not None else None
        totals.append(total)
        block: dict[str, Any] = {"name": side.name, "price": side.price.to_json() if side.price else None,
                                 "calls": len(by_side[role]), "usd": _number(total),
                                 "estimated_calls": estimated[role]}
        if total is None:
            block["no_price"] = reasons.get(role, f"no entry for {side.name} in the price table")
        section[role] = block
    section["usd"] = _number(_sum(totals))
    priced = "model" in sides and sides["model"].price is not None
    section["cases"] = ({case: _number(_sum(costs)) for case, costs in sorted(per_case.items())} if priced else None)
    section["calls"] = {call_id: _number(cost) for call_id, cost in sorted(per_call.items())}
    return section
