"""Benchmark: seconds per job of a big replayed sweep, under Hydra's basic launcher and under joblib.

The sweep is the issue-triage suite, replayed from its shipped recordings: model (gemini-flash, gemma4) x
prompt (v1, v2) x policy.min_pass_rate (JOBS / 4 thresholds from 0.800 up), 200 jobs by default. Every job is a
whole `python -m evalkit` run (compose, replay, its own pytest process, gate); the threshold only moves the gate,
so a job of every model and prompt blocks (gemma4 with prompt v1 regresses) and the sweep exits 1.

Each launcher runs the whole sweep once, in a fresh `python -m evalkit -m ...` process, timed from start to exit:

  basic   Hydra's default launcher: the jobs one after the other in the sweep's process;
  joblib  `hydra/launcher=joblib` (the `launchers` extra), `n_jobs` = the machine's CPU count.

Then it checks what a sweep must get right at that size: exit code 1 on both, JOBS rows in each summary, each
summary equal to its jobs' own `job.json` files (read back here: the summary is built from the files, not from
the sweep's memory), and the two summaries equal. The last line is

    seconds_per_job=basic:<s>,joblib:<s>

(wall seconds of the whole sweep over its number of jobs, two decimals). Nothing is targeted; joblib's figure
over basic's shows what parallel jobs buy on this machine.

Run from the project root (needs the `launchers` extra):  .venv/bin/python benchmarks/sweep.py [--jobs N]
Temporary files are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # this repository: the examples project

AXES = ("model=gemini-flash,gemma4", "prompt=v1,v2")
COMBINATIONS = 4  # jobs per threshold: the product of AXES


def thresholds(jobs: int) -> str:
    count = max(1, jobs // COMBINATIONS)
    return "policy.min_pass_rate=" + ",".join(f"{0.8 + 0.001 * i:.3f}" for i in range(count))


def run_sweep(sweep_dir: Path, jobs: int, launcher: list[str]) -> tuple[float, int, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-m", "evalkit", "-m", *AXES, thresholds(jobs), *launcher,
               f"hydra.sweep.dir={sweep_dir}"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.returncode, done.stdout[-2000:] + done.stderr[-2000:]


def check(sweep_dir: Path, jobs: int, code: int, tail: str) -> list[dict[str, Any]]:
    if code != 1:
        raise SystemExit(f"{sweep_dir.name}: the sweep exited {code}, not 1:\n{tail}")
    rows: list[dict[str, Any]] = json.loads((sweep_dir / "summary.json").read_text(encoding="utf-8"))
    if len(rows) != jobs:
        raise SystemExit(f"{sweep_dir.name}: {len(rows)} summary rows for {jobs} jobs")
    files = [json.loads((sweep_dir / str(n) / "job.json").read_text(encoding="utf-8")) for n in range(jobs)]
    if rows != files:
        raise SystemExit(f"{sweep_dir.name}: the summary differs from the jobs' job.json files")
    errors = [row for row in rows if row.get("error")]
    if errors:
        raise SystemExit(f"{sweep_dir.name}: {len(errors)} jobs failed, e.g. {errors[0]['error']}")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--jobs", type=int, default=200, help="jobs per sweep, a multiple of 4 (default 200)")
    args = parser.parse_args()
    jobs = max(COMBINATIONS, args.jobs // COMBINATIONS * COMBINATIONS)
    cpus = os.cpu_count() or 1
    launchers = {"basic": [], "joblib": ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={cpus}"]}
    per_job: dict[str, float] = {}
    summaries = {}
    with tempfile.TemporaryDirectory(prefix="evalkit-sweep-bench-") as tmp:
        for name, launcher in launchers.items():
            sweep_dir = Path(tmp) / name
            seconds, code, tail = run_sweep(sweep_dir, jobs, launcher)
            rows = check(sweep_dir, jobs, code, tail)
            summaries[name] = (sweep_dir / "summary.md").read_text(encoding="utf-8")
            per_job[name] = seconds / jobs
            blocked = sum(row.get("decision") == "block" for row in rows)
            print(f"{name}: {jobs} jobs in {seconds:.1f} s ({per_job[name]:.2f} s per job; {blocked} blocked)"
                  + (f", n_jobs={cpus}" if launcher else ""), flush=True)
        if summaries["basic"] != summaries["joblib"]:
            raise SystemExit("the basic and joblib sweeps wrote different summaries")
    print("seconds_per_job=" + ",".join(f"{name}:{seconds:.2f}" for name, seconds in per_job.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
