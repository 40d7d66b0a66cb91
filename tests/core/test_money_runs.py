"""Cost in money through real `python -m evalkit` runs: a live run against the loopback Anthropic server records
usage (cache reads and writes included) and every page shows its cost at the prices it recorded; `budget.max_usd`
stops a live run before it overspends; a model without a price shows "no price", never 0; a bad price file is one
line naming the file and the field, exit 3."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli
from fakes import FakeReply
from test_live_hosted import CALLS, HOSTED, JUDGE_PREFIX, Project, answers

from evalkit.render.money import usd

pytestmark = pytest.mark.slow

ANTHROPIC = next(h for h in HOSTED if h.provider == "anthropic")
TEAM_PRICES = """# the test project's own prices (conf/prices/team.yaml)
claude-sonnet-5:
  input: 3.0
  output: 15.0
  cached_input: 0.3
  cache_write: 3.75
  as_of: "2026-11-30"
  source: https://example.com/anthropic-pricing
hosted-judge:
  input: 0.5
  output: 3.0
  cached_input: 0.05
  cache_write: null
  as_of: "2026-11-30"
  source: https://example.com/judge-pricing
"""
# what the fake server reports for each call (the Messages API's usage object, cache counts apart from input)
TASK_USAGE = {"input_tokens": 300, "output_tokens": 40, "cache_read_tokens": 1000, "cache_write_tokens": 200}
JUDGE_USAGE = {"input_tokens": 120, "output_tokens": 20, "cache_read_tokens": 0, "cache_write_tokens": 0}
FIGURES = {"claude-sonnet-5": (Fraction("3.0"), Fraction("15.0"), Fraction("0.3"), Fraction("3.75")),
           "hosted-judge": (Fraction("0.5"), Fraction("3.0"), Fraction("0.05"), Fraction(0))}


def with_usage(body: dict[str, Any]) -> FakeReply:
    """The correct answer, with usage of the test's choosing: task calls read and write the prompt cache."""
    text = answers(ANTHROPIC)(body)
    system, _ = ANTHROPIC.texts(body)
    usage = JUDGE_USAGE if system.startswith(JUDGE_PREFIX) else TASK_USAGE
    return FakeReply(text, input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
                     cache_read_tokens=usage["cache_read_tokens"], cache_write_tokens=usage["cache_write_tokens"])


def dollars(model: str, usage: dict[str, Any]) -> Fraction:
    """A call's cost computed directly from a usage object as recorded, at the test's own figures."""
    price_in, price_out, cached, write = FIGURES[model]
    return (usage["input_tokens"] * price_in + usage["output_tokens"] * price_out
            + (usage.get("cache_read_tokens") or 0) * cached
            + (usage.get("cache_write_tokens") or 0) * write) / 1_000_000


def priced_project(tmp_path: Path, url: str, prices: str = TEAM_PRICES) -> Project:
    project = Project(tmp_path, ANTHROPIC)
    project.point_at(url)
    (tmp_path / "conf" / "prices").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "prices" / "team.yaml").write_text(prices, encoding="utf-8")
    return project


def report_of(job: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job / "report.json").read_text(encoding="utf-8"))
    return data


