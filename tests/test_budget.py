"""The budget: reservations before calls, settlement after, unknown usage keeps its reservation."""

from __future__ import annotations

import pytest

from evalkit.core.config import BudgetConfig, Price
from evalkit.live.budget import Budget, estimate_tokens
from evalkit.live.providers.base import Usage


def test_calls_beyond_max_calls_are_denied_with_the_limit_named():
    budget = Budget(BudgetConfig(max_calls=2))
    first, second = budget.reserve(10, None), budget.reserve(10, None)
    assert not isinstance(first, str) and not isinstance(second, str)
    assert budget.reserve(10, None) == "budget_denied: budget.max_calls=2 would be exceeded"


def test_settled_usage_replaces_the_reservation():
    budget = Budget(BudgetConfig(max_output_tokens=1500, reserve_output_tokens=1000))
    held = budget.reserve(50, None)
    assert not isinstance(held, str)
    assert isinstance(budget.reserve(50, None), str)  # 2 x 1000 reserved output would exceed 1500
    budget.settle(held, Usage(input_tokens=40, output_tokens=100), None)
    assert not isinstance(budget.reserve(50, None), str)  # 100 spent + 1000 reserved fits
    assert budget.summary()["output_tokens"] == 100 and budget.summary()["input_tokens"] == 40


def test_unknown_usage_keeps_the_reservation():
    budget = Budget(BudgetConfig(max_input_tokens=100, reserve_output_tokens=10))
    held = budget.reserve(60, None)
    assert not isinstance(held, str)
    budget.settle(held, None, None)  # a timeout: the server may have done the work
    # the reservation still bounds the budget, but it is reported apart: reserved is not used
    assert budget.summary() | {} == {"calls": 1, "input_tokens": 0, "output_tokens": 0, "cost": 0.0,
                                     "unknown_usage_calls": 1,
                                     "kept_reservations": {"input_tokens": 60, "output_tokens": 10}}
    assert isinstance(budget.reserve(60, None), str)


def test_a_replys_unreported_output_is_estimated_from_its_text_not_the_reservation():
    budget = Budget(BudgetConfig(reserve_output_tokens=1024))
    held = budget.reserve(60, None)
    assert not isinstance(held, str)
    budget.settle(held, Usage(input_tokens=50, output_tokens=None), None, output_estimate=7)
    assert budget.summary()["output_tokens"] == 7 and budget.summary()["kept_reservations"]["output_tokens"] == 0


def test_partly_known_usage_keeps_the_unknown_part():
    budget = Budget(BudgetConfig(reserve_output_tokens=10))
    held = budget.reserve(60, None)
    assert not isinstance(held, str)
    budget.settle(held, Usage(input_tokens=None, output_tokens=3), None)
    assert budget.summary()["input_tokens"] == 60 and budget.summary()["output_tokens"] == 3


def test_a_refused_call_gives_back_its_tokens_but_counts_as_a_call():
    budget = Budget(BudgetConfig(max_calls=5, max_input_tokens=100))
    held = budget.reserve(90, None)
    assert not isinstance(held, str)
    budget.refund(held)
    assert budget.summary()["calls"] == 1 and budget.summary()["input_tokens"] == 0
    assert not isinstance(budget.reserve(90, None), str)


def test_cost_from_the_price_table():
    price = Price(input_per_mtok=1.0, output_per_mtok=4.0)
    budget = Budget(BudgetConfig(max_cost=0.01, reserve_output_tokens=1000))
    held = budget.reserve(1000, price)  # reserves 0.001 + 0.004
    assert not isinstance(held, str)
    assert isinstance(budget.reserve(4000, price), str)  # 0.005 + 0.008 > 0.01
    budget.settle(held, Usage(input_tokens=1000, output_tokens=0), price)
    assert budget.summary()["cost"] == pytest.approx(0.001)


def test_no_limits_admit_everything():
    budget = Budget(BudgetConfig())
    assert all(not isinstance(budget.reserve(10**9, None), str) for _ in range(100))


def test_token_estimate():
    assert estimate_tokens("") == 1 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
