"""The `evalkit` console script: one command with every subcommand, each the same program as its `python -m` form."""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, evalkit_cli, evalkit_env

from evalkit.cli.main import SUBCOMMANDS

EVALKIT = Path(sys.executable).parent / "evalkit"
BASELINE = "suites/issue_triage/runs/baseline.json"


def evalkit(*args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess[str]:
    """Run the installed `evalkit` script as a user would."""
    return subprocess.run([str(EVALKIT), *args], cwd=cwd, env=evalkit_env(), capture_output=True, text=True,
                          timeout=300)


def test_the_console_script_is_installed_by_the_package():
    assert EVALKIT.is_file(), "pip install -e . installs the `evalkit` script beside the interpreter"


def test_help_lists_every_subcommand_and_each_has_a_main():
    done = evalkit("--help")
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.split("commands:\n")[1].split("\n\n")[0].splitlines()]
    assert listed == list(SUBCOMMANDS)
    for sub in SUBCOMMANDS.values():
        assert callable(importlib.import_module(sub.module).main)


def test_the_old_python_m_forms_are_gone_and_python_m_evalkit_stays():
    """`python -m evalkit.X` was deprecated for `evalkit X` and is removed; `python -m evalkit` is `evalkit run`."""
    package = PROJECT_ROOT / "evalkit"
    assert sorted(p.name for p in package.glob("*/__main__.py")) == []
    assert {p.stem for p in package.glob("*.py")} == {"__init__", "__main__", "plugins"}
    gone = evalkit_cli("evalkit.gate", BASELINE, BASELINE)
    assert gone.returncode == 1 and "No module named evalkit.gate.__main__" in gone.stderr


@pytest.mark.parametrize("name", [name for name in SUBCOMMANDS if name != "run"])
def test_each_subcommand_help_ends_with_an_example_of_itself(name):
    done = evalkit(name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: evalkit {name} ")
    last = " ".join(done.stdout.split("\n\n")[-1].split())
    assert last == f"example: {SUBCOMMANDS[name].example}"


def test_run_help_lists_the_projects_options_and_evalkits_with_the_projects_examples():
    done = evalkit("run", "--help")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Usage: evalkit run [GROUP=OPTION ...]" in out and "5 outage" in out
    assert "  suite: evidencedesk*, issue_triage*, order_agent*, quality_lab*, receipts*, sql_agent*, support_chat*" in out  # the project's own, marked
    assert "  prompt: v1, v2*" in out  # evalkit's generic v1 beside the project's v2
    assert "smollm2" in out and "gemini-flash" in out  # evalkit's presets, though the project has none
    assert "replay suite issue_triage and gate it" in out and "  evalkit run prompt=v2 " in out


def test_run_help_in_a_new_project_keeps_evalkits_presets_beside_its_own_and_names_its_suite(tmp_path):
    project = tmp_path / "p"
    assert evalkit("new", "project", str(project), cwd=tmp_path).returncode == 0
    assert evalkit("new", "suite", "tickets", "--labels", "billing,bug", cwd=project).returncode == 0
    (project / "conf" / "model").mkdir()
    (project / "conf" / "model" / "smol-server.yaml").write_text("name: smollm2-135m\nprovider: openai\n")
    done = evalkit("run", "--help", cwd=project)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    model_line = out[out.index("  model: "):out.index("  policy: ")]
    for preset in ("smol-server*", "smollm2", "gemini-flash", "gpt-local"):
        assert preset in model_line
    assert "  prompt: v1\n" in out and "  dataset: v1\n" in out and "  judge: gemini-flash, smollm2\n" in out
    assert "replay suite tickets and gate it" in out and "evalkit run -m model=" in out
    assert "issue_triage" not in out and "quality_lab" not in out


@pytest.mark.slow
def test_evalkit_run_is_python_m_evalkit(tmp_path):
    script = evalkit("run", f"hydra.run.dir={tmp_path / 'a'}")
    module = evalkit_cli("evalkit", f"hydra.run.dir={tmp_path / 'b'}")
    assert (script.returncode, module.returncode) == (0, 0), script.stderr + module.stderr
    assert script.stdout.splitlines()[0] == module.stdout.splitlines()[0] == "decision: GO"
    assert (tmp_path / "a" / "report.json").is_file()


def test_a_usage_error_in_a_subcommand_keeps_the_input_error_code():
    done = evalkit("gate", BASELINE)
    assert done.returncode == 3 and "usage: evalkit gate" in done.stderr


@pytest.mark.parametrize("args", [("nope",), ("--nope",), ()])
def test_an_unknown_or_missing_command_is_an_input_error_never_a_decision(args):
    done = evalkit(*args)
    assert done.returncode == 3
    if args:
        assert len(done.stderr.strip().splitlines()) == 1 and "unknown command" in done.stderr
    else:
        assert done.stdout.startswith("usage: evalkit")


def test_version_is_the_installed_distributions():
    done = evalkit("--version")
    assert done.returncode == 0 and done.stdout == f"evalkit {version('evalkit')}\n"


