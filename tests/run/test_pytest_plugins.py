"""`suite.pytest_plugins`: a suite that names the installed pytest plugins its checks use gets those (and evalkit's
own), no other installed plugin is imported in the checks' process, and the run report is the one every installed
plugin would have given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli
from helpers.run_input import authored_run_input
from test_workers import _generated_project, _report, _without_durations

from evalkit.core.errors import InputError
from evalkit.run.runner import run_checks

RUN_INPUT = authored_run_input(3)

CHECKS = '''
import sys

import pytest


@pytest.mark.anyio
async def test_async_reply(case, task_reply):  # runs only with anyio's plugin loaded
    assert task_reply == "x"


def test_hypothesis_plugin_not_imported(case):  # hypothesis' plugin is installed, and autoloaded unless named
    assert "_hypothesis_pytestplugin" not in sys.modules
'''


def _outcomes(tmp_path: Path, plugins: list[str] | None) -> dict[str, list[str]]:
    """Each check's outcomes over the three cases."""
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "test_plugins.py").write_text(CHECKS, encoding="utf-8")
    run_input = tmp_path / "run-input.json"
    run_input.write_text(json.dumps(RUN_INPUT), encoding="utf-8")
    out = tmp_path / f"out-{plugins}"
    out.mkdir()
    report: dict[str, Any] = run_checks(suite, run_input, out, plugins=plugins)
    outcomes: dict[str, list[str]] = {}
    for test in report["tests"]:
        outcomes.setdefault(test["nodeid"].split("::")[1].split("[")[0], []).append(test["outcome"])
    return outcomes


def test_only_the_plugins_a_suite_names_load(tmp_path):
    assert _outcomes(tmp_path, ["anyio"]) == {"test_async_reply": ["passed"] * 3,
                                              "test_hypothesis_plugin_not_imported": ["passed"] * 3}
    # none named: pytest alone runs no async check, and still no other plugin is imported
    assert _outcomes(tmp_path, []) == {"test_async_reply": ["failed"] * 3,
                                       "test_hypothesis_plugin_not_imported": ["passed"] * 3}
    # the default: every installed plugin, as pytest loads them
    assert _outcomes(tmp_path, None) == {"test_async_reply": ["passed"] * 3,
                                         "test_hypothesis_plugin_not_imported": ["failed"] * 3}


def test_a_plugin_that_is_not_installed_is_one_line(tmp_path):
    with pytest.raises(InputError, match=r"the suite's checks did not run \(pytest exit code \d+: .*"
                                         r"evalkit_no_such_plugin") as caught:
        _outcomes(tmp_path, ["evalkit_no_such_plugin"])
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_generated_suite_without_other_plugins_writes_the_same_report(tmp_path):
    conf, recordings = _generated_project(tmp_path)
    common = (f"hydra.searchpath=[file://{conf}]", "suite=gen", f"run.recordings={recordings}", "baseline=none")
    jobs = {"every": tmp_path / "every", "none": tmp_path / "none"}
    for name, extra in (("every", ()), ("none", ("+suite.pytest_plugins=[]",))):
        done = evalkit_cli("evalkit", *common, *extra, f"hydra.run.dir={jobs[name]}")
        assert done.returncode == 0, done.stderr
    every, none = _report(jobs["every"]), _report(jobs["none"])
    assert {t["outcome"] for t in every["tests"]} == {"passed", "failed", "skipped", "xfailed", "error"}
    assert json.dumps(_without_durations(none)) == json.dumps(_without_durations(every))
