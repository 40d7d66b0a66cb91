"""Where the baseline run report comes from: the suite's shipped report, a path, `git:REF:PATH` or `git:REF`."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from evalkit.core.errors import InputError
from evalkit.core.files import decode, read_text_sha256
from evalkit.core.parsing import parse_json
from evalkit.gate.calibration import Calibration
from evalkit.project.git import GIT, show, split_spec
from evalkit.project.paths import find_project, project_path
from evalkit.records.calibration import CALIBRATION_FILE, JudgeCalibration, read_calibration
from evalkit.records.report_reader import RunReport, parse_report

__all__ = ["DEFAULT", "Baseline", "calibration_beside", "load_baseline", "load_calibration"]

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


def calibration_beside(report: Path) -> Calibration:
    """The judge calibration beside a baseline report file (CALIBRATION_FILE in its folder), or where it was
    looked for when there is none; one that is there and is not a calibration is refused (exit 3)."""
    path = report.expanduser().parent / CALIBRATION_FILE
    return Calibration(str(path), read_calibration(path) if path.is_file() else None)


def load_calibration(spec: str, suite_baseline: str | None) -> Calibration:
    """The judge calibration beside the baseline `load_baseline` reads for `spec`: beside the suite's baseline or
    the path given, or, for `git:REF:PATH` (and `git:REF`), beside it at that same ref, so a change under review
    cannot bring its own calibration to the gate that decides it."""
    if spec == DEFAULT:
        return calibration_beside(project_path(suite_baseline or "."))
    if not spec.startswith(GIT):
        return calibration_beside(Path(spec))
    ref, path_in_repo = split_spec(spec, f"baseline={spec}", "expected git:REF:PATH or git:REF")
    root = find_project() or Path.cwd()
    if not path_in_repo:
        path_in_repo = _relative_to_project(suite_baseline or ".", root, spec)
    # `./` paths are the project's, others the repository's (evalkit.project.git.show): keep the baseline's kind
    kind = "./" if path_in_repo.startswith("./") else ""
    beside = kind + str(PurePosixPath(path_in_repo).parent / CALIBRATION_FILE)
    where = f"{GIT}{ref}:{beside}"
    try:
        data = show(ref, beside, root, f"calibration {where}")
    except InputError:  # not at that ref: the check is uncalibrated, and the gate says where it looked
        return Calibration(where)
    try:
        return Calibration(where, JudgeCalibration.model_validate(parse_json(decode(data, where, "calibration"),
                                                                             where, "judge calibration")))
    except ValueError as error:
        raise InputError(f"{where}: not a judge calibration ({str(error).splitlines()[0]})") from None


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
