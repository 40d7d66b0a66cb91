"""The HTML pages in a real browser (Debian's headless Chromium through Playwright, tests/helpers/browser.py): filters,
sorting and case panels work; a hostile recording runs no script, fetches nothing and keeps the layout; the page
reads without JavaScript."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, evalkit_cli
from helpers.html_reports import BANGLA, KEY, RTL, SCRIPT, hostile_pair, large_pair

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.records.report_reader import report_from_mapping
from evalkit.render.report_page import render_report_html

pytestmark = [pytest.mark.slow, pytest.mark.external]

# Each check below reads the page's state; `window.__pwned` is set only if hostile text ran as script.
_PWNED = "() => window.__pwned === undefined ? null : String(window.__pwned)"
_OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def _write(tmp_path: Path, page: str, name: str = "report.html") -> Path:
    path = tmp_path / name
    path.write_text(page, encoding="utf-8")
    return path


def _visible_rows(page) -> int:
    return page.locator("#test-table tbody tr:visible").count()


def test_a_hostile_recording_runs_nothing_fetches_nothing_and_keeps_the_layout(open_page, tmp_path):
    baseline, candidate, decision = hostile_pair()
    opened = open_page(_write(tmp_path, render_report_html(candidate, decision, baseline, ("test_answer",))))
    page = opened.page
    for panel in page.locator("details.case > summary").all():  # open every case: all hostile text on screen
        panel.click()
    page.locator("button[data-filter=regressed]").click()
    page.wait_for_timeout(200)
    assert page.evaluate(_PWNED) is None
    assert opened.dialogs == []
    assert opened.foreign_requests == []
    assert opened.errors == []
    assert not [m for m in opened.console if "Content Security Policy" in m]  # nothing even tried to load
    assert page.locator("img, iframe, object, embed, link, a[href^='javascript']").count() == 0
    assert page.locator("script").count() == 1
    # the text is there, as text
    output = page.locator("details.case .side.candidate pre.output").first.inner_text()
    assert SCRIPT in output and "<img src=x onerror=" in output
    assert page.get_by_text(BANGLA).count() > 0
    # the right-to-left text as written, its bidirectional override shown as an escape (it could reorder a line)
    shown = page.locator("body").inner_text()
    assert RTL.replace("\u202e", "\\u202e") in shown and "\u202e" not in shown
    # the layout holds: no horizontal scrolling of the page, every table within the viewport
    assert page.evaluate(_OVERFLOW) <= 0
    widths = page.evaluate("() => Array.from(document.querySelectorAll('table')).map(t => t.getBoundingClientRect().right)")
    assert widths and max(widths) <= page.viewport_size["width"]
    # the megabyte reply is cut on screen with a note
    assert page.get_by_text("the whole reply is in report.json").count() >= 1


def test_even_an_escaping_bug_could_neither_run_nor_fetch_anything(open_page, tmp_path):
    """The Content-Security-Policy alone: hostile markup put into the page unescaped (as a bug would) is inert."""
    from helpers.html_reports import HOSTILE_OUTPUT

    from evalkit.render.html import render_page

    page_text = render_page("base.html.j2").replace("<main>", "<main>" + HOSTILE_OUTPUT, 1)
    opened = open_page(_write(tmp_path, page_text))
    opened.page.wait_for_timeout(300)
    assert opened.page.locator("img").count() == 1  # the markup is there, unescaped ...
    assert opened.page.evaluate(_PWNED) is None  # ... and nothing of it ran
    assert opened.dialogs == []
    blocked = [m for m in opened.console if "Content Security Policy" in m]
    assert len(blocked) >= 3  # the inline script, the event handler, the image and the stylesheet were refused
    assert opened.page.locator("body").is_visible()  # the injected style (display: none) was refused too


def test_filters_show_each_kind_of_test_and_a_failing_case_expands(open_page, tmp_path):
    path = tmp_path / "run"
    result = evalkit_cli("evalkit", "suite=evidencedesk", "retriever.min_margin=0", f"hydra.run.dir={path}")
    assert result.returncode == 1, result.stderr  # BLOCK: rc15 regressed (README "EvidenceDesk")
    decision = json.loads((path / "decision.json").read_text())
    changed = ("changed: components.retriever default@2bb026d38519 -> default@27692dbd86fb "
               "(retriever.min_margin 0.05 -> 0)")
    assert changed + "\n" in result.stdout  # the terminal names the setting too, and so does decision.md
    assert "**Changed:** " + changed.removeprefix("changed: ") in (path / "decision.md").read_text()
    report = json.loads((path / "report.json").read_text())
    settings = report["eval"]["settings"]  # each component's settings, the model's and the judge's beside them
    assert settings["retriever"] == {"k": 3, "min_score": 0.3, "min_margin": 0}
    assert set(settings) == {"retriever", "reply_format", "model", "judge"}
    assert all("input" in case for case in report["cases"])
    opened = open_page(path / "report.html")
    page = opened.page
    assert page.locator(".banner.block h1").inner_text() == "BLOCK"
    assert "retriever.min_margin 0.05 → 0" in page.locator("#changed-table").inner_text()
    total = page.locator("#test-table tbody tr").count()
    assert total > 90  # every test of either side is in the table
    # it opens on what matters: the regressed tests, most severe first; the others are one click away
    assert _visible_rows(page) == len(decision["regressed"])
    assert page.locator("button[aria-pressed=true]").inner_text().startswith("regressed")
    first = page.locator("#test-table tbody tr").first.get_attribute("data-tags").split()
    assert "regressed" in first or {"critical", "failing"} <= set(first)
    for name, expected in (("regressed", len(decision["regressed"])), ("fixed", len(decision["fixed"])),
                           ("new", None), ("failing", None), ("all", total)):
        page.locator(f"button[data-filter={name}]").click()
        rows = page.locator("#test-table tbody tr:visible")
        shown = rows.count()
        if expected is not None:
            assert shown == expected, name
        tags = rows.evaluate_all("rows => rows.map(r => r.dataset.tags)")
        assert name == "all" or all(name in t.split() for t in tags), (name, tags)
        assert page.locator("button[aria-pressed=true]").inner_text().startswith(name)
    regressed = decision["regressed"][0]
    page.locator("button[data-filter=regressed]").click()
    assert regressed in page.locator("#test-table tbody tr:visible").first.inner_text()
    case = page.locator("details.case", has=page.locator("summary", has_text="rc15"))
    assert not case.locator("pre.output").first.is_visible()
    case.locator("summary").click()
    assert case.locator("pre.output").first.is_visible()
    assert case.locator(".side.candidate ins").count() > 0 and case.locator(".side.baseline del").count() > 0
    assert "expected abstained" in case.locator("ul.messages").inner_text()
    assert opened.foreign_requests == [] and opened.errors == []


def test_metric_table_sorts_by_delta(open_page, tmp_path):
    baseline, candidate, decision = hostile_pair()
    page = open_page(_write(tmp_path, render_report_html(candidate, decision, baseline))).page
    header = page.locator("#metric-table thead th button", has_text="delta")
    header.click()
    first = page.locator("#metric-table tbody tr").first.inner_text()
    header.click()
    assert page.locator("#metric-table tbody tr").first.inner_text() != first
    assert page.locator("#metric-table thead th[aria-sort]").count() == 1


def test_without_javascript_every_test_and_case_is_readable(open_page, tmp_path):
    baseline, candidate, decision = hostile_pair()
    page = open_page(_write(tmp_path, render_report_html(candidate, decision, baseline)), javascript=False).page
    assert _visible_rows(page) == len(candidate.outcomes)
    assert not page.locator(".filters").is_visible()  # buttons that would do nothing are not shown
    page.locator("details.case > summary").first.click()  # <details> opens without script
    assert page.locator("details.case pre.output").first.is_visible()


def test_a_report_of_ten_thousand_tests_stays_usable(open_page, tmp_path):
    baseline, candidate, decision = large_pair(10_000)
    opened = open_page(_write(tmp_path, render_report_html(candidate, decision, baseline)))
    page = opened.page
    assert page.locator("#test-table tbody tr").count() == 10_000
    page.locator("button[data-filter=regressed]").click()
    assert _visible_rows(page) == len(decision.regressed)
    assert page.locator(".filters .count").inner_text() == f"{len(decision.regressed)} shown"
    page.locator("button[data-filter=all]").click()
    assert _visible_rows(page) == 10_000
    assert page.evaluate(_OVERFLOW) <= 0 and opened.errors == []


def test_a_failing_browser_test_keeps_a_screenshot(pytester):
    """The fixture's hook, black-box: a test that fails after opening a page leaves browser-failure-1.png."""
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(PROJECT_ROOT / 'tests')!r})\n"
                          'pytest_plugins = ["helpers.browser"]\n')
    pytester.makepyfile(test_page="""
        def test_fails(open_page, tmp_path):
            page = tmp_path / "p.html"
            page.write_text("<p>hello</p>")
            open_page(page)
            assert False

        def test_passes(open_page, tmp_path):
            page = tmp_path / "p.html"
            page.write_text("<p>hello</p>")
            open_page(page)
        """)
    basetemp = pytester.path / "tmp"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--basetemp={basetemp}")
    result.assert_outcomes(failed=1, passed=1)
    shots = sorted(p.relative_to(basetemp).as_posix() for p in basetemp.rglob("*.png"))
    assert shots == ["test_fails0/browser-failure-1.png"]
    assert (basetemp / shots[0]).read_bytes().startswith(b"\x89PNG")


