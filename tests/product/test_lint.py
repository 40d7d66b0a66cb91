"""The package stays clean under the project's own checks (configured in pyproject.toml), so a contributor's
`mypy` and `ruff check` start from zero findings rather than from someone else's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)


def test_mypy_strict_passes_on_the_package():
    result = _tool("mypy")  # files and strictness come from [tool.mypy]
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout


def test_ruff_finds_nothing():
    result = _tool("ruff", "check", "evalkit", "tests", "docs", "benchmarks")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
