"""The HTML pages: Jinja2 with autoescape, self-contained, and a Content-Security-Policy that admits only their own
inline style and script."""

from __future__ import annotations

import base64
import hashlib
import html
import re

import pytest
from helpers.html_reports import BANGLA, KEY, MEGABYTE, RTL, SCRIPT, hostile_pair, large_pair

from evalkit.core.key import ABSENT, changed_settings, with_settings
from evalkit.core.policy import Policy
from evalkit.gate.compared import critical_of
from evalkit.gate.decide import decide
from evalkit.records.report_reader import report_from_mapping
from evalkit.render.html import content_security_policy, environment, render_page
from evalkit.render.markdown import render_markdown
from evalkit.render.report_page import MAX_PANELS, SHOWN_CHARS, diff_sides, render_report_html
from evalkit.render.sweep_page import render_summary_html
from evalkit.render.text import render_changed
from evalkit.sweeps.summary import metric_columns, render_summary


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_environment_escapes_by_default():
    page = environment().from_string("<p>{{ text }}</p>").render(text="<script>alert(1)</script>")
    assert page == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"


def test_the_base_page_admits_exactly_its_own_style_and_script():
    page = render_page("base.html.j2")
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    assert style and script and style.group(1).strip() and script.group(1).strip()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp is not None
    policy = html.unescape(csp.group(1))  # the attribute is escaped (&#39;); the browser reads it unescaped
    assert policy == content_security_policy(style.group(1), script.group(1))
    assert f"style-src {_hash(style.group(1))};" in policy
    assert f"script-src {_hash(script.group(1))};" in policy
    assert policy.startswith("default-src 'none';")
    # nothing on the page points anywhere: no src, href or url() at all
    assert not re.search(r"\b(src|href)=|url\(|@import", page)


# --- report.html, rendered (the browser tests below open the same pages in Chromium) ---



def test_hostile_text_is_escaped_everywhere_and_only_the_pages_own_script_remains():
    baseline, candidate, decision = hostile_pair()
    page = render_report_html(candidate, decision, baseline, ("test_answer",))
    assert page.count("<script") == 1  # the page's own; every <script> of the report is text
    assert "<img" not in page and "<a href=\"javascript" not in page and "<link" not in page
    assert html.escape(SCRIPT, quote=False).split(";")[0] in page
    assert not re.search(r"<[^>]*\son\w+=", page)  # no element carries an event handler
    # right-to-left text as written; the override before it (which would reorder the text) as an escape
    assert RTL.replace("\u202e", "\\u202e") in page and "\u202e" not in page and BANGLA in page
    assert "{{ 7*7 }}" in page  # report text is never read as a template


def test_a_reply_of_a_megabyte_is_shown_cut_with_a_note_and_the_page_stays_small():
    baseline, candidate, decision = hostile_pair()
    assert len(str(candidate.cases[-1]["output"])) > MEGABYTE * 0.9
    page = render_report_html(candidate, decision, baseline)
    assert f"Showing {SHOWN_CHARS} of {len(str(candidate.cases[-1]['output']))} characters" in page
    assert len(page.encode()) < MEGABYTE  # the page holds what is shown, not the whole reply


def test_the_page_names_the_decision_the_changed_setting_and_every_failing_case():
    baseline, candidate, decision = hostile_pair()
    page = render_report_html(candidate, decision, baseline)
    assert '<section class="banner block"' in page and "<h1>BLOCK</h1>" in page
    assert "<code>retriever.template</code> &lt;b&gt;bold&lt;/b&gt; →" in page
    assert page.count('<details class="case"') == len(candidate.cases)
    assert page.count('<tr data-tags="regressed critical failing">') == 5
    assert '<tr data-tags="new failing">' in page


def test_diff_marks_what_each_side_lost_and_gained():
    left, right = diff_sides("the refund takes 30 days", "the refund takes 14 days")
    assert ("del", "30") in left and ("ins", "14") in right
    assert "".join(t for _, t in left) == "the refund takes 30 days"
    assert "".join(t for _, t in right) == "the refund takes 14 days"


