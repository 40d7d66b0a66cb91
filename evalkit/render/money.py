"""The cost in money a run report recorded (`execution.money`), as text: the rows of a report's cost section, the
terminal's one line, and the cells of the history and sweep tables. Values to strings; no price is looked up here.

A report is shown at the prices it recorded, with their date and source: reading it later never reprices it. A cost
that could not be known is "no price", never 0; a report without a money section (made before evalkit priced runs,
or adapted from another tool) shows nothing, or `-` in a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.records.report_reader import RunReport

__all__ = ["NO_PRICE", "usd", "money_rows", "money_line", "run_usd", "usd_text", "usd_cell"]

NO_PRICE = "no price"


def usd(value: float) -> str:
    """An amount of US dollars as a reader wants it: cents from a dollar up, more places below (a call costs
    fractions of a cent)."""
    if value == 0:
        return "$0"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    if abs(value) >= 0.01:
        return f"${value:.4f}"
    shown = f"${value:.6f}"
    return shown if shown != "$0.000000" else "< $0.000001"


def _money(report: RunReport) -> Mapping[str, Any] | None:
    return report.execution.money


def _amount(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _side(block: Mapping[str, Any]) -> str:
    amount = _amount(block.get("usd"))
    if amount is None:
        return f"{NO_PRICE} ({block.get('no_price') or 'not priced'})"
    estimated = block.get("estimated_calls") or 0
    note = f"; tokens of {estimated} estimated: characters / 4" if estimated else ""
    return f"{usd(amount)} ({block.get('calls', 0)} calls{note})"


def _price(price: Mapping[str, Any]) -> str:
    def per_m(key: str) -> str:
        value = _amount(price.get(key))
        return "none published" if value is None else f"${value:g}"

    return (f"input {per_m('input')}, output {per_m('output')}, cached input {per_m('cached_input')}, "
            f"cache write {per_m('cache_write')} per million tokens, as of {price.get('as_of')} "
            f"({price.get('source')})")


def money_rows(report: RunReport, baseline: RunReport | None = None) -> list[tuple[str, str]]:
    """The cost section's rows in money: each side, per case, the run (against the baseline's, when given), and the
    prices they were computed at."""
    money = _money(report)
    if money is None:
        return []
    rows = []
    sides = [(role, money[role]) for role in ("model", "judge") if isinstance(money.get(role), Mapping)]
    for role, block in sides:
        rows.append(("cost, model under test" if role == "model" else "cost, judge (apart)", _side(block)))
        if role == "model" and _amount(block.get("usd")) is not None:
            rows.append(("cost per case", _per_case(money)))
    total = _amount(money.get("usd"))
    rows.append(("cost, run (USD)", usd(total) if total is not None else NO_PRICE))
    against = _money(baseline) if baseline is not None else None
    change = _change(against, money) if against is not None else None
    if change is not None:
        rows.append(("cost, run vs baseline", change))
    priced = {str(block.get("name")): block["price"] for _, block in sides if isinstance(block.get("price"), Mapping)}
    rows += [(f"price of {name}", _price(price)) for name, price in priced.items()]
    return rows


def _prices(money: Mapping[str, Any]) -> dict[str, Any]:
    """Each side's recorded price entry (None for a side without one)."""
    return {role: block.get("price") for role in ("model", "judge") if isinstance(block := money.get(role), Mapping)}


def _days(money: Mapping[str, Any]) -> str:
    return ", ".join(sorted({str(p.get("as_of")) for p in _prices(money).values() if isinstance(p, Mapping)}))


def _change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """This run's cost against the baseline's, each at the prices its own report recorded, and whether those
    prices differ (then a change of cost is partly a change of price); None when neither has a price."""
    old, new = _amount(before.get("usd")), _amount(after.get("usd"))
    if old is None and new is None:
        return None
    text = f"{usd_text(new)} here, {usd_text(old)} in the baseline"
    if old is not None and new is not None and old > 0:
        text += f" ({(new - old) / old:+.0%})"
    elif old is None or new is None:
        text += ": not comparable in money"
    then, now = _prices(before), _prices(after)
    if any(then.get(role) is not None and now.get(role) is not None and then[role] != now[role] for role in now):
        text += (f"; priced at other figures (the baseline's of {_days(before)}, this run's of {_days(after)}): "
                 "each report keeps its own, neither is repriced")
    return text


def _per_case(money: Mapping[str, Any]) -> str:
    cases = money.get("cases")
    if not isinstance(cases, Mapping):
        return NO_PRICE
    amounts = [_amount(v) for v in cases.values()]
    if not amounts:
        return "no case got a reply"
    if any(a is None for a in amounts):
        return NO_PRICE
    known = [a for a in amounts if a is not None]
    most = max(cases, key=lambda case: _amount(cases[case]) or 0.0)
    return f"mean {usd(sum(known) / len(known))} over {len(known)} cases; most {usd(max(known))} ({most})"


def money_line(report: RunReport) -> str | None:
    """One line for the terminal: the run's cost, its parts, and the day its prices are from."""
    money = _money(report)
    if money is None:
        return None
    sides = {role: money[role] for role in ("model", "judge") if isinstance(money.get(role), Mapping)}
    known = {role: amount for role, block in sides.items() if (amount := _amount(block.get("usd"))) is not None}
    parts = [f"{role} {usd(amount)}" for role, amount in known.items()]
    days = sorted({str(b["price"].get("as_of")) for b in sides.values() if isinstance(b.get("price"), Mapping)})
    when = f"prices as of {', '.join(days)} from the price table (conf/prices/)" if days else ""
    total = _amount(money.get("usd"))
    if total is not None:
        return f"cost: {usd(total)} ({'; '.join(filter(None, [', '.join(parts), when]))})"
    why = list(dict.fromkeys(str(b.get("no_price") or "not priced") for role, b in sides.items() if role not in known))
    priced = f"; {', '.join(parts)}, {when}" if parts else ""
    return f"cost: {NO_PRICE} ({'; '.join(why)}){priced}"


def run_usd(report: RunReport) -> float | None:
    """The run's cost in dollars; None when it has no price or the report recorded no cost in money."""
    money = _money(report)
    return _amount(money.get("usd")) if money is not None else None


def usd_text(value: Any) -> str:
    """A recorded amount as text: the amount, or "no price" for a cost that could not be known (null)."""
    amount = _amount(value)
    return usd(amount) if amount is not None else NO_PRICE


def usd_cell(report: RunReport) -> str:
    """A table cell: the run's cost, "no price", or `-` when the report recorded no cost in money."""
    money = _money(report)
    return usd_text(money.get("usd")) if money is not None else "-"
