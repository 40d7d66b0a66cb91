"""The order agent's tools: two lookups over the shop's SQLite database (built in memory from data/orders.sql).

evalkit offers each public function here to the model as a tool: its typed parameters are the JSON Schema of the
arguments, its docstring the description the model reads (docs/how-to/gate-an-agent.md). A tool's fingerprint
covers its source, the sources of the functions of this module it calls, and the files TOOL_DATA names.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

TOOL_DATA = ("data/orders.sql",)
"""Files the tools' results depend on: their bytes are part of every tool's fingerprint."""

_DB: sqlite3.Connection | None = None


def _db() -> sqlite3.Connection:
    global _DB
    if _DB is None:
        _DB = sqlite3.connect(":memory:", check_same_thread=False)
        _DB.row_factory = sqlite3.Row
        _DB.executescript((Path(__file__).parent / "data" / "orders.sql").read_text(encoding="utf-8"))
    return _DB


def lookup_order(order_id: int) -> dict[str, Any] | None:
    """Look up a shop order by its number: its status, its total in US dollars and its customer's id (null when
    there is no such order)."""
    row = _db().execute("SELECT id, customer_id, status, total_usd FROM orders WHERE id = ?", (order_id,)).fetchone()
    return dict(row) if row is not None else None


def lookup_customer(customer_id: int) -> dict[str, Any] | None:
    """Look up a customer by id: their name and email address (null when there is no such customer)."""
    row = _db().execute("SELECT id, name, email FROM customers WHERE id = ?", (customer_id,)).fetchone()
    return dict(row) if row is not None else None
