"""Sweeps on a real Slurm cluster (tests/helpers/slurm_cluster.py): the same outcomes as the basic launcher, and a job
cancelled with scancel or killed at its time limit is an error row, never a hang."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import evalkit_env
from helpers.slurm_cluster import PARTITION, Cluster, default_state
from helpers.suites import make_suite

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

# The cluster is one per machine and its jobs queue on its 8 CPUs: each test holds it alone (`slurm`, below). Not
# xdist_group: under pytest 9.2, --dist loadgroup silently stops grouping (pytest-dev/pytest-xdist#1386), and CI ran
# two of these tests at once, one cancelling the other's job.
pytestmark = [pytest.mark.slow, pytest.mark.external]

SLURM = ["hydra/launcher=submitit_slurm", f"hydra.launcher.partition={PARTITION}", "hydra.launcher.timeout_min=5",
         "hydra.launcher.mem_gb=1", "hydra.launcher.signal_delay_s=5"]
# A sweep must end within this; a hang fails the test instead of the CI job.
SWEEP_TIMEOUT_S = 240


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Cluster]:
    """The test cluster: started for this session (or reused if running); stopped at the end, also after a failure,
    if a test session started it and no other session still uses it."""
    with Cluster(default_state()).session() as cluster:
        yield cluster


@pytest.fixture
def slurm(slurm_cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, held by this test alone while it runs (other workers' and sessions' tests wait)."""
    with slurm_cluster.exclusive():
        yield slurm_cluster


