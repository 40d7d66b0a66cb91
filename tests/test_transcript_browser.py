"""A conversation's transcript in report.html, in a real browser (Debian's headless Chromium, tests/browser.py): a
regressed conversation, gated by `evalkit gate` from the support chat's shipped baseline and a candidate authored from
it (tests/html_reports.conversation_pair), shows the baseline's turns beside the candidate's with the first failing
turn marked; its hostile turns run nothing, fetch nothing and keep the layout."""

from __future__ import annotations

import json

import pytest
from conftest import evalkit_cli
from html_reports import IMG, SCRIPT, conversation_pair

pytestmark = [pytest.mark.slow, pytest.mark.external]

_PWNED = "() => window.__pwned === undefined ? null : String(window.__pwned)"
_OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def test_a_regressed_conversation_shows_both_transcripts_with_the_first_failing_turn_marked(open_page, tmp_path):
    for name, report in zip(("baseline.json", "candidate.json"), conversation_pair(), strict=True):
        (tmp_path / name).write_text(json.dumps(report), encoding="utf-8")
    result = evalkit_cli("evalkit.cli.main", "gate", str(tmp_path / "baseline.json"), str(tmp_path / "candidate.json"),
                         "--policy", "support_chat", "--html", str(tmp_path / "report.html"),
                         "--markdown", str(tmp_path / "decision.md"))
    assert result.returncode == 1, result.stderr  # BLOCK: the conversation regressed
    assert "- `remembers-the-number`: turn 2 (`keeps_the_order_number`)" in (tmp_path / "decision.md").read_text()
    opened = open_page(tmp_path / "report.html")
    page = opened.page
    case = page.locator("details.case", has=page.locator("summary", has_text="remembers-the-number"))
    table = case.locator("table.transcript")
    assert not table.is_visible()  # the panel opens on a click, as every case panel
    case.locator("summary").click()
    assert table.is_visible()
    assert table.locator("thead th").all_inner_texts() == ["turn", "baseline", "candidate"]
    assert table.locator("tbody tr").count() == 3
    marked = table.locator("tr.failing")
    assert marked.count() == 1 and marked.get_attribute("data-turn") == "2"
    assert marked.locator(".tag.failing").inner_text() == "first failing turn" and marked.locator(".tag.failing").is_visible()
    baseline_cell, candidate_cell = marked.locator("td").all()
    # both sides' turn 2, each with its roles: the user's hostile text as text, then the assistant's answer
    assert baseline_cell.locator(".step strong").all_inner_texts() == ["user", "assistant"]
    assert SCRIPT in baseline_cell.locator(".user_turn pre").inner_text()
    assert baseline_cell.locator(".assistant_turn pre").inner_text() == "Order 1007 is shipped."
    assert candidate_cell.locator(".assistant_turn pre").inner_text().startswith(f"Which order do you mean? {IMG}")
    # the marked row stands out: painted, unlike the turn above it
    colour = "el => getComputedStyle(el).backgroundColor"
    assert candidate_cell.evaluate(colour) != table.locator("tbody tr").first.locator("td").last.evaluate(colour)
    assert "turn 2" in case.locator("p.failing-turn").inner_text()
    # nothing of the turns ran, loaded or widened the page
    assert page.evaluate(_PWNED) is None and opened.dialogs == [] and opened.foreign_requests == []
    assert page.locator("img, iframe, object, embed, link, a[href^='javascript']").count() == 0
    assert page.locator("script").count() == 1
    assert page.evaluate(_OVERFLOW) <= 0
    assert opened.errors == []
