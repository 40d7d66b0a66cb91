"""Hydra's submitit launchers (Slurm, local) made to account for every job of a sweep, lost ones included.

The plugin's launcher waits on its jobs in order and raises at the first that ended without a result (cancelled
with `scancel`, killed at its time limit, its node lost): the later jobs are never waited on, and Hydra never
calls the sweep summary. `Accounted` waits on every job; a job that ended without a result gets an error row
(`job.json` in its folder, exit 5: the cluster, not the evaluation, failed) saying what Slurm reported, so the
summary lists it and the sweep exits non-zero. Submission is the plugin's own `launch` up to `map_array`, kept
in step with hydra-submitit-launcher 1.2.x (the version the `launchers` extra pins).

Hydra instantiates plugins only from the `hydra_plugins` package, so the launcher classes are declared in
hydra_plugins/evalkit_launchers/submitit.py; `SweepSummary.on_multirun_start` puts them in place of the plugin's
own, so `hydra/launcher=submitit_slurm` (or `submitit_local`) is all a user writes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus

from evalkit.core.atomic import write_atomic
from evalkit.core.errors import one_line
from evalkit.gate.decision import ExitCode
from evalkit.sweeps.summary import JOB_FILE

__all__ = ["Accounted"]

log = logging.getLogger(__name__)


class Accounted:
    """Mixed into a submitit launcher: `launch` that waits on every job and gives a lost one an error row."""

    config: Any
    hydra_context: Any
    _EXECUTOR: str  # the plugin's: "slurm" or "local"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs one job (in the job's own process, on the cluster)."""
        _leave_the_time_limit_to_the_cluster()
        return super().__call__(*args, **kwargs)  # type: ignore[misc]

    def launch_accounted(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
        return self._wait_all(_submit(self, job_overrides, initial_job_idx), job_overrides, initial_job_idx)

    def _wait_all(self, jobs: Sequence[Any], job_overrides: Sequence[Sequence[str]],
                  initial_job_idx: int) -> list[JobReturn]:
        """Each job's return, in job order, once every job has ended or been given up on (never a hang)."""
        pending = {initial_job_idx + offset: (job, list(overrides))
                   for offset, (job, overrides) in enumerate(zip(jobs, job_overrides, strict=True))}
        returns: dict[int, JobReturn] = {}
        watch = _Watch(float(getattr(self, "params", {}).get("timeout_min") or 60) * 60)
        while pending:
            for number, (job, overrides) in list(pending.items()):
                if job.done():
                    returns[number] = self._collect(job, number, overrides)
                elif (why := watch.overdue(number, _state(job))) is not None:  # the cluster lost track of it
                    job.cancel(check=False)
                    returns[number] = self._lost(job, number, overrides, why, _state(job))
                else:
                    continue
                del pending[number]
            if pending:
                time.sleep(POLL_S)
        return [returns[number] for number in sorted(returns)]

    def _collect(self, job: Any, number: int, overrides: list[str]) -> JobReturn:
        try:
            result: JobReturn = job.results()[0]
        except Exception as error:  # UncompletedJobError, FailedJobError, a lost result file: never fatal here
            return self._lost(job, number, overrides, str(error), _state(job))
        state = _final_state(job) if self._EXECUTOR == "slurm" else "COMPLETED"
        if state != "COMPLETED":  # it returned, but the cluster ended it (its row may blame the killed checks)
            return self._lost(job, number, overrides, _own_error(self._job_folder(number, overrides)), state,
                              replace=True)
        return result

    def _lost(self, job: Any, number: int, overrides: list[str], error: str, state: str, *,
              replace: bool = False) -> JobReturn:
        first = next((line for line in error.splitlines() if line.strip()), "no message")
        where = "Slurm job" if self._EXECUTOR == "slurm" else "submitit job"
        message = one_line(f"the job ended without a result ({where} {job.job_id}, state {state}): {first}", 400)
        folder = self._job_folder(number, overrides)
        row = {"job": number, "overrides": overrides, "exit_code": int(ExitCode.OUTAGE), "error": message}
        # a job whose own row says it finished keeps it, unless the cluster says it ended the job
        if replace or not (folder / JOB_FILE).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(folder / JOB_FILE, json.dumps(row, indent=2) + "\n")
        log.error("job %d: %s", number, message)
        done = JobReturn(overrides=overrides, status=JobStatus.COMPLETED, _return_value=None)
        return done

    def _job_folder(self, number: int, overrides: list[str]) -> Path:
        """The folder Hydra gives job NUMBER (`hydra.sweep.dir`/`hydra.sweep.subdir`), as the job itself would."""
        from omegaconf import open_dict

        sweep = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        with open_dict(sweep.hydra.job):
            sweep.hydra.job.num = number
            sweep.hydra.job.id = f"job_id_for_{number}"
        return Path(str(sweep.hydra.sweep.dir)) / str(sweep.hydra.sweep.subdir)


# submitit's warning signal before a time limit or a preemption; the jobs inherit the choice through their
# environment (sbatch exports it). USR2, submitit's default, reaches every process of the job, and its default
# action ends a process: it would kill the job's pytest subprocess, and the job would report the suite's checks
# as crashed, before the time limit. URG's default action is to ignore it.
PREEMPT_SIGNAL_ENV = "SUBMITIT_PREEMPT_SIGNAL"
PREEMPT_SIGNAL = "URG"


def _harmless_warning_signal() -> None:
    import os

    from submitit.core.job_environment import JobEnvironment

    if PREEMPT_SIGNAL_ENV not in os.environ:  # a user's own choice stands
        os.environ[PREEMPT_SIGNAL_ENV] = PREEMPT_SIGNAL
        JobEnvironment.USR_SIG = PREEMPT_SIGNAL


def _leave_the_time_limit_to_the_cluster() -> None:
    """Keep submitit's warning signal (sent `signal_delay_s` before the time limit) from ending the job as a crash.

    submitit requeues a preempted job (its own handler does that, unchanged); for a job at its time limit that
    may not be requeued it raises UncompletedJobError inside the job, which evalkit's job would report as an
    internal error (exit 4), a bug. Instead the job runs on until the cluster ends it, and the launcher reports
    it with the state the cluster gives (TIMEOUT), exit 5.
    """
    import signal

    from submitit.core.job_environment import JobEnvironment
    from submitit.core.utils import UncompletedJobError

    number = JobEnvironment._usr_sig()
    original = signal.getsignal(number)
    if not callable(original):
        return

    def handler(signum: int, frame: Any) -> None:
        try:
            original(signum, frame)
        except UncompletedJobError as error:
            log.warning("the job is at its time limit and will not be requeued (%s): the cluster ends it", error)

    signal.signal(number, handler)


# Slurm's states of a job that has not ended yet (sacct may lag the job's own end by a moment).
_ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "UNKNOWN"}


