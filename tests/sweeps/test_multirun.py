"""Sweeps: `python -m evalkit -m ...` runs every combination, writes one summary, leaks nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.docs_text import docs_text
from helpers.suites import make_suite

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

pytestmark = pytest.mark.slow


def test_sweep_runs_four_jobs_and_writes_one_summary(run_evalkit, tmp_path):
    done = run_evalkit("-m", "model=gemini-flash,gemma4", "prompt=v1,v2")
    assert done.returncode == 1, done.stdout + done.stderr  # the most severe job blocks
    sweep = tmp_path / "sweep"
    rows = json.loads((sweep / "summary.json").read_text())
    assert [(r["overrides"], r["decision"], r["regressed"]) for r in rows] == [
        (["model=gemini-flash", "prompt=v1"], "go", 0),
        (["model=gemini-flash", "prompt=v2"], "go", 0),
        (["model=gemma4", "prompt=v1"], "block", 2),
        (["model=gemma4", "prompt=v2"], "go", 0),
    ]
    table = (sweep / "summary.md").read_text().splitlines()
    assert table[0] == ("| job | overrides | changed | decision | pass rate | case pass rate | regressed | input tokens | "
                        "cost USD |")
    assert any(line.startswith("| 2 | model=gemma4 prompt=v1 | model gemini-3.8-flash -> gemma4:e2b, components.model "
                               "gemini-3.8-flash@8eb3e7a90396 -> gemma4:e2b@133bba7edbbb (model.options.thinking_level "
                               "low -> (absent); model.options.seed (absent) -> 7; model.options.think (absent) -> false) "
                               "| BLOCK | 0.961 | 0.833 | 2 |") for line in table)
    assert "sweep summary (4 jobs" in done.stdout
    # each job printed one line while it ran, and the summary table came last
    jobs = [line for line in done.stdout.splitlines() if line.startswith("job ")]
    assert [line.split(":", 1)[0] for line in jobs] == [
        "job 0 model=gemini-flash prompt=v1", "job 1 model=gemini-flash prompt=v2", "job 2 model=gemma4 prompt=v1",
        "job 3 model=gemma4 prompt=v2"]
    assert ": BLOCK, 49 of 51 tests passed, 2 regressed; report " in jobs[2]
    assert "QUALITY" not in done.stdout and done.stdout.index("sweep summary") > done.stdout.index(jobs[-1])
    readme = docs_text().split("### Sweeps", 1)[1].split("```", 2)[1]
    shown = [line for line in readme.splitlines() if line.startswith("|")]
    assert shown == table  # the README's table is this sweep's table
    assert all((sweep / str(n) / "report.json").is_file() for n in range(4))


def test_a_sweep_with_v_prints_each_jobs_full_blocks(run_evalkit, tmp_path):
    done = run_evalkit("-m", "prompt=v1,v2", "-v")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("QUALITY") == 2 and done.stdout.count("decision: GO") == 2
    assert not any(line.startswith("job ") for line in done.stdout.splitlines())


def test_a_failing_job_does_not_stop_the_sweep(run_evalkit, tmp_path):
    done = run_evalkit("-m", "prompt=v1,v2", "baseline=/nonexistent.json")
    assert done.returncode == 3
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert len(rows) == 2 and all("report file not found" in r["error"] for r in rows)


# Two suites whose modules have the same names (task.py, conftest.py, test_leak.py) but different
# behaviour. If job 1's modules were still loaded in job 2, job 2's requests would be built by
# suite A's task and miss suite B's recording, and its checks would expect A's replies.
def test_jobs_do_not_leak_suite_modules_into_each_other(run_evalkit, tmp_path):
    conf, rec = tmp_path / "conf", tmp_path / "rec"
    (conf / "suite").mkdir(parents=True)
    for mark in ("a", "b"):
        make_suite(tmp_path, conf, rec, mark)
    done = run_evalkit("-m", "suite=leak_a,leak_b", f"hydra.searchpath=[file://{conf}]",
                       f"run.recordings={rec}", "baseline=none")
    assert done.returncode == 0, done.stdout + done.stderr
    for job, mark in ((0, "a"), (1, "b")):
        data = json.loads((tmp_path / "sweep" / str(job) / "report.json").read_text())
        assert data["eval"]["suite"] == f"leak_{mark}"
        assert {t["outcome"] for t in data["tests"]} == {"passed"} and len(data["tests"]) == 2
