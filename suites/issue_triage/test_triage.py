"""Checks over the model's triage of each issue (replayed by default: no model call)."""

import pytest
from task import Faithfulness, Triage

MAX_SUMMARY_WORDS = 20


def test_reply_matches_schema(task_reply):
    Triage.model_validate_json(task_reply)


def test_label(case, output):
    assert output.label == case.label


def test_priority(case, output):
    assert output.priority == case.priority


def test_summary_is_short_and_specific(case, output):
    words = output.summary.split()
    assert len(words) <= MAX_SUMMARY_WORDS, f"summary has {len(words)} words: {output.summary!r}"
    missing = [term for term in case.must_mention if term.lower() not in output.summary.lower()]
    assert not missing, f"summary lacks {missing}: {output.summary!r}"


@pytest.mark.cases(lambda case: case.get("judged", False))
def test_summary_is_faithful(case, judge_reply):
    verdict = Faithfulness.model_validate_json(judge_reply("faithfulness"))
    assert verdict.faithful, verdict.reason
