"""The run explorer's files (evalkit.render.explorer), read as data: each run's script holds exactly its cases'
outcomes, checks, slices and outputs, and the page loads only the folder's own files under a strict policy."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from helpers.html_reports import SCRIPT, hostile_pair

from evalkit.records.report_reader import report_from_mapping
from evalkit.render.explorer import CONTENT_SECURITY_POLICY, OUTPUT_CHARS, ExplorerRun, explorer_files, run_data

KEY = {"key_version": 1, "suite": "s", "dataset": "d@1", "dataset_sha": "d1", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "j", "components": {"retriever": "default@aaaa"},
       "settings": {"retriever": {"k": 3}}}


def _report(cases: list[dict[str, Any]], **extra: Any) -> Any:
    tests = [{"nodeid": f"test_s.py::{check}[{case['id']}]", "outcome": outcome}
             for case in cases for check, outcome in case.get("checks", {}).items()]
    return report_from_mapping({"eval": KEY, "tests": tests, "cases": cases, **extra}, "authored")


def _case(case_id: str, passed: bool | None, output: Any = "", **extra: Any) -> dict[str, Any]:
    checks = {} if passed is None else {"test_answer": "passed" if passed else "failed", "test_safe": "passed"}
    return {"id": case_id, "status": "scored" if passed is not None else "error", "passed": passed,
            "checks": checks, "output": output, **extra}


def _data(script: str) -> dict[str, Any]:
    match = re.fullmatch(r"\(window\.EVALKIT_RUNS = window\.EVALKIT_RUNS \|\| \[\]\)\.push\((.*)\);\n", script,
                         re.DOTALL)
    assert match, script[:200]
    parsed: dict[str, Any] = json.loads(match.group(1))
    return parsed


class _Tags(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_a_run_holds_each_case_outcome_checks_slices_and_output():
    report = _report([_case("a", True, "yes", input={"lang": "bn"}, group="g1"),
                      _case("b", False, {"answer": 42}, trajectory=[{"tool": "search", "args": {"q": "x"}}]),
                      _case("c", None, "\x1b[31mred\u202e")],
                     critical_checks=["test_answer"], slices={"lang": {"bn": {"cases": 1, "pass_rate": 1.0}}})
    data = run_data(3, ExplorerRun(report, "runs/r/report.json", "f" * 64, "block"))
    assert data["index"] == 3 and data["decision"] == "block" and data["sha256"] == "f" * 64
    assert data["key"]["model"] == "m" and data["key"]["components.retriever"] == "default@aaaa"
    assert "settings" not in json.dumps(data["key"])  # settings are the key's inputs, not its identity
    a, b, c = data["cases"]
    assert (a["id"], a["o"], a["c"], a["s"], a["out"]) == ("a", "passed", {"test_answer": "passed",
                                                                           "test_safe": "passed"},
                                                         ["group: g1", "lang: bn"], "yes")
    assert "crit" not in a
    assert b["o"] == "failed" and b["crit"] is True and json.loads(b["out"]) == {"answer": 42}
    assert json.loads(b["trajectory"]) == [{"tool": "search", "args": {"q": "x"}}]
    assert c["o"] == "unscored" and c["c"] == {}
    assert c["out"] == "\\x1b[31mred\\u202e"  # control characters and direction overrides shown as escapes


def test_a_long_output_is_cut_with_the_count_of_what_is_left_out():
    data = run_data(1, ExplorerRun(_report([_case("a", True, "x" * (OUTPUT_CHARS + 7))]), "r", "0" * 64))
    case = data["cases"][0]
    assert len(case["out"]) == OUTPUT_CHARS and case["outCut"] == 7


def test_the_folder_holds_the_page_its_assets_and_one_script_per_run():
    baseline, candidate, _ = hostile_pair()
    runs = [ExplorerRun(baseline, "runs/a/report.json", "a" * 64, "go"),
            ExplorerRun(candidate, f"runs/{SCRIPT}/report.json", "b" * 64, None)]
    files = explorer_files(runs, reference=1)
    assert sorted(files) == ["data/run-1.js", "data/run-2.js", "explorer.css", "explorer.js", "index.html"]
    for index, run in enumerate(runs, start=1):
        script = files[f"data/run-{index}.js"]
        assert script.isascii()  # reads the same whatever encoding a static host declares
        assert _data(script) == run_data(index, run)
    assert SCRIPT in _data(files["data/run-2.js"])["cases"][0]["out"]  # kept as text, for textContent
    page = files["index.html"]
    tags = _Tags(page).tags
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": CONTENT_SECURITY_POLICY}) in tags
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY and "unsafe" not in CONTENT_SECURITY_POLICY
    scripts = [attrs.get("src") for tag, attrs in tags if tag == "script"]
    assert scripts == ["data/run-1.js", "data/run-2.js", "explorer.js"]  # no inline script; the data first
    assert [attrs.get("href") for tag, attrs in tags if tag == "link"] == ["explorer.css"]
    body = next(attrs for tag, attrs in tags if tag == "body")
    assert body.get("data-reference") == "1" and body.get("data-version")  # the version goes into exported labels
    assert SCRIPT not in page and "&lt;script&gt;" in page  # the run's path is escaped in the runs table
    assert "a" * 64 in page and "b" * 64 in page and "(none saved)" in page
    code = re.sub(r"//[^\n]*", "", files["explorer.js"])  # the comments say why it never uses them
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", code)


def test_a_reference_that_names_no_run_is_refused():
    run = ExplorerRun(_report([_case("a", True)]), "r", "0" * 64)
    with pytest.raises(ValueError, match="reference 1 is not one of the 1 runs"):
        explorer_files([run], reference=1)