def test_a_large_report_keeps_every_tagged_test_and_caps_the_panels():
    baseline, candidate, decision = large_pair(10_000)
    page = render_report_html(candidate, decision, baseline)
    assert page.count("<tr data-tags=") == 10_000
    assert page.count('data-tags="regressed failing"') == len(decision.regressed) > 100
    assert page.count('<details class="case"') == MAX_PANELS
    assert "more failing case(s) not shown as panels" in page


def test_a_run_without_a_baseline_renders_alone():
    _, candidate, _ = hostile_pair()
    page = render_report_html(candidate)
    assert "<h1>NOT GATED</h1>" in page and "baseline=none" in page


def test_settings_sit_beside_the_key_and_their_differences_are_named():
    key = {"suite": "s", "components": {"retriever": "default@1"}}
    assert with_settings(key, {}) == key
    before = with_settings(key, {"retriever": {"k": 3, "min_score": 0.3, "filters": {"lang": "en"}}})
    after = with_settings(key, {"retriever": {"k": 3.0, "min_score": 0.25, "filters": {"lang": "bn"}, "new": 1}})
    assert before["settings"] == {"retriever": {"k": 3, "min_score": 0.3, "filters": {"lang": "en"}}}
    assert changed_settings(before, after) == {"retriever.min_score": (0.3, 0.25),
                                               "retriever.filters.lang": ("en", "bn"), "retriever.new": (ABSENT, 1)}
    assert changed_settings(key, after) == {}  # a report from before settings were kept: nothing to name
    line = render_changed({"components.retriever": ("default@1", "default@2")}, changed_settings(before, after))
    assert line == ("components.retriever default@1 -> default@2 (retriever.min_score 0.3 -> 0.25; "
                    "retriever.filters.lang en -> bn; retriever.new (absent) -> 1)")


# --- the sweep's summary ---

SWEEP_ROWS = [
    {"job": 0, "overrides": ["retriever.k=1"], "decision": "block", "exit_code": 1, "pass_rate": 0.9,
     "metrics": {"recall_at_k": 0.824, "citation_validity": 0.8}},
    {"job": 1, "overrides": [f"retriever.k=2 {SCRIPT}"], "decision": "go", "exit_code": 0, "pass_rate": 1.0,
     "metrics": {"recall_at_k": 0.882, "citation_validity": None, "rubric.format": 2}},
    {"job": 2, "overrides": ["retriever.k=x"], "error": f"bad {SCRIPT}", "exit_code": 3},
]


def test_the_text_summary_gains_the_suites_metric_columns_in_the_jobs_order():
    assert metric_columns(SWEEP_ROWS) == ["recall_at_k", "citation_validity", "rubric.format"]
    table = render_summary(SWEEP_ROWS).splitlines()
    assert table[0].endswith("| input tokens | cost USD | recall_at_k | citation_validity | rubric.format |")
    assert table[2].endswith("| 0.824 | 0.800 | - |")
    assert table[3].endswith("| 0.882 | - | 2.000 |")
    assert table[4].endswith("| - | - | - |")  # a job that failed has no metrics
    assert metric_columns([{"job": 0}]) == [] and render_summary([{"job": 0}]).splitlines()[0].endswith("tokens | cost USD |")


def test_the_summary_page_sorts_by_metric_links_each_report_and_escapes_the_rows():
    page = render_summary_html(SWEEP_ROWS, metric_columns(SWEEP_ROWS), ["0", "1", None])
    assert page.count("<script") == 1 and html.escape(SCRIPT, quote=False).split(";")[0] in page
    assert '<a href="0/report.html">' in page and '<a href="1/report.html">' in page
    assert page.count("report.html</a>") == 2  # the job that failed has no page
    assert '<table id="sweep-table" class="sortable">' in page
    assert '<td class="num" data-sort="0.824">0.824</td>' in page and '<td class="num" data-sort="">-</td>' in page
    assert "ERROR" in page and '<th class="num metric">rubric.format</th>' in page


def test_beyond_the_row_limit_every_tagged_test_stays_and_the_cut_is_said():
    from evalkit.render.report_page import MAX_TEST_ROWS

    baseline, candidate, decision = large_pair(MAX_TEST_ROWS + 2_000)
    page = render_report_html(candidate, decision, baseline)
    assert page.count("<tr data-tags=") == MAX_TEST_ROWS
    assert page.count('data-tags="regressed failing"') == len(decision.regressed)
    assert page.count('data-tags="fixed"') == len(decision.fixed)
    assert "2000 passing untagged tests are not listed" in page
    # the table opens on the regressed tests; "all" counts every test, listed or not
    assert 'data-filter="regressed" aria-pressed="true">regressed' in page
    assert f'data-filter="all" aria-pressed="false">all ({MAX_TEST_ROWS + 2_000})' in page


