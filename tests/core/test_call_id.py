"""evalkit/core/call_id.py: the one reader and writer of call ids (`task/<case>`, `judge/<metric>/<case>`, `~<r>`,
`#<i>`)."""

from __future__ import annotations

import pytest

from evalkit.core.call_id import CallId
from evalkit.core.errors import InputError


@pytest.mark.parametrize(("text", "expected"), [
    ("task/import-drops-tasks", CallId("task", "import-drops-tasks")),
    ("task/a#3", CallId("task", "a", sample=3)),
    ("judge/faithful/c1", CallId("judge", "c1", "faithful")),
    ("judge/pairwise/new-first/rc01#12", CallId("judge", "rc01", "pairwise/new-first", 12)),
    ("judge/faithful/c1~2", CallId("judge", "c1", "faithful", repeat=2)),
    ("judge/pairwise/old-first/rc01~1#3", CallId("judge", "rc01", "pairwise/old-first", 3, 1)),
    ("task/c1@3", CallId("task", "c1", step=3)),
    ("task/c1@12#2", CallId("task", "c1", sample=2, step=12)),
])
def test_parse_and_str_are_inverse(text: str, expected: CallId) -> None:
    assert CallId.parse(text) == expected
    assert str(expected) == text


def test_sample_zero_is_the_plain_id() -> None:
    assert str(CallId.judge("m", "c", 0)) == "judge/m/c"
    assert CallId.parse("task/c#4").plain == CallId.task("c")
    assert CallId.task("c").sampled(2) == CallId.parse("task/c#2")


def test_the_judges_repeat_zero_is_the_plain_id_and_a_repeat_keeps_its_sample() -> None:
    assert str(CallId.judge("m", "c", 0, 0)) == "judge/m/c"
    assert CallId.parse("judge/m/c~3#2").plain == CallId.judge("m", "c")
    assert CallId.judge("m", "c", repeat=3).sampled(2) == CallId.parse("judge/m/c~3#2")


@pytest.mark.parametrize("text", ["", "task/", "task", "judge/c", "judge//c", "model/c", "task/m/c", "task/c#",
                                  "task/c#0", "task/c#01", "task/c#x", "task/c#²", "task/a#b#2", "task/c~1",
                                  "judge/m/c~", "judge/m/c~0", "judge/m/c~01", "judge/m/c~x#2", "judge/m/~1",
                                  "task/c@", "task/c@0", "task/c@01", "task/c@x", "task/@2", "judge/m/c@2",
                                  "task/c@1@2", "task/c@1~2", "judge/m/c~1@2"])
def test_anything_else_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(InputError, match=r"is not a call id \(task/<case> with @<n> for step n > 0, "
                                         r"judge/<metric>/<case> with ~<r>"):
        CallId.parse(text)


def test_an_agent_step_is_a_task_call_of_its_case_with_its_step_before_the_sample() -> None:
    step = CallId.agent_step("c", 3, 2)
    assert str(step) == "task/c@3#2"
    assert CallId.parse("task/c@3#2") == step
    assert (step.kind, step.case, step.step, step.sample) == ("task", "c", 3, 2)
    assert step.plain == CallId.agent_step("c", 3) and step.plain != CallId.task("c")
    assert CallId.parse("task/c").step == 0


@pytest.mark.parametrize("text", ["user/c", "user/c@0", "user/m/c@1", "user/c~1", "user/@2"])
def test_a_simulated_users_turn_always_names_its_turn(text: str) -> None:
    with pytest.raises(InputError, match=r"user/<case>@<n> for a simulated user's turn n\)"):
        CallId.parse(text)
    assert str(CallId.parse("user/c@2#1")) == "user/c@2#1"
