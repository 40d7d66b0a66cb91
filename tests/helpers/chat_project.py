"""A project around the turn protocol's example program (tests/helpers/turn_chat/chat.py), for the end-to-end tests of
a program in conversation: `evalkit new project`, then the suite `chat` (the program, its checks, a dataset of
conversations) and the config options the tests name. The program's model is a loopback one that answers as
`program_model_reply` says. `project_env`, `evalkit_in` and `job_report` run evalkit there and read what it wrote."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

CHAT = Path(__file__).resolve().parent / "turn_chat" / "chat.py"


def program_model_reply(messages: list[dict[str, Any]]) -> str:
    """The program's model: it knows the user's name only from the program's system prompt."""
    system, last = messages[0]["content"], messages[-1]["content"]
    if "What is my name?" in last:
        known = re.search(r"The user's name is (\w+)\.", system)
        return f"Your name is {known.group(1)}." if known else "I do not know your name."
    return f"Noted ({len(messages) // 2} messages so far)."


def chat_suite(*, simulator: str | None = None) -> str:
    """The suite option `suite/chat`: the program, its model calls through evalkit's endpoint; with SIMULATOR, that
    simulator option in its defaults."""
    chosen = f"  - /simulator: {simulator}\n" if simulator else ""
    return f"""# @package _global_
defaults:
  - /dataset: chat
  - /model: chat-model
{chosen}  - /chat_program: baseline
  - /policy: chat

suite:
  name: chat
  path: suites/chat
  components: [chat_program]
  program:
    component: chat_program
    files_field: null
    endpoint: true
"""


def chat_project(root: Path, env: Mapping[str, str], *, conversations: Mapping[str, Any],
                 answers: Mapping[str, Any], checks: str, purpose: str, conf: Mapping[str, str]) -> Path:
    """Make the project in `root` and return the suite's folder: one case per conversation (its `conversation`
    field), the references in answers.json, `checks` as the suite's test module, and `conf` (group/option ->
    YAML text) beside the dataset's and the policy's options, the suite made the default."""
    made = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "new", "project"], cwd=root, env=dict(env),
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    suite = root / "suites/chat"
    (suite / "data").mkdir(parents=True)
    (suite / "chat.py").write_bytes(CHAT.read_bytes())
    (suite / "test_chat.py").write_text(checks)
    samples = [{"id": case, "split": "acceptance", "group": case, "origin": "authored-synthetic-v1",
                "conversation": conversation} for case, conversation in conversations.items()]
    (suite / "data/samples.json").write_text(json.dumps(samples))
    (suite / "data/answers.json").write_text(json.dumps(answers))
    manifest = {"version": "chat-v1", "synthetic": True, "purpose": purpose,
                "splits": {"acceptance": {"samples": len(samples), "groups": len(samples)}},
                "sha256": {name: hashlib.sha256((suite / "data" / name).read_bytes()).hexdigest()
                           for name in ("samples.json", "answers.json")}}
    (suite / "data/manifest.json").write_text(json.dumps(manifest))
    for group, text in {
        "dataset/chat": "manifest: ${suite.path}/data/manifest.json\nsplit: acceptance\n",
        "model/chat-model": "defaults: [gpt-local, _self_]\nname: chat-model\n",
        "policy/chat": "version: 1\nmax_regressions: 0\n",
        "chat_program/baseline": "program: ${suite.path}/chat.py\nchange: baseline\ntimeout_s: 20\n",
        **conf,
    }.items():
        (root / "conf" / group).parent.mkdir(parents=True, exist_ok=True)
        (root / "conf" / f"{group}.yaml").write_text(text)
    config = root / "conf/config.yaml"
    config.write_text(config.read_text().replace("  - _self_", "  - suite: chat\n  - _self_"))
    return suite


def project_env() -> dict[str, str]:
    """This environment without what would point evalkit at this repository's project or change pytest's runs."""
    return {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}


def evalkit_in(root: Path, env: Mapping[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`python -m evalkit baseline=none run.progress=off ARGS` in the project at `root`."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "evalkit", "baseline=none", "run.progress=off", *args],
                              cwd=root, env=dict(env), capture_output=True, text=True, timeout=300)

    return run


def job_report(root: Path, job: str) -> dict[str, Any]:
    """The report.json of the run whose `hydra.run.dir` was `outputs/JOB`."""
    data: dict[str, Any] = json.loads((root / f"outputs/{job}/report.json").read_text())
    return data