def test_a_candidate_program_run_shows_its_grades_and_the_isolation_that_held():
    from conftest import PROJECT_ROOT

    from evalkit.records.report_reader import load_report

    report = load_report(PROJECT_ROOT / "suites" / "quality_lab" / "runs" / "baseline.json")  # recorded by a run
    page = render_report_html(report)
    assert "<dt>isolation</dt><dd>filesystem: held (bubblewrap mount namespace" in page  # the label, not the dict
    assert "<dt>recording_provenance</dt>" not in page and "<dt>run_kind</dt>" in page
    assert "<td>task_pass</td><td>-</td><td>fail</td>" in page  # a failing case's grade, no baseline side
    assert "<h4>Candidate program</h4>" in page


def test_test_ids_may_wrap_at_their_separators_and_stay_escaped():
    from evalkit.render.html import breakable

    assert str(breakable("t.py::test_a[<b>x</b>]")) == "t.py<wbr>::test_a<wbr>[&lt;b&gt;x&lt;/b&gt;]"


def test_the_banner_shows_what_the_change_traded():
    baseline, candidate, decision = large_pair(200)
    page = render_report_html(candidate, decision, baseline)
    banner = page.split('<ul class="tradeoff">', 1)[1].split("</ul>", 1)[0]
    labels = re.findall(r"<span>([^<]+)</span> <strong>([^<]+)</strong>", banner)
    before = baseline.passed / len(baseline.outcomes)
    after = candidate.passed / len(candidate.outcomes)
    assert labels[:3] == [("regressed", str(len(decision.regressed))), ("fixed", str(len(decision.fixed))),
                          ("critical failing", "0")]
    assert labels[3] == ("pass rate", f"{after:.3f} ({after - before:+.3f})")


def test_a_page_not_gated_shows_no_baseline_neutrally_and_opens_on_the_failing_tests():
    _, candidate, _ = large_pair(50)
    page = render_report_html(candidate)
    assert 'class="absent"' not in page and '<ul class="tradeoff">' not in page
    failing = sum(1 for outcome in candidate.outcomes.values() if outcome != "passed")
    initial = "failing" if failing else "all"
    assert f'data-initial="{initial}"' in page


def test_rows_are_ordered_by_severity():
    baseline, candidate, decision = large_pair(300)
    page = render_report_html(candidate, decision, baseline)
    tags = re.findall(r'<tr data-tags="([^"]*)">', page)
    ranks = [0 if {"critical", "failing"} <= set(t.split()) else 1 if "regressed" in t else 2 if "failing" in t
             else 3 if "new" in t else 4 if "fixed" in t else 5 for t in tags]
    assert ranks == sorted(ranks) and ranks[0] < 5


def test_the_sweep_matrix_lists_disagreeing_cases_first_with_each_jobs_reply():
    from evalkit.render.sweep_page import JobCase

    rows = [{"job": 0, "overrides": ["prompt=v1"], "decision": "go", "metrics": {}},
            {"job": 1, "overrides": ["prompt=v2"], "decision": "block", "metrics": {}},
            {"job": 2, "overrides": ["prompt=v3"], "error": "outage: refused", "metrics": {}}]
    first = {"a": JobCase(True, "<b>same</b>"), "b": JobCase(True, "ok"), "c": JobCase(None, None)}
    second = {"a": JobCase(True, "same"), "b": JobCase(False, "x" * 5_000)}
    page = render_summary_html(rows, [], ["0", "1", None], [first, second, None])
    matrix = page.split('<table id="matrix-table">', 1)[1]
    ids = re.findall(r'<tr data-tags="(\w+)"><td><code>(\w+)</code>', matrix)
    assert ids == [("disagree", "b"), ("agree", "a"), ("agree", "c")]
    assert "&lt;b&gt;same&lt;/b&gt;" in matrix and "<b>same" not in matrix
    assert "3000 more characters in the job's report.json" in matrix
    assert matrix.count('<td class="absent">absent</td>') == 4  # job 2 wrote no report; job 1 has no case c
    assert 'data-initial="disagree"' in page and "1 of 3 case(s) have jobs that disagree" in page


