"""Benchmark: `evalkit history` over many large runs, cold (no run index) and warm (the index beside the runs).

It writes an authored project whose outputs/ holds RUNS run folders (1,000 by default), each a report of CASES
cases (10,000 by default; two tests per case) and a decision.json; the reports differ (each run fails its own
cases), so none is a copy of another. Then it times `evalkit history --no-html` three ways, each a whole process:

  cold     no index yet: every report is read, hashed and parsed, and the index written;
  warm     the index beside the runs: each report's stat signature matches, so nothing is read but the
           decisions and the index;
  changed  after one report's bytes were changed (its size and modification time put back): that report alone
           is hashed and read again.

The three tables must be equal but for the changed run's row. The last line is

    warm_s=<s> cold_s=<s>

and the line before it `runs=<n> cases=<n> data_gb=<GB> changed_s=<s>`. No target is set beyond "seconds, not
minutes" warm.

Run from the project root:  .venv/bin/python benchmarks/history_scale.py [--runs N --cases N]
Temporary files are removed at the end (the default size writes about 3 GB).
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

PROJECT_ROOT = Path(__file__).resolve().parents[1]
KEY = {"key_version": 1, "suite": "bench", "dataset": "bench@1", "dataset_sha": "d1", "model": "m",
       "prompt_version": "v1", "prompt_sha": "p1", "judge_model": "j"}


def write_project(root: Path, runs: int, cases: int) -> tuple[list[Path], int]:
    (root / "conf").mkdir(parents=True)
    (root / "conf/config.yaml").write_text("defaults: []\n")
    paths, size = [], 0
    for run in range(runs):
        failing = run % 97 + 2
        entries = [{"id": f"case-{c:05d}", "status": "scored", "passed": c % failing != 0,
                    "checks": {"test_a": "failed" if c % failing == 0 else "passed", "test_b": "passed"},
                    "output": f"answer {c}"} for c in range(cases)]
        tests = [{"nodeid": f"test_bench.py::{check}[case-{c:05d}]", "outcome": entries[c]["checks"][check]}
                 for c in range(cases) for check in ("test_a", "test_b")]
        folder = root / f"outputs/2026-12-03/{run:05d}"
        folder.mkdir(parents=True)
        text = json.dumps({"eval": KEY, "tests": tests, "cases": entries, "created": 1_700_000_000 + run,
                           "metrics": {"case_pass_rate": {"mean": 1 - 1 / failing}}})
        (folder / "report.json").write_text(text, encoding="utf-8")
        (folder / "decision.json").write_text(json.dumps({"decision": "go" if failing > 10 else "block"}))
        paths.append(folder / "report.json")
        size += len(text)
    return paths, size


def history(root: Path) -> tuple[float, str]:
    evalkit = Path(sys.executable).parent / "evalkit"
    start = time.perf_counter()
    done = subprocess.run([str(evalkit), "history", "--no-html"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "EVALKIT_PROJECT": str(root)}, timeout=7200)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"evalkit history exited {done.returncode}: {done.stderr}")
    return took, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalkit-history-bench-") as tmp:
        root = Path(tmp) / "proj"
        paths, size = write_project(root, args.runs, args.cases)
        cold_s, cold = history(root)
        warm_s, warm = history(root)
        if warm != cold:
            raise SystemExit("the warm table differs from the cold one")
        target = paths[len(paths) // 2]
        before = target.stat()
        target.write_bytes(target.read_bytes().replace(b'test_b[case-00001]", "outcome": "passed"',
                                                       b'test_b[case-00001]", "outcome": "failed"', 1))
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        changed_s, changed = history(root)
        differ = [a for a, b in zip(cold.splitlines(), changed.splitlines(), strict=True) if a != b]
        if len(differ) != 1 or str(target.parent.name) not in differ[0]:
            raise SystemExit(f"after one report changed, {len(differ)} rows differ (expected 1: its own)")
    print(f"runs={args.runs} cases={args.cases} data_gb={size / 1e9:.2f} changed_s={changed_s:.2f}")
    print(f"warm_s={warm_s:.2f} cold_s={cold_s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