def sweep(cluster: Cluster | None, sweep_dir: Path, *args: str, launcher: list[str] | None = None
          ) -> subprocess.Popen[str]:
    env = evalkit_env()
    if cluster is not None:
        env["SLURM_CONF"] = str(cluster.conf)
    return subprocess.Popen([sys.executable, "-m", "evalkit", "-m", *args, *(launcher or []),
                             f"hydra.sweep.dir={sweep_dir}"], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        out, err = process.communicate(timeout=SWEEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the sweep hung for {SWEEP_TIMEOUT_S} s:\n{out}\n{err}")
    return process.returncode, out + err


def test_a_slurm_sweep_equals_the_basic_launchers(slurm, tmp_path):
    args = ("model=gemini-flash,gemma4", "prompt=v1,v2")
    basic = sweep(None, tmp_path / "basic", *args)
    on_slurm = sweep(slurm, tmp_path / "slurm", *args, launcher=SLURM)
    (basic_code, _), (slurm_code, slurm_out) = finish(basic), finish(on_slurm)
    assert basic_code == slurm_code == 1, slurm_out  # the most severe job blocks, on both
    for name in ("summary.json", "summary.md"):
        assert (tmp_path / "slurm" / name).read_text() == (tmp_path / "basic" / name).read_text()
    rows = json.loads((tmp_path / "slurm" / "summary.json").read_text())
    assert [r["decision"] for r in rows] == ["go", "go", "block", "go"]
    # the jobs ran on the cluster, through evalkit's launcher, each as one task of an array job
    assert "EvalkitSlurmLauncher" in (tmp_path / "slurm" / "multirun.yaml").read_text()
    assert len(list((tmp_path / "slurm" / ".submitit").glob("*_[0-3]"))) == 4
    jobs = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State", "--name", "evalkit", "-S", "now-1hour"],
                          env=slurm.env(), capture_output=True, text=True, timeout=30).stdout
    # a task's folder (`<job>_<index>`), not submitit's `.submission_file_<hash>.sh` beside them
    submitted = next(p.name for p in (tmp_path / "slurm" / ".submitit").iterdir()
                     if p.is_dir() and re.fullmatch(r"\d+_\d+", p.name))
    assert f"{submitted}|COMPLETED" in jobs


def two_suites(tmp_path: Path, sleep_s: int) -> list[str]:
    """Suites leak_a (quick, passes) and leak_b (its extra test sleeps SLEEP_S seconds) in a private conf folder."""
    conf, rec = tmp_path / "conf", tmp_path / "rec"
    (conf / "suite").mkdir(parents=True)
    for mark in ("a", "b"):
        make_suite(tmp_path, conf, rec, mark)
    (tmp_path / "leak_b" / "test_slow.py").write_text(f"import time\n\ndef test_slow():\n    time.sleep({sleep_s})\n")
    return ["suite=leak_a,leak_b", f"hydra.searchpath=[file://{conf}]", f"run.recordings={rec}", "baseline=none"]


def slurm_task(cluster: Cluster, sweep_dir: Path, index: int, state: str = "RUNNING", timeout: float = 120) -> str:
    """The id (`ARRAY_INDEX`) of job INDEX of the sweep in SWEEP_DIR once Slurm reports it in STATE: found through
    the sweep's own submitit folder, so that no other sweep's task of the same index (jobs are all named evalkit)
    can be taken for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks = [p.name for p in (sweep_dir / ".submitit").glob(f"*_{index}") if re.fullmatch(r"\d+_\d+", p.name)]
        if tasks:
            listed = subprocess.run(["squeue", "-h", "-r", "-j", tasks[0], "-o", "%T"], env=cluster.env(),
                                    capture_output=True, text=True, timeout=30).stdout.split()
            if listed == [state]:
                return tasks[0]
        time.sleep(0.5)
    pytest.fail(f"sweep job {index} never reached {state}")


def check_lost_job(tmp_path: Path, code: int, out: str, state: str) -> None:
    assert code == 5, out  # a job the cluster ended is never a decision
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [r["exit_code"] for r in rows] == [0, 5]
    assert rows[0]["overrides"][0] == "suite=leak_a" and rows[0].get("decision") is None and "error" not in rows[0]
    assert rows[1]["overrides"][0] == "suite=leak_b"
    assert f"state {state}" in rows[1]["error"] and "ended without a result" in rows[1]["error"]
    table = (tmp_path / "sweep" / "summary.md").read_text()
    assert "| 1 | suite=leak_b" in table and "ERROR: the job ended without a result" in table
    assert "sweep summary (2 jobs" in out


def test_a_job_cancelled_with_scancel_is_an_error_row(slurm, tmp_path):
    args = two_suites(tmp_path, sleep_s=600)
    started = time.monotonic()
    process = sweep(slurm, tmp_path / "sweep", *args, launcher=SLURM)
    task = slurm_task(slurm, tmp_path / "sweep", 1)
    subprocess.run(["scancel", task], env=slurm.env(), check=True, timeout=30)
    code, out = finish(process)
    check_lost_job(tmp_path, code, out, "CANCELLED")
    assert time.monotonic() - started < 180


def test_a_job_over_its_time_limit_is_an_error_row(slurm, tmp_path):
    # Slurm counts time limits in whole minutes: the slow job is killed after one.
    args = two_suites(tmp_path, sleep_s=600)
    started = time.monotonic()
    launcher = [o.replace("timeout_min=5", "timeout_min=1") for o in SLURM]
    code, out = finish(sweep(slurm, tmp_path / "sweep", *args, launcher=launcher))
    check_lost_job(tmp_path, code, out, "TIMEOUT")
    assert time.monotonic() - started < SWEEP_TIMEOUT_S


def test_a_second_session_reuses_the_cluster_and_leaves_it_to_the_first(slurm):
    pids = slurm.recorded()
    with Cluster(slurm.state).session() as again:
        assert again.running() and again.recorded() == pids  # reused: nothing new started
    assert slurm.running() and slurm.recorded() == pids      # still used by this session: not stopped


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder MariaDB's own user can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="evalkit-slurm-test-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_stop_ends_exactly_the_processes_start_recorded(slurm, open_folder):
    other = Cluster(open_folder / "state")
    assert other.start() and not other.start()  # the second start finds it running
    pids = other.recorded()
    assert sorted(pids) == sorted(["munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"])
    assert not set(pids.values()) & set(slurm.recorded().values())
    assert other.stop() == ["slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"]
    assert not any(Path(f"/proc/{pid}/cmdline").exists() and Path(f"/proc/{pid}/cmdline").read_bytes()
                   for pid in pids.values())  # gone (at most a zombie awaiting its parent)
    assert not other.running() and other.stop() == []
    assert slurm.running()  # the session's cluster is untouched
