"""Where the baseline run report comes from: the suite's shipped report, a path, or `git:REF:PATH`."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import NamedTuple

from evalkit.core.errors import InputError
from evalkit.core.files import read_text_sha256
from evalkit.core.report import RunReport, parse_report
from evalkit.project.paths import project_path

__all__ = ["DEFAULT", "Baseline", "load_baseline"]

DEFAULT = "default"


class Baseline(NamedTuple):
    name: str
    """How the baseline was named: the suite's baseline path, the path given, or `git:REF:PATH`."""
    report: RunReport
    sha256: str
    """SHA-256 of the report's bytes as read, so a decision names exactly what it compared against."""


def load_baseline(spec: str, suite_baseline: str | None, suite: str) -> Baseline:
    """The baseline report and its identity. `git:REF:PATH` is read with `git show`, as CI reads main's."""
    if spec == DEFAULT:
        if not suite_baseline:
            raise InputError(f"suite {suite} ships no baseline report; pass baseline=PATH or baseline=none")
        return Baseline(str(suite_baseline), *_read(project_path(suite_baseline)))
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
        # the text as git printed it, re-encoded: the blob's bytes for UTF-8 files with LF line ends
        return Baseline(spec, parse_report(done.stdout, spec), hashlib.sha256(done.stdout.encode("utf-8")).hexdigest())
    return Baseline(spec, *_read(Path(spec).expanduser()))


def _read(path: Path) -> tuple[RunReport, str]:
    text, sha = read_text_sha256(path, "report")
    return parse_report(text, str(path)), sha
