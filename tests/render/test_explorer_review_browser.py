"""Review in the run explorer, in a real browser (Debian's headless Chromium through Playwright, tests/helpers/browser.py):
a reviewer labels cases (pass/fail and a rubric level, with notes), the labels outlive a reload, export as a labels
file that `evalkit review --labels` records on the report it names and refuses on another report (exit 3, one
line); the queue puts the cases the judge was least sure of first; hostile text in labels and checks stays text."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_env
from helpers.html_reports import IMG, SCRIPT

from evalkit.core.version import __version__
from evalkit.records.report_reader import load_report
from evalkit.render.explorer import ExplorerRun, explorer_files

pytestmark = [pytest.mark.slow, pytest.mark.external]

EVALKIT = Path(sys.executable).parent / "evalkit"
KEY = {"key_version": 1, "suite": "s", "dataset": "d@1", "dataset_sha": "d1", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "j"}
_PWNED = "() => window.__pwned === undefined ? null : String(window.__pwned)"
HOSTILE_CHECK = f"test_{IMG}"
ODD_ID = "case-\u202eodd\x07"
"""A case id with a direction override and a control character: shown escaped, exported as the report has it."""


def _report(path: Path, cases: list[dict[str, Any]], tests: list[dict[str, Any]] | None = None) -> Path:
    tests = tests if tests is not None else [
        {"nodeid": f"test_s.py::{check}[{case['id']}]", "outcome": outcome}
        for case in cases for check, outcome in case["checks"].items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"eval": KEY, "tests": tests, "cases": cases}), encoding="utf-8")
    return path


def _case(case_id: str, passed: bool, output: str, **extra: Any) -> dict[str, Any]:
    checks = extra.pop("checks", {"test_a": "passed" if passed else "failed"})
    return {"id": case_id, "status": "scored", "passed": passed, "checks": checks, "output": output, **extra}


def _explorer(folder: Path, reports: list[Path]) -> Path:
    runs = [ExplorerRun(load_report(path), str(path), hashlib.sha256(path.read_bytes()).hexdigest())
            for path in reports]
    for name, text in explorer_files(runs).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "index.html"


def _open(open_page: Any, index: Path) -> Any:
    opened = open_page(index, follow=index.parent)
    opened.page.wait_for_selector("body[data-ready]")
    return opened


def _open_case(page: Any, case_id: str) -> None:
    page.locator("#grid-rows .grid-row", has_text=case_id).first.click()
    page.wait_for_function(f"() => document.querySelector('#case-title').textContent === {json.dumps(case_id)}")


def _review(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EVALKIT), "review", *args], cwd=cwd, env=evalkit_env(), capture_output=True,
                          text=True, timeout=120)


def test_labels_persist_export_and_are_recorded_on_their_report_only(open_page, tmp_path):
    baseline = _report(tmp_path / "runs/a/report.json", [_case("c1", True, "30 days"), _case("c2", True, "ok")])
    rated = {"rubric.relevance": 1.0, "rubric.format": 2.0}
    candidate = _report(tmp_path / "runs/b/report.json", [
        _case("c1", False, "14 days of purchase", metrics=rated),
        _case("c2", True, SCRIPT, checks={"test_a": "passed", HOSTILE_CHECK: "passed"}),
        _case(ODD_ID, True, "odd")])
    opened = _open(open_page, _explorer(tmp_path / "explorer", [baseline, candidate]))
    page = opened.page
    assert page.locator("#review-run").input_value() == "1"  # the last run is reviewed unless another is chosen
    page.fill("#reviewer", "ana <b>reviewer</b>")
    _open_case(page, "c1")
    column = page.locator(".case-run[data-run='2']")
    assert column.locator("h3").inner_text() == "#2 (review)"
    assert column.locator(".label-row").evaluate_all("rows => rows.map(r => r.dataset.check)") == [
        "test_a", "rubric.relevance", "rubric.format"]  # each check, then each number rated on levels
    assert column.locator(".label-row[data-check='rubric.relevance'] option").all_inner_texts() == [
        "not labelled", "level 0", "level 1", "level 2"]
    column.locator(".label-row[data-check='test_a'] select").select_option("fail")
    column.locator(".label-row[data-check='test_a'] textarea").fill(f"says 14 days {IMG}")
    column.locator(".label-row[data-check='rubric.relevance'] select").select_option("1")
    assert page.locator(".case-run[data-run='1'] .label-row").count() == 0  # only the review run is labelled
    _open_case(page, "c2")
    column.locator(f".label-row[data-check={json.dumps(HOSTILE_CHECK)}] select").select_option("pass")
    page.locator("#grid-rows .grid-row").nth(2).click()  # the odd id, shown escaped
    page.wait_for_selector(".case-run[data-run='2'] .label-row")
    column.locator(".label-row[data-check='test_a'] select").select_option("pass")
    page.wait_for_function("() => document.body.dataset.labels === '4'")

    page.reload(wait_until="load")  # the labels are kept in the browser under the report's SHA-256
    page.wait_for_selector("body[data-ready]")
    assert page.get_attribute("body", "data-labels") == "4"
    assert page.locator("#reviewer").input_value() == "ana <b>reviewer</b>"
    assert page.locator("#grid-rows .grid-row.labelled").count() == 3
    _open_case(page, "c1")
    assert column.locator(".label-row[data-check='test_a'] select").input_value() == "fail"
    assert column.locator(".label-row[data-check='test_a'] textarea").input_value() == f"says 14 days {IMG}"

    with page.expect_download() as download:
        page.click("#export")
    exported = tmp_path / "labels.jsonl"
    download.value.save_as(exported)
    assert download.value.suggested_filename == f"labels-{hashlib.sha256(candidate.read_bytes()).hexdigest()[:12]}.jsonl"
    header, *lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert header == {"format": "evalkit-labels/1", "report_sha256": hashlib.sha256(candidate.read_bytes()).hexdigest(),
                      "reviewer": "ana <b>reviewer</b>", "tool": "evalkit", "tool_version": __version__,
                      "report": str(candidate)}
    assert [(line["case_id"], line["check_id"], line["label"], line["note"]) for line in lines] == [
        ("c1", "test_a", "fail", f"says 14 days {IMG}"), ("c1", "rubric.relevance", 1, ""),
        ("c2", HOSTILE_CHECK, "pass", ""), (ODD_ID, "test_a", "pass", "")]
    assert page.evaluate(_PWNED) is None and opened.dialogs == [] and opened.errors == []
    assert page.locator("img, iframe, object, embed, a").count() == 0  # the download link is gone again
    assert "evalkit review --report REPORT --labels" in page.locator("#review-status").inner_text()

    done = _review(tmp_path, "--report", str(candidate), "--labels", str(exported), "--out", "reviewed.json")
    assert done.returncode == 0, done.stderr
    assert "recorded 4 label(s) on 3 case(s)" in done.stdout
    reviewed = json.loads((tmp_path / "reviewed.json").read_text(encoding="utf-8"))
    recorded = reviewed["review_audit"][-1]
    assert recorded["kind"] == "labels" and recorded["reviewer"] == "ana <b>reviewer</b>"
    assert recorded["source_report_sha256"] == header["report_sha256"]
    assert [label["case_id"] for label in recorded["labels"]] == ["c1", "c1", "c2", ODD_ID]
    assert reviewed["cases"] == json.loads(candidate.read_text(encoding="utf-8"))["cases"]  # no result changed

    refused = _review(tmp_path, "--report", str(baseline), "--labels", str(exported), "--out", "other.json")
    assert refused.returncode == 3 and not (tmp_path / "other.json").exists()
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "the labels were made on another report" in refused.stderr and "Traceback" not in refused.stderr


def test_export_asks_for_the_reviewer_and_a_label(open_page, tmp_path):
    only = _report(tmp_path / "runs/a/report.json", [_case("c1", True, "fine")])
    page = _open(open_page, _explorer(tmp_path / "explorer", [only])).page
    page.fill("#reviewer", "")
    page.click("#export")
    assert page.locator("#review-status").inner_text().startswith("Name the reviewer before exporting")
    page.fill("#reviewer", "ana")
    page.click("#export")
    assert page.locator("#review-status").inner_text().startswith("No labels on #1 yet")


def test_the_queue_puts_the_cases_the_judge_was_least_sure_of_first(open_page, tmp_path):
    def scored(case_id: str, score: float, **extra: Any) -> dict[str, Any]:
        passed = score >= 4
        return _case(case_id, passed, f"reply {case_id}", checks={"faithful": "passed" if passed else "failed"},
                     metrics={"faithful.score": score}, **extra)

    # faithful passes at 4: the run shows failed at 2 and 3, passed at 4 and 5, so its boundary is 3.5.
    # margins: far-pass 5 -> 0.75, near-pass 4 -> 0.25, near-fail 3 -> 0.25, far-fail 2 -> 0.75;
    # split 3 of 6 samples passed -> 0, mostly 5 of 6 -> 2/3; plain has no sign and comes last
    cases = [_case("plain", True, "reply plain"), scored("far-pass", 5), scored("near-pass", 4),
             _case("mostly", False, "reply mostly"), scored("near-fail", 3), scored("far-fail", 2),
             _case("split", False, "reply split")]
    tests = [{"nodeid": f"test_s.py::{check}[{c['id']}]", "outcome": outcome, "case": c["id"]}
             for c in cases for check, outcome in c["checks"].items()]
    for test in tests:
        if test["case"] in ("split", "mostly"):
            passed = 3 if test["case"] == "split" else 5
            test["repeats"] = {"passed": passed, "runs": 6}
            test["outcome"] = "failed"  # under the default reducer, `all`: not every sample passed
    report = _report(tmp_path / "runs/a/report.json", cases, tests)
    page = _open(open_page, _explorer(tmp_path / "explorer", [report])).page

    def order() -> list[str]:
        return [str(i) for i in page.locator("#grid-rows .grid-row:visible span.id").all_inner_texts()]

    assert order() == ["plain", "far-pass", "near-pass", "mostly", "near-fail", "far-fail", "split"]
    page.click("#queue")
    page.wait_for_function("() => document.querySelector('#grid-rows .grid-row span.id').textContent === 'split'")
    assert order() == ["split", "near-pass", "near-fail", "mostly", "far-pass", "far-fail", "plain"]
    assert page.get_attribute("#grid-rows .grid-row >> nth=0 >> span.id", "title") == (
        "split \u2014 test_a: samples disagreed, 3 of 6 passed")
    _open_case(page, "near-fail")
    assert page.locator(".case-run .doubt").inner_text() == (
        "the judge's doubt: faithful.score 3, the run's pass/fail boundary 3.5")
    assert page.locator(".label-row[data-check='faithful.score'] option").all_inner_texts() == [
        "not labelled", "level 1", "level 2", "level 3", "level 4", "level 5"]
    page.click("button[data-flag=critical]")  # the queue orders what the filters keep
    page.wait_for_function("() => document.body.dataset.shown === '0'")
    page.click("button[data-flag=critical]")
    page.click("#queue")
    page.wait_for_function("() => document.querySelector('#grid-rows .grid-row span.id').textContent === 'plain'")
