"""`evalkit run` with the order agent's authored model in place of a provider, as a child process:

    python tests/helpers/agent_run.py OVERRIDES ...

The providers of this branch do not yet parse tool calls off the wire (issue 37's provider work does that), so the
agent tests' live runs take their model steps from suites/order_agent/author_recordings.py's hand-written policy,
through the run's one call path (budget, retries, concurrency, recording), exactly where a provider's reply enters.
Everything else is the real CLI: composition, the loop, the tools' worker processes, the checks, the gate.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    spec = importlib.util.spec_from_file_location("order_agent_author", ROOT / "suites/order_agent/author_recordings.py")
    assert spec is not None and spec.loader is not None
    authored = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(authored)
    import evalkit.run.runner as runner
    from evalkit.cli.run import main as run

    runner._provider = lambda model, role: authored.AuthoredModel()  # noqa: SLF001 - the scripted model's seat
    return run()


if __name__ == "__main__":
    sys.exit(main())