def test_a_sweeps_summary_page_sorts_by_a_metric_and_links_each_jobs_report(open_page, tmp_path):
    sweep = tmp_path / "sweep"
    done = evalkit_cli("evalkit", "-m", "suite=evidencedesk", "retriever.k=1,2",
                       "sweep.metrics=[citation_validity,recall_at_k]", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 1, done.stderr  # k=1 blocks (README "EvidenceDesk")
    assert "| input tokens | cost USD | citation_validity | recall_at_k |" in (sweep / "summary.md").read_text()
    opened = open_page(sweep / "summary.html", follow=sweep)
    page = opened.page
    headers = page.locator("#sweep-table thead th").all_inner_texts()
    assert headers[-3:] == ["citation_validity", "recall_at_k", "report"]
    column = len(headers) - 2  # recall_at_k, 1-based in CSS
    page.locator("#sweep-table thead th button", has_text="recall_at_k").click()
    page.locator("#sweep-table thead th button", has_text="recall_at_k").click()  # descending: best first
    values = page.locator(f"#sweep-table tbody td:nth-child({column})").all_inner_texts()
    assert values == sorted(values, reverse=True) and values[0] != values[-1]
    best = page.locator("#sweep-table tbody tr").first
    job = best.locator("td").first.inner_text()
    best.get_by_role("link", name="report.html").click()
    page.wait_for_load_state()
    assert page.url == (sweep / job / "report.html").resolve().as_uri()
    assert page.locator(".banner h1").inner_text() in ("GO", "REVIEW", "BLOCK")
    assert [url for url in opened.requests if not url.startswith(sweep.resolve().as_uri())] == []


def test_an_unknown_sweep_metric_is_refused_naming_the_known_ones(tmp_path):
    done = evalkit_cli("evalkit", "suite=evidencedesk", "sweep.metrics=[recal_at_k]", f"hydra.run.dir={tmp_path}")
    assert done.returncode == 3
    assert done.stderr.startswith("error: sweep.metrics: unknown metric(s) recal_at_k; suite evidencedesk produces ")
    assert "recall_at_k" in done.stderr


def test_a_blocked_change_shows_its_regressed_tests_and_prompt_diff_without_scrolling(open_page, tmp_path):
    """At 1,400 × 900, the window a reviewer opens the page in: the banner's trade-off, the prompt's diff and every
    regressed test's row are in view before any scrolling, and test ids wrap at `::` and `[`, not mid-word."""
    base = tmp_path / "base.json"
    done = evalkit_cli("evalkit", "prompt=v2", "baseline=none", f"run.save_report={base}",
                       f"hydra.run.dir={tmp_path / 'base'}")
    assert done.returncode == 0, done.stderr
    done = evalkit_cli("evalkit", "model=gemma4", f"baseline={base}", f"hydra.run.dir={tmp_path / 'run'}")
    assert done.returncode == 1, done.stderr
    decision = json.loads((tmp_path / "run" / "decision.json").read_text())
    opened = open_page(tmp_path / "run" / "report.html")
    page = opened.page
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(tmp_path / "report-1400x900.png"))
    assert page.locator(".tradeoff").is_visible()
    diff = page.locator(".text-diff pre.diff")
    box = diff.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 900, box
    assert "-Tasks that are dropped, deleted or lost without the user asking count as data loss." in diff.inner_text()
    rows = page.locator("#test-table tbody tr:visible")
    assert rows.count() == len(decision["regressed"]) > 0
    for index in range(rows.count()):
        box = rows.nth(index).bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900, (index, box)
    text = rows.evaluate_all("rows => rows.map(r => r.cells[0].innerText)")
    assert sorted(t.replace("\n", "") for t in text) == sorted(decision["regressed"])
    assert all(line.startswith(("[", "test_", "::")) for t in text for line in t.splitlines()[1:]), text
    assert opened.foreign_requests == [] and opened.errors == []


