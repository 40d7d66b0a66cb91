"""An agent's trajectory in report.html, in a real browser (Debian's headless Chromium, tests/helpers/browser.py): a gated
regression shows the baseline's steps beside the candidate's with the parting step marked, written by `evalkit gate`
from the order agent's shipped baseline and a candidate authored from it (tests/helpers/html_reports.agent_pair); a run
that was not gated shows the candidate's steps alone; hostile tool names, arguments and results run nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, evalkit_cli
from helpers.html_reports import IMG, SCRIPT, agent_pair, hostile_pair

from evalkit.records.report_reader import report_from_mapping
from evalkit.render.report_page import render_report_html

pytestmark = [pytest.mark.slow, pytest.mark.external]

_PWNED = "() => window.__pwned === undefined ? null : String(window.__pwned)"
_OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def _gate(tmp_path: Path) -> Path:
    """`evalkit gate` on the pair, writing report.html and decision.md; BLOCK (two regressed agent cases)."""
    for name, report in zip(("baseline.json", "candidate.json"), agent_pair(), strict=True):
        (tmp_path / name).write_text(json.dumps(report), encoding="utf-8")
    result = evalkit_cli("evalkit.cli.main", "gate", str(tmp_path / "baseline.json"), str(tmp_path / "candidate.json"),
                         "--policy", "order_agent", "--html", str(tmp_path / "report.html"),
                         "--markdown", str(tmp_path / "decision.md"))
    assert result.returncode == 1, result.stderr
    return tmp_path


def test_a_regressed_agent_case_shows_the_baseline_s_steps_beside_the_candidate_s_from_where_they_part(
        open_page, tmp_path):
    folder = _gate(tmp_path)
    assert "- `email-1001`: step 5: baseline `tool call lookup_customer" in (folder / "decision.md").read_text()
    opened = open_page(folder / "report.html")
    page = opened.page
    case = page.locator("details.case", has=page.locator("summary", has_text="email-1001"))
    table = case.locator("table.trajectory")
    assert not table.is_visible()  # the panel opens on a click, as every case panel
    case.locator("summary").click()
    assert table.is_visible()
    assert table.locator("thead th").all_inner_texts() == ["step", "baseline", "candidate"]
    assert table.locator("tbody tr").count() == 8
    parting = table.locator("tr.parts")
    assert parting.count() == 1 and parting.get_attribute("data-step") == "5"
    assert parting.locator(".tag.parts").inner_text() == "first difference"
    assert parting.locator(".tag.parts").is_visible()
    baseline_cell, candidate_cell = parting.locator("td").all()
    assert '"customer_id": 1' in baseline_cell.inner_text() and '"customer_id": 2' in candidate_cell.inner_text()
    # the marked row stands out: its cells are painted, the shared rows above it are not
    colour = "el => getComputedStyle(el).backgroundColor"
    assert candidate_cell.evaluate(colour) != table.locator("tbody tr").first.locator("td").last.evaluate(colour)
    assert "parts from the baseline at step 5" in case.locator("p.parting").inner_text()
    # the other regressed case ends in a tool error, shown as one
    other = page.locator("details.case", has=page.locator("summary", has_text="status-1001"))
    other.locator("summary").click()
    error = other.locator("tr.parts + tr .step.error").last
    assert "order_id: Input should be a valid integer" in error.inner_text()
    assert page.evaluate(_OVERFLOW) <= 0
    assert opened.foreign_requests == [] and opened.errors == [] and opened.dialogs == []


def test_a_run_that_was_not_gated_shows_the_candidate_s_steps_alone(open_page, tmp_path):
    _, candidate = agent_pair()
    page_path = tmp_path / "report.html"
    page_path.write_text(render_report_html(report_from_mapping(candidate, "candidate")), encoding="utf-8")
    opened = open_page(page_path)
    page = opened.page
    for summary in page.locator("details.case > summary").all():
        summary.click()
    tables = page.locator("table.trajectory")
    assert tables.count() == 2
    for table in tables.all():
        assert table.locator("thead th").all_inner_texts() == ["step", "candidate"]
        assert table.locator("tr.parts").count() == 0
        assert table.locator("tbody tr").last.locator(".step.final_answer").count() == 1
    assert opened.errors == []


def test_hostile_tool_calls_and_results_run_nothing_and_keep_the_layout(open_page, tmp_path):
    baseline, candidate, decision = hostile_pair()
    page_path = tmp_path / "report.html"
    page_path.write_text(render_report_html(candidate, decision, baseline), encoding="utf-8")
    opened = open_page(page_path)
    page = opened.page
    for summary in page.locator("details.case > summary").all():
        summary.click()
    page.wait_for_timeout(200)
    assert page.locator("table.trajectory tr.parts").count() == page.locator("details.case").count()
    call = page.locator("table.trajectory .step.tool_call").first.inner_text()
    assert IMG in call and SCRIPT in call  # shown as text: the tool's name and its arguments' key
    assert page.evaluate(_PWNED) is None and opened.dialogs == [] and opened.foreign_requests == []
    assert page.locator("img, iframe, object, embed, link, a[href^='javascript']").count() == 0
    assert page.locator("script").count() == 1
    assert page.evaluate(_OVERFLOW) <= 0


def test_a_real_run_whose_agent_hits_its_step_limit_shows_where_its_steps_end(open_page, tmp_path):
    """A real `evalkit run` of the order agent (its authored model in a provider's seat, tests/helpers/agent_run.py)
    with `agent.max_steps=2` against the shipped baseline: the cases that need a third step regress, and the page
    and decision.md show the candidate's steps ending at step 7, where the baseline's model call answered."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    job = tmp_path / "job"
    result = subprocess.run([sys.executable, str(PROJECT_ROOT / "tests/helpers/agent_run.py"), "suite=order_agent",
                             "mode=live", "agent.max_steps=2", f"run.recordings={tmp_path / 'recordings'}",
                             f"hydra.run.dir={job}"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 1, result.stderr  # BLOCK: two critical answers lost
    assert ("- `customer-1003`: step 7: baseline `a model call`, candidate `no step (the trajectory had ended)`"
            in (job / "decision.md").read_text())
    opened = open_page(job / "report.html")
    page = opened.page
    case = page.locator("details.case", has=page.locator("summary", has_text="customer-1003"))
    case.locator("summary").click()
    table = case.locator("table.trajectory")
    assert table.is_visible() and table.locator("tr.parts").get_attribute("data-step") == "7"
    assert "trajectory had ended" in table.locator("tr.parts td").last.inner_text()
    assert "model call" in table.locator("tr.parts td").first.inner_text()
    assert "agent.max_steps=2" in case.inner_text()  # why it ended, in the failure message beside the steps
    assert opened.foreign_requests == [] and opened.errors == []
