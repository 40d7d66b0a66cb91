"""One file per job: the jobs of a sweep may not share a `run.save_report` or `run.otel_export` path.

A fixed path in a multirun (`evalkit run -m prompt=v1,v2 run.save_report=base.json`) would have each job replace
the file the job before it wrote: every job's report but the last lost, without a word. So before a job calls
anything it claims the files it will write, in the sweep folder; a path another job of the same sweep claimed is
refused in one line naming that job and how to give each job its own file (`${hydra:job.num}` in the path).

A claim is a small file made with one atomic link, so jobs running at once (joblib, a Slurm array on a shared file
system) agree on who came first. The claims are cleared when a sweep starts (`SweepSummary.on_multirun_start`): a
sweep run again into the same folder starts over.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from evalkit.core.config import RunConfig
from evalkit.core.errors import InputError

__all__ = ["CLAIMS", "claim_outputs", "clear_claims"]

CLAIMS = ".evalkit-claims"  # in the sweep folder; summary.py lists only job folders, never this one


def clear_claims(sweep_dir: Path) -> None:
    """Forget the claims of an earlier sweep into SWEEP_DIR (a new sweep's jobs may reuse their files)."""
    shutil.rmtree(sweep_dir / CLAIMS, ignore_errors=True)


def claim_outputs(config: RunConfig, sweep_dir: Path, job: int) -> None:
    """Claim, for job JOB of the sweep in SWEEP_DIR, the files outside its job folder it will write; refuse one
    another job claimed."""
    for setting, value in (("run.save_report", config.run.save_report), ("run.otel_export", config.run.otel_export)):
        if value:
            _claim(sweep_dir / CLAIMS, setting, Path(value).expanduser().resolve(), job)


def _claim(folder: Path, setting: str, path: Path, job: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    claim = folder / f"{hashlib.sha256(os.fsencode(path)).hexdigest()[:32]}.json"
    # written whole, then linked into place: a claim is never seen half-written, and link refuses an existing one
    descriptor, draft = tempfile.mkstemp(dir=folder, prefix=".draft-")
    try:
        with os.fdopen(descriptor, "w") as file:
            json.dump({"job": job, "setting": setting, "path": os.fspath(path)}, file)
        try:
            os.link(draft, claim)
            return
        except FileExistsError:
            pass
    finally:
        os.unlink(draft)
    owner = _owner(claim)
    if owner == job:
        return  # this job again (a requeued Slurm task, a rerun into the same folder)
    by = f"job {owner}" if owner is not None else "another job"
    example = f"{path.stem}-${{hydra:job.num}}{path.suffix}"
    raise InputError(f"{setting}={path}: {by} of this sweep writes this file too, and each job would replace the "
                     f"file the one before it wrote; give each job its own, e.g. {setting}='{example}'")


def _owner(claim: Path) -> int | None:
    try:
        job = json.loads(claim.read_text(encoding="utf-8")).get("job")
    except (OSError, ValueError, AttributeError):
        return None
    return job if isinstance(job, int) and not isinstance(job, bool) else None
