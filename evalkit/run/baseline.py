"""Where the baseline run report comes from: the suite's shipped report, a path, `git:REF:PATH` or `git:REF`."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from evalkit.core.errors import InputError
from evalkit.core.files import decode, read_text_sha256
from evalkit.core.report import RunReport, parse_report
from evalkit.project.git import GIT, show, split_spec
from evalkit.project.paths import find_project, project_path

__all__ = ["DEFAULT", "Baseline", "load_baseline"]

DEFAULT = "default"


class Baseline(NamedTuple):
    name: str
    """How the baseline was named: the suite's baseline path, the path given, or `git:REF:PATH`."""
    report: RunReport
    sha256: str
    """SHA-256 of the report's bytes as read, so a decision names exactly what it compared against."""


def load_baseline(spec: str, suite_baseline: str | None, suite: str) -> Baseline:
    """The baseline report and its identity. `git:REF:PATH` is read with `git show`, as CI reads main's;
    `git:REF` is the suite's own baseline path at REF."""
    if spec == DEFAULT:
        if not suite_baseline:
            raise InputError(f"suite {suite} ships no baseline report; pass baseline=PATH or baseline=none")
        path = project_path(suite_baseline)
        if not path.exists():  # a new suite: say how its first baseline is made, not only what is missing
            raise InputError(f"suite {suite} has no baseline yet ({suite_baseline} not found): run it without "
                             f"gating, `evalkit run suite={suite} baseline=none` (with mode=live to call "
                             "the model), then make that run its baseline, "
                             "`evalkit bless outputs/.../report.json`")
        return Baseline(str(suite_baseline), *_read(path))
    if spec.startswith(GIT):
        return _from_git(spec, suite_baseline, suite)
    return Baseline(spec, *_read(Path(spec).expanduser()))


def _from_git(spec: str, suite_baseline: str | None, suite: str) -> Baseline:
    label = f"baseline={spec}"
    ref, path_in_repo = split_spec(spec, label, "expected git:REF:PATH or git:REF (the suite's own baseline at REF), "
                                   "e.g. git:origin/main:suites/x/runs/baseline.json or git:origin/main")
    # git runs in the project root: a `./` path is then relative to the project, wherever the repository's top is
    root = find_project() or Path.cwd()
    name = spec
    if not path_in_repo:
        if not suite_baseline:
            raise InputError(f"{label}: suite {suite} ships no baseline report to read at {ref}; "
                             f"pass baseline=git:{ref}:PATH")
        path_in_repo = _relative_to_project(suite_baseline, root, spec)
        name = f"{GIT}{ref}:{suite_baseline}"
    data = show(ref, path_in_repo, root, label)
    return Baseline(name, parse_report(decode(data, name, "report"), name), hashlib.sha256(data).hexdigest())


def _read(path: Path) -> tuple[RunReport, str]:
    text, sha = read_text_sha256(path, "report")
    return parse_report(text, str(path)), sha


def _relative_to_project(suite_baseline: str, root: Path, spec: str) -> str:
    """The suite's baseline as a `./` path for `git show` run in the project root."""
    path = Path(suite_baseline).expanduser()
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError:
            raise InputError(f"baseline={spec}: the suite's baseline {suite_baseline} is outside the project "
                             f"{root}, so git cannot read it at a ref; pass baseline=git:REF:PATH") from None
    return "./" + str(PurePosixPath(*path.parts))
