"""Benchmark: rows per second of `load_cases` on JSON Lines files of 10,000 and 100,000 rows, and their ratio.

Synthetic, deterministic data: rows without ids (so each gets one from its content) in which every content comes
ten times, so nine rows in ten are numbered as repeats, the path that was quadratic (issue 35). Each size is loaded
three times in this process, alternately, and the best time is kept. A linear loader reads both sizes at about
the same rate, so the ratio (100,000 rows' rate over 10,000's) is near 1 and the machine's speed cancels; the
quadratic numbering it replaces gave about 0.1 at these sizes, and worse the larger the file. The last line is
`rows_per_s_10k=<r> rows_per_s_100k=<r> ratio=<r>`. Target: ratio at least 0.7.

Run from the project root:  .venv/bin/python benchmarks/datasets.py
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from evalkit.core.loaders import load_cases

SIZES = (10_000, 100_000)
REPEATS = 3
TARGET_RATIO = 0.7


def write_rows(folder: Path, rows: int) -> Path:
    path = folder / f"rows-{rows}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(json.dumps({"question": f"ticket {i // 10}: the app crashes on start", "label": "bug"}) + "\n")
    return path


def best_seconds(path: Path, rows: int) -> float:
    gc.collect()
    start = time.perf_counter()
    loaded = load_cases(path, None, "bench", "1")
    seconds = time.perf_counter() - start
    assert len(loaded.cases) == rows and len({case.id for case in loaded.cases}) == rows
    return seconds


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        paths = {rows: write_rows(Path(folder), rows) for rows in SIZES}
        best = {rows: float("inf") for rows in SIZES}
        for _ in range(REPEATS):
            for rows in SIZES:
                best[rows] = min(best[rows], best_seconds(paths[rows], rows))
    rate = {rows: rows / best[rows] for rows in SIZES}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for rows in SIZES:
        print(f"rows={rows} best_s={best[rows]:.3f} rows_per_s={rate[rows]:,.0f} load_avg={load}", flush=True)
    ratio = rate[SIZES[1]] / rate[SIZES[0]]
    print(f"rows_per_s_10k={rate[SIZES[0]]:.0f} rows_per_s_100k={rate[SIZES[1]]:.0f} ratio={ratio:.2f}")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
