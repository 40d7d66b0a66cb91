"""benchmarks/peers.py at a tiny size: every tool runs the same cases and passes them all, in rotated rounds, and
the last line has its shape; a tool whose own output shows a failed case stops the benchmark with one line.
(Its figures come from running it by hand at 10,000 cases: benchmarks/README.md.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = PROJECT_ROOT / "benchmarks" / "peers.py"
DEEPEVAL_RUN = PROJECT_ROOT / "tests/corpus/adapt/deepeval/baseline.json"  # written by deepeval 4.3.1: 3 cases

# Where scripts/test.sh installs each peer (the variables it exports, then its default folders), as peers.py looks.
PEERS = {"deepeval": ("EVALKIT_DEEPEVAL_PYTHON", ".venv-deepeval/bin/python"),
         "promptfoo": ("EVALKIT_PROMPTFOO", ".tools/promptfoo/node_modules/.bin/promptfoo"),
         "inspect": ("EVALKIT_INSPECT_PYTHON", ".venv-inspect/bin/python")}
TOOLS = ["pytest", "deepeval", "promptfoo", "inspect", "evalkit", "workers"]  # round 1's order
RATIO = r"\d+\.\d\d"


def _installed(peer: str) -> bool:
    variable, default = PEERS[peer]
    return Path(os.environ.get(variable) or PROJECT_ROOT / default).exists()


def _peers(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=PROJECT_ROOT, env=env or dict(os.environ),
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@pytest.mark.external
def test_every_tool_runs_the_same_cases_in_rotated_rounds_and_passes_them_all() -> None:
    # Outside CI a peer that is not installed is left out (and the test says so at the end); under CI=true every
    # peer is installed, and a missing one fails the run with peers.py's line naming it.
    missing = [] if os.environ.get("CI") == "true" else [peer for peer in PEERS if not _installed(peer)]
    done = _peers("--cases", "3", "--rounds", "2", "--skip", ",".join(missing))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    ran = [tool for tool in TOOLS if tool not in missing]
    runs = [re.fullmatch(r"round (\d)/2 (\w+): \d+\.\d\ds, 3 of 3 passed \(load [\d.]+\)", line) for line in lines]
    order = [(int(m[1]), m[2]) for m in runs if m]
    assert order == [(1, tool) for tool in ran] + [(2, tool) for tool in ran[1:] + ran[:1]]
    expected = " ".join(f"{name}=" + ("skipped" if peer in missing else RATIO) for name, peer in
                        [("vs_pytest", ""), ("vs_deepeval", "deepeval"), ("vs_promptfoo", "promptfoo"),
                         ("vs_inspect", "inspect"), ("workers_vs_pytest", "")])
    assert re.fullmatch(expected, lines[-1]), lines[-1]
    assert re.fullmatch(r"cases=3 rounds=2 cpu='.+' nproc=\d+ workers_auto=\d+ load_avg=[\d. ]+", lines[-2])
    if missing:
        pytest.skip(f"ran without {', '.join(missing)}: not installed (scripts/test.sh installs them)")


@pytest.mark.slow
def test_a_tool_whose_own_output_shows_a_failed_case_stops_the_benchmark_with_one_line(tmp_path: Path) -> None:
    """A stand-in for DeepEval's Python that leaves a real DeepEval run of 3 cases in its results folder, one of
    them failed: the benchmark reads it as DeepEval's output and stops there, exit 1."""
    fake = tmp_path / "deepeval-python"
    fake.write_text(f'#!/bin/sh\ncp "{DEEPEVAL_RUN}" "$3/test_run_20261202.json"\n')
    fake.chmod(0o755)
    done = _peers("--cases", "3", "--rounds", "1", "--skip", "promptfoo,inspect",
                  env={**os.environ, "EVALKIT_DEEPEVAL_PYTHON": str(fake)})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "benchmarks/peers.py: deepeval passed 2 of 3 cases (its output test_run_20261202.json: 3 cases, 6 checks, "
        "5 passed)"], done.stderr


def test_a_peer_that_is_not_installed_is_one_line_naming_where_it_was_looked_for(tmp_path: Path) -> None:
    absent = tmp_path / "no-such-python"
    done = _peers("--cases", "3", env={**os.environ, "EVALKIT_INSPECT_PYTHON": str(absent)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"benchmarks/peers.py: inspect is not installed at {absent}: run scripts/test.sh (it installs it), set "
        "EVALKIT_INSPECT_PYTHON, or leave it out with --skip inspect"]
