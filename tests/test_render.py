"""Renderers: the decision first; quality, cost and latency as separate sections; Markdown for a PR."""

from __future__ import annotations

from conftest import report

from evalkit.core.policy import Policy
from evalkit.core.report import report_from_mapping
from evalkit.gate.decide import decide
from evalkit.render.markdown import render_markdown
from evalkit.render.sections import render_sections
from evalkit.render.text import render_decision

BASE = {"test_priority[a]": "passed", "test_label[a]": "passed", "test_label[b]": "passed"}


def run(outcomes, metrics, execution=None, **key):
    data = report(outcomes, **key) | {"metrics": metrics, "execution": execution or {},
                                      "cases": [{"id": "a", "passed": True}, {"id": "b", "passed": False}]}
    return report_from_mapping(data, "r")


def test_sections_keep_quality_cost_and_latency_apart():
    candidate = run(BASE, {"citation_validity": None, "recall": 0.5},
                    {"cost": {"model_calls": 4, "input_tokens": 100, "output_tokens": 20,
                              "estimated_calls": {"output_tokens": 4}}, "latency": {"measured_calls": 0}})
    text = render_sections(candidate)
    assert text.splitlines()[0] == "QUALITY"
    assert "citation_validity               not measurable" in text and "recall                          0.500" in text
    assert "failing cases                   b" in text
    assert "output_tokens                   20 (estimated for 4 calls: characters / 4)" in text
    assert text.endswith("LATENCY\n  not measured")


def test_markdown_leads_with_the_verdict_and_lists_metric_changes():
    policy = Policy(critical=("test_priority",), block_on_drop=("recall",))
    baseline = run(BASE, {"recall": 0.9})
    candidate = run(BASE | {"test_priority[a]": "failed"}, {"recall": 0.5}, model="other")
    decision = decide(policy, baseline, candidate)
    markdown = render_markdown(decision, candidate, policy.critical)
    assert markdown.startswith("### evalkit: **BLOCK**")
    assert "- recall fell 0.900 -> 0.500" in markdown and "**Changed:** model m -> other" in markdown
    assert "- `test_triage.py::test_priority[a]` (critical)" in markdown
    assert "| recall | 0.900 | 0.500 | -0.400 | regressed |" in markdown
    assert render_decision(decision).splitlines()[0] == "decision: BLOCK"


def test_review_reasons_are_shown_apart_from_block_reasons():
    policy = Policy(review_on_drop=("recall",))
    decision = decide(policy, run(BASE, {"recall": 0.9}), run(BASE, {"recall": 0.8}))
    text = render_decision(decision)
    assert text.splitlines()[:3] == ["decision: REVIEW", "for review:", "  - recall fell 0.900 -> 0.800"]
    assert "**For review**" in render_markdown(decision)
