"""Cost in money (evalkit.core.money) and the price table's entries (evalkit.core.prices): the arithmetic checked
against a direct computation in exact fractions, the sums per case and per run, and "no price" wherever a figure is
missing, never 0."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from evalkit.core.errors import ConfigError
from evalkit.core.money import Side, Tokens, call_cost, money_section, unpriced_reason
from evalkit.core.prices import PriceEntry, check_price_file, price_of
from evalkit.records.report import read_execution
from evalkit.records.report_reader import RunReport
from evalkit.render.money import NO_PRICE, money_line, money_rows, run_usd, usd, usd_cell

DEFAULT_TABLE = Path(__file__).resolve().parents[2] / "evalkit" / "conf" / "prices" / "default.yaml"
SONNET = PriceEntry(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75, as_of="2026-12-02",
                    source="https://example.com/anthropic")
NO_CACHE = PriceEntry(input=0.88, output=0.88, cached_input=None, cache_write=None, as_of="2026-12-02",
                      source="https://example.com/together")


def direct(price: PriceEntry, tokens: Tokens) -> Fraction:
    """Dollars as a person would compute them: each count times its figure as written, over a million."""
    def figure(value: float | None) -> Fraction:
        assert value is not None
        return Fraction(repr(value))

    total = tokens.input * figure(price.input) + tokens.output * figure(price.output)
    if tokens.cache_read:
        total += tokens.cache_read * figure(price.cached_input)
    if tokens.cache_write:
        total += tokens.cache_write * figure(price.cache_write)
    return total / 1_000_000


figures = st.decimals(min_value=0, max_value=1000, places=4).map(float)
counts = st.integers(min_value=0, max_value=10**9)


@given(figures, figures, figures, figures, counts, counts, counts, counts)
def test_a_calls_cost_is_exactly_its_tokens_times_the_figures_as_written(input_price, output_price, cached,
                                                                          write, n_in, n_out, n_read, n_write):
    price = PriceEntry(input=input_price, output=output_price, cached_input=cached, cache_write=write,
                       as_of="2026-12-02", source="https://example.com/p")
    tokens = Tokens(n_in, n_out, n_read, n_write)
    cost = call_cost(price, tokens)
    assert cost is not None and Fraction(cost) == direct(price, tokens)


def test_a_known_call_in_dollars():
    # 1,200 input, 300 output, 10,000 cache reads, 2,000 cache writes at Sonnet's figures
    cost = call_cost(SONNET, Tokens(1200, 300, 10_000, 2000))
    assert cost == Decimal("0.0036") + Decimal("0.0045") + Decimal("0.003") + Decimal("0.0075")


def test_a_call_without_a_price_has_no_cost_never_zero():
    assert call_cost(None, Tokens(10, 10)) is None
    assert unpriced_reason(Side("local-model", None), Tokens(10, 10)) == "no entry for local-model in the price table"


def test_cache_tokens_without_their_figure_are_not_priced_at_another():
    assert call_cost(NO_CACHE, Tokens(100, 10)) == Decimal("0.0000968")
    assert call_cost(NO_CACHE, Tokens(100, 10, cache_read=50)) is None
    assert unpriced_reason(Side("llama", NO_CACHE), Tokens(100, 10, cache_write=5)) == (
        "llama wrote 5 input tokens to its cache and its entry has no cache_write")


def test_the_section_sums_calls_into_cases_and_the_run_the_judge_apart():
    calls = {"task/a": Tokens(1000, 100), "task/a#1": Tokens(1000, 200, cache_read=500),
             "task/b": Tokens(2000, 50, estimated=True), "judge/faithfulness/a": Tokens(400, 20)}
    judge = PriceEntry(input=0.5, output=3.0, cached_input=0.05, cache_write=None, as_of="2026-11-30",
                       source="https://example.com/judge")
    section = money_section(calls, {"model": Side("sonnet", SONNET), "judge": Side("flash", judge)})
    each = {cid: direct(SONNET if cid.startswith("task") else judge, t) for cid, t in calls.items()}
    assert section["calls"] == {cid: pytest.approx(float(v)) for cid, v in each.items()}
    # a case holds every sample of its task call; the judge's calls are not the application's cost
    assert section["cases"] == {"a": pytest.approx(float(each["task/a"] + each["task/a#1"])),
                                "b": pytest.approx(float(each["task/b"]))}
    model_total = each["task/a"] + each["task/a#1"] + each["task/b"]
    assert section["model"]["usd"] == pytest.approx(float(model_total))
    assert section["model"]["estimated_calls"] == 1 and section["model"]["calls"] == 3
    assert section["judge"]["usd"] == pytest.approx(float(each["judge/faithfulness/a"]))
    assert section["usd"] == pytest.approx(float(model_total + each["judge/faithfulness/a"]))
    # the prices travel with the money: a report read later is never repriced
    assert section["model"]["price"] == {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75,
                                         "as_of": "2026-12-02", "source": "https://example.com/anthropic"}
    assert section["currency"] == "USD"


def test_a_simulated_users_turns_are_a_side_of_their_own_never_the_cases_cost():
    calls = {"task/a@1": Tokens(1000, 100), "user/a@1": Tokens(300, 20), "user/a@2": Tokens(400, 10)}
    section = money_section(calls, {"model": Side("sonnet", SONNET), "simulator": Side("llama", NO_CACHE)})
    each = {cid: direct(SONNET if cid.startswith("task") else NO_CACHE, t) for cid, t in calls.items()}
    assert section["cases"] == {"a": pytest.approx(float(each["task/a@1"]))}  # what the application cost
    assert section["simulator"]["calls"] == 2
    assert section["simulator"]["usd"] == pytest.approx(float(each["user/a@1"] + each["user/a@2"]))
    assert "judge" not in section and section["usd"] == pytest.approx(float(sum(each.values())))


def test_an_unpriced_judge_leaves_the_run_without_a_price_but_the_model_priced():
    calls = {"task/a": Tokens(1000, 100), "judge/faithfulness/a": Tokens(400, 20)}
    section = money_section(calls, {"model": Side("sonnet", SONNET), "judge": Side("gemini-3.8-flash", None)})
    assert section["model"]["usd"] == pytest.approx(0.0045)
    assert section["judge"]["usd"] is None and section["usd"] is None
    assert section["judge"]["no_price"] == "no entry for gemini-3.8-flash in the price table"
    assert section["judge"]["price"] is None
    assert "judge/faithfulness/a" not in section["calls"]  # said once by the side, not per call


def test_an_unpriced_model_has_no_cost_even_with_no_calls():
    section = money_section({}, {"model": Side("gemma4:e2b", None)})
    assert section["model"]["usd"] is None and section["usd"] is None and section["cases"] is None
    priced = money_section({}, {"model": Side("sonnet", SONNET)})
    assert priced["model"]["usd"] == 0.0 and priced["usd"] == 0.0  # nothing was sent: nothing was spent


def test_a_case_with_one_unpriceable_call_has_no_cost():
    section = money_section({"task/a": Tokens(10, 1), "task/a#1": Tokens(10, 1, cache_read=3),
                             "task/b": Tokens(10, 1)}, {"model": Side("llama", NO_CACHE)})
    assert section["cases"]["a"] is None and section["cases"]["b"] is not None
    assert section["model"]["usd"] is None
    assert section["model"]["no_price"] == "llama read 3 input tokens from its cache and its entry has no cached_input"


def test_amounts_read_as_money():
    assert [usd(v) for v in (0, 0.0000004, 0.000123, 0.0123456, 1.5, 1234.5)] == [
        "$0", "< $0.000001", "$0.000123", "$0.0123", "$1.50", "$1,234.50"]
    assert NO_PRICE == "no price"


# -- the price table --------------------------------------------------------------------------------------------------


def test_the_shipped_table_is_valid_and_prices_the_hosted_presets_by_exact_name():
    table = check_price_file(yaml.safe_load(DEFAULT_TABLE.read_text(encoding="utf-8")), str(DEFAULT_TABLE))
    presets = DEFAULT_TABLE.parents[1] / "model"
    for option in ("claude", "bedrock-claude", "azure-gpt4o", "mistral", "deepseek", "groq", "together",
                   "fireworks"):
        name = yaml.safe_load((presets / f"{option}.yaml").read_text(encoding="utf-8"))["name"]
        entry = price_of(table, name)
        assert entry is not None, f"conf/model/{option}.yaml: {name} has no entry in the shipped price table"
        assert entry.source.startswith("https://") and entry.as_of.year >= 2026
    # exact names only: no prefix, alias or case folding
    assert price_of(table, "claude-sonnet-4") is None and price_of(table, "GPT-4o") is None
    # models on the user's own hardware are not priced in tokens
    for option in ("gemma4", "smollm2", "vllm", "tgi", "gpt-local"):
        name = yaml.safe_load((presets / f"{option}.yaml").read_text(encoding="utf-8"))["name"]
        assert price_of(table, name) is None


@pytest.mark.parametrize(("entry", "message"), [
    ({"input": 3, "output": 15, "cached_input": 0.3, "as_of": "2026-12-02", "source": "https://x.example/p"},
     r"conf/prices/team\.yaml: claude-x: missing key 'cache_write'"),
    ({"input": -3, "output": 15, "cached_input": None, "cache_write": None, "as_of": "2026-12-02",
      "source": "https://x.example/p"},
     r"conf/prices/team\.yaml: claude-x: 'input': Input should be greater than or equal to 0"),
    ({"input": 3, "output": "cheap", "cached_input": None, "cache_write": None, "as_of": "2026-12-02",
      "source": "https://x.example/p"}, r"claude-x: 'output': Input should be a valid number"),
    ({"input": 3, "output": 15, "cached_input": None, "cache_write": None, "as_of": "last week",
      "source": "https://x.example/p"}, r"claude-x: 'as_of': Value error, as_of is the day the figures were read"),
    ({"input": 3, "output": 15, "cached_input": None, "cache_write": None, "as_of": "2026-12-02",
      "source": "the vendor's site"}, r"claude-x: 'source': String should match pattern"),
    ({"input": 3, "output": 15, "cached_input": None, "cache_write": None, "as_of": "2026-12-02",
      "source": "https://x.example/p", "currency": "EUR"}, r"claude-x: unknown key 'currency' \(allowed: as_of, cache_write, cached_input, input, output, source\)"),
])
def test_a_bad_entry_is_refused_naming_the_file_the_model_and_the_field(entry, message):
    with pytest.raises(ConfigError, match=message) as refused:
        check_price_file({"claude-x": entry}, "conf/prices/team.yaml")
    assert "\n" not in str(refused.value)


def test_a_price_file_that_is_not_a_mapping_is_refused():
    with pytest.raises(ConfigError, match=r"conf/prices/team\.yaml: a price file maps model names to prices"):
        check_price_file(["claude-x"], "conf/prices/team.yaml")


# -- what the pages show, from what a report recorded ------------------------------------------------------------------


def _report(money: dict[str, Any] | None) -> RunReport:
    return RunReport(eval={"model": "m"}, outcomes={"t::a": "passed"},
                     execution=read_execution({"money": money} if money is not None else {}))


def test_the_rows_show_each_side_the_run_and_the_prices_with_their_date_and_source():
    section = money_section({"task/a": Tokens(1000, 100), "task/b": Tokens(3000, 100)},
                            {"model": Side("sonnet", SONNET)})
    rows = dict(money_rows(_report(section)))
    assert rows["cost, model under test"] == "$0.0150 (2 calls)"
    assert rows["cost per case"] == "mean $0.007500 over 2 cases; most $0.0105 (b)"
    assert rows["cost, run (USD)"] == "$0.0150"
    assert rows["price of sonnet"] == ("input $3, output $15, cached input $0.3, cache write $3.75 per million "
                                       "tokens, as of 2026-12-02 (https://example.com/anthropic)")
    assert money_line(_report(section)) == ("cost: $0.0150 (model $0.0150; prices as of 2026-12-02 from the price "
                                            "table (conf/prices/))")


def test_a_report_without_a_price_says_so_and_one_without_money_says_nothing():
    unpriced = _report(money_section({"task/a": Tokens(10, 1)}, {"model": Side("gemma4:e2b", None)}))
    assert dict(money_rows(unpriced)) == {
        "cost, model under test": "no price (no entry for gemma4:e2b in the price table)",
        "cost, run (USD)": "no price"}
    assert money_line(unpriced) == "cost: no price (no entry for gemma4:e2b in the price table)"
    assert usd_cell(unpriced) == "no price" and run_usd(unpriced) is None
    older = _report(None)  # made before evalkit priced runs, or adapted from another tool
    assert money_rows(older) == [] and money_line(older) is None and usd_cell(older) == "-"


def test_against_the_baseline_each_report_keeps_its_own_prices():
    dearer = SONNET.model_copy(update={"input": 6.0, "as_of": SONNET.as_of.replace(day=3)})
    before = _report(money_section({"task/a": Tokens(1000, 100)}, {"model": Side("sonnet", SONNET)}))
    after = _report(money_section({"task/a": Tokens(1000, 100)}, {"model": Side("sonnet", dearer)}))
    rows = dict(money_rows(after, before))
    assert rows["cost, run vs baseline"] == (
        "$0.007500 here, $0.004500 in the baseline (+67%); priced at other figures (the baseline's of 2026-12-02, this "
        "run's of 2026-12-03): each report keeps its own, neither is repriced")
    unpriced = _report(money_section({"task/a": Tokens(10, 1)}, {"model": Side("gemma4:e2b", None)}))
    assert dict(money_rows(unpriced, before))["cost, run vs baseline"] == (
        "no price here, $0.004500 in the baseline: not comparable in money")
    assert "cost, run vs baseline" not in dict(money_rows(unpriced, unpriced))