def test_a_sweep_of_one_job_has_no_matrix():
    from evalkit.render.sweep_page import JobCase

    page = render_summary_html([{"job": 0, "decision": "go"}], [], ["0"], [{"a": JobCase(True, "x")}])
    assert "matrix-table" not in page


def test_a_check_that_checks_yaml_marks_critical_is_tagged_critical_like_the_policys():
    def side(outcome: str) -> dict[str, object]:
        return {"eval": KEY, "critical_checks": ["reply_is_json"],
                "tests": [{"nodeid": "checks.yaml::reply_is_json[c1]", "outcome": outcome},
                          {"nodeid": "checks.yaml::label_matches[c1]", "outcome": outcome}]}

    baseline, candidate = report_from_mapping(side("passed"), "b"), report_from_mapping(side("failed"), "c")
    policy = Policy(max_regressions=5)
    decision = decide(policy, baseline, candidate)
    critical = critical_of(policy, baseline, candidate)
    assert critical == ("reply_is_json",)
    page = render_report_html(candidate, decision, baseline, critical)
    assert page.count('<tr data-tags="regressed critical failing">') == 1  # reply_is_json, not label_matches
    assert page.count('<tr data-tags="regressed failing">') == 1
    assert "`checks.yaml::reply_is_json[c1]` (critical)" in render_markdown(decision, candidate, critical)


def test_a_changed_prompt_shows_its_diff_escaped_and_the_changed_row_points_at_it():
    from conftest import report

    def with_prompt(text: str, sha: str) -> dict[str, object]:
        data = report({"test_a": "passed"}, prompt_sha=sha)
        data["texts"] = {"prompt": {"version": "v", "path": "p.txt", "sha256": sha * 8, "text": text, "cut": 0}}
        return data

    baseline = report_from_mapping(with_prompt("Answer.\nBe brief.", "aaaa"), "b")
    candidate = report_from_mapping(with_prompt("Answer.\nBe brief. <script>alert(1)</script>", "bbbb"), "c")
    decision = decide(Policy(), baseline, candidate)
    page = render_report_html(candidate, decision, baseline)
    assert '<span class="remove">-Be brief.</span>' in page
    assert '<span class="add">+Be brief. &lt;script&gt;alert(1)&lt;/script&gt;</span>' in page
    assert "the prompt&#39;s text: its diff is below" in page
    old = report_from_mapping(report({"test_a": "passed"}, prompt_sha="aaaa"), "old")  # kept no texts
    assert "the baseline&#39;s report keeps no prompt text" in render_report_html(
        candidate, decide(Policy(), old, candidate), old)


# --- image cases' thumbnails (issue 39): carried in the page, never fetched ---

def _image_report(thumbnail: object, why: str | None = None) -> object:
    image = {"field": "receipt", "media_type": "image/png", "sha256": "ab" * 32, "size": 575,
             "path": "images/taxi.png", "thumbnail": thumbnail, **({"why": why} if why else {})}
    return report_from_mapping({"eval": KEY, "tests": [{"nodeid": "checks.yaml::reads_the_total[taxi]",
                                                        "outcome": "passed"}],
                                "cases": [{"id": "taxi", "status": "scored", "passed": True, "checks": {},
                                           "calls": {}, "problems": []}],
                                "media": {"taxi": [image]}}, "report.json")


def test_an_image_case_shows_its_thumbnail_as_a_data_uri_the_policy_admits():
    uri = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20).decode()
    page = render_report_html(_image_report(uri))  # type: ignore[arg-type]
    assert f'<img src="{uri}" alt="images/taxi.png" width="96" height="96">' in page
    assert "taxi" in page and "575 bytes, sha256 " + "ab" * 6 in page
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1))
    assert "img-src data:;" in csp and "http" not in csp  # images only from the page itself
    assert page.count("<img") == 1 and not re.search(r'src="(?!data:image/png;base64,)', page)


@pytest.mark.parametrize("hostile", ["https://tracker.example/pixel.png", "javascript:alert(1)",
                                     'data:image/png;base64,AAAA" onerror="alert(1)', "data:text/html;base64,PHA+",
                                     "data:image/svg+xml;base64,PHN2Zz4=", 7, {"url": "x"}])
