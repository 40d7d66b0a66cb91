"""The docs site's tutorial ("Use evalkit in your repository"), executed as written: a wheel of this repository installed into a fresh
virtual environment in a folder outside the clone, a project and a suite scaffolded, replies recorded live from a
loopback OpenAI-compatible test server, replayed, blessed, a prompt change gated to BLOCK, and a sweep."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeOpenAI

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Use evalkit in your repository"
EXPECTED_EXIT = re.compile(r"\bexit (\d)\b")
# the scaffold's example dataset, as the fake model sees it: message -> the right label
DATASET = json.loads((REPO / "evalkit/project/templates/suite/dataset.json.tmpl").read_text().replace("__SUITE__", "x"))
LABELS = {case["text"]: case["label"] for case in DATASET["cases"]}
WORSE_PROMPT = "briefly"  # the walkthrough's v2 prompt; the fake then mislabels one case
MISLABELLED = "late-refund"


def readme_commands() -> list[tuple[str, int]]:
    """Every command of the walkthrough's sh blocks, in order, with the exit code its comment promises (else 0)."""
    text = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")  # the docs site's tutorial
    section = text[text.index(SECTION):]
    end = section.find("\n## ", len(SECTION))
    section = section if end < 0 else section[:end]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
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
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(REPO)], check=True, capture_output=True, timeout=600)
    (built,) = out.glob("evalkit-*.whl")
    return built


def test_the_walkthrough_runs_as_written(wheel: Path, tmp_path: Path) -> None:
    project = tmp_path / "my-app"  # outside the clone: nothing here can read the repository's conf/
    project.mkdir()
    commands = readme_commands()
    assert len(commands) >= 10 and any("evalkit.bless" in c for c, _ in commands)
    with FakeOpenAI(fake_model) as server:
        env = {k: v for k, v in os.environ.items()
               if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR", "VIRTUAL_ENV", "PYTHONPATH")}
        env.update(EVALKIT_SOURCE=wheel.as_uri(), MODEL_URL=server.base_url, PYTHONDONTWRITEBYTECODE="1")
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
    gated, replayed, sweep = outputs[8], outputs[9], outputs[10]
    for text in (gated, replayed):
        assert text.startswith("decision: BLOCK"), text
        assert f"test_label[{MISLABELLED}]" in text and "expected negative, got neutral" in text
    assert "| prompt=v1 |" in sweep and "| prompt=v2 |" in sweep
    assert (project / "outputs").is_dir() and (project / "multirun").is_dir()
