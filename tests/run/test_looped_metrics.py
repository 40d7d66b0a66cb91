"""evalkit.run.looped_metrics: the agent's and simulated conversations' metrics, added from the checks' outcomes on
one machine or, through what a shard file carries, by `evalkit merge` (the same figures either way)."""

from __future__ import annotations

import json

import pytest

from evalkit.core.errors import InputError
from evalkit.records.call import ToolCall
from evalkit.records.trajectory import FinalAnswer, ModelCall, ToolResult, Trajectory
from evalkit.run.agent_loop import trajectories_json
from evalkit.run.looped_metrics import LoopedMetrics


def steps(case: str, tools: int, failing: int, cost: float) -> Trajectory:
    made: list = []
    for i in range(tools):
        made += [ModelCall(call_id=f"task/{case}@{i + 1}", cost_usd=cost), ToolCall(id=f"t{i}", tool="lookup"),
                 ToolResult(call_id=f"t{i}", content="r", error=i < failing)]
    return Trajectory(steps=(*made, ModelCall(call_id=f"task/{case}@{tools + 1}", cost_usd=cost),
                             FinalAnswer(text="done")))


CASES = [{"id": "a", "passed": True}, {"id": "b", "passed": False}, {"id": "c", "passed": True}]
TRAJECTORIES = {"task/a": steps("a", 2, 0, 0.01), "task/b": steps("b", 3, 2, 0.02), "task/c": steps("c", 0, 0, 0.01)}


def test_what_a_shard_carries_gives_the_metrics_one_machine_adds():
    looped = LoopedMetrics(agent=True, trajectories=TRAJECTORIES, reached={"task/a": 2, "task/b": None, "task/c": 1})
    one: dict = {"cases": CASES}
    looped.add_to(one)
    assert one["metrics"]["agent.solved_rate"] == {"mean": round(2 / 3, 6), "count": 3, "unmeasured": 0}
    assert one["metrics"]["agent.tool_success_rate"] == {"mean": round(1 - 2 / 5, 6), "count": 5, "unmeasured": 0}
    assert one["metrics"]["conversation.goal_rate"] == {"mean": round(2 / 3, 6), "count": 3, "unmeasured": 0}
    carried = json.loads(json.dumps(looped.to_json()))  # through a shard file
    sections = json.loads(json.dumps({"trajectories": trajectories_json(TRAJECTORIES)}))
    merged: dict = {"cases": CASES}
    LoopedMetrics.from_json(carried, sections, "shard-1-of-2.json").add_to(merged)
    assert merged == one


def test_a_conversation_suite_carries_no_trajectories_and_adds_no_agent_metrics():
    looped = LoopedMetrics(agent=False, reached={"task/a": 3})
    back = LoopedMetrics.from_json(looped.to_json(), {}, "s.json")
    data: dict = {"cases": CASES}
    back.add_to(data)
    assert sorted(data["metrics"]) == ["conversation.goal_rate", "conversation.turns_to_goal"]


@pytest.mark.parametrize(("carried", "sections"), [
    ({"agent": "yes", "reached": {}}, {}),
    ({"agent": True, "reached": {"task/a": "2"}}, {}),
    ({"agent": True, "reached": {}}, {"trajectories": {"task/a": {"steps": [{"kind": "nothing"}]}}}),
])
def test_what_evalkit_did_not_write_is_refused_in_one_line(carried, sections):
    with pytest.raises(InputError, match=r"^shard-2-of-2\.json: .*run the shard again$"):
        LoopedMetrics.from_json(carried, sections, "shard-2-of-2.json")
