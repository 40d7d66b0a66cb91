"""`+run.resume=true` after an agent run that ended midway, through the CLI (the order agent, its tools in their worker
processes): the resumed run runs none of the tools the interrupted one ran, and ends with the trajectories, metrics
and check outcomes of a run never interrupted. The interruption is an outage: the model fails at the last step of
one case, after every tool has run (the authored model plays the provider, as in tests/agents/test_agent_runs.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "order_agent"

pytestmark = pytest.mark.slow

HELPER = '''
import importlib.util, os, sys
from pathlib import Path


def main():  # under a __main__ guard: the tools' worker processes are spawned, and import this file again
    root = Path(sys.argv.pop(1))
    spec = importlib.util.spec_from_file_location("order_agent_author", root / "suites/order_agent/author_recordings.py")
    authored = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(authored)
    import evalkit.run.record_or_replay as record_or_replay
    from evalkit.cli.run import main as run
    from evalkit.live.providers.base import CallFailure

    class Failing(authored.AuthoredModel):
        """The authored model, failing (not retryable) at customer-1003's answer when FAIL_LAST_STEP is set."""

        def complete(self, request):
            user = next(m.text for m in request.messages if m.role == "user")
            read = sum(1 for m in request.messages if m.role == "tool")
            if os.environ.get("FAIL_LAST_STEP") and "1003" in user and read == 2:
                raise CallFailure("the model server went away", retryable=False)
            return super().complete(request)

    record_or_replay._provider = lambda model, role: Failing()
    return run()


if __name__ == "__main__":
    sys.exit(main())
'''

LOGGED = '''

import os as _os


def _logged(function):
    """Counts each execution of the tool in the file TOOL_LOG names (the test reads it)."""
    def tool(*args, **kwargs):
        with open(_os.environ["TOOL_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{function.__name__} {args} {sorted(kwargs.items())}\\n")
        return function(*args, **kwargs)
    tool.__name__, tool.__doc__, tool.__wrapped__ = function.__name__, function.__doc__, function
    return tool


TOOLS = [_logged(lookup_order), _logged(lookup_customer)]
'''


def _evalkit(tmp_path: Path, suite: Path, rec: Path, name: str, log: Path, *extra: str,
             fail: bool = False) -> subprocess.CompletedProcess[str]:
    helper = tmp_path / "helper.py"
    helper.write_text(HELPER, encoding="utf-8")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TOOL_LOG": str(log),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("FAIL_LAST_STEP", None)
    if fail:
        env["FAIL_LAST_STEP"] = "1"
    return subprocess.run([sys.executable, str(helper), str(ROOT), "suite=order_agent", f"suite.path={suite}",
                           f"run.recordings={rec}", "mode=live", "baseline=none",
                           f"hydra.run.dir={tmp_path / name}", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def _report(job: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job / "report.json").read_text(encoding="utf-8"))
    return data


def _ran(log: Path) -> Counter[str]:
    return Counter(log.read_text(encoding="utf-8").splitlines()) if log.exists() else Counter()


def test_a_resumed_agent_run_runs_no_finished_tool_again_and_reports_as_an_uninterrupted_run(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns("__pycache__"))
    (suite / "tools.py").write_text((suite / "tools.py").read_text(encoding="utf-8") + LOGGED, encoding="utf-8")

    whole_log = tmp_path / "whole.log"
    whole = _evalkit(tmp_path, suite, tmp_path / "rec-whole", "whole", whole_log)
    assert whole.returncode == 0, whole.stdout + whole.stderr

    rec, log = tmp_path / "rec", tmp_path / "tools.log"
    cut = _evalkit(tmp_path, suite, rec, "cut", log, fail=True)
    assert cut.returncode == 5, cut.stdout + cut.stderr  # an outage: nothing gated, the journal kept
    assert "customer-1003" in cut.stderr and list(rec.rglob("*.journal.jsonl"))
    before = _ran(log)
    assert before == _ran(whole_log)  # every tool had run when the last step failed

    resumed = _evalkit(tmp_path, suite, rec, "resumed", log, "+run.resume=true")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _ran(log) == before  # not one tool ran again
    done, uncut = _report(tmp_path / "resumed"), _report(tmp_path / "whole")
    assert done["trajectories"] == uncut["trajectories"] and len(done["trajectories"]) == 6
    assert done["metrics"] == uncut["metrics"]
    assert {t["nodeid"]: t["outcome"] for t in done["tests"]} == {t["nodeid"]: t["outcome"] for t in uncut["tests"]}
    assert done["execution"]["agent"]["tools_resumed"] == sum(before.values())
    assert done["execution"]["agent"]["tools_called_live"] == 0
    assert not list(rec.rglob("*.journal.jsonl"))  # compacted into the recording