def test_a_thumbnail_that_is_no_image_data_uri_is_never_put_in_the_page(hostile: object):
    page = render_report_html(_image_report(hostile))  # type: ignore[arg-type]
    assert "<img" not in page and "tracker.example" not in page and "onerror" not in page.replace("&#34;", "")
    assert "no thumbnail" in page


def test_a_case_without_a_thumbnail_says_why():
    page = render_report_html(_image_report(None, "2,000,000 bytes, over the 49,152 a report carries"))  # type: ignore[arg-type]
    assert "<img" not in page and "2,000,000 bytes, over the 49,152 a report carries" in page


def _image_run(outcome: str, thumbnail: object, sha: str = "ab" * 32) -> object:
    image = {"field": "receipt", "media_type": "image/png", "sha256": sha, "size": 575, "path": "images/taxi.png",
             "thumbnail": thumbnail}
    return report_from_mapping({"eval": KEY, "tests": [{"nodeid": "checks.yaml::reads_the_total[taxi]",
                                                        "outcome": outcome}],
                                "cases": [{"id": "taxi", "status": "scored", "passed": outcome == "passed",
                                           "checks": {"reads_the_total": outcome}, "calls": {}, "problems": []}],
                                "media": {"taxi": [image]}}, "report.json")


def _png_uri(fill: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + fill * 20).decode()


def _panel(page: str) -> str:
    return page[page.index('<details class="case'):page.index("</details>", page.index('<details class="case'))]


def test_a_regressed_image_case_shows_the_baselines_thumbnail_beside_the_candidates():
    before, after = _png_uri(b"\x00"), _png_uri(b"\x01")
    baseline, candidate = _image_run("passed", before), _image_run("failed", after, sha="cd" * 32)
    page = render_report_html(candidate, decide(Policy(), baseline, candidate), baseline)  # type: ignore[arg-type]
    panel = _panel(page)
    assert "Images: baseline beside candidate" in panel
    assert panel.index(f'<img src="{before}"') < panel.index(f'<img src="{after}"')  # baseline's column first
    assert "another image than the baseline's" in panel  # the bytes differ (by SHA-256)
    same = _image_run("failed", after)
    assert "another image than" not in _panel(render_report_html(
        same, decide(Policy(), _image_run("passed", after), same), _image_run("passed", after)))  # type: ignore[arg-type]
    alone = _panel(render_report_html(candidate))  # type: ignore[arg-type]
    assert "<h4>Images</h4>" in alone and f'<img src="{after}"' in alone and before not in alone


@pytest.mark.parametrize("hostile", ["https://tracker.example/pixel.png", 'data:image/png;base64,AAAA" onerror="x',
                                     "data:image/svg+xml;base64,PHN2Zz4=", {"url": "x"}])
def test_a_baselines_thumbnail_that_is_no_image_data_uri_is_never_put_in_the_page(hostile: object):
    after = _png_uri(b"\x01")
    baseline, candidate = _image_run("passed", hostile), _image_run("failed", after)
    page = render_report_html(candidate, decide(Policy(), baseline, candidate), baseline)  # type: ignore[arg-type]
    assert "tracker.example" not in page and "onerror" not in page.replace("&#34;", "")
    assert not re.search(r'src="(?!data:image/png;base64,)', page)
    panel = _panel(page)
    assert panel.count("<img") == 1 and "no thumbnail" in panel  # the candidate's, and the baseline's named missing


def test_a_cases_problems_and_the_isolation_each_case_held_are_on_the_page():
    cases = [{"id": "taxi", "status": "scored", "passed": False, "checks": {}, "calls": {},
              "problems": ["the total is missing"], "program": {"isolation": "container"}},
             {"id": "cafe", "status": "scored", "passed": True, "checks": {}, "calls": {}, "problems": [],
              "program": {"isolation": "container"}}]
    candidate = report_from_mapping({"eval": KEY, "tests": [{"nodeid": f"checks.yaml::reads_the_total[{case['id']}]",
                                                             "outcome": "passed"} for case in cases],
                                     "cases": cases}, "report.json")
    page = render_report_html(candidate)
    assert "the total is missing" in page
    assert "isolation held for 2 case(s)" in page and ">container<" in page
