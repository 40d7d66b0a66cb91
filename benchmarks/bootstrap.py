"""Benchmark: wall time of `paired_cluster_bootstrap` on 10,000 groups x 2,000 resamples.

Synthetic, deterministic data: 10,000 groups of 2 to 5 rows (about 35,000 rows), baseline and candidate
task success from a fixed pattern. The bootstrap runs three times; the best time is kept, and the three
results must be identical (same seed). The last line is `bootstrap_seconds=<s>`. Target: at most 0.1 s.

0/1 outcomes in groups of 2 to 5 rows give about 25 distinct group effects, so the bootstrap resamples them as
multinomial counts of each distinct effect (evalkit.gate.stats); with many distinct effects it draws an index
matrix of resamples x groups instead (2,000 x 10,000 int32 here, 80 MB).

Run from the project root:  .venv/bin/python benchmarks/bootstrap.py
"""

from __future__ import annotations

import sys
import time

from evalkit.gate.stats import PairedStatistics, paired_cluster_bootstrap

GROUPS = 10_000
RESAMPLES = 2_000
REPEATS = 3
TARGET_SECONDS = 0.1


def synthetic() -> tuple[list[str], list[int], list[int]]:
    """Groups of 2-5 rows; the candidate fixes every 7th row and breaks every 11th."""
    groups: list[str] = []
    baseline: list[int] = []
    candidate: list[int] = []
    row = 0
    for group in range(GROUPS):
        for _ in range(2 + group % 4):
            base = int(row % 3 != 0)
            cand = 1 if row % 7 == 0 else 0 if row % 11 == 0 else base
            groups.append(f"g{group:05d}")
            baseline.append(base)
            candidate.append(cand)
            row += 1
    return groups, baseline, candidate


def main() -> int:
    groups, baseline, candidate = synthetic()
    print(f"data: {GROUPS} groups, {len(groups)} rows, {RESAMPLES} resamples", flush=True)
    best = float("inf")
    results: list[PairedStatistics] = []
    for attempt in range(1, REPEATS + 1):
        start = time.perf_counter()
        results.append(paired_cluster_bootstrap(groups, baseline, candidate, seed=17, resamples=RESAMPLES))
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        print(f"run {attempt}/{REPEATS}: {elapsed:.3f} s", flush=True)
    if any(result != results[0] for result in results):
        print("error: the same seed gave different results", file=sys.stderr)
        return 1
    stats = results[0]
    print(f"difference={stats.difference:.4f} interval=[{stats.interval[0]:.4f}, {stats.interval[1]:.4f}] "
          f"warning={stats.warning}")
    print(f"target: at most {TARGET_SECONDS:.1f} s: {'met' if best <= TARGET_SECONDS else 'MISSED'}")
    print(f"bootstrap_seconds={best:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
