"""One run's checks on several machines: `evalkit run run.shard=K/N` writes a shard file and gates nothing,
`evalkit merge` joins the N files into the report one machine writes, and `evalkit gate` decides it as it decides
the whole run. Refusals: a shard missing or given twice, shards of another run, a live shard, a bad K/N."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT_ROOT, evalkit_cli, evalkit_env

from evalkit.run.canonical import canonical_report

BASELINE = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"
EVALKIT = Path(sys.executable).parent / "evalkit"


def evalkit(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed `evalkit` script, as a user runs it."""
    return subprocess.run([str(EVALKIT), *args], cwd=PROJECT_ROOT, env=evalkit_env(), capture_output=True,
                          text=True, timeout=300)


def run(tmp_path: Path, name: str, *overrides: str):
    return evalkit_cli("evalkit", "model=gemma4", "baseline=none", *overrides, f"hydra.run.dir={tmp_path / name}")


def test_three_shards_merge_into_the_whole_runs_report_and_gate_alike(tmp_path: Path) -> None:
    whole = run(tmp_path, "whole")
    assert whole.returncode == 0, whole.stderr
    files = []
    for k in (1, 2, 3):
        done = run(tmp_path, f"shard{k}", f"run.shard={k}/3")
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("decision: none (run.shard=" + f"{k}/3: one shard of the run's checks, not gated)")
        assert not (tmp_path / f"shard{k}/report.json").exists() and not (tmp_path / f"shard{k}/decision.json").exists()
        files.append(tmp_path / f"shard{k}/shard-{k}-of-3.json")
    random.Random(3).shuffle(files)  # any order: each file says which shard it is
    merged = tmp_path / "merged.json"
    done = evalkit("merge", *map(str, files), "--out", str(merged))
    assert done.returncode == 0, done.stderr
    assert "merged 3 shard(s) of suite issue_triage" in done.stdout and "evalkit gate BASELINE" in done.stdout
    one = json.loads((tmp_path / "whole/report.json").read_text())
    joined = json.loads(merged.read_text())
    assert [t["nodeid"] for t in joined["tests"]] == [t["nodeid"] for t in one["tests"]]
    assert canonical_report(joined) == canonical_report(one)
    decisions = [evalkit("gate", str(BASELINE), str(report)) for report in (tmp_path / "whole/report.json", merged)]
    assert decisions[0].returncode == decisions[1].returncode == 1  # model=gemma4 blocks
    assert decisions[0].stdout.split("policy:")[0] == decisions[1].stdout.split("policy:")[0]


def test_an_agent_suites_merged_shards_have_its_agent_metrics(tmp_path: Path) -> None:
    # the agent's metrics need every case's outcome: computed by merge from what each shard file carries
    whole = run(tmp_path, "whole", "suite=order_agent", "model=gpt-local")
    assert whole.returncode == 0, whole.stderr
    files = []
    for k in (1, 2):
        done = run(tmp_path, f"shard{k}", "suite=order_agent", "model=gpt-local", f"run.shard={k}/2")
        assert done.returncode == 0, done.stderr
        files.append(tmp_path / f"shard{k}/shard-{k}-of-2.json")
        assert json.loads(files[-1].read_text())["looped"] == {"agent": True, "reached": {}}
    merged = tmp_path / "merged.json"
    done = evalkit("merge", *map(str, files), "--out", str(merged))
    assert done.returncode == 0, done.stderr
    one, joined = json.loads((tmp_path / "whole/report.json").read_text()), json.loads(merged.read_text())
    agent = {name: value for name, value in one["metrics"].items() if name.startswith("agent.")}
    assert sorted(agent) == ["agent.solved_per_usd", "agent.solved_rate", "agent.step_efficiency",
                             "agent.tool_success_rate"]
    assert {name: joined["metrics"].get(name) for name in agent} == agent
    assert canonical_report(joined) == canonical_report(one)


def test_refusals_name_the_shard_and_what_to_do(tmp_path: Path) -> None:
    for k in (1, 2):
        assert run(tmp_path, f"s{k}", f"run.shard={k}/3").returncode == 0
    other = run(tmp_path, "other", "prompt=v2", "run.shard=3/3")
    assert other.returncode == 0, other.stderr
    first, second = tmp_path / "s1/shard-1-of-3.json", tmp_path / "s2/shard-2-of-3.json"
    out = str(tmp_path / "merged.json")

    missing = evalkit("merge", str(first), str(second), "--out", out)
    assert missing.returncode == 3 and "shard(s) 3/3 missing" in missing.stderr
    twice = evalkit("merge", str(first), str(first), str(second), "--out", out)
    assert twice.returncode == 3 and "shard 1/3 is given twice" in twice.stderr
    foreign = evalkit("merge", str(first), str(second), str(tmp_path / "other/shard-3-of-3.json"),
                          "--out", out)
    assert foreign.returncode == 3 and "is of another run than" in foreign.stderr and "key" in foreign.stderr
    not_a_shard = evalkit("merge", str(BASELINE), "--out", out)
    assert not_a_shard.returncode == 3 and "not a shard file of format evalkit-shard/2" in not_a_shard.stderr
    onto_input = evalkit("merge", str(first), str(second), "--out", str(first))
    assert onto_input.returncode == 3
    assert not Path(out).exists()
    assert json.loads(first.read_text())["format"] == "evalkit-shard/2"  # the input was not replaced

    live = run(tmp_path, "live", "mode=live", "run.shard=1/2")
    assert live.returncode == 3 and "record on one machine first" in live.stderr
    bad = run(tmp_path, "bad", "run.shard=3/2")
    assert bad.returncode == 3 and "run.shard=3/2 is not K/N with 1 <= K <= N" in bad.stderr
    workers = run(tmp_path, "workers", "run.shard=1/2", "run.workers=2")
    assert workers.returncode == 3 and "leave run.workers at 1" in workers.stderr
