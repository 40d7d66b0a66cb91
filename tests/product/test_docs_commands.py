"""Every `evalkit` command the README and the docs site show runs in a test.

A command runs here, in the examples project (this repository) with its job folders under tmp, when it can run as
written: a replay, a sweep on the basic launcher, `--help`, `plan` on a shipped report. Its comment's promise is
held to the exit code ("exit 1", or the decision it names). The tutorial's commands run in tests/product/test_walkthrough.py.
Every other command (one with placeholders such as BASELINE.json, a live call, a write to a shipped baseline, a
Slurm sweep) names the test module that runs its shape with real files, and that module must name the command's
subcommand and each option the command sets (by its own name, which a test may set in a config file); a docs
command in neither list fails here, so none goes unchecked. The getting-started page's commands run, as written, in
tests/product/test_newcomer_path.py (the README's quick start is that page's first commands).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, evalkit_env
from helpers.docs_text import pages

TESTS = Path(__file__).resolve().parents[1]  # tests/: COVERED names modules under it
EVALKIT = Path(sys.executable).parent / "evalkit"  # the installed console script, as the docs run it
PLACEHOLDER = re.compile(r"[A-Z]{2,}[A-Z_]*|\.\.\.|path/to|my-policy|main\.xml")
NOT_HERE = ("mode=live", "mode=record-missing", "run.save_report=", "hydra/launcher=", "+run.resume", "hydra.run.dir=",
            "evalkit history", "evalkit new ")
DECISIONS = {"GO": 0, "BLOCK": 1, "INCOMPARABLE": 2}
# exit codes said in prose next to the command rather than in its comment
STATED = {"evalkit run policy.max_regresions=0": 3, "evalkit run model=nope": 3,
          "evalkit plan suites/issue_triage/runs/baseline-smollm2.json --detect 0.1": 3}

# commands that cannot run here as written -> the test module that runs their shape with real files
COVERED = {
    "evalkit gate BASELINE.json CANDIDATE.json --out decision.json": "cli/test_cli.py",
    "evalkit gate BASELINE.json CANDIDATE.json --policy triage --out decision.json": "cli/test_cli.py",
    "evalkit gate baseline.json candidate.json --policy path/to/policy.yaml --out decision.json": "cli/test_cli.py",
    "evalkit compare BASELINE.json CANDIDATE.json": "cli/test_compare_command.py",
    "evalkit compare suites/issue_triage/runs/baseline.json outputs/DATE/TIME/report.json": "cli/test_compare_command.py",
    "evalkit policy-diff git:origin/main:conf/policy/triage.yaml conf/policy/triage.yaml": "cli/test_policy_diff.py",
    "evalkit history": "cli/test_history.py",
    "evalkit view outputs/DATE/TIME/report.json outputs/DATE2/TIME2/report.json --out explorer": "cli/test_view.py",
    "evalkit view --history --out explorer-all --reference 3": "cli/test_view.py",
    "evalkit new project": "cli/test_cli_main.py",
    # the README's quick start: the getting-started page's first commands, run as written on the local model
    "evalkit new suite support --kind retrieval-qa": "product/test_newcomer_path.py",
    "evalkit run mode=live model=smollm2 judge=smollm2 baseline=none hydra.run.dir=outputs/first":
        "product/test_newcomer_path.py",
    "evalkit bless outputs/first/report.json": "product/test_newcomer_path.py",
    "evalkit run model=smollm2 judge=smollm2": "product/test_newcomer_path.py",
    "evalkit adapt junit main.xml pr.xml": "adapt/test_adapt_junit.py",
    "evalkit adapt SOURCE BASELINE CANDIDATE [--policy NAME|FILE] [--out DIR]": "adapt/test_adapt_framework.py",
    "evalkit adapt inspect logs/BASELINE.eval logs/CANDIDATE.eval --policy my-policy --out gate-result":
        "adapt/test_adapt_inspect.py",
    "evalkit adapt junit base/report.xml cand/report.xml --out gate-result": "adapt/test_adapt_junit.py",
    "evalkit adapt junit base/target/surefire-reports cand/target/surefire-reports": "adapt/test_adapt_junit.py",
    "evalkit adapt promptfoo baseline.json candidate.json --policy path/to/policy.yaml --out gated/":
        "adapt/test_adapt_promptfoo.py",
    "evalkit adapt deepeval DIR/test_run_A.json DIR/test_run_B.json --policy path/to/policy.yaml":
        "adapt/test_adapt_deepeval.py",
    "evalkit adapt lm-eval OUT_MAIN/ OUT_PR/ --policy path/to/policy.yaml": "adapt/test_adapt_lm_eval.py",
    "evalkit adapt otel BASELINE.json CANDIDATE.json --checks agent-checks.yaml": "adapt/test_adapt_otel.py",
    "evalkit review --report outputs/.../report.json --decisions decisions.json --out reviewed.json":
        "core/test_outputs.py",
    "evalkit gate suites/quality_lab/runs/baseline.json reviewed.json --policy quality_lab": "product/test_quality_lab.py",
    "evalkit review --report outputs/DATE2/TIME2/report.json --labels labels-SHA12.jsonl --out reviewed.json":
        "records/test_labels.py",
    "evalkit calibrate suite=NAME --report outputs/DATE2/TIME2/report.json --labels labels-SHA12.jsonl":
        "records/test_labels.py",
    "evalkit new ci --pages": "project/test_scaffold.py",
    "evalkit run mode=live model=gemma4 prompt=v2": "project/test_classification_suite.py",
    "evalkit run suite=receipts mode=live model=gpt-local": "product/test_receipts_suite.py",
    "evalkit run mode=live model=gemini-flash run.concurrency=16 budget.max_calls=500": "run/test_live_safety.py",
    "evalkit run mode=record-missing model=gemma4": "run/test_live.py",
    "evalkit run suite=order_agent mode=record-missing": "agents/test_agent_runs.py",
    "evalkit run suite=support_chat mode=live model=NAME simulator.base_url=http://HOST:PORT/v1":
        "run/test_conversation.py",
    "evalkit run mode=live model=gemma4 +run.resume=true": "run/test_live.py",
    "evalkit run mode=live model=gemma4 model.base_url=http://127.0.0.1:8080": "live/test_llama_server.py",
    "evalkit run mode=live model=smollm2 judge=smollm2 baseline=none": "live/test_providers_llamacpp.py",
    "evalkit run mode=live model=gpt-local model.options.temperature=0.8 run.repeats=10": "run/test_run_repeats.py",
    # the replay of the live line above it: there is no such recording until that line has run
    "evalkit run run.repeats=10 model=gpt-local model.options.temperature=0.8": "run/test_run_repeats.py",
    "evalkit bless outputs/DATE/TIME/report.json": "cli/test_bless.py",
    "evalkit bless outputs/DATE/TIME/report.json --dry-run": "cli/test_bless.py",
    "evalkit bless REPORT --to PATH": "cli/test_bless.py",
    "evalkit run baseline=none run.save_report=suites/issue_triage/runs/baseline.json": "run/test_canonical.py",
    "evalkit run dataset=v2 baseline=none run.save_report=suites/issue_triage/runs/baseline-dataset-v2.json":
        "run/test_canonical.py",
    "evalkit run model=smollm2 judge=smollm2 baseline=none run.save_report=suites/issue_triage/runs/"
    "baseline-smollm2.json": "run/test_canonical.py",
    "evalkit run suite=evidencedesk baseline=none run.save_report=suites/evidencedesk/runs/baseline.json":
        "run/test_canonical.py",
    "evalkit run suite=quality_lab baseline=none run.save_report=suites/quality_lab/runs/baseline.json":
        "run/test_canonical.py",
    "evalkit run suite=order_agent baseline=none run.save_report=suites/order_agent/runs/baseline.json":
        "run/test_canonical.py",
    "evalkit run suite=support_chat baseline=none run.save_report=suites/support_chat/runs/baseline.json":
        "run/test_canonical.py",
    "evalkit run suite=receipts baseline=none run.save_report=suites/receipts/runs/baseline.json":
        "run/test_canonical.py",
    "evalkit run -m model=gemini-flash,gemma4 prompt=v1,v2 hydra/launcher=joblib hydra.launcher.n_jobs=4":
        "sweeps/test_sweep_scale.py",
    "evalkit run -m model=gemini-flash,gemma4 prompt=v1,v2 hydra/launcher=submitit_slurm "
    "hydra.launcher.partition=debug hydra.launcher.timeout_min=30 hydra.launcher.mem_gb=4 "
    "hydra.launcher.cpus_per_task=2": "sweeps/test_slurm.py",
    "evalkit run run.shard=1/3 hydra.run.dir=shard1": "run/test_merge.py",
    "evalkit merge shard1/shard-1-of-3.json shard2/shard-2-of-3.json shard3/shard-3-of-3.json --out report.json":
        "run/test_merge.py",
    "evalkit gate suites/issue_triage/runs/baseline.json report.json --out decision.json": "run/test_merge.py",
    "evalkit run mode=live run.repeats=10 hydra.run.dir=outputs/pilot": "run/test_run_repeats.py",
    "evalkit plan outputs/pilot/report.json --detect 0.05 --power 0.9": "gate/test_plan.py",
    "evalkit plan suites/issue_triage/runs/baseline.json --detect 0.1 --prices conf/prices/ours.yaml": "gate/test_plan.py",
}


def docs_commands() -> dict[str, int]:
    """Every `evalkit` command of the docs' code blocks (the tutorial's aside), with the exit code it promises."""
    found: dict[str, int] = {}
    for page in pages():
        if page.name in ("tutorial.md", "getting-started.md"):  # each run whole by its own test (below)
            continue
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```\w*\n(.*?)```", text, re.S):
            for line in re.sub(r"\\\n\s*", "", block).splitlines():
                command = line.strip().removeprefix("$ ").removeprefix(".venv/bin/")
                code, _, comment = command.partition(" #")
                code = " ".join(code.split())
                if not re.match(r"evalkit (run|gate|compare|adapt|history|policy-diff|plan|bless|review|calibrate|"
                                r"migrate|new|merge|view)\b|evalkit --help\b", code):
                    continue
                exit_code = re.search(r"\bexit (\d)\b", comment)
                decision = re.match(r"\s*(GO|BLOCK|INCOMPARABLE)\b", comment)
                found.setdefault(code, int(exit_code.group(1)) if exit_code else
                                 DECISIONS[decision.group(1)] if decision else STATED.get(code, 0))
    return found


COMMANDS = docs_commands()
RUN_HERE = sorted(c for c in COMMANDS if c not in COVERED and not PLACEHOLDER.search(c)
                  and not any(part in c for part in NOT_HERE))


def test_every_docs_command_runs_here_or_in_a_named_test():
    assert len(COMMANDS) >= 50 and len(RUN_HERE) >= 15
    unchecked = sorted(set(COMMANDS) - set(COVERED) - set(RUN_HERE))
    assert not unchecked, f"docs commands no test runs (run them here, or name their test in COVERED): {unchecked}"
    stale = sorted(set(COVERED) - set(COMMANDS))
    assert not stale, f"COVERED names commands the docs no longer show: {stale}"


@pytest.mark.parametrize("command", sorted(COVERED))
def test_the_named_test_runs_the_commands_shape(command: str):
    source = (TESTS / COVERED[command]).read_text(encoding="utf-8")
    words = shlex.split(command.replace("[", " ").replace("]", " ").replace("|", " "))
    subcommand = words[1] if words[1] != "run" else "evalkit"
    assert subcommand.replace("-", "_") in source or subcommand in source, (command, COVERED[command])
    for word in words[2:]:
        key = word.split("=", 1)[0].lstrip("+")
        if "=" in word and not key.startswith("hydra.launcher") and key != "hydra.run.dir":
            # the option's own name: a test may set it through a config file (`temperature:`) rather than a flag
            option = key.rsplit(".", 1)[-1]
            assert option in source, f"{COVERED[command]} never sets {option}, which `{command}` sets"


@pytest.mark.slow
@pytest.mark.parametrize("command", RUN_HERE)
def test_the_docs_command_runs_as_shown(command: str, tmp_path: Path):
    args = shlex.split(command)[1:]
    # job folders under tmp, so the run leaves the clone as it was; nothing else is added to the command
    jobs = [f"hydra.sweep.dir={tmp_path / 'sweep'}"] if "-m" in args else [f"hydra.run.dir={tmp_path / 'job'}"]
    if args[0] != "run" or "--help" in args or "--cfg" in args:
        jobs = []
    done = subprocess.run([str(EVALKIT), *args, *jobs], cwd=PROJECT_ROOT, env=evalkit_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == COMMANDS[command], f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
