"""A hostile input's child process, bounded: an address-space limit and a wall-clock limit, so a blowup or a hang
fails the test that fed it instead of the machine or the session (issue 35: no finding may come back).

`run_bounded` runs one command (usually `python -m evalkit ...` or `python -c ...`) under both limits. A child that
runs out of time is killed with its whole process group and the test fails naming the limit; a child that runs out
of memory ends as Python ends it (a MemoryError, exit 4 from evalkit's handler, or a signal), which the caller's
exit-code assertion catches."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A few hundred MB: a Python process with evalkit, Hydra and pydantic imported uses about 120 MB of address space
# beyond its libraries' mappings; numpy and pyarrow map more. 1 GiB of address space leaves room for those and
# still ends a run that grows without bound within seconds.
MEMORY_LIMIT_MB = 1024
WALL_LIMIT_S = 60.0


def run_bounded(args: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
                memory_mb: int = MEMORY_LIMIT_MB, timeout_s: float = WALL_LIMIT_S,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ARGS under the limits; fail the calling test if it did not end within `timeout_s`."""
    limit = memory_mb * 1024 * 1024

    def bound() -> None:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    child_env = {k: v for k, v in (env if env is not None else os.environ).items() if k != "HYDRA_FULL_ERROR"}
    # the checkout under test, not whichever evalkit the venv's editable install points at
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), child_env.get("PYTHONPATH", "")) if p)
    child_env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        child_env.setdefault(var, "1")
    process = subprocess.Popen(list(args), cwd=cwd or ROOT, env=child_env, text=True, preexec_fn=bound,
                               stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"{' '.join(args)[:200]} did not end within {timeout_s:g} s (a hang); stderr: {err[-500:]}")
    return subprocess.CompletedProcess(list(args), process.returncode, out, err)


def evalkit_bounded(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """`python -m evalkit ARGS` (the one CLI) under the limits."""
    return run_bounded([sys.executable, "-m", "evalkit.cli.main", *args], **kwargs)  # type: ignore[arg-type]


def python_bounded(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` under the limits: a library call fed one hostile input."""
    return run_bounded([sys.executable, "-c", code], **kwargs)  # type: ignore[arg-type]
