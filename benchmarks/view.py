"""Benchmark: the run explorer (`evalkit view`) at 10,000 cases x 20 runs, in Chromium.

It writes 20 authored run reports of 10,000 cases each (two checks per case; run r fails test_a on the cases
where c % (r + 3) == 0, so every run differs from the others), runs `evalkit view` on them (timed, a whole
process), then opens the folder's index.html from disk in Debian's headless Chromium (/usr/bin/chromium, through
Playwright; never a downloaded browser), three times, each in a fresh context, and takes the median of:

  first paint   the page's own figure (window.EVALKIT_TIMING.firstPaint): milliseconds from the start of the
                navigation to the first frame after the grid was drawn, every run's data loaded and read;
  filter        from a click on "regressed" to the first frame after the grid shows the filtered rows;
  search        from typing a query (an output's text) to the first frame after;
  queue         with the search cleared, from a click on "queue: least sure first" (every case ordered by the
                judge's margin in the review run) to the first frame after.

The last line is

    first_paint_ms=<ms> filter_ms=<ms>

and the line before it `cases=10000 runs=20 view_s=<s> data_mb=<MB> search_ms=<ms> queue_ms=<ms>`. No target is set; the
browser test (tests/render/test_explorer_browser.py) holds generous bounds (30 s and 3 s) so that a freeze fails it.

Run from the project root:  .venv/bin/python benchmarks/view.py [--cases N --runs R]
Temporary files are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
KEY = {"key_version": 1, "suite": "bench", "dataset": "bench@1", "dataset_sha": "d1", "model": "m",
       "prompt_version": "v1", "prompt_sha": "p1", "judge_model": "j"}
_FRAME = "requestAnimationFrame(() => setTimeout(() => done(performance.now() - start), 0))"


def write_runs(folder: Path, cases: int, runs: int) -> list[Path]:
    paths = []
    for run in range(runs):
        entries, tests = [], []
        for c in range(cases):
            failed = c % (run + 3) == 0
            checks = {"test_a": "failed" if failed else "passed", "test_b": "passed"}
            entries.append({"id": f"case-{c:05d}", "status": "scored", "passed": not failed, "checks": checks,
                            "output": f"the answer to question {c} is {'wrong' if failed else 'right'} in run {run}",
                            "input": {"topic": ("billing", "login", "refunds")[c % 3]}})
            tests += [{"nodeid": f"test_bench.py::{check}[case-{c:05d}]", "outcome": outcome}
                      for check, outcome in checks.items()]
        path = folder / f"runs/{run:02d}/report.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"eval": KEY, "tests": tests, "cases": entries, "slices": {"topic": {}},
                                    "created": 1_700_000_000 + run}), encoding="utf-8")
        paths.append(path)
    return paths


def measure(index: Path, browser: Any) -> tuple[float, float, float, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    try:
        page = context.new_page()
        page.goto(index.as_uri(), wait_until="load")
        page.wait_for_selector("body[data-ready]", timeout=120_000)
        first_paint = float(page.evaluate("() => window.EVALKIT_TIMING.firstPaint"))
        filtered = float(page.evaluate("() => new Promise(done => { const start = performance.now(); "
                                       "document.querySelector('button[data-flag=regressed]').click(); "
                                       f"{_FRAME}; }})"))
        searched = float(page.evaluate("() => new Promise(done => { const start = performance.now(); "
                                       "const box = document.getElementById('search'); box.value = 'question 77'; "
                                       "box.dispatchEvent(new Event('input')); "
                                       f"{_FRAME}; }})"))
        queued = float(page.evaluate("() => new Promise(done => { "
                                     "const box = document.getElementById('search'); box.value = ''; "
                                     "box.dispatchEvent(new Event('input')); "
                                     "const start = performance.now(); document.getElementById('queue').click(); "
                                     f"{_FRAME}; }})"))
        return first_paint, filtered, searched, queued
    finally:
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="evalkit-view-bench-") as tmp:
        folder = Path(tmp)
        paths = write_runs(folder, args.cases, args.runs)
        evalkit = Path(sys.executable).parent / "evalkit"
        start = time.perf_counter()
        done = subprocess.run([str(evalkit), "view", *map(str, paths), "--out", str(folder / "explorer")],
                              cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=1800)
        view_s = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout, done.stderr, sep="\n", file=sys.stderr)
            return 1
        data_mb = sum(p.stat().st_size for p in (folder / "explorer/data").iterdir()) / 1e6
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--headless", "--no-sandbox", "--disable-gpu"])
            try:
                samples = [measure(folder / "explorer/index.html", browser) for _ in range(3)]
            finally:
                browser.close()
    paint, filtered, searched, queued = (statistics.median(column) for column in zip(*samples, strict=True))
    print(f"cases={args.cases} runs={args.runs} view_s={view_s:.2f} data_mb={data_mb:.1f} search_ms={searched:.0f} "
          f"queue_ms={queued:.0f}")
    print(f"first_paint_ms={paint:.0f} filter_ms={filtered:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
