"""`trajectory-goal` end to end through the CLI: the order agent (its authored model in the provider's seat,
tests/helpers/agent_run.py) with a trajectory-goal check and a scripted judge (GoalJudge there): the judge is asked
once per case, after the agent's loop, and shown each case's trajectory; a case stopped at `agent.max_steps` without
an answer is judged too (and fails); a replay asks nobody and decides the same."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HELPER = ROOT / "tests" / "helpers" / "agent_run.py"

pytestmark = pytest.mark.slow

GOAL_CHECK = "  - name: reaches_goal\n    trajectory-goal: {goal: question}\n"
LOOPING = {"id": "loops", "question": "What is the status of order 1001? [loop]", "expected": "shipped",
           "asks": "order"}


def _evalkit(*args: str, live: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    command = [sys.executable, str(HELPER)] if live else [sys.executable, "-m", "evalkit"]
    return subprocess.run([*command, "suite=order_agent", "+judge=smollm2", "baseline=none", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _report(job: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job / "report.json").read_text(encoding="utf-8"))
    return data


def test_the_goal_judge_reads_each_trajectory_once_and_the_replay_decides_the_same(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(ROOT / "suites" / "order_agent", suite, ignore=shutil.ignore_patterns("__pycache__"))
    (suite / "checks.yaml").write_text((suite / "checks.yaml").read_text() + GOAL_CHECK)
    dataset = suite / "datasets" / "v1.json"
    data = json.loads(dataset.read_text())
    data["cases"].append(LOOPING)
    dataset.write_text(json.dumps(data))
    where = [f"suite.path={suite}", f"run.recordings={tmp_path / 'rec'}"]

    live = _evalkit(*where, "mode=live", f"hydra.run.dir={tmp_path / 'live'}", live=True)
    assert live.returncode == 0, live.stdout + live.stderr
    replay = _evalkit(*where, f"hydra.run.dir={tmp_path / 'replay'}")
    assert replay.returncode == 0, replay.stdout + replay.stderr

    recorded, replayed = _report(tmp_path / "live"), _report(tmp_path / "replay")
    cases = [case["id"] for case in data["cases"]]
    for report in (recorded, replayed):
        outcomes = {t["nodeid"]: t for t in report["tests"] if t["nodeid"].startswith("checks.yaml::reaches_goal")}
        assert sorted(outcomes) == sorted(f"checks.yaml::reaches_goal[{case}]" for case in cases)
        failed = {nodeid for nodeid, t in outcomes.items() if t["outcome"] != "passed"}
        assert failed == {"checks.yaml::reaches_goal[loops]"}  # stopped at max_steps: judged, and the judge said 1
        assert "came 1: the agent never answered" in json.dumps(outcomes["checks.yaml::reaches_goal[loops]"])
        assert report["metrics"]["reaches_goal.score"]["count"] == len(cases)
    assert recorded["trajectories"] == replayed["trajectories"]
    assert recorded["metrics"] == replayed["metrics"]
    # one judge call per case, recorded live and served in the replay
    recording = next((tmp_path / "rec").rglob("*.json"))
    calls = json.loads(recording.read_text())["calls"]
    assert sorted(cid for cid in calls if cid.startswith("judge/")) == sorted(f"judge/reaches_goal/{c}" for c in cases)
    shown = calls["judge/reaches_goal/loops"]["request"]["messages"][-1]["content"]
    assert shown.startswith("Goal:\nWhat is the status of order 1001? [loop]\n\nWhat the agent did:\n(4 model calls)\n")
    assert '1. called lookup_order with {"order_id": 1001}' in shown and shown.endswith("without one)")
