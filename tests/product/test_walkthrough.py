"""The docs site's tutorial, executed as written: a wheel of this repository installed into a fresh virtual
environment in a folder outside the clone, a project and a suite scaffolded, replies recorded live from a loopback
OpenAI-compatible test server, replayed, blessed and committed to main with the pull-request workflows; a prompt
change on a branch gated to BLOCK, a sweep, and the pull request that makes v2 the default and lowers the floor,
decided as the gate workflow decides it: under main's baseline and main's policy."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeOpenAI
from helpers.wheel import evalkit_wheel

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXPECTED_EXIT = re.compile(r"\bexit (\d)\b")
# the scaffold's example dataset, as the fake model sees it: message -> the right label
DATASET = json.loads((REPO / "evalkit/project/templates/suite/dataset.json.tmpl").read_text().replace("__SUITE__", "x"))
LABELS = {case["text"]: case["label"] for case in DATASET["cases"]}
WORSE_PROMPT = "briefly"  # the walkthrough's v2 prompt; the fake then mislabels one case
MISLABELLED = "late-refund"


def readme_commands() -> list[tuple[str, int]]:
    """Every command of the tutorial's sh blocks, in order, with the exit code its comment promises (else 0)."""
    text = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")  # the docs site's tutorial
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                code, _, comment = line.partition("  # ")
                found = EXPECTED_EXIT.search(comment)
                commands.append((code.strip(), int(found.group(1)) if found else 0))
    return commands


def fake_model(body: dict[str, Any]) -> str:
    """Classify as the scaffold's dataset says, except under the v2 prompt, which gets one case wrong."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    label = LABELS[user]
    case = next(c["id"] for c in DATASET["cases"] if c["text"] == user)
    if WORSE_PROMPT in system and case == MISLABELLED:
        label = "neutral"
    return json.dumps({"label": label, "reason": "what the message says"})


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evalkit_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_walkthrough_runs_as_written(wheel: Path, tmp_path: Path) -> None:
    project = tmp_path / "my-app"  # outside the clone: nothing here can read the repository's conf/
    project.mkdir()
    commands = readme_commands()
    assert len(commands) >= 20 and any("evalkit bless" in c for c, _ in commands)
    with FakeOpenAI(fake_model) as server:
        env = {k: v for k, v in os.environ.items()
               if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR", "VIRTUAL_ENV", "PYTHONPATH")}
        env.update(EVALKIT_SOURCE=wheel.as_uri(), MODEL_URL=server.base_url, PYTHONDONTWRITEBYTECODE="1",
                   GIT_AUTHOR_NAME="A User", GIT_AUTHOR_EMAIL="user@example.org", GIT_COMMITTER_NAME="A User",
                   GIT_COMMITTER_EMAIL="user@example.org", GIT_CONFIG_GLOBAL=os.devnull)
        outputs = []
        for command, expected in commands:
            done = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True,
                                  timeout=900)
            outputs.append(done.stdout)
            assert done.returncode == expected, f"{command}\n-> exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        calls = len(server.requests)

    # installed from the wheel, not from this clone
    site = subprocess.run([str(project / ".venv/bin/python"), "-c", "import evalkit; print(evalkit.__file__)"],
                          cwd=project, capture_output=True, text=True, check=True).stdout
    assert str(REPO) not in site and ".venv" in site
    # live runs called the server (5 cases, prompt v1 then v2); replays and the sweep did not
    assert calls == 10
    record, replay, bless = outputs[3], outputs[4], outputs[5]
    assert "15 of 15 tests passed" in record and "15 of 15 tests passed" in replay
    baseline = project / "suites/reviews/runs/baseline.json"
    assert baseline.is_file() and str(baseline.relative_to(project)) in bless
    workflows = project / ".github/workflows"
    gate = (workflows / "evalkit.yml").read_text()
    # the command the tutorial runs for the pull request is the gate workflow's, with main for the base branch
    assert "baseline=git:origin/$GITHUB_BASE_REF" in gate and "policy_from=git:origin/$GITHUB_BASE_REF" in gate
    assert (workflows / "evalkit-comment.yml").is_file()
    gated, replayed, sweep = outputs[12], outputs[13], outputs[14]
    for text in (gated, replayed):
        assert text.startswith("decision: BLOCK"), text
        assert f"checks.yaml::label_matches[{MISLABELLED}]" in text
        assert 'expected label "negative", came "neutral"' in text
    assert "| prompt=v1 |" in sweep and "| prompt=v2 |" in sweep
    assert (project / "outputs").is_dir() and (project / "multirun").is_dir()
    # the pull request: v2 is the suite's default, its floor lowered; main's policy still blocks it
    under_main, under_own = outputs[18], outputs[19]
    assert under_main.startswith("decision: BLOCK") and "1 regression(s); policy allows 0" in under_main
    assert "changed: prompt_version v1 -> v2" in under_main
    assert not under_own.startswith("decision: BLOCK")
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == ["reviews: prompt v2", "gate pull requests with evalkit",
                                       "reviews suite, its recording and baseline"]
    tracked = subprocess.run(["git", "ls-files"], cwd=project, capture_output=True, text=True, check=True).stdout
    assert "suites/reviews/runs/baseline.json" in tracked and not any(
        line.startswith((".venv/", "outputs/", "multirun/")) for line in tracked.splitlines())
