"""The newcomer's path, run exactly as the docs write it: docs/getting-started.md's commands, in order, in an empty
folder outside the clone with a fresh virtual environment, from install to a prompt change gated under main's
policy, on the real local model (SmolLM2-135M through llama.cpp, installed by `evalkit setup local` from the
portable wheel this machine built once). The commands are read from the page, so the page cannot drift from what
runs; the README's quick start must be the page's own commands. Each step's exit code and key line are the ones
its comment promises: `exit N` (or `exit N ... or M`), a leading decision (`GO, exit 0`), and each quoted text
(`prints "setup local: ready"`), which must appear in what the step printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.wheel import evalkit_wheel

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "getting-started.md"
EXIT = re.compile(r"\b(?:exit|or) (\d)\b")
"""`exit 0`, and the alternatives a comment gives after it: `exit 0 (GO or REVIEW) or 1 (BLOCK)`."""


@dataclass(frozen=True)
class Step:
    command: str
    exits: frozenset[int]
    """The exit codes the comment allows (0 when it names none)."""
    decision: str | None
    """The decision the comment opens with (GO, REVIEW, BLOCK), which the output's first line must name."""
    says: tuple[str, ...]
    """The texts the comment quotes, each of which the output must contain (a trailing '...' cut off)."""


def steps(text: str) -> list[Step]:
    """Every command of the text's sh blocks, in order, with what its comment promises."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip():
                continue
            command, _, comment = line.partition("  # ")
            exits = frozenset(int(code) for code in EXIT.findall(comment)) if "exit " in comment else frozenset({0})
            opening = re.match(r"(GO|REVIEW|BLOCK|INCOMPARABLE)\b", comment)
            says = tuple(quoted.removesuffix("...") for quoted in re.findall(r'"([^"]+)"', comment))
            found.append(Step(command.strip(), exits, opening.group(1) if opening else None, says))
    return found


def test_a_comment_may_allow_more_than_one_exit_code() -> None:
    (step,) = steps("```sh\nevalkit run  # exit 0 (GO or REVIEW) or 1 (BLOCK): decided\n```\n")
    assert step.exits == {0, 1} and step.decision is None
    (step,) = steps('```sh\nevalkit run  # GO, exit 0: prints "decision: GO" and "changed: -..."\n```\n')
    assert step.exits == {0} and step.decision == "GO" and step.says == ("decision: GO", "changed: -")
    (step,) = steps("```sh\ngit init\n```\n")
    assert step.exits == {0} and step.says == ()


def readme_quick_start() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Get started in your own repository", 1)[1].split("\n## ", 1)[0]
    return [step.command for step in steps(section)]


def test_the_page_promises_the_whole_path_and_the_readme_quotes_it() -> None:
    """Held without a model: the page's steps are the issue's path, and the README's quick start is the page's."""
    commands = [step.command for step in steps(PAGE.read_text(encoding="utf-8"))]
    expected = ["pip install", "evalkit setup local", "evalkit new project", "new suite support --kind retrieval-qa",
                "mode=live", "evalkit bless", "git init", "prompts/v2.txt", "mode=record-missing",
                "policy_from=git:main"]
    positions = [next(i for i, c in enumerate(commands) if part in c) for part in expected]
    assert positions == sorted(positions), list(zip(expected, positions, strict=True))
    quick = readme_quick_start()
    assert quick and all(command in commands for command in quick), quick
    assert [c for c in commands if c in quick] == quick  # in the page's order


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evalkit_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
@pytest.mark.external
def test_the_getting_started_page_runs_as_written(wheel: Path, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the local model needs `evalkit setup local` on this machine once")
    from evalkit.live.providers.llamacpp_setup import wheel_folder

    if not list(wheel_folder().glob("llama_cpp_python-*.whl")):  # never a 5 to 40 minute compile inside a test
        pytest.skip(f"no portable llama-cpp-python wheel in {wheel_folder()}: run `evalkit setup local` once")
    project = tmp_path / "my-bot"  # outside the clone: nothing here can read the repository's conf/
    project.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("EVALKIT_PROJECT", "PYTEST_ADDOPTS", "HYDRA_FULL_ERROR", "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(EVALKIT_SOURCE=wheel.as_uri(), PYTHONDONTWRITEBYTECODE="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               GIT_AUTHOR_NAME="A User", GIT_AUTHOR_EMAIL="user@example.org", GIT_COMMITTER_NAME="A User",
               GIT_COMMITTER_EMAIL="user@example.org", GIT_CONFIG_GLOBAL=os.devnull)
    printed: dict[str, str] = {}
    for step in steps(PAGE.read_text(encoding="utf-8")):
        done = subprocess.run(["bash", "-c", step.command], cwd=project, env=env, capture_output=True, text=True,
                              timeout=1200)
        said = done.stdout + done.stderr
        printed[step.command] = said
        assert done.returncode in step.exits, f"{step.command}\n-> exit {done.returncode}\n{said}"
        if step.decision:
            assert done.stdout.startswith(f"decision: {step.decision}"), f"{step.command}\n{said}"
        for text in step.says:
            assert text in said, f"{step.command}: expected {text!r} in\n{said}"

    # installed from the wheel into the new venv, not from this clone
    site = subprocess.run([str(project / ".venv/bin/python"), "-c", "import evalkit; print(evalkit.__file__)"],
                          cwd=project, env=env, capture_output=True, text=True, check=True).stdout
    assert str(REPO) not in site and str(project / ".venv") in site
    by_part = {part: next(text for command, text in printed.items() if part in command)
               for part in ("new suite", "mode=live", "mode=record-missing", "policy_from=git:main")}
    assert "suites/support/README.md" in by_part["new suite"]
    assert (project / "suites/support/runs/baseline.json").is_file()
    recordings = sorted(p.name for p in (project / "recordings/support").glob("*.json"))
    assert len(recordings) == 2 and any("-v1-" in name for name in recordings) and any("-v2-" in name for name in
                                                                                        recordings)
    # the gate under main's policy: read from main, and named in the decision
    decisions = sorted(project.glob("outputs/*/*/decision.json"), key=lambda p: p.stat().st_mtime)
    gated = json.loads(decisions[-1].read_text())
    assert gated["decision"] in ("go", "review", "block")
    assert by_part["policy_from=git:main"].startswith(f"decision: {gated['decision'].upper()}")
    assert gated["changed"]["prompt_version"] == ["v1", "v2"]
    assert gated["evidence"]["policy"]["source"].startswith("git:main")  # main's policy, read from main
    # the model and the judge the page names (model=smollm2 judge=smollm2) are the ones in both runs' keys
    for side in ("baseline", "candidate"):
        key = gated["evidence"][side]["eval"]
        assert key["model"] == key["judge_model"] == "SmolLM2-135M-Instruct-Q4_1", key
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert log == ["support: prompt v2", "support suite, its recording and baseline"]
