"""Benchmark: how a suite's run grows with the number of checks its `checks.yaml` declares (issue 35: 1,000 checks
took 124 s and 3,000 did not finish in 300 s, about n^1.9).

For N = 500 and 2,000 declared checks this script generates, in a temporary directory, the suite of
benchmarks/replay.py (its task, dataset, prompt and authored recording, built with evalkit's own API) with 5 cases,
its hand-written test module removed and a `checks.yaml` of N checks instead: eight kinds in turn (equals against a
case field, one-of, contains, regex, is-json, json-schema, number, length), every other one written to fail on
every case, so that a run has as many failing tests as passing ones (N x 5 tests in all). It then times, in a fresh
subprocess each, `python -m evalkit ... baseline=BASELINE.json`: compose, replay, run the N x 5 declared checks in
pytest, write the report and its pages, and gate it against a baseline report of the same run (produced first,
untimed, with `baseline=none run.save_report=...`). Each size is run three times, interleaved, and the best time
kept; the gate must say go (the same replies on both sides) and the report must hold N x 5 tests, half failing.

The last line is `checks_500_s=<s> checks_2000_s=<s> ratio=<r> cpu_ratio=<r>`: four times the checks, so a run
that grows linearly prints a ratio near 4 (a little under: start-up is the same for both), and one that grows with
the square of N prints near 16. `cpu_ratio` is the same ratio of the CPU time the command and its pytest process
used (best of the three): on a machine that other work shares, wall time moves with the load and CPU time much less.

Run from the project root:  .venv/bin/python benchmarks/checks.py
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay  # noqa: E402  (the suite, its recording and the timed command are replay.py's)

SIZES = (500, 2000)
CASES = 5
REPEATS = 3
KINDS = (  # (passes on every case, fails on every case), each a flow mapping after `name: cN, `
    ("field: label, equals: {case: label}", "field: label, equals: nothing"),
    ("field: label, one-of: [bug, feature, docs, question]", "field: label, one-of: [none]"),
    ("contains: summary", "contains: nowhere"),
    (r"regex: '^\{'", r"regex: '^\['"),
    ("is-json: true", "field: missing, is-json: true"),
    ("json-schema: {type: object, required: [label]}", "json-schema: {type: object, required: [other]}"),
    ("field: score, number: {min: 0, max: 1}", "field: score, number: {min: 2}"),
    ("field: summary, length: {max: 200}", "field: summary, length: {max: 3}"),
)


def checks_yaml(n: int) -> str:
    lines = [f"  - {{name: c{i}, {KINDS[(i // 2) % len(KINDS)][i % 2]}}}" for i in range(n)]
    return "checks:\n" + "\n".join(lines) + "\n"


def generate(root: Path, n: int) -> dict[str, Path]:
    paths = replay.generate(root, CASES)
    (paths["suite"] / "test_bench.py").unlink()
    (paths["suite"] / "checks.yaml").write_text(checks_yaml(n), encoding="utf-8")
    (paths["conf"] / "policy" / "bench.yaml").write_text("max_regressions: 0\n", encoding="utf-8")
    return paths


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and the processes it waited for) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = replay.run_timed(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def check_work(n: int, run_dir: Path) -> None:
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    decision = json.loads((run_dir / "decision.json").read_text(encoding="utf-8"))
    summary, tests = report["summary"], n * CASES
    if summary.get("total") != tests or summary.get("failed", 0) != tests // 2:
        raise SystemExit(f"{n} checks ran {summary}, expected {tests} tests with {tests // 2} failed")
    if decision["decision"] != "go":
        raise SystemExit(f"{n} checks: the gate said {decision['decision']}: {decision['reasons']}")


def main() -> int:
    replay.byte_compile_evalkit()
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-checks-") as tmp:
        root = Path(tmp)
        suites = {}
        for n in SIZES:
            paths = suites[n] = generate(root / str(n), n)
            baseline = root / str(n) / "baseline.json"
            took = replay.run_timed(replay.evalkit_command(paths, root / str(n) / "runs/baseline", "baseline=none",
                                                           f"run.save_report={baseline}"))
            print(f"[{n}] baseline report written by an ungated run in {took:.2f}s", flush=True)
        wall: dict[int, float] = {}
        cpu: dict[int, float] = {}
        for rep in range(REPEATS):  # interleaved, so drift on the machine hits both sizes alike
            for n, paths in suites.items():
                run_dir, baseline = root / str(n) / f"runs/gated-{rep}", root / str(n) / "baseline.json"
                took, used = timed(replay.evalkit_command(paths, run_dir, f"baseline={baseline}"))
                check_work(n, run_dir)
                wall[n], cpu[n] = min(wall.get(n, took), took), min(cpu.get(n, used), used)
                print(f"[{n}] rep {rep + 1}/{REPEATS}: {took:.2f}s, CPU {used:.2f}s ({n * CASES} tests)", flush=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    small, large = SIZES
    print(f"cpus={replay.cpus()} load_avg={load} cpu_{small}_s={cpu[small]:.2f} cpu_{large}_s={cpu[large]:.2f}",
          flush=True)
    print(f"checks_{small}_s={wall[small]:.2f} checks_{large}_s={wall[large]:.2f} "
          f"ratio={wall[large] / wall[small]:.2f} cpu_ratio={cpu[large] / cpu[small]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
