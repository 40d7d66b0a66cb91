"""Sweeps beyond one process: the summary comes from the jobs' files; parallel jobs share a recording safely;
a re-run reuses what was recorded; the launchers extra and its absence. (The 200-job sweep is
benchmarks/sweep.py, run by hand: too slow for every test run on a shared 2-CPU machine.)"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_env
from helpers.live import RECORDING_NAME, TOTAL_TESTS, Evalkit, FakeOllama, replies

from evalkit.cli.hydra_errors import missing_option
from evalkit.run.recording import load_recording
from evalkit.sweeps.summary import read_rows, render_summary, sweep_exit_code

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

JOBLIB = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]


def sweep(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit", "-m", *args], cwd=PROJECT_ROOT,
                          env=env or evalkit_env(), capture_output=True, text=True, timeout=600)


# -- the summary reads files ----------------------------------------------------------------------------------


def job_folder(sweep_dir: Path, name: str, overrides: list[str], row: str | None) -> None:
    folder = sweep_dir / name
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    if row is not None:
        (folder / "job.json").write_text(row)


def test_a_job_folder_without_a_readable_result_is_an_error_row(tmp_path):
    good = {"job": 0, "overrides": ["prompt=v1"], "decision": "go", "exit_code": 0}
    job_folder(tmp_path, "0", ["prompt=v1"], json.dumps(good))
    job_folder(tmp_path, "1", ["prompt=v2"], None)                      # killed before it wrote its row
    job_folder(tmp_path, "2", ["prompt=v3"], '{"job": 2, "exit_co')     # cut off mid-write (not by evalkit)
    job_folder(tmp_path, "10", ["prompt=v4"], json.dumps([1, 2]))       # not a job row
    (tmp_path / ".submitit").mkdir()                                    # launcher files are not jobs
    rows = read_rows(tmp_path)
    assert [r["job"] for r in rows] == [0, 1, 2, 10]  # by job number, not by name (10 after 2)
    assert rows[0] == good
    assert [r["exit_code"] for r in rows] == [0, 5, 5, 5]
    assert [r["overrides"] for r in rows[1:]] == [["prompt=v2"], ["prompt=v3"], ["prompt=v4"]]
    assert "job result file not found" in rows[1]["error"] and str(tmp_path / "1") in rows[1]["error"]
    assert "the job wrote no result" in rows[2]["error"] and "not a job result" in rows[3]["error"]
    assert sweep_exit_code([r["exit_code"] for r in rows]) == 5
    table = render_summary(rows)
    assert "| 1 | prompt=v2 | - | ERROR: the job wrote no result" in table
    assert "| 0 | prompt=v1 | - | GO |" in table


def test_a_row_without_a_decision_and_without_an_error_says_none(tmp_path):
    table = render_summary([{"job": 0, "overrides": [], "exit_code": 0}])  # baseline=none: not gated
    assert "| 0 | (defaults) | - | NONE |" in table


# -- joblib: the same outcomes; a shared recording; re-runs -------------------------------------------------


@pytest.mark.slow
def test_a_joblib_sweep_equals_the_basic_launchers_and_is_built_from_the_job_files(tmp_path):
    args = ("model=gemini-flash,gemma4", "prompt=v1,v2")
    basic = sweep(*args, f"hydra.sweep.dir={tmp_path / 'basic'}")
    parallel = sweep(*args, *JOBLIB, f"hydra.sweep.dir={tmp_path / 'joblib'}")
    assert basic.returncode == parallel.returncode == 1, parallel.stdout + parallel.stderr
    for name in ("summary.json", "summary.md"):
        assert (tmp_path / "joblib" / name).read_text() == (tmp_path / "basic" / name).read_text()
    # the summary is the job files' rows, in job order: the jobs ran in other processes
    rows = json.loads((tmp_path / "joblib" / "summary.json").read_text())
    assert rows == [json.loads((tmp_path / "joblib" / str(n) / "job.json").read_text()) for n in range(4)]
    assert "JoblibLauncher" in (tmp_path / "joblib" / "multirun.yaml").read_text()


def live_sweep(evalkit: Evalkit, url: str, sweep_dir: Path, mode: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """Two jobs with one eval key (they differ only in require_pass): both write the same recording."""
    command, env, _ = evalkit.command(mode, url=url)
    args = [a for a in command[3:] if not a.startswith("hydra.run.dir=")]
    return sweep(*args, "require_pass=true,false", *JOBLIB, f"hydra.sweep.dir={sweep_dir}", *extra, env=env)


@pytest.mark.slow
def test_parallel_jobs_take_turns_on_one_recording_and_a_rerun_reuses_it(tmp_path):
    evalkit = Evalkit(tmp_path)
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        first = live_sweep(evalkit, server.url, tmp_path / "first", "live")
        calls = len(server.chat_requests)
        assert first.returncode == 0, first.stdout + first.stderr
        # both jobs called the model (mode=live re-records), one after the other through the recording's lock
        assert calls == 2 * 15
        recording = load_recording(evalkit.recording)  # whole and valid: never two writers at once
        assert len(recording.calls) == 15 and recording.provenance.kind == "recorded"
        rows = json.loads((tmp_path / "first" / "summary.json").read_text())
        assert [r["exit_code"] for r in rows] == [0, 0] and all(r["pass_rate"] == 1.0 for r in rows)
        # no lock file left: it exists only while a run holds it
        assert sorted(p.name for p in evalkit.recording.parent.iterdir()) == [RECORDING_NAME]

        # a re-run of the sweep that may record reuses the recording: no call reaches the model
        again = live_sweep(evalkit, server.url, tmp_path / "again", "record-missing")
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(server.chat_requests) == calls
        for n in range(2):
            report = json.loads((tmp_path / "again" / str(n) / "report.json").read_text())
            assert report["summary"]["passed"] == TOTAL_TESTS


@pytest.mark.slow
def test_jobs_that_cannot_get_the_recordings_lock_fail_clearly_and_leave_it_whole(tmp_path):
    evalkit = Evalkit(tmp_path)
    with FakeOllama(replies()) as server:
        evalkit.judge_at(server.url)
        assert live_sweep(evalkit, server.url, tmp_path / "first", "live").returncode == 0
        before = evalkit.recording.read_bytes()
        calls = len(server.chat_requests)
        lock = evalkit.recording.with_name(RECORDING_NAME + ".lock")
        with open(lock, "w") as held:  # another writer (say, a run on another node) holds the lock
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)
            blocked = live_sweep(evalkit, server.url, tmp_path / "blocked", "live", "run.lock_timeout_s=1")
        assert blocked.returncode == 3, blocked.stdout + blocked.stderr
        rows = json.loads((tmp_path / "blocked" / "summary.json").read_text())
        assert [r["exit_code"] for r in rows] == [3, 3]
        assert all("another run is writing this recording" in r["error"] and "run.lock_timeout_s" in r["error"]
                   for r in rows)
        assert evalkit.recording.read_bytes() == before and len(server.chat_requests) == calls


# -- the launchers extra --------------------------------------------------------------------------------------


def test_a_launcher_that_is_not_installed_names_the_extra():
    from hydra.errors import MissingConfigException

    error = MissingConfigException("In 'hydra/config': Could not find 'hydra/launcher/joblib'",
                                   missing_cfg_file="hydra/launcher/joblib", options=["basic"])
    assert missing_option(error) == (
        "hydra/launcher=joblib: the joblib launcher is not installed; install evalkit's launchers extra "
        "(pip install 'evalkit[launchers]', which brings hydra-joblib-launcher) and run the sweep again")
    # an installed launcher misspelt is not a missing extra
    typo = MissingConfigException("In 'hydra/config': Could not find 'hydra/launcher/jobli'",
                                  missing_cfg_file="hydra/launcher/jobli", options=["basic", "joblib"])
    assert missing_option(typo).endswith("(available: basic, joblib)")


@pytest.mark.slow
def test_a_sweep_without_the_extra_says_which_to_install(tmp_path):
    # hide the installed plugin behind a package of the same name that cannot be imported
    hidden = tmp_path / "hide" / "hydra_plugins" / "hydra_joblib_launcher"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("not installed (hidden by the test)")\n')
    env = {**evalkit_env(), "PYTHONPATH": os.pathsep.join([str(tmp_path / "hide"), os.environ.get("PYTHONPATH", "")])}
    done = sweep("prompt=v1,v2", "hydra/launcher=joblib", f"hydra.sweep.dir={tmp_path / 'sweep'}", env=env)
    assert done.returncode == 3
    assert done.stderr.splitlines()[-1] == (
        "error: hydra/launcher=joblib: the joblib launcher is not installed; install evalkit's launchers extra "
        "(pip install 'evalkit[launchers]', which brings hydra-joblib-launcher) and run the sweep again")


# -- evalkit's submitit launchers: every job accounted for, none waited on for ever ----------------------------


class FakeJob:
    """A submitted job as submitit shows it: done after DONE_AFTER polls, then a result or an error."""

    def __init__(self, job_id: str, done_after: int | None, error: str | None = None, state: str = "RUNNING"):
        self.job_id, self.done_after, self.error, self.state = job_id, done_after, error, state
        self.polls, self.cancelled = 0, False

    def done(self) -> bool:
        self.polls += 1
        return self.done_after is not None and self.polls > self.done_after

    def results(self) -> list[Any]:
        from hydra.core.utils import JobReturn, JobStatus

        if self.error:
            raise RuntimeError(self.error)
        return [JobReturn(overrides=[], status=JobStatus.COMPLETED, _return_value=self.job_id)]

    def cancel(self, check: bool = False) -> None:
        self.cancelled = True


def fake_launcher(tmp_path: Path, timeout_min: float) -> Any:
    from evalkit.sweeps.launchers import Accounted

    class Launcher(Accounted):
        _EXECUTOR = "local"
        params = {"timeout_min": timeout_min}

        def _job_folder(self, number: int, overrides: list[str]) -> Path:
            return tmp_path / str(number)

    return Launcher()


def test_the_launcher_waits_on_every_job_and_gives_a_lost_one_an_error_row(tmp_path, monkeypatch):
    from evalkit.sweeps import launchers

    monkeypatch.setattr(launchers, "POLL_S", 0.0)
    jobs = [FakeJob("7_0", done_after=5, error="Job 7_0 has not produced any output (state: CANCELLED by 0)"),
            FakeJob("7_1", done_after=1), FakeJob("7_2", done_after=8)]
    returns = fake_launcher(tmp_path, 60)._wait_all(jobs, [["prompt=v1"], ["prompt=v2"], ["prompt=v3"]], 0)
    # the first job's failure did not stop the wait: the later jobs were collected too, in job order
    assert [r.return_value for r in returns] == [None, "7_1", "7_2"]
    row = json.loads((tmp_path / "0" / "job.json").read_text())
    assert row["exit_code"] == 5 and row["overrides"] == ["prompt=v1"]
    assert row["error"] == ("the job ended without a result (submitit job 7_0, state RUNNING): "
                            "Job 7_0 has not produced any output (state: CANCELLED by 0)")
    assert not (tmp_path / "1").exists()  # a job that finished keeps its own row


def test_the_launcher_gives_up_on_a_job_the_cluster_lost_track_of(tmp_path, monkeypatch):
    from evalkit.sweeps import launchers
    from evalkit.sweeps.launchers import GRACE_S, UNKNOWN_S, _Watch

    watch = _Watch(limit_s=60)
    assert watch.overdue(1, "PENDING", now=0) is None  # a queue may hold a job for hours
    assert watch.overdue(1, "RUNNING", now=1000) is None
    assert watch.overdue(1, "RUNNING", now=1000 + 60 + GRACE_S - 1) is None
    assert "past its time limit" in (watch.overdue(1, "RUNNING", now=1000 + 60 + GRACE_S + 1) or "")
    assert watch.overdue(2, "UNKNOWN", now=0) is None
    assert watch.overdue(2, "PENDING", now=UNKNOWN_S) is None  # known again: the clock restarts
    assert watch.overdue(2, "UNKNOWN", now=UNKNOWN_S + 1) is None
    assert "has not known the job" in (watch.overdue(2, "UNKNOWN", now=2 * UNKNOWN_S + 2) or "")

    # a job that never ends is cancelled and reported once past its limit; the sweep ends
    monkeypatch.setattr(launchers, "POLL_S", 0.0)
    monkeypatch.setattr(launchers, "GRACE_S", 0.0)
    stuck = FakeJob("9_0", done_after=None)
    returns = fake_launcher(tmp_path, 1e-4)._wait_all([stuck], [["prompt=v1"]], 0)
    assert stuck.cancelled and returns[0].return_value is None
    assert "past its time limit" in json.loads((tmp_path / "0" / "job.json").read_text())["error"]
