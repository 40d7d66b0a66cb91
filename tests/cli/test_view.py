"""`evalkit view`: the run explorer written as one new folder, whole or not at all, from named runs or the runs
`evalkit history` finds; every refusal exits 3 and leaves nothing behind."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import evalkit_env, write_json

EVALKIT = Path(sys.executable).parent / "evalkit"
KEY = {"key_version": 1, "suite": "s", "dataset": "d@1", "dataset_sha": "d1", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "j"}


def _view(cwd: Path, *args: str, project: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**evalkit_env(), **({"EVALKIT_PROJECT": str(project)} if project else {})}
    return subprocess.run([str(EVALKIT), "view", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def _run(folder: Path, passed: dict[str, bool], created: float, decision: str | None = None) -> Path:
    folder.mkdir(parents=True)
    cases = [{"id": case, "status": "scored", "passed": ok, "checks": {"test_a": "passed" if ok else "failed"},
              "output": f"{case} {'right' if ok else 'wrong'}"} for case, ok in passed.items()]
    tests = [{"nodeid": f"test_s.py::test_a[{case}]", "outcome": "passed" if ok else "failed"}
             for case, ok in passed.items()]
    write_json(folder / "report.json", {"eval": KEY, "tests": tests, "cases": cases, "created": created})
    if decision:
        write_json(folder / "decision.json", {"decision": decision})
    return folder


def _runs_in(out: Path) -> list[dict[str, Any]]:
    runs = []
    for script in sorted((out / "data").iterdir()):
        match = re.fullmatch(r"\(window\.EVALKIT_RUNS = window\.EVALKIT_RUNS \|\| \[\]\)\.push\((.*)\);\n",
                             script.read_text(encoding="utf-8"), re.DOTALL)
        assert match, script
        runs.append(json.loads(match.group(1)))
    return runs


def test_named_runs_become_the_columns_in_order_with_their_hash_and_decision(tmp_path: Path):
    first = _run(tmp_path / "runs/b", {"c1": True, "c2": True}, 2.0, "go")
    second = _run(tmp_path / "runs/a", {"c1": True, "c2": False, "c3": True}, 1.0)
    done = _view(tmp_path, "runs/b", "runs/a/report.json", "--out", "explorer", "--reference", "2")
    assert done.returncode == 0, done.stderr
    assert "explorer/index.html (2 runs)" in done.stdout
    out = tmp_path / "explorer"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "data/run-1.js", "data/run-2.js", "explorer.css", "explorer.js", "index.html"]
    one, two = _runs_in(out)
    assert one["path"].endswith("runs/b/report.json") and two["path"].endswith("runs/a/report.json")
    assert one["sha256"] == hashlib.sha256((first / "report.json").read_bytes()).hexdigest()
    assert two["sha256"] == hashlib.sha256((second / "report.json").read_bytes()).hexdigest()
    assert (one["decision"], two["decision"]) == ("go", None)
    assert [(c["id"], c["o"]) for c in two["cases"]] == [("c1", "passed"), ("c2", "failed"), ("c3", "passed")]
    assert 'data-reference="1"' in (out / "index.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["explorer", "runs"]  # no staging folder left beside it


def test_history_reads_the_projects_runs_oldest_first(tmp_path: Path):
    root = tmp_path / "proj"
    (root / "conf").mkdir(parents=True)
    (root / "conf/config.yaml").write_text("defaults: []\n")
    _run(root / "outputs/2026-12-01/z", {"c1": False}, 100.0, "block")
    _run(root / "outputs/2026-12-01/y", {"c1": True}, 300.0)
    _run(root / "multirun/2026-12-01/0", {"c1": True}, 200.0, "go")
    done = _view(root, "--history", "--out", str(tmp_path / "explorer"), project=root)
    assert done.returncode == 0, done.stderr
    runs = _runs_in(tmp_path / "explorer")
    assert [run["decision"] for run in runs] == ["block", "go", None]
    assert [run["cases"][0]["o"] for run in runs] == ["failed", "passed", "passed"]


def test_refusals_exit_3_in_one_line_and_leave_nothing(tmp_path: Path):
    _run(tmp_path / "runs/a", {"c1": True}, 1.0)
    existing = tmp_path / "taken"
    existing.mkdir()
    (existing / "notes.txt").write_text("mine")
    cases = [
        (("runs/missing", "--out", "new"), r"runs/missing: no such file or folder"),
        (("runs/a", "--out", "taken"), r"taken: exists; evalkit view writes a new folder and never over an "
                                       r"existing one"),
        (("runs/a", "--out", "new", "--reference", "2"), r"--reference 2: choose a run from 1 to 1"),
        (("--out", "new"), r"name the runs to show, or give --history"),
        (("runs/a", "--history", "--out", "new"), r"name the runs to show, or give --history"),
        (("runs", "--out", "no/such/folder/new"), r"the folder no/such/folder does not exist"),
        (("conf", "--out", "new"), r"conf: no run report \(report.json\) under this folder"),
    ]
    (tmp_path / "conf").mkdir()
    for args, message in cases:
        done = _view(tmp_path, *args)
        assert done.returncode == 3, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and re.search(message, done.stderr), (args, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf", "runs", "taken"]
    assert [p.name for p in existing.iterdir()] == ["notes.txt"]


def test_a_file_that_is_not_a_run_report_is_refused(tmp_path: Path):
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    done = _view(tmp_path, "notes.json", "--out", "new")
    assert done.returncode == 3 and "notes.json" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "new").exists()
