"""Where two trajectories of a case part (evalkit.records.trajectory.first_difference), and a case's steps as
report.html and decision.md show them (evalkit.render.trajectory_view)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from helpers.bounded import evalkit_bounded
from helpers.html_reports import agent_pair
from hypothesis import given
from hypothesis import strategies as st

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.records.report_reader import report_from_mapping
from evalkit.records.trajectory import (
    FinalAnswer,
    ModelCall,
    ToolCall,
    ToolResult,
    Trajectory,
    first_difference,
    what_it_did,
)
from evalkit.render import trajectory_view as view
from evalkit.render.markdown import render_markdown
from evalkit.render.report_page import render_report_html


def _run(*steps: Any) -> Trajectory:
    return Trajectory(steps=steps)


LOOKUP = (ModelCall(call_id="task/a@1", input_tokens=40), ToolCall(id="call_1", tool="lookup", arguments={"id": 1}),
          ToolResult(call_id="call_1", content='{"status": "shipped"}'), ModelCall(call_id="task/a@2"),
          FinalAnswer(text="shipped"))


def test_the_same_behaviour_does_not_part_whatever_its_ids_tokens_cost_and_time():
    again = (ModelCall(call_id="task/a#1@1", input_tokens=99, cost_usd=0.5, milliseconds=812.0, model="other"),
             ToolCall(id="call_zz", tool="lookup", arguments={"id": 1}, signature="opaque"),
             ToolResult(call_id="call_zz", content='{"status": "shipped"}'), ModelCall(call_id="task/a#1@2"),
             FinalAnswer(text="shipped"))
    assert first_difference(_run(*LOOKUP), _run(*again)) is None


@pytest.mark.parametrize(("number", "step"), [
    (2, ToolCall(id="call_1", tool="lookup_customer", arguments={"id": 1})),  # another tool
    (2, ToolCall(id="call_1", tool="lookup", arguments={"id": 2})),  # other arguments
    (2, ToolCall(id="call_1", tool="lookup", arguments={"id": 1.0})),  # 1.0 is not 1 to a schema
    (2, ToolCall(id="call_1", tool="lookup", arguments={"id": True})),  # nor is true
    (2, ToolCall(id="call_1", tool="lookup", arguments='{"id": 1}')),  # text the model wrote, not JSON
    (3, ToolResult(call_id="call_1", content='{"status": "lost"}')),  # the tool returned something else
    (3, ToolResult(call_id="call_1", content='{"status": "shipped"}', error=True)),  # the same text, as an error
    (5, FinalAnswer(text="lost")),  # the answer
    (2, ModelCall(call_id="task/a@2")),  # a step of another kind
])
def test_the_first_step_that_did_something_else_is_where_they_part(number, step):
    changed = list(LOOKUP)
    changed[number - 1] = step
    assert first_difference(_run(*LOOKUP), _run(*changed)) == number
    assert first_difference(_run(*changed), _run(*LOOKUP)) == number


def test_arguments_in_another_key_order_are_the_same_call():
    a = _run(ToolCall(id="1", tool="t", arguments={"a": 1, "b": [1, 2]}))
    b = _run(ToolCall(id="2", tool="t", arguments={"b": [1, 2], "a": 1}))
    assert first_difference(a, b) is None
    assert first_difference(a, _run(ToolCall(id="2", tool="t", arguments={"b": [2, 1], "a": 1}))) == 1


def test_where_one_side_ends_first_they_part_at_the_step_after_its_last():
    assert first_difference(_run(*LOOKUP[:3]), _run(*LOOKUP)) == 4
    assert first_difference(_run(*LOOKUP), _run(*LOOKUP[:1])) == 2
    assert first_difference(_run(), _run(*LOOKUP)) == 1
    assert first_difference(_run(), _run()) is None


def test_a_view_sets_the_sides_row_by_row_and_marks_the_parting_step():
    old = _run(*LOOKUP)
    new = _run(*LOOKUP[:1], ToolCall(id="c", tool="lookup", arguments={"id": 2}),
               ToolResult(call_id="c", content="no such order", error=True, error_message="KeyError: 2"))
    shown = view.trajectory_view(old, new, has_baseline=True)
    assert shown is not None and shown.beside and shown.parts_at == 2
    assert [n for n, _, _ in shown.rows] == [1, 2, 3, 4, 5]
    assert [(b.kind if b else None, c.kind if c else None) for _, b, c in shown.rows][3:] == [
        ("model_call", None), ("final_answer", None)]
    error = shown.rows[2][2]
    assert error is not None and error.error and error.title == "tool error"
    assert error.text == "KeyError: 2\nno such order"
    assert '"id": 2' in (shown.rows[1][2].text or "")
    assert shown.rows[0][1] is not None and "40 in, ? out tokens" in shown.rows[0][1].facts


def test_without_the_baseline_s_trajectory_the_candidate_s_stands_alone_and_says_why():
    alone = view.trajectory_view(None, _run(*LOOKUP), has_baseline=True)
    assert alone is not None and not alone.beside and alone.parts_at is None
    assert all(b is None for _, b, _ in alone.rows) and len(alone.rows) == len(LOOKUP)
    assert alone.notes == ("the baseline report has no trajectory for this case",)
    ungated = view.trajectory_view(None, _run(*LOOKUP), has_baseline=False)
    assert ungated is not None and ungated.notes == ()
    assert view.trajectory_view(None, None, has_baseline=True) is None  # not an agent case: no block at all
    same = view.trajectory_view(_run(*LOOKUP), _run(*LOOKUP), has_baseline=True)
    assert same is not None and same.parts_at is None and "same steps" in same.notes[0]


def test_a_long_trajectory_is_cut_but_the_parting_step_is_always_shown():
    long_result = "r" * 3_000
    shared = [ToolResult(call_id="x", content=long_result) for _ in range(40)]  # 40 x 2 sides x 2,000 shown
    old = _run(*shared, FinalAnswer(text="yes"), *shared)
    new = _run(*shared, FinalAnswer(text="no"), *shared)
    shown = view.trajectory_view(old, new, has_baseline=True)
    assert shown is not None and shown.parts_at == 41
    numbers = [n for n, _, _ in shown.rows]
    assert 41 in numbers and numbers[0] == 41 - view.CONTEXT_STEPS
    assert shown.skipped_before == numbers[0] - 1
    assert shown.left_out == 81 - numbers[-1] > 0
    assert shown.rows[0][2] is not None and shown.rows[0][2].cut == 3_000 - view.STEP_CHARS
    shown_chars = sum(len(s.text or "") for _, b, c in shown.rows for s in (b, c) if s is not None)
    assert shown_chars <= view.TRAJECTORY_CHARS + 2 * view.STEP_CHARS


def test_a_trajectory_that_cannot_be_read_is_named_not_a_crash():
    baseline, candidate = agent_pair()
    candidate["trajectories"]["task/email-1001"]["steps"][1] = {"kind": "tool_call", "tool": 7}
    report = report_from_mapping(candidate, "candidate")
    why = view.trajectory_of(report, "email-1001")
    assert isinstance(why, str) and "email-1001" in why and "regenerate" in why
    page = render_report_html(report, decide(Policy(), report_from_mapping(baseline, "b"), report),
                              report_from_mapping(baseline, "b"))
    assert "cannot be read (steps.1.tool_call" in page
    assert view.trajectory_of(report, "no-such-case") is None


def _decided() -> tuple[Any, Any, Any]:
    baseline, candidate = (report_from_mapping(side, name) for side, name in zip(agent_pair(), ("b", "c"),
                                                                                strict=True))
    return baseline, candidate, decide(Policy(), baseline, candidate)


def test_decision_md_names_the_parting_step_of_each_regressed_agent_case():
    baseline, candidate, decision = _decided()
    text = render_markdown(decision, candidate, (), baseline=baseline)
    assert "**Where regressed agent cases part from the baseline**" in text
    assert ('- `email-1001`: step 5: baseline `tool call lookup_customer {"customer_id": 1}`, '
            'candidate `tool call lookup_customer {"customer_id": 2}`') in text
    assert ('- `status-1001`: step 2: baseline `tool call lookup_order {"order_id": 1001}`, '
            'candidate `tool call lookup_order {"order_id": "order #1001"}`') in text


def test_decision_md_says_when_a_regressed_case_took_the_same_steps_and_is_silent_without_trajectories():
    baseline, candidate = agent_pair()
    candidate["trajectories"] = copy.deepcopy(baseline["trajectories"])
    b, c = report_from_mapping(baseline, "b"), report_from_mapping(candidate, "c")
    text = render_markdown(decide(Policy(), b, c), c, (), baseline=b)
    assert "- `email-1001`: the same steps as the baseline (the difference is elsewhere)" in text
    for side in (baseline, candidate):
        del side["trajectories"]
    b, c = report_from_mapping(baseline, "b"), report_from_mapping(candidate, "c")
    assert "part from the baseline" not in render_markdown(decide(Policy(), b, c), c, (), baseline=b)


def test_decision_md_counts_the_regressed_agent_cases_past_its_limit(monkeypatch):
    monkeypatch.setattr(view, "MAX_CASES", 1)
    monkeypatch.setattr("evalkit.render.markdown.MAX_CASES", 1)
    baseline, candidate, decision = _decided()
    text = render_markdown(decision, candidate, (), baseline=baseline)
    assert text.count(": step ") == 1 and "- 1 more regressed agent case(s)" in text


def test_report_html_shows_both_sides_and_the_parting_row():
    baseline, candidate, decision = _decided()
    page = render_report_html(candidate, decision, baseline)
    assert page.count("<h4>Trajectory: baseline beside candidate</h4>") == 2
    assert page.count('<tr class="parts"') == 2
    assert '<tr class="parts" data-step="5">' in page and '<tr class="parts" data-step="2">' in page
    assert "tool error</strong>" in page and "order #1001" in page
    alone = render_report_html(candidate)  # not gated: the candidate's steps alone
    assert "<h4>Trajectory</h4>" in alone and 'class="parts"' not in alone


@pytest.mark.slow
def test_agents_that_looped_for_thousands_of_steps_make_a_page_of_bounded_size(tmp_path):
    """Ten regressed cases of 3,000 steps each, parting at their last step: `evalkit gate --html` (bounded in
    memory and time) writes a page that shows each parting step and counts the rest, a few MB at most."""
    baseline, candidate = agent_pair()
    for side, answer in ((baseline, "shipped"), (candidate, "lost")):
        side["cases"] = [{**c, "id": f"loop-{i}"} for i, c in enumerate(side["cases"] * 2) if i < 10]
        steps = [{"kind": "tool_call", "id": f"c{n}", "tool": "lookup_order", "arguments": {"order_id": n}}
                 if n % 2 else {"kind": "tool_result", "call_id": f"c{n}", "content": "r" * 300} for n in range(2_999)]
        side["trajectories"] = {f"task/loop-{i}": {"steps": [*steps, {"kind": "final_answer", "text": answer}]}
                                for i in range(10)}
        side["tests"] = [{"nodeid": f"checks.yaml::answers[loop-{i}]",
                          "outcome": "passed" if side is baseline else "failed"} for i in range(10)]
        for case in side["cases"]:
            case.update(passed=side is baseline, checks={"answers": "passed" if side is baseline else "failed"})
    paths = []
    for name, side in (("baseline.json", baseline), ("candidate.json", candidate)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(side), encoding="utf-8")
    done = evalkit_bounded("gate", *map(str, paths), "--html", str(tmp_path / "report.html"),
                           "--markdown", str(tmp_path / "decision.md"))
    assert done.returncode == 1, done.stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('<tr class="parts" data-step="3000">') == 10
    assert page.count("Steps 1 to 2997: the same on both sides, not shown.") == 10
    assert len(page.encode()) < 3_000_000
    assert (tmp_path / "decision.md").read_text().count(": step 3000: baseline `final answer: shipped`") == 10


_STEPS = st.one_of(
    st.builds(ModelCall, call_id=st.sampled_from(["a", "b"]), input_tokens=st.none() | st.integers(0, 9)),
    st.builds(ToolCall, id=st.sampled_from(["1", "2"]), tool=st.sampled_from(["t", "u"]),
              arguments=st.none() | st.integers(0, 2) | st.dictionaries(st.sampled_from("xy"), st.integers(0, 2))),
    st.builds(ToolResult, call_id=st.just("1"), content=st.sampled_from(["", "ok", "no"]), error=st.booleans()),
    st.builds(FinalAnswer, text=st.sampled_from(["yes", "no"])))


@given(st.lists(_STEPS, max_size=6), st.lists(_STEPS, max_size=6))
def test_the_parting_step_is_the_first_whose_doing_differs_either_way_round(a, b):
    old, new = _run(*a), _run(*b)
    step = first_difference(old, new)
    assert step == first_difference(new, old)
    if step is None:
        assert len(a) == len(b) and all(what_it_did(x) == what_it_did(y) for x, y in zip(a, b, strict=True))
        return
    assert all(what_it_did(x) == what_it_did(y) for x, y in zip(a[:step - 1], b[:step - 1], strict=True))
    assert step > min(len(a), len(b)) or what_it_did(a[step - 1]) != what_it_did(b[step - 1])
    assert first_difference(old, old) is None
