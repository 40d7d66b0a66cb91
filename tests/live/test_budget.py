"""The budget: reservations before calls, settlement after, unknown usage keeps its reservation."""

from __future__ import annotations

from decimal import Decimal

import pytest
from helpers.compose import composed

from evalkit.core.config import BudgetConfig, Price, validate_config
from evalkit.core.errors import ConfigError
from evalkit.core.prices import PriceEntry
from evalkit.live.budget import Budget, estimate_tokens
from evalkit.records.call import Usage


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
    assert budget.summary() | {} == {"calls": 1, "input_tokens": 0, "output_tokens": 0, "cost": 0.0, "usd": None,
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


LISTED = PriceEntry(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75, as_of="2026-12-02",
                    source="https://example.com/prices")


def test_max_usd_reserves_at_the_listed_prices_and_names_the_amounts_when_it_denies():
    budget = Budget(BudgetConfig(max_usd=0.05, reserve_output_tokens=1000))
    # each call reserves 1000 input x $3/M + 1000 output x $15/M = $0.018
    first, second = budget.reserve(1000, None, LISTED), budget.reserve(1000, None, LISTED)
    assert not isinstance(first, str) and not isinstance(second, str)
    assert first.usd == Decimal("0.018")
    denied = budget.reserve(1000, None, LISTED)  # 3 x 0.018 = 0.054 > 0.05: refused before it is sent
    assert denied == ("budget_denied: budget.max_usd=0.05 would be exceeded ($0.036000 spent or held by calls in "
                      "flight, and this call reserves $0.018000)")


def test_max_usd_settles_at_the_reported_usage_cache_reads_and_writes_at_their_own_prices():
    budget = Budget(BudgetConfig(max_usd=0.05, reserve_output_tokens=1000))
    held = budget.reserve(1000, None, LISTED)
    assert not isinstance(held, str)
    budget.settle(held, Usage(input_tokens=100, output_tokens=10, cache_read_tokens=1000, cache_write_tokens=200),
                  None, listed=LISTED)
    expected = (100 * 3 + 10 * 15 + 1000 * 0.3 + 200 * 3.75) / 1_000_000
    assert budget.summary()["usd"] == pytest.approx(expected)
    # what settled is spent: two reservations of $0.018 fit beside it, a third does not
    assert not isinstance(budget.reserve(1000, None, LISTED), str)
    assert not isinstance(budget.reserve(1000, None, LISTED), str)
    assert isinstance(budget.reserve(1000, None, LISTED), str)


def test_max_usd_keeps_the_reservation_of_a_call_whose_usage_is_unknown():
    budget = Budget(BudgetConfig(max_usd=0.02, reserve_output_tokens=1000))
    held = budget.reserve(1000, None, LISTED)
    assert not isinstance(held, str)
    budget.settle(held, None, None, listed=LISTED)  # a timeout: the provider may have billed it
    assert budget.summary()["usd"] == pytest.approx(0.018)
    assert isinstance(budget.reserve(1000, None, LISTED), str)


def test_max_usd_never_sends_a_call_it_cannot_price():
    budget = Budget(BudgetConfig(max_usd=10.0))
    assert budget.reserve(10, None, None) == ("budget_denied: budget.max_usd=10 cannot price this call (no price)")


def test_no_limits_admit_everything():
    budget = Budget(BudgetConfig())
    assert all(not isinstance(budget.reserve(10**9, None), str) for _ in range(100))


def test_token_estimate():
    assert estimate_tokens("") == 1 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


@pytest.mark.parametrize(("override", "message"), [
    ("budget.max_usd=0", r"^budget\.max_usd=0 cannot pay for one call of claude-sonnet-4-6 \(\$0\.015363 reserved for "
                         r"one input token and budget\.reserve_output_tokens=1024\), so every call of this live run "
                         r"would be denied; raise budget\.max_usd$"),
    ("budget.max_usd=0.01", r"^budget\.max_usd=0\.01 cannot pay for one call"),
    ("budget.max_calls=0", r"^budget\.max_calls=0 cannot pay for one call, so every call of this live run would be "
                           r"denied; raise budget\.max_calls or remove it$"),
    ("budget.max_input_tokens=0", r"^budget\.max_input_tokens=0 cannot pay for one input token"),
    ("budget.max_output_tokens=1000", r"^budget\.max_output_tokens=1000 cannot pay for the 1024 output tokens a call "
                                      r"reserves"),
])
def test_a_live_run_whose_budget_cannot_pay_for_one_call_is_refused_up_front(hydra_conf: None, override: str,
                                                                             message: str) -> None:
    """Issue 35: budget.max_usd=0 denied every call, and the gate read the denials as 12 regressions."""
    priced = ("model=claude", "judge.name=claude-sonnet-4-6")
    with pytest.raises(ConfigError, match=message):
        validate_config(composed("mode=live", override, *priced), {})
    assert validate_config(composed("mode=record-missing", override, *priced), {}).mode == "record-missing"
    assert validate_config(composed("mode=live", "budget.max_usd=0.02", "budget.max_calls=1", *priced), {})
