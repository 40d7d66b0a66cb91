"""Confusion matrices as the terminal, decision.md and report.html show them (evalkit.render.confusion): counts in
place, and a predicted label taken from a reply cut and escaped so it cannot forge cells, lines or markup."""

from __future__ import annotations

from evalkit.gate.decision import Decision, Verdict
from evalkit.records.report_reader import RunReport
from evalkit.render.confusion import confusion_markdown, confusion_tables, confusion_text
from evalkit.render.markdown import render_markdown
from evalkit.render.report_page import render_report_html
from evalkit.render.sections import render_sections

HOSTILE = "<b>x</b>|y\nz"
REPORT = RunReport(
    eval={"suite": "s", "dataset": "d@1", "dataset_sha": "a", "model": "m", "prompt_version": "v1",
          "prompt_sha": "p", "judge_model": None, "components": {}},
    outcomes={"checks.yaml::label_matches[a]": "passed"},
    classification={"label_matches": {
        "labels": ["billing", "bug", HOSTILE, "(none)"], "cases": 6,
        "confusion": {"billing": {"billing": 2, "bug": 1, HOSTILE: 0, "(none)": 0},
                      "bug": {"billing": 0, "bug": 1, HOSTILE: 1, "(none)": 1}}}},
)


def test_the_terminal_shows_expected_rows_and_predicted_columns():
    text = confusion_text(REPORT)
    lines = text.splitlines()
    assert lines[0] == "CONFUSION label_matches (rows: expected label, columns: predicted)"
    assert lines[2].split() == ["billing", "2", "1", "0", "0"]
    assert lines[3].split() == ["bug", "0", "1", "1", "1"]
    assert len(lines) == 4  # the label's line break did not make a line
    assert "CONFUSION label_matches" in render_sections(REPORT)


def test_markdown_is_a_table_whose_cells_a_label_cannot_break():
    lines = confusion_markdown(REPORT)
    assert lines[2] == "| expected \\ predicted | billing | bug | &lt;b&gt;x&lt;/b&gt;\\|y z | (none) |"
    assert lines[3] == "|---|---:|---:|---:|---:|"
    assert lines[4:6] == ["| billing | 2 | 1 | 0 | 0 |", "| bug | 0 | 1 | 1 | 1 |"]
    markdown = render_markdown(Decision(Verdict.GO, ()), REPORT)
    assert "**Confusion matrix: label\\_matches**" in markdown and "| bug | 0 | 1 | 1 | 1 |" in markdown


def test_the_html_page_has_the_table_escaped():
    assert confusion_tables(REPORT)[0]["rows"][1] == ("bug", [0, 1, 1, 1])
    page = render_report_html(REPORT)
    assert "<h3>Confusion matrix: label_matches</h3>" in page
    assert '<th class="num">&lt;b&gt;x&lt;/b&gt;|y z</th>' in page
    assert "<b>x</b>" not in page


def test_the_chart_darkens_cells_with_their_count_green_where_right_and_red_where_wrong():
    chart = confusion_tables(REPORT)[0]["chart"]
    cells = {(c["y"] // chart["size"], c["x"] // chart["size"]): c for c in chart["cells"]}
    assert (chart["width"], chart["height"]) == (4 * chart["size"], 2 * chart["size"])
    assert cells[(0, 0)]["right"] and cells[(0, 0)]["opacity"] == 1.0  # billing -> billing: 2, the most
    assert not cells[(0, 1)]["right"] and 0 < cells[(0, 1)]["opacity"] < 1  # billing -> bug: 1
    assert cells[(0, 2)]["opacity"] == 0.0 and cells[(1, 1)]["right"]
    page = render_report_html(REPORT)
    assert page.count('<rect x="') == 8 and 'fill="#cf222e" fill-opacity="0.54"' in page
    assert "<title>expected bug, predicted &lt;b&gt;x&lt;/b&gt;|y z: 1</title>" in page  # labels escaped here too


def test_no_classification_no_matrix():
    plain = RunReport(eval=REPORT.eval, outcomes=REPORT.outcomes)
    assert confusion_text(plain) == "" and confusion_markdown(plain) == [] and confusion_tables(plain) == []
    assert "CONFUSION" not in render_sections(plain)
