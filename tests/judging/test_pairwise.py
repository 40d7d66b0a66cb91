"""Pairwise judging with the order swapped: a biased stand-in judge must not win on position alone."""

from __future__ import annotations

from collections import Counter

import pytest

from evalkit.core.errors import InputError
from evalkit.judging.pairwise import (
    NEW_FIRST,
    OLD_FIRST,
    VERDICT_SCHEMA,
    PairOutcome,
    PairVerdict,
    combine,
    pairwise_prompts,
    parse_verdict,
)

SHORT = "Returns take 30 days."
PADDED = "Returns take 30 days. Returns take 30 days. We are happy to explain our returns."
EQUAL_A, EQUAL_B = "Returns: 30 days.", "Refunds: 14 days."  # same length; only the first is current policy
PAIRS = [(SHORT, PADDED), (PADDED, SHORT), (EQUAL_A, EQUAL_B), (SHORT, SHORT)]  # (new, old)


def toy_judge(first: str, second: str) -> str:
    """A STAND-IN, not a judge: prefers more words, and gives the first answer a 3-word head start."""
    a, b = len(first.split()) + 3, len(second.split())
    return "first" if a > b else "second" if b > a else "tie"


def first_judge(first: str, second: str) -> str:
    """A STAND-IN biased purely by position: always picks whatever it reads first."""
    return "first"


def second_judge(first: str, second: str) -> str:
    """A STAND-IN biased purely by position the other way: always picks the second answer."""
    return "second"


def longer_judge(first: str, second: str) -> str:
    """A STAND-IN biased purely by length: picks the answer with more words, whatever its position."""
    a, b = len(first.split()), len(second.split())
    return "first" if a > b else "second" if b > a else "tie"


def content_judge(first: str, second: str) -> str:
    """A STAND-IN that judges content: the current policy (30 days) is right, whatever the order or length."""
    a, b = "30 days" in first, "30 days" in second
    return "first" if a and not b else "second" if b and not a else "tie"


def both_orders(judge, new: str, old: str) -> PairVerdict:
    """What a suite does: ask the judge with the new output first and with it second, then `combine`."""
    return combine(judge(new, old), judge(old, new))


def counts(judge, pairs) -> dict[str, int]:
    verdicts = [both_orders(judge, new, old) for new, old in pairs]
    outcomes = Counter(str(v.outcome) for v in verdicts)
    return {"win": outcomes["win"], "tie": outcomes["tie"], "loss": outcomes["loss"],
            "disagree": sum(v.disagree for v in verdicts)}


# --- the printed examples ---

# The two checks below pin the authored stand-in judge (defined above) to the biases it was written with; they test
# the fixture, not evalkit, so that the evalkit checks after them are known to face a biased judge.

def test_fixture_toy_judge_is_biased_by_position_and_length():
    assert (toy_judge(EQUAL_A, EQUAL_B), toy_judge(EQUAL_B, EQUAL_A)) == ("first", "first")  # position
    assert (toy_judge(SHORT, PADDED), toy_judge(PADDED, SHORT)) == ("second", "first")  # length


def test_fixture_one_order_only_would_credit_the_new_output_three_times():
    assert sum(toy_judge(new, old) == "first" for new, old in PAIRS) == 3


def test_both_orders_reproduce_the_printed_counts():
    assert counts(toy_judge, PAIRS) == {"win": 1, "tie": 2, "loss": 1, "disagree": 2}


def test_each_pair_alone():
    assert both_orders(toy_judge, SHORT, PADDED) == PairVerdict(outcome=PairOutcome.LOSS, disagree=False)
    assert both_orders(toy_judge, PADDED, SHORT) == PairVerdict(outcome=PairOutcome.WIN, disagree=False)
    assert both_orders(toy_judge, EQUAL_A, EQUAL_B) == PairVerdict(outcome=PairOutcome.TIE, disagree=True)
    assert both_orders(toy_judge, SHORT, SHORT) == PairVerdict(outcome=PairOutcome.TIE, disagree=True)


# --- biased stand-in judges ---

@pytest.mark.parametrize("judge", [first_judge, second_judge])
@pytest.mark.parametrize("new, old", PAIRS + [(EQUAL_B, EQUAL_A), ("", PADDED)])
def test_a_position_biased_judge_never_decides_a_pair(judge, new, old):
    assert both_orders(judge, new, old) == PairVerdict(outcome=PairOutcome.TIE, disagree=True)


def test_a_position_biased_judge_scores_only_disagreements():
    assert counts(first_judge, PAIRS) == {"win": 0, "tie": 4, "loss": 0, "disagree": 4}


def test_a_length_biased_judge_cannot_win_on_its_position_head_start():
    # The toy judge's 3-word head start is pure position bias: with lengths within it, the verdict flips.
    new, old = "Refunds take 14 days.", "Returns take 30 days from delivery."
    assert (toy_judge(new, old), toy_judge(old, new)) == ("first", "first")
    assert both_orders(toy_judge, new, old) == PairVerdict(outcome=PairOutcome.TIE, disagree=True)


