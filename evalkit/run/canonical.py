"""The canonical form of a run report, as saved for a baseline: only what the run measured, in a stable order,
so regenerating an unchanged baseline rewrites no byte and a reviewer's diff shows only what changed.

The job folder's `report.json` keeps everything (timings, commit, Python version): it is the run's full
record. A saved baseline (`run.save_report=PATH`, `evalkit bless`) drops what changes from one
regeneration to the next without the run changing, and the gate reads both forms alike.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping
from typing import Any

from evalkit.core.json_text import indented_json
from evalkit.project.paths import find_project

__all__ = ["VOLATILE", "canonical_report", "canonical_text"]

# What a saved baseline leaves out, and why: each differs between two regenerations of an unchanged run.
VOLATILE = {
    "created": "when pytest ran (a timestamp)",
    "duration": "how long pytest ran, and each test stage's duration",
    "provenance.git_commit": "the commit the run was made from: it changes whenever anything is committed",
    "provenance.python": "the Python version of the machine that ran it",
    "execution.live": "how the calls of a live run went this time (sent, retried, seconds, CPU seconds, budget spent)",
    "cases[].program.wall_ms": "how long each candidate program ran",
    "tests[].<stage>.crash.lineno in evalkit's own code": "where evalkit's check plugin failed a declared check: "
                                                           "it moves with every edit of evalkit, not with the run",
    "tests[] and warnings[] texts": "absolute paths of this machine, and object addresses (`at 0x7f8e...`) in "
                                    "pytest's rendering of a failure's locals",
}
_STAGES = ("setup", "call", "teardown")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def canonical_report(data: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of report data without the fields in VOLATILE, and with absolute paths of this project and of
    this Python environment made relative (`evalkit/run/plugin.py`, `<python>/...`) in test failure texts."""
    out = {k: v for k, v in data.items() if k not in ("created", "duration")}
    if isinstance(out.get("tests"), list):
        out["tests"] = [_test(t) if isinstance(t, Mapping) else t for t in out["tests"]]
    if isinstance(out.get("provenance"), Mapping):
        out["provenance"] = {k: v for k, v in out["provenance"].items() if k not in ("git_commit", "python")}
    if isinstance(out.get("execution"), Mapping):
        out["execution"] = {k: v for k, v in out["execution"].items() if k != "live"}
    if isinstance(out.get("cases"), list):
        out["cases"] = [_case(c) if isinstance(c, Mapping) else c for c in out["cases"]]
    if isinstance(out.get("warnings"), list):
        out["warnings"] = _unplace(out["warnings"])
    return out


def canonical_text(data: Mapping[str, Any]) -> str:
    """The saved bytes: canonical_report as JSON, one-space indent, UTF-8, a final newline. Keys are sorted, except
    inside `eval`, whose order is the key's own (the gate lists changed components in it); lists keep their order
    (tests in pytest's collection order, which the suite's code fixes)."""
    report = canonical_report(data)
    ordered = {name: report[name] if name == "eval" else _sorted(report[name]) for name in sorted(report)}
    return indented_json(ordered) + "\n"


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _test(test: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: _unplace(v) for k, v in test.items() if k != "duration"}
    for stage in _STAGES:
        if isinstance(out.get(stage), Mapping):
            out[stage] = {k: v for k, v in out[stage].items() if k != "duration"}
            crash = out[stage].get("crash")
            if isinstance(crash, Mapping) and _ours(crash.get("path")):
                out[stage]["crash"] = {k: v for k, v in crash.items() if k != "lineno"}
    return out


def _ours(path: object) -> bool:
    """Whether a failure's place is evalkit's own code (named from the project root, or installed)."""
    return isinstance(path, str) and (path.startswith("evalkit/") or
                                      (path.startswith("<python>/") and "/evalkit/" in path))


def _case(case: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(case)
    if isinstance(out.get("program"), Mapping):
        out["program"] = {k: v for k, v in out["program"].items() if k != "wall_ms"}
    return out


@functools.cache
def _places() -> tuple[tuple[str, str], ...]:
    """Absolute prefixes to drop, the environment first (it may lie inside the project: .venv/)."""
    root = find_project()
    return ((f"{sys.prefix}/", "<python>/"),) + (((f"{root}/", ""),) if root is not None else ())


def _unplace(value: Any) -> Any:
    """Failure texts name files by absolute path when they lie outside the suite (evalkit's own code, the
    installed packages): name them from the project root or from Python's prefix instead; and pytest shows a
    failing test's locals with their memory addresses, which differ on every run."""
    if isinstance(value, str):
        for prefix, shown in _places():
            value = value.replace(prefix, shown)
        return _ADDRESS.sub(" at 0x...", value)
    if isinstance(value, Mapping):
        return {k: _unplace(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unplace(v) for v in value]
    return value
