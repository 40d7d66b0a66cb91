"""The ready-made trajectory judge, `trajectory-goal` (evalkit.judging.ready_judges): declared in checks.yaml, it asks
the pinned judge whether an agent's trajectory reached the case's goal, showing the trajectory compactly; it is
planned from the trajectory (never from the reply, so an agent stopped at max_steps is judged too), and its verdict
reads the judge's level like the other ready judges'. The judge here is scripted: no model."""

from __future__ import annotations

import json

import pytest

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.judging.checks import (
    CheckSpec,
    judge,
    judge_trajectory,
    parse_checks,
    planned_judge_calls,
    planned_trajectory_judge,
)
from evalkit.judging.ready_judges import (
    SCORE_SCHEMA,
    TRAJECTORY_STEPS,
    TRAJECTORY_VALUE_CHARS,
    system_prompt,
    trajectory_text,
)
from evalkit.records.trajectory import FinalAnswer, ModelCall, ToolCall, ToolResult, Trajectory
from evalkit.run.declared import with_check_judges
from evalkit.run.suite import SuiteTask

CASE = Case("status-1001", {"question": "What is the status of order 1001?",
                            "goal": "Tell the customer the status of order 1001."})
JUDGE = ModelConfig(name="judge-1", provider="openai", options={"temperature": 0})
ANSWERED = Trajectory(steps=(
    ModelCall(call_id="task/status-1001@1"),
    ToolCall(id="call_1", tool="lookup_order", arguments={"order_id": 1001}),
    ToolResult(call_id="call_1", content='{"id": 1001, "status": "shipped"}'),
    ModelCall(call_id="task/status-1001@2"),
    FinalAnswer(text="Order 1001 has shipped."),
))
LOOPED = Trajectory(steps=(
    ModelCall(call_id="task/status-1001@1"),
    ToolCall(id="call_1", tool="lookup_order", arguments={"order_id": "1001"}),
    ToolResult(call_id="call_1", content="", error=True, error_message="arguments do not match: order_id"),
))


def check(**entry):
    return CheckSpec.model_validate({"name": "reaches_goal", **entry})


def test_the_judge_is_shown_the_goal_and_the_trajectory_one_line_per_step():
    spec = check(**{"trajectory-goal": {"goal": "goal"}})
    assert spec.kind == "trajectory-goal" and spec.call == "judge" and spec.judge_metrics == ("reaches_goal",)
    assert spec.metric_names == ("score",)
    request = planned_trajectory_judge(spec, CASE, ANSWERED, JUDGE)["reaches_goal"]
    assert request.model == "judge-1" and request.response_schema == SCORE_SCHEMA
    assert request.messages[0].content == system_prompt("trajectory-goal")
    assert request.messages[1].content == (
        "Goal:\nTell the customer the status of order 1001.\n\n"
        "What the agent did:\n(2 model calls)\n"
        '1. called lookup_order with {"order_id": 1001}\n'
        '2. lookup_order returned: {"id": 1001, "status": "shipped"}\n'
        "3. final answer: Order 1001 has shipped.")


def test_a_failed_tool_and_a_missing_answer_are_said_as_such():
    text = trajectory_text(LOOPED)
    assert text == ('(1 model call)\n1. called lookup_order with {"order_id": "1001"}\n'
                    "2. lookup_order failed: arguments do not match: order_id\n"
                    "(no final answer: the agent stopped without one)")


def test_a_long_or_looping_trajectory_is_cut_so_it_cannot_fill_the_judge_s_context():
    huge = "x" * 10_000
    steps = [step for n in range(TRAJECTORY_STEPS) for step in
             (ToolCall(id=f"c{n}", tool="search", arguments={"q": huge}), ToolResult(call_id=f"c{n}", content=huge))]
    text = trajectory_text(Trajectory(steps=tuple(steps)))
    lines = text.splitlines()
    assert lines[-2] == f"... {TRAJECTORY_STEPS} more steps not shown"
    assert len(lines) == 1 + TRAJECTORY_STEPS + 2
    assert max(len(line) for line in lines) < TRAJECTORY_VALUE_CHARS + 40


def test_it_is_planned_from_the_trajectory_never_from_the_reply():
    spec = check(**{"trajectory-goal": {"goal": "goal"}})
    assert planned_judge_calls(spec, CASE, "Order 1001 has shipped.", JUDGE, None) == {}
    task = with_check_judges(SuiteTask(lambda case, prompt, model: None, None),  # type: ignore[arg-type,return-value]
                             parse_checks("checks:\n  - name: reaches_goal\n    trajectory-goal: {goal: goal}\n",
                                          "checks.yaml"))
    assert task.build_judge is None and task.build_trajectory_judge is not None and task.judged
    planned = task.build_trajectory_judge(CASE, LOOPED, JUDGE)
    assert list(planned) == ["reaches_goal"] and "(no final answer" in planned["reaches_goal"].messages[1].text


def test_the_verdict_reads_the_level_and_keeps_it_as_the_score():
    spec = check(**{"trajectory-goal": {"goal": "goal", "pass_at": 4}})
    reached = judge(spec, json.dumps({"reason": "it says shipped", "score": 5}), CASE)
    assert reached.passed and reached.metrics == {"score": 5.0}
    missed = judge(spec, json.dumps({"reason": "no final answer", "score": 1}), CASE)
    assert not missed.passed and missed.metrics == {"score": 1.0}
    assert missed.message == "expected the goal reached at level 4 or above (of 5), came 1: no final answer"


def test_a_case_without_the_goal_field_gets_no_call_and_could_not_run_naming_it():
    spec = check(**{"trajectory-goal": {"goal": "objective"}})
    assert planned_trajectory_judge(spec, CASE, ANSWERED, JUDGE) == {}
    unrun = judge(spec, "unused", CASE)
    assert not unrun.ran and unrun.message == "expected case field 'objective' for the judge, but case status-1001 has none"


def test_a_suite_without_an_agent_fails_it_saying_so():
    verdict = judge_trajectory(check(**{"trajectory-goal": {"goal": "goal"}}), None)
    assert not verdict.passed and "no trajectory" in verdict.message


@pytest.mark.parametrize(("entry", "error"), [
    ({"trajectory-goal": {}}, "goal"),
    ({"trajectory-goal": {"goal": "goal", "pass_at": 0}}, "pass_at"),
    ({"trajectory-goal": {"goal": "goal", "steps": 3}}, "steps"),
    ({"trajectory-goal": {"goal": "goal"}, "field": "answer"}, "takes no 'field'"),
])
def test_a_mistake_in_the_entry_is_one_line_naming_the_file_and_the_check(entry, error):
    text = "checks:\n" + "  - " + json.dumps({"name": "reaches_goal", **entry}) + "\n"
    with pytest.raises(InputError, match=error) as raised:
        parse_checks(text, "suites/x/checks.yaml")
    assert str(raised.value).startswith("suites/x/checks.yaml") and "\n" not in str(raised.value)


def test_a_goal_field_no_case_has_is_refused_before_any_call():
    checks = parse_checks("checks:\n  - name: reaches_goal\n    trajectory-goal: {goal: objective}\n", "checks.yaml")
    with pytest.raises(InputError, match="trajectory-goal.goal names case field 'objective'"):
        checks.check_cases([CASE], "checks.yaml")
