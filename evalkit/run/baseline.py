"""Where the baseline run report comes from: the suite's shipped report, a path, or `git:REF:PATH`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evalkit.core.errors import InputError
from evalkit.core.report import RunReport, load_report, parse_report
from evalkit.project.paths import project_path

__all__ = ["DEFAULT", "load_baseline"]

DEFAULT = "default"


def load_baseline(spec: str, suite_baseline: str | None, suite: str) -> tuple[str, RunReport]:
    """Return (how to name it, the report). `git:REF:PATH` is read with `git show`, as CI reads main's."""
    if spec == DEFAULT:
        if not suite_baseline:
            raise InputError(f"suite {suite} ships no baseline report; pass baseline=PATH or baseline=none")
        path = project_path(suite_baseline)
        return str(suite_baseline), load_report(path)
    if spec.startswith("git:"):
        ref, sep, path_in_repo = spec[4:].partition(":")
        if not sep or not ref or not path_in_repo:
            raise InputError(f"baseline={spec}: expected git:REF:PATH, "
                             "e.g. git:origin/main:suites/x/runs/baseline.json")
        try:
            done = subprocess.run(["git", "show", f"{ref}:{path_in_repo}"], capture_output=True, text=True,
                                  check=False, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise InputError(f"baseline={spec}: cannot run git ({error})") from None
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
            raise InputError(f"baseline={spec}: git show failed: {first}")
        return spec, parse_report(done.stdout, spec)
    return spec, load_report(Path(spec).expanduser())
