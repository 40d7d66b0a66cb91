"""Ready-made judges (evalkit.judging.ready_judges) and the pairwise check kind (evalkit.judging.pairwise_check):
their prompts state the anchored levels, their requests carry the prompt (so an edit changes the recorded request),
their verdicts read the judge's answer, and an answer that is not a verdict fails the check with what came."""

from __future__ import annotations

import json

import pytest

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.judging import ready_judges
from evalkit.judging.checks import CheckSpec, judge, judge_pair, planned_judge_calls
from evalkit.judging.pairwise_check import PAIRWISE_SYSTEM
from evalkit.judging.ready_judges import JUDGES, SCORE_SCHEMA, score_verdict, system_prompt

CASE = Case("t-1", {"question": "How long is the refund window?", "context": "Refunds are accepted for 30 days.",
                    "reference": "30 days."})
JUDGE = ModelConfig(name="judge-1", provider="openai", options={"temperature": 0})
ENTRIES = {"faithfulness": {"context": "context"}, "answer-relevancy": {"question": "question"},
           "g-eval": {"criteria": "States the refund window in days"}}


def check(**entry):
    return CheckSpec.model_validate({"name": "c", **entry})


@pytest.mark.parametrize("kind", sorted(JUDGES))
def test_each_prompt_states_every_anchored_level_and_the_answer_form(kind):
    prompt = system_prompt(kind)
    for level, anchor in JUDGES[kind].anchors.items():
        assert f"{level}: {anchor}" in prompt
    assert sorted(JUDGES[kind].anchors) == [1, 2, 3, 4, 5]
    assert '"score": <the level, 1 to 5>' in prompt


@pytest.mark.parametrize("kind", sorted(ENTRIES))
def test_a_ready_judge_is_a_judged_kind_with_one_call_per_case(kind):
    spec = check(**{kind: ENTRIES[kind]})
    assert spec.kind == kind and spec.call == "judge" and spec.judge_metrics == ("c",)
    calls = planned_judge_calls(spec, CASE, "Thirty days.", JUDGE, None)
    assert list(calls) == ["c"]
    request = calls["c"]
    assert request.model == "judge-1" and request.options == {"temperature": 0}
    assert request.response_schema == SCORE_SCHEMA
    assert request.messages[0].content == system_prompt(kind)
    assert "Reply:\nThirty days." in request.messages[1].content


def test_each_judge_is_shown_what_its_kind_reads():
    faithful = planned_judge_calls(check(faithfulness={"context": "context"}), CASE, "r", JUDGE, None)["c"]
    assert faithful.messages[1].content == "Context:\nRefunds are accepted for 30 days.\n\nReply:\nr"
    relevant = planned_judge_calls(check(**{"answer-relevancy": {"question": "question"}}), CASE, "r", JUDGE, None)
    assert relevant["c"].messages[1].content == "Question:\nHow long is the refund window?\n\nReply:\nr"
    steps = planned_judge_calls(check(**{"g-eval": {"criteria": "Names a number", "steps": ["Find the number."]}}),
                                CASE, "r", JUDGE, None)["c"].messages[1].content
    assert steps.startswith("Case t-1: {") and "Criteria: Names a number" in steps
    assert steps.endswith("Evaluation steps:\n1. Find the number.")
    fixed = planned_judge_calls(check(**{"g-eval": {"criteria": "Names a number"}}), CASE, "r", JUDGE, None)
    assert fixed["c"].messages[1].content.endswith("\n".join(f"{n}. {s}" for n, s in
                                                               enumerate(ready_judges.FIXED_STEPS, start=1)))


def test_editing_a_prompt_changes_the_request(monkeypatch):
    spec = check(faithfulness={"context": "context"})
    before = planned_judge_calls(spec, CASE, "r", JUDGE, None)["c"]
    anchors = {**ready_judges.FAITHFULNESS.anchors, 3: "Some claims are supported and others are not."}
    monkeypatch.setitem(ready_judges.JUDGES, "faithfulness",
                        ready_judges.ReadyJudge("faithfulness", "faithfulness to the context",
                                                ready_judges.FAITHFULNESS.task, anchors))
    after = planned_judge_calls(spec, CASE, "r", JUDGE, None)["c"]
    assert after != before and after.messages[1] == before.messages[1]  # the anchor is in the request itself


