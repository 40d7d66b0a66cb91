"""Shared helpers for evalkit's own tests: hand-built reports and a real `python -m evalkit` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project

# The tests mirror the package (tests/<package>/test_<name>.py; CONTRIBUTING.md). pytest's default `prepend` import
# mode imports each test module by its basename, putting only the folders it has collected so far on sys.path, so a
# test module that imports another (`from test_execute import StandIn`) would import or not depending on which
# folders were collected first (a file run alone, one xdist worker's share). Every folder of test modules goes on
# sys.path here, once, at the end: such imports work from anywhere as they did when the tests sat flat, and
# basenames stay unique (tests/product/test_tests_layout.py). Packages (helpers, fakes) are imported as packages
# from tests/ itself and never put there: their modules' names (wheel, server ...) would shadow real ones.
sys.path.extend(str(folder) for folder in sorted(Path(__file__).resolve().parent.iterdir())
                if folder.is_dir() and not (folder / "__init__.py").exists() and any(folder.glob("test_*.py"))
                and str(folder) not in sys.path)

# The fuzz harness's profiles (tests/fuzz), registered before Hypothesis reads `--hypothesis-profile`: `quick` in
# CI (seconds on two cores), `long` on demand. Each example is a file read in a child process, so the harness
# bounds each read itself instead of Hypothesis's per-example deadline. Loaded by the harness's tests only.
settings.register_profile("quick", max_examples=25, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=1500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# browser: Chromium for the HTML pages (tests/helpers/browser.py); no_hidden_skips: under CI=true a skip fails the run;
# live: the `evalkit` and `server` fixtures of the live runs against a fake Ollama (tests/helpers/live.py);
# entry_points: `installed_entry_points`, the registry's view of installed plugins replaced by a test's list
pytest_plugins = ["pytester", "helpers.browser", "helpers.no_hidden_skips", "helpers.live", "helpers.compose",
                  "helpers.entry_points"]

KEY = {"dataset": "issue-triage@1", "dataset_sha": "aaa", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "j"}


def report(outcomes: dict[str, str], **key: Any) -> dict[str, Any]:
    """A run report in its minimal form: an eval key and per-test outcomes."""
    tests = [{"nodeid": f"test_triage.py::{name}", "outcome": o} for name, o in outcomes.items()]
    return {"eval": {**KEY, **key}, "tests": tests}


def evalkit_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def evalkit_cli(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m MODULE ARGS` from the project root, as a user would; output captured."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=PROJECT_ROOT, env=evalkit_env(),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def run_evalkit(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `python -m evalkit ARGS` from the project root with its outputs under tmp_path."""

    def run(*args: str, command: str | None = None, job_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`command`: another subcommand than `run` (`gate`, `review` ...), which gets ARGS as they are."""
        if command is not None:
            return evalkit_cli("evalkit.cli.main", command, *args)
        extra = [f"hydra.sweep.dir={tmp_path / 'sweep'}"] if "-m" in args else [
            f"hydra.run.dir={job_dir or tmp_path / 'job'}"]
        return evalkit_cli("evalkit", *args, *extra)

    return run


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def check_adapted_pair(baseline: Any, candidate: Any, expected: tuple[Any, ...]) -> None:
    """Gate two adapted runs (evalkit.adapt's neutral runs) under the strict default and check the decision an
    adapter test's fixture README names: (verdict, regressed, fixed, the first word of each reason)."""
    from evalkit.adapt.framework import gate_runs
    from evalkit.core.policy import STRICT_DEFAULT

    verdict, regressed, fixed, reasons = expected
    decision = gate_runs(STRICT_DEFAULT, baseline, candidate).decision
    assert decision.decision is verdict
    assert decision.regressed == regressed and decision.fixed == fixed
    assert [reason.split(" ")[0] for reason in decision.reasons] == [words.split(" ")[0] for words in reasons]
