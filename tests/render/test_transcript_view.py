"""A conversation's transcript in report.html and decision.md (evalkit.render.transcript_view, issue 39 item 2): the
turns of both sides with the first failing turn marked, beside the baseline's with the first differing turn marked;
decision.md names each regressed conversation's first failing turn; model and user text stays text.

The pair is the support chat's shipped baseline and a candidate authored from it (tests/helpers/html_reports.conversation_pair):
`remembers-the-number` forgets order 1007 at turn 2, answering a hostile user turn."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers.html_reports import ESCAPE, IMG, LINK, RTL, SCRIPT, conversation_pair
from markupsafe import escape

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.gate.decision import Decision
from evalkit.records.report_reader import RunReport, report_from_mapping
from evalkit.records.trajectory import AssistantTurn, ModelCall, Trajectory, UserTurn
from evalkit.render.markdown import render_markdown
from evalkit.render.report_page import render_report_html
from evalkit.render.trajectory_view import STEP_CHARS, TRAJECTORY_CHARS
from evalkit.render.transcript_view import FailingTurn, case_messages, failing_turn, transcript_view


def _talk(*turns: tuple[str, str | None]) -> Trajectory:
    steps: list[Any] = []
    for n, (said, answered) in enumerate(turns, 1):
        steps += [UserTurn(turn=n, text=said), ModelCall(call_id=f"task/c@{n}")]
        if answered is not None:
            steps.append(AssistantTurn(turn=n, text=answered))
    return Trajectory(steps=tuple(steps))


def _pair() -> tuple[RunReport, RunReport, Decision]:
    before, after = conversation_pair()
    baseline, candidate = report_from_mapping(before, "baseline"), report_from_mapping(after, "candidate")
    return baseline, candidate, decide(Policy(), baseline, candidate)


# --- the first failing turn -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("messages", "turn"), [
    ([("short", "Failed: turn 3 of 4: expected 0 to 10 characters, came 12"),
      ("keeps", "Failed: turn 2 of 4: expected a text containing \"1007\"")], FailingTurn(2, ("keeps",))),
    ([("kept", "turn 2: expected knowledge retention at level 4 or above (of 5), came 2: forgot it"),
      ("short", "Failed: turn 2 of 3: too long")], FailingTurn(2, ("kept", "short"))),
    ([("kept", "Failed: 1 of 3 judge repeats passed; turn 4: expected knowledge retention ...")], FailingTurn(4, ("kept",))),
    # a message that only quotes a turn, as a reply may, names none: evalkit's own prefix leads, or nothing does
    ([("resolves", 'Failed: expected a text containing "refund", came "turn 1: ignore the check"')], None),
    ([("resolves", "Failed: expected a match of /x/, came 'see turn 2 of 3: above'")], None),
    ([], None),
])
def test_the_first_failing_turn_is_the_lowest_a_failure_names_by_evalkit_s_prefix(
        messages: list[tuple[str, str]], turn: FailingTurn | None) -> None:
    assert failing_turn(messages) == turn


def test_messages_are_grouped_by_case_and_check() -> None:
    assert case_messages({"checks.yaml::short_turns[c-1]": "m1", "checks.yaml::keeps[c-1]": "m2",
                          "test_x.py::test_plain": "m3"}) == {"c-1": [("short_turns", "m1"), ("keeps", "m2")]}


# --- the view ---------------------------------------------------------------------------------------------------------

def test_the_candidate_s_transcript_beside_the_baseline_s_with_both_turns_marked() -> None:
    before = _talk(("Hi, order 1007.", "Noted."), ("Status?", "Order 1007 shipped."), ("Thanks", "Bye"))
    after = _talk(("Hi, order 1007.", "Noted."), ("Status?", "Which order?"), ("Thanks", "Bye"))
    view = transcript_view(before, after, True, FailingTurn(2, ("keeps",)))
    assert view.beside and view.failing == 2 and view.failing_checks == ("keeps",) and view.parts_at == 2
    assert [(n, old.assistant if old else None, new.assistant if new else None) for n, old, new in view.rows] == [
        (1, "Noted.", "Noted."), (2, "Order 1007 shipped.", "Which order?"), (3, "Bye", "Bye")]
    alone = transcript_view(None, after, False, None)
    assert not alone.beside and alone.failing is None and alone.parts_at is None
    assert [old for _, old, _ in alone.rows] == [None, None, None]


def test_a_closing_user_turn_without_an_answer_and_a_shorter_side_are_rows_too() -> None:
    before = _talk(("Refund 1001", "Done."), ("Thanks. GOAL REACHED", None))
    after = _talk(("Refund 1001", "Which order?"), ("1001", "Done."), ("Thanks. GOAL REACHED", None))
    view = transcript_view(before, after, True, None)
    assert [n for n, _, _ in view.rows] == [1, 2, 3] and view.parts_at == 1
    _, old_two, new_two = view.rows[1]
    assert old_two is not None and old_two.assistant is None and old_two.user == "Thanks. GOAL REACHED"
    assert view.rows[2][1] is None and view.rows[2][2] is not None


def test_a_turn_the_transcript_lacks_is_not_marked_but_said() -> None:
    view = transcript_view(None, _talk(("Hi", "Hello")), False, FailingTurn(4, ("keeps",)))
    assert view.failing is None and "names turn 4, which this transcript does not have" in view.notes[0]


def test_a_long_conversation_is_cut_and_the_failing_turn_is_always_shown() -> None:
    long = _talk(*[(f"user {n} " + "u" * 3_000, f"assistant {n} " + "a" * 3_000) for n in range(1, 41)])
    view = transcript_view(None, long, False, FailingTurn(35, ("c",)))
    shown = [n for n, _, _ in view.rows]
    assert 35 in shown and shown[0] > 1 and view.skipped_before == shown[0] - 1
    assert view.left_out == 40 - shown[-1]
    side = view.rows[0][2]
    assert side is not None and side.user is not None and len(side.user) == STEP_CHARS and side.user_cut > 0
    assert sum(len(s.user or "") + len(s.assistant or "") for _, _, s in view.rows if s) < 2 * TRAJECTORY_CHARS


# --- report.html and decision.md --------------------------------------------------------------------------------------

def test_report_html_marks_the_first_failing_turn_beside_the_baseline_s_and_escapes_every_turn() -> None:
    baseline, candidate, decision = _pair()
    page = render_report_html(candidate, decision, baseline)
    panel = page[page.index("<code>remembers-the-number</code></summary>"):]
    panel = panel[:panel.index("</details>")]
    assert "<h4>Transcript: baseline beside candidate</h4>" in panel
    assert "The first failing turn: turn 2 (<code>keeps_the_order_number</code>)." in panel
    assert "The candidate's conversation parts from the baseline's at turn 2." in panel
    marked = re.findall(r'<tr class="([^"]*)" data-turn="(\d+)">', panel)
    assert marked == [("", "1"), ("failing parts", "2"), ("", "3")]
    assert '<span class="tag failing">first failing turn</span>' in panel
    assert "<table class=\"trajectory" not in panel  # a conversation is shown as its turns, not as steps
    # every hostile turn is text: no element the report made, the page's one script alone
    assert page.count("<script") == 1 and "<img" not in page and '<a href="javascript' not in page
    for text in (ESCAPE, IMG, LINK, SCRIPT):
        assert str(escape(text)) in panel, text  # as the templates escape it, shown whole
    assert RTL.replace("\u202e", "\\u202e") in panel and "\u202e" not in page
    assert "{{ 7*7 }}" in panel  # never read as a template


def test_a_run_that_was_not_gated_shows_the_candidate_s_turns_alone() -> None:
    _, candidate, _ = _pair()
    page = render_report_html(candidate)
    assert "<h4>Transcript</h4>" in page and "The first failing turn: turn 2" in page
    table = page[page.index('<table class="transcript'):]
    assert table.startswith('<table class="transcript">')  # not beside
    assert "<th>baseline</th>" not in table[:table.index("</table>")]


def test_decision_md_names_each_regressed_conversation_s_first_failing_turn() -> None:
    baseline, candidate, decision = _pair()
    comment = render_markdown(decision, candidate, (), None, baseline)
    assert "**Where regressed conversations first fail**" in comment
    line = next(line for line in comment.splitlines() if line.startswith("- `remembers-the-number`: turn"))
    assert line.startswith("- `remembers-the-number`: turn 2 (`keeps_the_order_number`): candidate `Which order do "
                           "you mean? <img src=x")
    assert line.endswith(", baseline `Order 1007 is shipped.`")
    assert "\u202e" not in comment and "\\u202e" in line  # a direction override cannot reorder the comment
    assert "Where regressed agent cases part" not in comment  # its turns name it, not its steps
