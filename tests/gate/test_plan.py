"""`evalkit plan`: its figures against a direct computation (the paired normal condition solved here in closed
form, the binomial spread of a pilot's pass rates computed here, exact Fisher power summed here), the plan's power
checked by simulation with the suite guard's own test, and the command end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from conftest import PROJECT_ROOT, evalkit_env

from evalkit.core.errors import InputError
from evalkit.core.money import Side
from evalkit.core.prices import PriceEntry
from evalkit.gate.plan import Pricing, plan, recorded_pricing
from evalkit.gate.repeats import fisher_lower_p, sign_flip_p
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.render.plan import render_plan

Z = NormalDist()
EVALKIT = Path(sys.executable).parent / "evalkit"


def _entry(input_: float, output: float) -> dict[str, object]:
    return {"input": input_, "output": output, "cached_input": None, "cache_write": None, "as_of": "2026-12-02",
            "source": "https://example.com/pricing"}


def _pilot(rates: list[int], runs: int, *, latency: dict[str, float] | None = None,
           money: dict[str, object] | None = None) -> RunReport:
    """A pilot run: one test per case, `rates[i]` of `runs` samples passed; 2 calls per case and sample (model and
    judge): the model 200 input and 50 output tokens, the judge 400 and 30."""
    tests = [{"nodeid": f"t.py::test_x[c{i}]", "case": f"c{i}", "outcome": "passed" if k == runs else "failed",
              "repeats": {"passed": k, "runs": runs}} for i, k in enumerate(rates)]
    samples = len(rates) * runs
    execution = {"calls": {"live": 2 * samples},
                 "cost": {"model_calls": samples, "judge_calls": samples, "input_tokens": 200 * samples,
                          "judge_input_tokens": 400 * samples, "output_tokens": 50 * samples,
                          "judge_output_tokens": 30 * samples},
                 "latency": latency or {"measured_calls": 0}, **({"money": money} if money else {})}
    return report_from_mapping({"eval": {"suite": "s"}, "tests": tests, "execution": execution,
                                "cases": [{"id": f"c{i}", "status": "scored"} for i in range(len(rates))]},
                               "pilot.json")


def _closed_form_units(drop: float, sd: float, level: float, power: float) -> int:
    za, zb = Z.inv_cdf(1 - level), Z.inv_cdf(power)
    return math.ceil(((za * math.sqrt(sd ** 2 + drop) + zb * math.sqrt(sd ** 2 + drop * (1 - drop))) / drop) ** 2)


def test_the_plan_is_the_closed_form_over_the_pilots_measured_spread() -> None:
    rates = [10, 9, 8, 10, 7, 10, 9, 10, 6, 10] * 4  # 40 cases, 10 samples each
    report = _pilot(rates, 10)
    found = plan(report, target=0.1, alpha=0.05, power=0.8, concurrency=8)
    # an unchanged case's change of pass fraction: both sides binomial at its rate, 10 samples each
    variance = sum(2 * (k / 10) * (1 - k / 10) / 10 for k in rates) / len(rates)
    assert found.now.spread.sd == pytest.approx(math.sqrt(variance))
    assert found.now.repeats == 10 and found.now.spread.units == 40 and found.now.metric == "pass fraction per case"
    by_repeats = {design.repeats: design for design in found.designs}
    for runs, design in by_repeats.items():
        expected = _closed_form_units(0.1, math.sqrt(variance * 10 / runs), 0.025, 0.8)
        assert design.units == max(expected, _floor_units(0.1)), runs
        # 2 calls per case and sample; 600 input and 80 output tokens per case and sample
        assert design.calls == 2 * design.cases * runs
        assert (design.input_tokens, design.output_tokens) == (600 * design.cases * runs, 80 * design.cases * runs)
        assert design.money is None and design.seconds is None  # no price, no measured latency
    assert found.best is not None and found.best.calls == min(d.calls or 0 for d in found.designs)


def _floor_units(drop: float) -> int:
    """The fewest units of which six fall with 80 % chance when each falls with probability `drop`."""
    units = 6
    while 1 - sum(math.comb(units, k) * drop ** k * (1 - drop) ** (units - k) for k in range(6)) < 0.8:
        units += 1
    return units


def test_a_planned_design_catches_the_target_as_often_as_it_says() -> None:
    """Simulated: at the planned cases and repeats, a broad drop of the target on a system like the pilot's is
    caught by the sign-flip test the gate decides with, at alpha / 2, at least 80 % of the time."""
    rng = np.random.default_rng(11)
    rates = [0.95, 0.9, 0.8, 1.0] * 10
    pilot = _pilot([int(rng.binomial(10, p)) for p in rates], 10)
    found = plan(pilot, target=0.2, alpha=0.05, power=0.8, concurrency=8)
    design = next(d for d in found.designs if d.repeats == 3)
    cases = design.cases
    caught = 0
    for trial in range(200):
        base = np.array([rates[i % len(rates)] for i in range(cases)])
        before = rng.binomial(3, base) / 3
        after = rng.binomial(3, np.clip(base - 0.2, 0, 1)) / 3
        caught += sign_flip_p(range(cases), after - before, seed=trial, resamples=499) < 0.025
    assert caught / 200 >= 0.8


def test_the_per_test_figure_is_exact_fisher_power() -> None:
    found = plan(_pilot([10] * 20, 10), target=0.5, alpha=0.05, power=0.8, concurrency=8)
    runs, level = found.test_repeats, 0.025 / 20
    assert runs is not None

    def power(n: int) -> float:  # a test at 1.0 on the baseline (n of n), at 0.5 on the candidate
        return sum(math.comb(n, k) * 0.5 ** n for k in range(n + 1) if fisher_lower_p(n, n, k, n) <= level)

    assert power(runs) >= 0.8 > power(runs - 1)
    assert found.test_now is not None and 0 < found.test_now <= 1


def test_money_and_wall_time_come_from_a_price_and_measured_latency() -> None:
    report = _pilot([10, 9] * 30, 10, latency={"measured_calls": 1200, "mean_ms": 900.0, "p95_ms": 2100.0})
    price = PriceEntry.model_validate(_entry(3.0, 15.0))
    found = plan(report, target=0.2, alpha=0.05, power=0.8, concurrency=4,
                 pricing=Pricing(Side("m", price), Side("m", price), "a test's prices"))
    design = found.designs[0]
    assert design.calls is not None and design.input_tokens is not None and design.output_tokens is not None
    assert design.money == pytest.approx((design.input_tokens * 3.0 + design.output_tokens * 15.0) / 1e6)
    assert design.seconds == pytest.approx(math.ceil(design.calls / 4) * 0.9)


def test_money_is_planned_at_the_prices_the_report_recorded_each_side_at_its_own() -> None:
    money = {"usd": 1.0, "model": {"name": "big", "price": _entry(3.0, 15.0), "usd": 0.9},
             "judge": {"name": "small", "price": _entry(0.5, 1.0), "usd": 0.1}}
    report = _pilot([10, 9] * 30, 10, money=money)
    pricing = recorded_pricing(report)
    assert pricing is not None and pricing.model.name == "big" and pricing.judge is not None
    found = plan(report, target=0.2, alpha=0.05, power=0.8, concurrency=4, pricing=pricing)
    for design in (found.current, *found.designs):
        samples = design.cases * design.repeats  # the model: 200 in, 50 out; the judge: 400 in, 30 out
        assert design.money == pytest.approx(samples * (200 * 3.0 + 50 * 15.0 + 400 * 0.5 + 30 * 1.0) / 1e6)
    text = render_plan(found, "pilot.json")
    assert ("money: in US dollars at the report's recorded prices: big (model under test): input $3, output $15 "
            "per million tokens, as of 2026-12-02 (https://example.com/pricing); small (judge): input $0.5") in text


def test_a_side_without_a_price_leaves_the_money_unknown_and_the_plan_says_how_to_price_it() -> None:
    money = {"usd": None, "model": {"name": "big", "price": _entry(3.0, 15.0), "usd": 0.9},
             "judge": {"name": "local-judge", "price": None, "usd": None}}
    found = plan(_pilot([10, 9] * 30, 10, money=money), target=0.2, alpha=0.05, power=0.8, concurrency=4,
                 pricing=recorded_pricing(_pilot([10, 9] * 30, 10, money=money)))
    assert all(design.money is None for design in found.designs)
    assert ("money: no price (the report's recorded prices have no entry for local-judge); plan at a price "
            "file's figures with --prices FILE") in render_plan(found, "pilot.json")
    unpriced = plan(_pilot([10, 9] * 30, 10), target=0.2, alpha=0.05, power=0.8, concurrency=4)
    assert "money: no price (the report recorded no prices" in render_plan(unpriced, "pilot.json")


def test_one_sample_per_case_is_said_and_taken_as_no_noise() -> None:
    cases = [{"id": f"c{i}", "status": "scored", "passed": True, "group": f"g{i % 5}"} for i in range(50)]
    report = report_from_mapping({"eval": {"suite": "s"}, "cases": cases,
                                  "tests": [{"nodeid": f"t[c{i}]", "outcome": "passed"} for i in range(50)]}, "r")
    found = plan(report, target=0.3, alpha=0.05, power=0.8, concurrency=8)
    assert found.now.unit == "group" and found.now.spread.units == 5 and found.now.spread.sd == 0.0
    assert "cannot be measured" in found.noise
    assert [d.repeats for d in found.designs] == [1]  # with no noise, more repeats need no fewer groups
    assert found.designs[0].cases == found.designs[0].units * 10
    assert found.usage is None  # the report records no calls


def _evalkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EVALKIT), *args], cwd=PROJECT_ROOT, env=evalkit_env(), capture_output=True,
                          text=True, timeout=120)


def test_evalkit_plan_prints_the_plan_for_the_shipped_baseline() -> None:
    done = _evalkit("plan", "suites/issue_triage/runs/baseline.json", "--detect", "0.05")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "plan from suites/issue_triage/runs/baseline.json: 12 cases, 1 sample(s) per call, 51 tests"
    assert lines[2].startswith("as it is: could detect drops of 58 points or more")
    assert ("money: no price (the report's recorded prices have no entry for gemini-3.8-flash); plan at a price "
            "file's figures with --prices FILE (as conf/prices/*.yaml)") in lines
    assert any(line.startswith("cheapest: 157 cases x 1 repeat(s)") for line in lines)


def test_evalkit_plan_prices_the_run_at_a_price_file_given(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("gemini-3.8-flash:\n  input: 0.30\n  output: 2.50\n  cached_input: null\n  cache_write: null\n"
                      "  as_of: '2026-12-01'\n  source: https://ai.google.dev/pricing\n")
    done = _evalkit("plan", "suites/issue_triage/runs/baseline.json", "--detect", "0.1", "--prices", str(prices))
    assert done.returncode == 0, done.stderr
    assert (f"money: in US dollars at the prices of {prices}: gemini-3.8-flash (model under test and judge): input "
            "$0.3, output $2.5 per million tokens, as of 2026-12-01") in done.stdout
    # the shipped baseline: 2,884 + 499 input and 353 + 66 output tokens over 12 cases; the row of 78 cases
    row = next(line.split() for line in done.stdout.splitlines() if line.split()[:2] == ["1", "78"])
    tokens_in, tokens_out = int(row[5].replace(",", "")), int(row[6].replace(",", ""))
    assert (tokens_in, tokens_out) == (round(3383 / 12 * 78), round(419 / 12 * 78))
    assert row[7] == f"${(tokens_in * 0.30 + tokens_out * 2.50) / 1e6:.4f}"
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("gemini-3.8-flash: {input: 0.3}\n")
    refused = _evalkit("plan", "suites/issue_triage/runs/baseline.json", "--prices", str(wrong))
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1 and "wrong.yaml: gemini-3.8-flash" in refused.stderr


def test_evalkit_plan_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    bad = _evalkit("plan", "suites/issue_triage/runs/baseline.json", "--detect", "1.5")
    assert bad.returncode == 3 and "--detect: 1.5 must lie strictly between 0 and 1" in bad.stderr
    missing = _evalkit("plan", str(tmp_path / "nothing.json"))
    assert missing.returncode == 3 and missing.stderr.count("\n") == 1 and "nothing.json" in missing.stderr
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"tests": []}))
    refused = _evalkit("plan", str(broken))
    assert refused.returncode == 3 and refused.stderr.startswith("error: ")


def test_the_how_to_shows_what_evalkit_plan_prints() -> None:
    page = (PROJECT_ROOT / "docs" / "how-to" / "plan.md").read_text(encoding="utf-8")
    command = page.split("```sh\n", 1)[1].split("\n```", 1)[0]
    shown = page.split("What it prints:\n\n```text\n", 1)[1].split("\n```", 1)[0]
    done = _evalkit(*command.split()[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == shown


def test_a_plan_to_detect_a_drop_from_zero_is_refused_naming_a_measure_that_moves() -> None:
    cases = [{"id": f"c{i}", "status": "scored", "passed": False, "metrics": {"faithfulness.score": 1.0 + i % 2}}
             for i in range(20)]
    tests = [{"nodeid": f"t.py::test_x[c{i}]", "outcome": "failed"} for i in range(20)]
    report = report_from_mapping({"eval": {"suite": "s"}, "tests": tests, "cases": cases}, "floor.json")
    with pytest.raises(InputError, match=r"case pass rate is 0 \(every case failed\), so no drop from it can be "
                                         r"detected .*the metric faithfulness.score \(mean 1.5 over 20 cases\)"):
        plan(report, target=0.1, alpha=0.05, power=0.8, concurrency=1)


def test_the_how_to_shows_the_refusal_of_a_floor_as_evalkit_plan_prints_it() -> None:
    page = (PROJECT_ROOT / "docs" / "how-to" / "plan.md").read_text(encoding="utf-8")
    block = page.split("```text\n$ ", 1)[1].split("\n```", 1)[0]
    command, shown = block.split("\n", 1)
    done = _evalkit(*command.split()[1:])
    assert done.returncode == 3 and done.stderr.rstrip("\n") == shown