@pytest.mark.parametrize(("answer", "passed", "message"), [
    ('{"reason": "all claims in the context", "score": 5}', True, ""),
    ('{"reason": "a minor detail added", "score": 4}', True, ""),
    ('{"reason": "says 60 days;\\nthe context says 30", "score": 2}', False,
     "expected faithfulness to the context at level 4 or above (of 5), came 2: says 60 days; the context says 30"),
    ('{"score": 3.0}', False,
     "expected faithfulness to the context at level 4 or above (of 5), came 3: no reason given"),
    ('{"reason": "x", "score": 7}', False, 'expected the judge\'s score {"reason": ..., "score": 1-5}, came '
                                           '{"reason": "x", "score": 7}'),
    ('{"reason": "x", "score": true}', False, 'expected the judge\'s score {"reason": ..., "score": 1-5}, came '
                                              '{"reason": "x", "score": true}'),
    ('{"reason": "x", "score": "4"}', False, 'expected the judge\'s score {"reason": ..., "score": 1-5}, came '
                                             '{"reason": "x", "score": "4"}'),
    ("Score: 4", False, 'expected the judge\'s score as JSON {"reason": ..., "score": 1-5}, came unparseable JSON '
                        "(Expecting value): Score: 4"),
])
def test_the_verdict_reads_the_level_against_the_threshold(answer, passed, message):
    scored = score_verdict("faithfulness", answer, 4)
    assert (scored.passed, scored.message) == (passed, message)


def test_the_check_fails_an_unparseable_answer_and_keeps_the_score_as_a_metric():
    spec = check(**{"g-eval": {"criteria": "Names the number", "pass_at": 3}})
    assert judge(spec, '{"reason": "partly", "score": 3}', CASE).metrics == {"score": 3.0}
    low = judge(spec, '{"reason": "no number", "score": 2}', CASE)
    assert not low.passed and low.message == \
        "expected the criteria at level 3 or above (of 5), came 2: no number"
    broken = judge(spec, '{"reason": "cut', CASE)  # never raises; the score is unmeasured, so counted as such
    assert not broken.passed and broken.metrics == {"score": None} and "unparseable JSON" in broken.message


def test_a_case_without_the_field_a_judge_reads_gets_no_call_and_could_not_run_naming_it():
    spec = check(faithfulness={"context": "passages"})
    assert planned_judge_calls(spec, CASE, "r", JUDGE, None) == {}
    unrun = judge(spec, "unused", CASE)
    assert not unrun.ran and not unrun.passed and unrun.metrics == {"score": None}
    assert unrun.message == "expected case field 'passages' for the judge, but case t-1 has none"


@pytest.mark.parametrize(("entry", "error"), [
    ({"faithfulness": {}}, "context"),
    ({"faithfulness": {"context": "context", "pass_at": 6}}, "pass_at"),
    ({"g-eval": {"criteria": ""}}, "criteria"),
    ({"answer-relevancy": {"question": "q", "extra": 1}}, "extra"),
    ({"faithfulness": {"context": "context"}, "field": "answer"}, "takes no 'field'"),
    ({"pairwise": {"against": "main"}}, "against"),
    ({"pairwise": {"against": "baseline", "require": "better"}}, "require"),
])
def test_a_bad_judge_entry_is_refused(entry, error):
    with pytest.raises(ValueError, match=error):
        check(**entry)


# -- pairwise ------------------------------------------------------------------------------------


