"""`evalkit run` with the order agent's authored model in place of a provider, as a child process:

    python tests/helpers/agent_run.py OVERRIDES ...

The providers of this branch do not yet parse tool calls off the wire (issue 37's provider work does that), so the
agent tests' live runs take their model steps from suites/order_agent/author_recordings.py's hand-written policy,
through the run's one call path (budget, retries, concurrency, recording), exactly where a provider's reply enters.
Everything else is the real CLI: composition, the loop, the tools' worker processes, the checks, the gate.
A run with a judge (`judge=NAME`) gets `GoalJudge` in the judge's seat: a scripted trajectory judge.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class GoalJudge:
    """A scripted `trajectory-goal` judge, reading the trajectory as evalkit shows it: level 1 without a final
    answer, 2 when a tool failed, else 5."""

    def complete(self, request: Any) -> Any:
        from evalkit.records.call import Reply

        shown = request.messages[-1].text
        if "(no final answer" in shown:
            answer = {"reason": "the agent never answered", "score": 1}
        elif " failed: " in shown:
            answer = {"reason": "a tool failed", "score": 2}
        else:
            answer = {"reason": "answered from the tools", "score": 5}
        return Reply(text=json.dumps(answer), stop_reason="stop")


def main() -> int:
    spec = importlib.util.spec_from_file_location("order_agent_author", ROOT / "suites/order_agent/author_recordings.py")
    assert spec is not None and spec.loader is not None
    authored = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(authored)
    import evalkit.run.record_or_replay as record_or_replay
    from evalkit.cli.run import main as run

    def provider(model: Any, role: str) -> Any:  # the scripted model's seat, and the scripted judge's
        return GoalJudge() if "judge" in role else authored.AuthoredModel()

    record_or_replay._provider = provider  # noqa: SLF001
    return run()


if __name__ == "__main__":
    sys.exit(main())