def test_a_live_run_records_usage_and_every_page_shows_its_cost_at_the_prices_it_recorded(tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    with ANTHROPIC.fake(with_usage) as server:
        project = priced_project(tmp_path, server.url)
        done, live_job = project("live", "prices=[default,team]", f"run.save_report={base}")
        assert done.returncode == 0, done.stderr
        assert len(server.chat_requests) == CALLS

    # the cost is the recorded usage times the figures: computed here directly from the recording
    [recording_path] = project.recordings
    recorded = json.loads(recording_path.read_text(encoding="utf-8"))["calls"]
    assert recorded["task/export-json"]["reply"]["usage"] == TASK_USAGE  # usage as the provider reported it
    per_call = {cid: dollars("hosted-judge" if cid.startswith("judge/") else "claude-sonnet-5",
                             entry["reply"]["usage"]) for cid, entry in recorded.items()}
    model_total = sum(v for cid, v in per_call.items() if cid.startswith("task/"))
    judge_total = sum(v for cid, v in per_call.items() if cid.startswith("judge/"))
    money = report_of(live_job)["execution"]["money"]
    assert money["calls"] == {cid: pytest.approx(float(v)) for cid, v in per_call.items()}
    assert money["cases"]["export-json"] == pytest.approx(float(per_call["task/export-json"]))
    assert money["model"]["usd"] == pytest.approx(float(model_total)) and model_total == 12 * Fraction(2550, 10**6)
    assert money["judge"]["usd"] == pytest.approx(float(judge_total))
    assert money["usd"] == pytest.approx(float(model_total + judge_total))
    assert money["model"]["price"]["as_of"] == "2026-11-30"
    assert money["model"]["price"]["source"] == "https://example.com/anthropic-pricing"
    total = usd(float(model_total + judge_total))
    assert f"cost: {total} (model {usd(float(model_total))}, judge {usd(float(judge_total))}; prices as of " \
           "2026-11-30" in done.stdout
    # the saved baseline keeps the money and its prices: a later gate reads them, never reprices
    assert json.loads(base.read_text(encoding="utf-8"))["execution"]["money"]["usd"] == money["usd"]

    # replay at other prices, gated against that baseline: decision.md and report.html show this run's cost
    dearer = TEAM_PRICES.replace("input: 3.0", "input: 6.0").replace('"2026-11-30"\n  source: https://example.com/'
                                                                     'anthropic', '"2026-12-01"\n  source: https://'
                                                                     'example.com/anthropic')
    (tmp_path / "conf" / "prices" / "team.yaml").write_text(dearer, encoding="utf-8")
    project.point_at("http://127.0.0.1:9")  # discard port: a call there would fail
    gated, gate_job = project("replay", "prices=[default,team]", f"baseline={base}")
    assert gated.returncode == 0, gated.stderr
    replayed = report_of(gate_job)["execution"]["money"]
    dearer_model = model_total + 12 * Fraction(300 * 3, 10**6)
    assert replayed["model"]["usd"] == pytest.approx(float(dearer_model))
    assert replayed["model"]["price"]["as_of"] == "2026-12-01"
    decision_md = (gate_job / "decision.md").read_text(encoding="utf-8")
    assert f"| cost, model under test | {usd(float(dearer_model))} (12 calls) |" in decision_md
    assert f"| cost, run \\(USD\\) | {usd(float(dearer_model + judge_total))} |" in decision_md \
        or f"| cost, run (USD) | {usd(float(dearer_model + judge_total))} |" in decision_md
    assert "as of 2026-12-01" in decision_md and "example.com/anthropic-pricing" in decision_md
    # against the baseline, each at the prices its own report recorded, and saying that those differ
    old, new = float(model_total + judge_total), float(dearer_model + judge_total)
    assert (f"{usd(new)} here, {usd(old)} in the baseline (+35%); priced at other figures (the baseline's of "
            "2026-11-30, this run's of 2026-11-30, 2026-12-01): each report keeps its own, neither is repriced"
            in decision_md.replace("\\", ""))
    page = (gate_job / "report.html").read_text(encoding="utf-8")
    assert usd(float(dearer_model + judge_total)) in page and "as of 2026-12-01" in page

    # history: each run at the prices its own report recorded
    history = evalkit_cli("evalkit.cli.main", "history", str(live_job), str(gate_job), "--no-html")
    assert history.returncode == 0, history.stderr
    assert "cost USD" in history.stdout
    assert usd(float(model_total + judge_total)) in history.stdout
    assert usd(float(dearer_model + judge_total)) in history.stdout


def test_max_usd_stops_a_live_run_before_it_overspends(tmp_path: Path) -> None:
    limit = 0.003
    with ANTHROPIC.fake(answers(ANTHROPIC)) as server:  # usage: the words of each request and reply
        project = priced_project(tmp_path, server.url)
        done, job = project("live", "prices=[default,team]", f"budget.max_usd={limit}",
                            "budget.reserve_output_tokens=100", "run.concurrency=1")
        sent = len(server.chat_requests)
    assert done.returncode == 0, done.stderr  # baseline=none: the run is reported, its denied cases unscored
    report = report_of(job)
    spent = report["execution"]["live"]["budget"]["usd"]
    assert 0 < spent <= limit  # never past the limit
    assert 0 < sent < CALLS  # some calls went out, the rest were refused before they were sent
    statuses = [s for case in report["cases"] for s in case["calls"].values()]
    assert statuses.count("recorded") == sent and "budget_denied" in statuses
    unscored = [case for case in report["cases"] if case["status"] == "unscored"]
    assert unscored and all(any("budget.max_usd=0.003 would be exceeded" in p for p in case["problems"])
                            for case in unscored if "budget_denied" in case["calls"].values())
    assert "call(s) denied before they were sent: budget.max_usd=0.003 would be exceeded ($" in done.stdout
    # what the money section says was spent on the replies is what the budget settled
    assert report["execution"]["money"]["usd"] == pytest.approx(spent)


def test_a_model_without_a_price_shows_no_price_everywhere(tmp_path: Path) -> None:
    # the example project's model and judge, gemini-3.8-flash, have no entry in the shipped table
    job = tmp_path / "job"
    done = evalkit_cli("evalkit", f"hydra.run.dir={job}")
    assert done.returncode == 0, done.stderr
    assert "cost: no price (no entry for gemini-3.8-flash in the price table)" in done.stdout
    money = report_of(job)["execution"]["money"]
    assert money["usd"] is None and money["model"]["usd"] is None and money["model"]["price"] is None
    decision_md = (job / "decision.md").read_text(encoding="utf-8")
    assert "| cost, model under test | no price (no entry for gemini-3.8-flash in the price table) |" in decision_md
    assert "$0 " not in decision_md and "| $0 |" not in decision_md
    page = (job / "report.html").read_text(encoding="utf-8")
    assert "no price (no entry for gemini-3.8-flash in the price table)" in page
    history = evalkit_cli("evalkit.cli.main", "history", str(job), "--no-html")
    assert history.returncode == 0, history.stderr
    header, row = [line for line in history.stdout.splitlines() if line.startswith(("#", "1 "))][:2]
    assert row[header.index("cost USD"):].startswith("no price")


def test_a_bad_price_file_is_one_line_naming_the_file_and_the_field(tmp_path: Path) -> None:
    conf = tmp_path / "conf" / "prices"
    conf.mkdir(parents=True)
    bad = conf / "team.yaml"
    bad.write_text(TEAM_PRICES.replace("output: 15.0", "output: -15.0"), encoding="utf-8")
    done = evalkit_cli("evalkit", f"hydra.searchpath=['file://{tmp_path / 'conf'}']", "prices=[default,team]",
                       f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: {bad}: claude-sonnet-5: 'output': Input should be greater than or "
                                  "equal to 0 (got -15.0)")
    # an entry that leaves a field out would inherit it from an earlier file: refused before the merge
    bad.write_text(TEAM_PRICES.replace("  cache_write: 3.75\n", ""), encoding="utf-8")
    done = evalkit_cli("evalkit", f"hydra.searchpath=['file://{tmp_path / 'conf'}']", "prices=[default,team]",
                       f"hydra.run.dir={tmp_path / 'job2'}")
    assert done.returncode == 3 and f"{bad}: claude-sonnet-5: missing key 'cache_write'" in done.stderr


def test_max_usd_needs_a_price_for_the_model_and_the_judge(tmp_path: Path) -> None:
    done = evalkit_cli("evalkit", "budget.max_usd=5", f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (
        "error: budget.max_usd=5 needs a price for gemini-3.8-flash, gemini-3.8-flash: no entry of that exact name "
        "in the price table (conf/prices/*.yaml); add one (input, output, cached_input, cache_write, as_of, source) "
        "in your project's conf/prices/NAME.yaml and choose it with prices=[default,NAME]")


def test_budget_max_cost_still_works_and_says_it_is_deprecated(tmp_path: Path) -> None:
    done = evalkit_cli("evalkit", "budget.max_cost=1", "+model.price={input_per_mtok: 1, output_per_mtok: 2}",
                       "+judge.price={input_per_mtok: 1, output_per_mtok: 2}", f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 0, done.stderr
    assert "deprecated: budget.max_cost and model.price / judge.price" in done.stderr
    assert "set budget.max_usd instead" in done.stderr


def test_the_sweep_summary_shows_each_jobs_cost(tmp_path: Path) -> None:
    conf = tmp_path / "conf" / "prices"
    conf.mkdir(parents=True)
    (conf / "team.yaml").write_text(TEAM_PRICES.replace("claude-sonnet-5:", "gemini-3.8-flash:"), encoding="utf-8")
    sweep = tmp_path / "sweep"
    done = evalkit_cli("evalkit", "-m", f"hydra.searchpath=['file://{tmp_path / 'conf'}']", "prices=[default,team]",
                       "dataset=v1,v2", "baseline=none", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 0, done.stderr
    rows = json.loads((sweep / "summary.json").read_text(encoding="utf-8"))
    costs = [row["cost_usd"] for row in rows]
    assert all(isinstance(c, float) and c > 0 for c in costs)
    table = (sweep / "summary.md").read_text(encoding="utf-8")
    assert "cost USD" in table.splitlines()[0]
    assert all(usd(c) in table for c in costs)
    assert all(usd(c) in (sweep / "summary.html").read_text(encoding="utf-8") for c in costs)