def test_pairwise_plans_both_orders_against_the_baseline_or_a_case_field():
    spec = check(pairwise={"against": "baseline", "criterion": "Which states the window?", "question": "question"})
    assert spec.kind == "pairwise" and spec.judge_metrics == ("c/new-first", "c/old-first")
    calls = planned_judge_calls(spec, CASE, "NEW", JUDGE, "OLD")
    assert list(calls) == ["c/new-first", "c/old-first"]
    new_first, old_first = (calls[m].messages[1].content for m in calls)
    assert new_first.index("NEW") < new_first.index("OLD") and old_first.index("OLD") < old_first.index("NEW")
    assert new_first.startswith("Question:\nHow long is the refund window?") and "Which states the window?" in new_first
    assert calls["c/new-first"].messages[0].content == PAIRWISE_SYSTEM
    assert planned_judge_calls(spec, CASE, "OLD", JUDGE, "OLD") == {}  # the same reply: a tie without asking
    assert planned_judge_calls(spec, CASE, "NEW", JUDGE, None) == {}  # no baseline reply: nothing to compare
    field = check(pairwise={"against": {"case": "reference"}})
    assert "30 days." in planned_judge_calls(field, CASE, "NEW", JUDGE, None)["c/new-first"].messages[1].content


@pytest.mark.parametrize(("new_first", "old_first", "require", "passed", "outcome", "message"), [
    ("first", "second", "no-loss", True, "win", ""),
    ("second", "first", "no-loss", False, "loss",
     "expected no loss against the baseline's reply, came a loss (the judge preferred the baseline's reply in both "
     "orders)"),
    ("first", "first", "no-loss", True, "tie", ""),  # the preference flipped with the order: a tie
    ("first", "first", "win", False, "tie",
     "expected a win against the baseline's reply, came a tie (the judge's preference flipped with the order)"),
    ('{"verdict": "first"}', '{"verdict": "second"}', "win", True, "win", ""),
    (None, None, "no-loss", True, "tie", ""),
    (None, None, "win", False, "tie", "expected a win against the baseline's reply, came the same reply as the "
                                      "baseline's reply"),
])
def test_pairwise_verdicts(new_first, old_first, require, passed, outcome, message):
    spec = check(pairwise={"against": "baseline", "require": require})
    verdict = judge_pair(spec, CASE, new_first, old_first)
    assert (verdict.passed, verdict.message) == (passed, message)
    assert verdict.metrics[outcome] == 1.0 and sum(verdict.metrics[o] for o in ("win", "tie", "loss")) == 1.0
    assert verdict.metrics["disagree"] == (1.0 if (new_first, old_first) == ("first", "first") else 0.0)


def test_a_pairwise_answer_that_is_no_verdict_fails_with_what_came():
    verdict = judge_pair(check(pairwise={"against": "baseline"}), CASE, "The first one, clearly.", "second")
    # its outcomes are unmeasured on the case, and counted so
    assert not verdict.passed and verdict.metrics == {"win": None, "tie": None, "loss": None, "disagree": None}
    assert verdict.message == ('expected the judge\'s verdict first, second or tie in both orders, came "The first '
                               'one, clearly." and "second"')


def test_answers_are_one_line_whatever_the_judge_wrote():
    long_reason = json.dumps({"reason": "word " * 100 + "\n\n end", "score": 1})
    message = score_verdict("answer-relevancy", long_reason, 4).message
    assert "\n" not in message and message.endswith("...") and len(message) < 260


@pytest.mark.parametrize("kind", sorted(JUDGES))
def test_every_anchor_passes_the_rubric_blocks_rules_for_observable_anchors(kind):
    import re

    from evalkit.judging.rubric import MIN_ANCHOR_CHARS, VAGUE_WORDS

    anchors = JUDGES[kind].anchors
    for level, anchor in anchors.items():
        assert len(anchor) >= MIN_ANCHOR_CHARS, (kind, level)
        assert not VAGUE_WORDS & set(re.findall(r"[a-z]+", anchor.lower())), (kind, level)
    assert len({" ".join(a.lower().split()) for a in anchors.values()}) == len(anchors)  # each level its own