def test_a_sweeps_matrix_opens_on_the_cases_where_jobs_disagree(open_page, tmp_path):
    done = evalkit_cli("evalkit", "-m", "model=gemini-flash,gemma4", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert done.returncode == 1, done.stderr
    regressed = json.loads((tmp_path / "sweep" / "1" / "decision.json").read_text())["regressed"]
    opened = open_page(tmp_path / "sweep" / "summary.html")
    page = opened.page
    rows = page.locator("#matrix-table tbody tr:visible")
    shown = sorted(rows.evaluate_all("rows => rows.map(r => r.cells[0].innerText)"))
    assert shown == sorted({name.rsplit("[", 1)[1].rstrip("]") for name in regressed})
    cell = rows.first.locator("td").nth(2)
    assert cell.inner_text().strip() == "failed" and not cell.locator("pre").is_visible()
    cell.locator("summary").click()
    assert cell.locator("pre").is_visible() and cell.locator("pre").inner_text().strip()
    page.locator("button[data-filter=all]").nth(0).click()
    total = len(json.loads((tmp_path / "sweep" / "0" / "report.json").read_text())["cases"])
    assert page.locator("#matrix-table tbody tr:visible").count() == total > len(shown)
    assert opened.foreign_requests == [] and opened.errors == []


def test_the_receipt_suites_thumbnails_draw_under_the_pages_policy_and_fetch_nothing(open_page, tmp_path):
    """report.html of the shipped receipt suite, opened in Chromium: every receipt's thumbnail is decoded from its
    `data:` URI (naturalWidth > 0) with no policy violation and no request beyond the page."""
    done = evalkit_cli("evalkit", "suite=receipts", f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 0, done.stderr
    opened = open_page(tmp_path / "job" / "report.html")
    page = opened.page
    widths = page.evaluate("() => [...document.querySelectorAll('#images ~ .thumbnails img')].map(i => i.naturalWidth)")
    assert len(widths) == 10 and all(width > 0 for width in widths)
    assert opened.foreign_requests == [] and opened.errors == []
    assert not [m for m in opened.console if "Content Security Policy" in m]


def _png(width: int, height: int) -> bytes:
    """A real PNG (grey pixels), drawn with the standard library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_a_regressed_image_cases_baseline_thumbnail_draws_beside_the_candidates_and_fetches_nothing(
        open_page, tmp_path):
    """A regressed image case's panel in Chromium: the baseline's thumbnail and the candidate's both decode from
    their `data:` URIs; a baseline whose thumbnail is a remote URL gets no image, and nothing is requested."""
    def run(outcome: str, thumbnails: dict[str, str]) -> object:
        media = {case: [{"field": "receipt", "media_type": "image/png", "sha256": case * 8, "size": 64,
                         "path": f"images/{case}.png", "thumbnail": uri}] for case, uri in thumbnails.items()}
        return report_from_mapping({
            "eval": KEY, "media": media,
            "tests": [{"nodeid": f"checks.yaml::reads_the_total[{case}]", "outcome": outcome} for case in media],
            "cases": [{"id": case, "status": "scored", "passed": outcome == "passed",
                       "checks": {"reads_the_total": outcome}, "calls": {}, "problems": []} for case in media]},
            "report.json")

    def uri(width: int) -> str:
        return "data:image/png;base64," + base64.b64encode(_png(width, 6)).decode()

    baseline = run("passed", {"taxi": uri(7), "cafe": "https://tracker.example/pixel.png"})
    candidate = run("failed", {"taxi": uri(9), "cafe": uri(5)})
    page_text = render_report_html(candidate, decide(Policy(), baseline, candidate), baseline)
    opened = open_page(_write(tmp_path, page_text))
    page = opened.page
    page.evaluate("() => document.querySelectorAll('details.case').forEach(d => d.open = true)")
    widths = page.evaluate("() => [...document.querySelectorAll('details.case table.images img')].map("
                           "i => [i.closest('details').querySelector('summary code').textContent, i.naturalWidth])")
    assert sorted(map(tuple, widths)) == [("cafe", 5), ("taxi", 7), ("taxi", 9)]  # cafe's baseline: no image
    assert opened.foreign_requests == [] and opened.errors == []
    assert not [m for m in opened.console if "Content Security Policy" in m]
