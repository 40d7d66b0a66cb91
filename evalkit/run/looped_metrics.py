"""The metrics a suite of looped cases adds once its checks have run: an agent's (`agent.*`,
evalkit.run.agent_loop.agent_metrics) and its simulated conversations' (`conversation.*`,
evalkit.run.conversation.conversation_metrics). Both need each case's outcome, so they are computed after the checks:
by the runner for a whole run, and by `evalkit merge` for a sharded one, from what each shard file carries
(`to_json`: whether the suite is an agent and the turns to goal; the trajectories travel in the shard's report
sections). A merged report has the same metrics one machine would have written.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.core.errors import InputError, one_line
from evalkit.records.trajectory import Trajectory
from evalkit.run.agent_loop import agent_metrics
from evalkit.run.conversation import conversation_metrics

__all__ = ["LoopedMetrics"]


@dataclass(frozen=True)
class LoopedMetrics:
    """What the looped cases' metrics are computed from, besides the checks' outcomes."""

    agent: bool
    """The suite is an agent: add `agent.*`."""
    trajectories: Mapping[str, Trajectory] = field(default_factory=dict)
    """Each case's trajectory, by `task/<case>` (an agent's metrics read its steps)."""
    reached: Mapping[str, int | None] = field(default_factory=dict)
    """Simulated conversations: `task/<case>` -> the assistant turns to its goal (None: not reached); empty adds no
    `conversation.*`."""

    def add_to(self, data: dict[str, Any]) -> None:
        """Add the metrics to a run report's data, whose `cases` hold the checks' outcomes."""
        cases = [c for c in data.get("cases", ()) if isinstance(c, dict)]
        if self.agent:
            data.setdefault("metrics", {}).update(agent_metrics(cases, self.trajectories))
        if self.reached:
            data.setdefault("metrics", {}).update(conversation_metrics(cases, self.reached))

    def to_json(self) -> dict[str, Any]:
        """What a shard file carries (the trajectories are in its report sections already)."""
        return {"agent": self.agent, "reached": dict(sorted(self.reached.items()))}

    @classmethod
    def from_json(cls, value: Mapping[str, Any], sections: Mapping[str, Any], where: str) -> LoopedMetrics:
        """Read back `to_json`'s output, with the trajectories from the shard's report sections."""
        agent, reached = value.get("agent"), value.get("reached")
        if not isinstance(agent, bool) or not isinstance(reached, dict) or not all(
                isinstance(n, int) and not isinstance(n, bool) or n is None for n in reached.values()):
            raise InputError(f"{where}: `looped` is not what evalkit writes ({{agent: bool, reached: "
                             "{case: turns}}); run the shard again")
        trajectories = sections.get("trajectories") or {}
        try:
            steps = {str(k): Trajectory.model_validate(v) for k, v in trajectories.items()} if agent else {}
        except (AttributeError, ValueError) as error:
            why = one_line(str(error), 200)
            raise InputError(f"{where}: a trajectory in its report sections cannot be read ({why}); run the shard "
                             "again") from None
        return cls(agent=agent, trajectories=steps, reached={str(k): v for k, v in reached.items()})
