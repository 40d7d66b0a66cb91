"""A judge that does not tell replies apart is warned about (evalkit.judging.judge_health), in every rendering."""

from __future__ import annotations

import json
from typing import Any

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.judging.judge_health import MIN_CASES, judge_warnings
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.render.markdown import render_markdown
from evalkit.render.report_page import render_report_html
from evalkit.render.text import render_decision

REPLY = "The warranty covers the frame for five years and the battery for two years."


def _case(i: int, score: int, reason: str, reply: str = REPLY, metric: str = "faithfulness") -> dict[str, Any]:
    return {"id": f"c{i}", "status": "scored", "passed": score >= 4, "output": reply,
            "judge_replies": {metric: json.dumps({"reason": reason, "score": score})}}


def test_one_level_for_nearly_every_case_is_warned_about_with_its_counts() -> None:
    cases = [_case(i, 1, "The reply contradicts the context.") for i in range(19)] + [_case(19, 2, "Unsupported.")]
    [warning] = judge_warnings(cases)
    assert (warning.metric, warning.kind, warning.cases, warning.count, warning.verdict) == \
        ("faithfulness", "one_verdict", 20, 19, "score 1")
    assert warning.message().startswith("judge faithfulness: score 1 for 19 of 20 cases")
    assert "evalkit calibrate" in warning.message()


def test_verdicts_that_vary_or_too_few_cases_are_not_warned_about() -> None:
    varied = [_case(i, 1 + i % 5, "The context states the warranty terms.") for i in range(20)]
    assert judge_warnings(varied) == []
    few = [_case(i, 1, "The reply contradicts the context.") for i in range(MIN_CASES - 1)]
    assert judge_warnings(few) == []
    # 17 of 20 is under nine in ten
    mostly = [_case(i, 5, "Every claim is in the context.") for i in range(17)] + \
        [_case(17 + i, 3, "One claim is not in the context.") for i in range(3)]
    assert judge_warnings(mostly) == []


def test_reasons_that_repeat_the_reply_are_warned_about() -> None:
    cases = [_case(i, 1 + i % 5, REPLY) for i in range(10)]  # varied levels, every reason the reply itself
    [warning] = judge_warnings(cases)
    assert (warning.kind, warning.cases, warning.count) == ("echo", 10, 10)
    assert "the reason repeats the reply it judged in 10 of 10 cases" in warning.message()
    # a reason that quotes a few of the reply's words to judge it is no echo
    judged = [_case(i, 1 + i % 5, "The context says nothing of a battery warranty, so that claim is unsupported.")
              for i in range(10)]
    assert judge_warnings(judged) == []


def test_answers_in_other_forms_are_not_read() -> None:
    cases = [{"id": f"c{i}", "status": "scored", "output": REPLY,
              "judge_replies": {"rubric": '{"relevance": 2, "format": 2}'}} for i in range(20)]
    assert judge_warnings(cases) == []


def _report(prompt: str, cases: list[dict[str, Any]]) -> RunReport:
    tests = [{"nodeid": f"t.py::test_faithful[{c['id']}]", "outcome": "passed" if c["passed"] else "failed"}
             for c in cases]
    return report_from_mapping({"eval": {"suite": "s", "dataset_sha": "d", "judge_model": "smollm2",
                                         "prompt_sha": prompt}, "tests": tests, "cases": cases}, f"{prompt}.json")


def test_the_gate_warns_in_the_terminal_decision_md_and_report_html() -> None:
    cases = [_case(i, 1, REPLY) for i in range(20)]
    baseline, candidate = _report("p1", cases), _report("p2", cases)
    decision = decide(Policy(), baseline, candidate)
    found = [f for f in decision.findings if f.rule == "judge_health"]
    assert [f.figures["kind"] for f in found] == ["one_verdict", "echo"]
    first = found[0].message
    assert first in render_decision(decision)
    md = render_markdown(decision, candidate)
    assert "- judge faithfulness: score 1 for 20 of 20 cases, so its verdicts barely vary" in md
    assert "evalkit calibrate" in md
    assert "judge faithfulness: score 1 for 20 of 20 cases" in render_report_html(candidate, decision, baseline)
    # a run that was not gated still shows them
    assert "judge faithfulness: score 1 for 20 of 20 cases" in render_report_html(candidate)
