"""The order agent end to end through the CLI (issue 37): a live run (the authored model in the provider's seat:
tests/helpers/agent_run.py) and its replay decide alike with the same trajectories; a changed tool is refused in
replay naming it, made incomparable by the gate unless the policy declares it, and re-recorded by record-missing
only where the model's steps changed; tools that raise, hang, do not exist or get bad arguments, and an agent that
loops, each fail their case naming why while the run still decides."""

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
SUITE = ROOT / "suites" / "order_agent"
HELPER = ROOT / "tests" / "helpers" / "agent_run.py"

pytestmark = pytest.mark.slow


def _evalkit(*args: str, live: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    command = [sys.executable, str(HELPER)] if live else [sys.executable, "-m", "evalkit"]
    return subprocess.run([*command, "suite=order_agent", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def _report(job: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job / "report.json").read_text(encoding="utf-8"))
    return data


def _decision(job: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job / "decision.json").read_text(encoding="utf-8"))
    return data


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "suite"
    shutil.copytree(SUITE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_a_live_agent_run_and_its_replay_decide_alike_on_the_same_trajectories(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    live = _evalkit("mode=live", f"run.recordings={rec}", f"hydra.run.dir={tmp_path / 'live'}", live=True)
    assert live.returncode == 0, live.stdout + live.stderr
    replay = _evalkit(f"run.recordings={rec}", f"hydra.run.dir={tmp_path / 'replay'}")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    recorded, replayed = _report(tmp_path / "live"), _report(tmp_path / "replay")
    assert recorded["trajectories"] == replayed["trajectories"] and len(replayed["trajectories"]) == 6
    assert recorded["metrics"] == replayed["metrics"]
    assert replayed["metrics"]["agent.solved_rate"]["mean"] == 1.0
    assert {t["nodeid"]: t["outcome"] for t in recorded["tests"]} == {t["nodeid"]: t["outcome"]
                                                                        for t in replayed["tests"]}
    first, second = _decision(tmp_path / "live"), _decision(tmp_path / "replay")
    assert first["decision"] == second["decision"] == "go"
    # the shipped authored recording is this very identity: the replay of the repository decides the same
    shipped = _evalkit(f"hydra.run.dir={tmp_path / 'shipped'}")
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    assert _report(tmp_path / "shipped")["trajectories"] == replayed["trajectories"]


def test_a_changed_tool_is_refused_in_replay_incomparable_at_the_gate_and_rerecorded_only_where_it_changed(
        tmp_path: Path) -> None:
    suite, rec = _copy(tmp_path), tmp_path / "rec"
    where = [f"suite.path={suite}", f"run.recordings={rec}"]
    first = _evalkit(*where, "mode=live", f"hydra.run.dir={tmp_path / 'first'}", live=True)
    assert first.returncode == 0, first.stdout + first.stderr
    tools = suite / "tools.py"
    tools.write_text(tools.read_text().replace("return dict(row) if row is not None else None\n\n\ndef lookup_customer",
                                               "return dict(row) if row else None\n\n\ndef lookup_customer"))
    refused = _evalkit(*where, f"hydra.run.dir={tmp_path / 'refused'}")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "tools.lookup_order.fingerprint" in refused.stderr and "no recording of this identity" in refused.stderr

    again = _evalkit(*where, "mode=record-missing", f"hydra.run.dir={tmp_path / 'again'}", live=True)
    assert again.returncode == 2, again.stdout + again.stderr  # recorded, then gated: incomparable (below)
    # the edit changed no result: every model step is the first run's, reused, none asked of the model again
    assert _report(tmp_path / "again")["execution"]["calls"] == {"reused": 14}
    assert _report(tmp_path / "again")["trajectories"] == _report(tmp_path / "first")["trajectories"]
    decision = _decision(tmp_path / "again")
    assert decision["decision"] == "incomparable"
    assert "tools.lookup_order" in json.dumps(decision["findings"]) and "tool_changes" in json.dumps(decision)

    declared = _evalkit(*where, "policy.tool_changes=[lookup_order]", f"hydra.run.dir={tmp_path / 'declared'}")
    assert declared.returncode == 0, declared.stdout + declared.stderr
    assert "tools.lookup_order" in _decision(tmp_path / "declared")["changed"]

    # a change that moves a result: only the steps that read it (customer-1003's second and third: each step reads
    # the whole conversation so far) are asked of the model again
    data = suite / "data" / "orders.sql"
    data.write_text(data.read_text().replace("'processing', 230.10", "'processing', 230.15"))
    moved = _evalkit(*where, "mode=record-missing", "policy.tool_changes=['*']",
                     f"hydra.run.dir={tmp_path / 'moved'}", live=True)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert _report(tmp_path / "moved")["execution"]["calls"] == {"recorded": 2, "reused": 12}
    before, after = _report(tmp_path / "again")["trajectories"], _report(tmp_path / "moved")["trajectories"]
    assert [cid for cid in before if before[cid] != after[cid]] == ["task/customer-1003"]


FAULTY_TOOLS = '''

def broken_report(order_id: int = 0) -> str:
    """A report service that is down."""
    raise RuntimeError("the report service is down")


def slow_report(order_id: int = 0) -> str:
    """A report service that never answers."""
    import threading
    threading.Event().wait()
    return "never"
'''

FAULTS = {
    "raises": ("[tool:broken_report]", "RuntimeError: the report service is down"),
    "hangs": ("[tool:slow_report]", "timed out after 1s (agent.tool_timeout_s); the tool was stopped"),
    "unknown": ("[unknown-tool]", "no tool named 'issue_refund'"),
    "bad-args": ("[bad-args]", "arguments do not match the tool's schema: order_id"),
    "loops": ("[loop]", "the agent reached agent.max_steps=4 still calling tools"),
}


def test_every_fault_of_an_agent_fails_its_case_naming_why_and_the_run_still_decides(tmp_path: Path) -> None:
    suite, rec = _copy(tmp_path), tmp_path / "rec"
    with (suite / "tools.py").open("a", encoding="utf-8") as tools:
        tools.write(FAULTY_TOOLS)
    cases = [{"id": "fine", "question": "What is the status of order 1001?", "expected": "shipped", "asks": "order"},
             {"id": "who", "question": "Who placed order 1003?", "expected": "Grace Hopper", "asks": "customer"},
             *({"id": name, "question": f"What is the status of order 1002? {directive}", "expected": "delivered",
                "asks": "order"} for name, (directive, _) in FAULTS.items())]
    (suite / "datasets" / "v1.json").write_text(json.dumps({"name": "order-agent", "version": 1, "cases": cases}))
    where = [f"suite.path={suite}", f"run.recordings={rec}", "agent.tool_timeout_s=1", "baseline=none"]
    live = _evalkit(*where, "mode=live", f"hydra.run.dir={tmp_path / 'live'}", live=True)
    assert live.returncode == 0, live.stdout + live.stderr  # not gated (baseline=none): the run ended, not crashed
    report = _report(tmp_path / "live")
    outcome = {t["nodeid"]: t for t in report["tests"]}
    assert outcome["checks.yaml::answers_from_the_tools[fine]"]["outcome"] == "passed"
    for name, (_, why) in FAULTS.items():  # each case fails; the check that says why names it
        assert outcome[f"checks.yaml::answers_from_the_tools[{name}]"]["outcome"] == "failed", name
        telling = f"checks.yaml::{'few_steps' if name == 'loops' else 'tools_succeed'}[{name}]"
        assert outcome[telling]["outcome"] == "failed", name
        assert why in json.dumps(outcome[telling if name != "loops" else
                                         f"checks.yaml::answers_from_the_tools[{name}]"]), (name, outcome[telling])
    assert report["metrics"]["agent.tool_success_rate"]["mean"] < 1
    # the run decides: gated against its own replay's saved report, it is a decision, not an error
    saved = tmp_path / "faulty-baseline.json"
    replay = _evalkit(*where[:-1], f"baseline={saved}", f"hydra.run.dir={tmp_path / 'replay'}")
    assert replay.returncode == 3  # no such baseline yet: said in one line
    first = _evalkit(*where, f"run.save_report={saved}", f"hydra.run.dir={tmp_path / 'save'}")
    assert first.returncode == 0, first.stdout + first.stderr
    gated = _evalkit(*where[:-1], f"baseline={saved}", f"hydra.run.dir={tmp_path / 'gated'}")
    assert gated.returncode == 1, gated.stdout + gated.stderr  # the critical answer check fails on the faults
    assert _decision(tmp_path / "gated")["decision"] == "block"
    assert _report(tmp_path / "gated")["trajectories"] == report["trajectories"]