POLL_S = 1.0
# How long past its time limit a running job may go on before the sweep gives up on it (Slurm's KillWait and
# OverTimeLimit, a slow accounting update), and how long the cluster may not know a job at all.
GRACE_S = 300.0
UNKNOWN_S = 600.0


class _Watch:
    """When to stop waiting on a job the cluster says nothing useful about (the sweep must end)."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.running: dict[int, float] = {}
        self.unknown: dict[int, float] = {}

    def overdue(self, number: int, state: str, now: float | None = None) -> str | None:
        now = time.monotonic() if now is None else now
        if state == "RUNNING":
            self.running.setdefault(number, now)
        if state == "UNKNOWN":
            self.unknown.setdefault(number, now)
        else:
            self.unknown.pop(number, None)
        if number in self.running and now - self.running[number] > self.limit_s + GRACE_S:
            return (f"still running {GRACE_S:.0f} s past its time limit ({self.limit_s / 60:g} min) by the "
                    "cluster's account; cancelled and given up on")
        if number in self.unknown and now - self.unknown[number] > UNKNOWN_S:
            return f"the cluster has not known the job for {UNKNOWN_S:.0f} s (is accounting up?); given up on"
        return None


def _final_state(job: Any, timeout_s: float = 60.0) -> str:
    """The job's state once Slurm's accounting says it ended (`CANCELLED by 0` -> `CANCELLED`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            state = str(job.get_info(mode=_sacct_mode()).get("State") or "UNKNOWN").split()[0]
        except Exception:  # sacct failed: the job's own row stands
            return "COMPLETED"
        if state not in _ACTIVE or time.monotonic() > deadline:
            return state if state not in _ACTIVE else "COMPLETED"
        time.sleep(0.5)


_LAST_SACCT = [0.0]


def _sacct_mode() -> str:
    """Ask Slurm at most once a second: one sacct call answers for every job of the sweep (submitit's watcher)."""
    now = time.monotonic()
    if now - _LAST_SACCT[0] < 1.0:
        return "cache"
    _LAST_SACCT[0] = now
    return "force"


def _own_error(folder: Path) -> str:
    """What the job's own row said, for the error row that replaces it."""
    try:
        row = json.loads((folder / JOB_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "it wrote no result"
    return f"its own row said: {row.get('error') or 'exit code ' + str(row.get('exit_code'))}" if isinstance(
        row, dict) else "it wrote no result"


def _state(job: Any) -> str:
    try:
        return str(job.state).split()[0]
    except Exception:  # the watcher could not ask the cluster: the error row still names the job
        return "UNKNOWN"


def _submit(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[Any]:
    """The plugin's `launch` (hydra-submitit-launcher 1.2.0) up to the submission: the jobs, not yet waited on."""
    import os

    import submitit
    from hydra.core.singleton import Singleton
    from hydra.core.utils import filter_overrides
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from omegaconf import OmegaConf

    executor_name = launcher._EXECUTOR
    _harmless_warning_signal()
    init_keys = {"max_num_timeout", "submitit_folder"}
    init_params = {"folder": launcher.params["submitit_folder"]}
    if "max_num_timeout" in launcher.params:
        init_params[f"{executor_name}_max_num_timeout"] = launcher.params["max_num_timeout"]
    executor = submitit.AutoExecutor(cluster=executor_name, **init_params)
    shared = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(**{(name if name in shared else f"{executor_name}_{name}"): value
                                  for name, value in launcher.params.items() if name not in init_keys})
    sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
    log.info(f"Submitit '{executor_name}' sweep output dir : {sweep_dir}")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if "mode" in launcher.config.hydra.sweep:
        os.chmod(sweep_dir, mode=int(str(launcher.config.hydra.sweep.mode), 8))
    params = []
    for offset, overrides in enumerate(job_overrides):
        number = initial_job_idx + offset
        log.info(f"\t#{number} : {' '.join(filter_overrides(overrides))}")
        params.append((list(overrides), "hydra.sweep.dir", number, f"job_id_for_{number}", Singleton.get_state()))
    return list(executor.map_array(launcher, *zip(*params, strict=True)))