def test_the_swap_does_not_remove_length_bias():
    # Documented limitation: a judge that prefers more words prefers them in both orders, so padding wins.
    # The order swap controls position only; the judge prompt asks the judge not to reward length.
    assert both_orders(longer_judge, PADDED, SHORT).outcome is PairOutcome.WIN
    assert both_orders(longer_judge, SHORT, PADDED).outcome is PairOutcome.LOSS


def test_a_judge_that_reads_content_wins_in_both_orders_whatever_the_length():
    assert both_orders(content_judge, EQUAL_A, EQUAL_B) == PairVerdict(outcome=PairOutcome.WIN, disagree=False)
    assert both_orders(content_judge, "Refunds: 14 days, as explained on our long returns page.", SHORT).outcome \
        is PairOutcome.LOSS


def test_the_judge_is_called_once_in_each_order():
    calls = []

    def recording_judge(first: str, second: str) -> str:
        calls.append((first, second))
        return "tie"

    assert both_orders(recording_judge, "new", "old") == PairVerdict(outcome=PairOutcome.TIE, disagree=False)
    assert calls == [("new", "old"), ("old", "new")]


# --- combining verdict texts (what a suite's check does with the two recorded judge replies) ---

@pytest.mark.parametrize("new_first, old_first, outcome, disagree", [
    ("first", "second", PairOutcome.WIN, False),
    ("second", "first", PairOutcome.LOSS, False),
    ("tie", "tie", PairOutcome.TIE, False),
    ("first", "first", PairOutcome.TIE, True),
    ("second", "second", PairOutcome.TIE, True),
    ("first", "tie", PairOutcome.TIE, True),
    ("tie", "first", PairOutcome.TIE, True),
])
def test_combine_every_verdict_pair(new_first, old_first, outcome, disagree):
    assert combine(new_first, old_first) == PairVerdict(outcome=outcome, disagree=disagree)


# --- parsing the judge's reply ---

@pytest.mark.parametrize("text, verdict", [
    ("first", "first"), ("Second", "second"), ("  TIE\n", "tie"),
    ('{"verdict": "first"}', "first"), (' {"verdict": "Tie"} ', "tie"),
])
def test_parse_verdict_accepts_the_word_or_the_schema(text, verdict):
    assert parse_verdict(text) == verdict


@pytest.mark.parametrize("text", [
    "", "the first", "first.", "A", "1", "both", '{"verdict": "both"}', '{"verdict": "first", "why": "x"}',
    '{"choice": "first"}', '{"verdict": 1}', '["first"]', "{not json",
])
def test_parse_verdict_refuses_anything_else_in_one_line(text):
    with pytest.raises(InputError, match=r"^judge verdict .* is not one of first, second, tie") as caught:
        parse_verdict(text)
    assert "\n" not in str(caught.value)


def test_a_long_bad_verdict_is_shortened():
    with pytest.raises(InputError, match=r"judge verdict 'x{57}\.\.\.' is not one of"):
        parse_verdict("x" * 500)


def test_a_judge_returning_something_else_is_refused():
    with pytest.raises(InputError, match=r"judge verdict 'answer A' is not one of first, second, tie"):
        both_orders(lambda first, second: "answer A", "new", "old")


def test_the_verdict_schema_names_the_three_verdicts():
    assert VERDICT_SCHEMA["properties"]["verdict"]["enum"] == ["first", "second", "tie"]
    assert VERDICT_SCHEMA["required"] == ["verdict"]


# --- the two judge prompts and their call ids ---

def test_pairwise_prompts_swap_the_order():
    prompts = pairwise_prompts("How long do returns take?", "NEW ANSWER", "OLD ANSWER")
    assert list(prompts) == [NEW_FIRST, OLD_FIRST] == ["pairwise/new-first", "pairwise/old-first"]
    new_first, old_first = prompts[NEW_FIRST], prompts[OLD_FIRST]
    assert new_first.index("NEW ANSWER") < new_first.index("OLD ANSWER")
    assert old_first.index("OLD ANSWER") < old_first.index("NEW ANSWER")
    assert new_first.replace("NEW ANSWER", "@").replace("OLD ANSWER", "NEW ANSWER").replace("@", "OLD ANSWER") == old_first
    for text in prompts.values():
        assert text.startswith("Question:\nHow long do returns take?\n")
        assert text.endswith("Reply with one word: first, second or tie.")
        assert "not its position or its length" in text


def test_pairwise_prompts_take_the_suites_instruction():
    prompts = pairwise_prompts("q", "a", "b", instruction="Which answer cites the returns page?")
    assert all("Which answer cites the returns page?\nReply with one word" in p for p in prompts.values())
