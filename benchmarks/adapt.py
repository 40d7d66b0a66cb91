"""Benchmark: importing and gating an Inspect log of 10,000 samples, against Inspect's own reader loading it.

The logs are made by the real tool at scale: a Python with inspect-ai (EVALKIT_INSPECT_PYTHON, default
.venv-inspect/bin/python, which scripts/test.sh sets up) reads the checked-in fixture logs
tests/corpus/adapt/inspect/{baseline,candidate}.eval (inspect-ai 0.3.285, mockllm/model), repeats their
samples to 10,000 (ids `q<n>-<copy>`, 1,667 copies cut at 10,000; each copy a full EvalSample with its
transcript) and writes them back with `inspect_ai.log.write_eval_log`, so both files are what Inspect itself
writes (header, summaries, samples, zstandard-compressed). The candidate keeps its regression and fix in every
copy.

Then, best of 3 each, in one sitting:
- Inspect: `inspect_ai.log.read_eval_log(candidate)` in the inspect Python, timed around the call (the import of
  inspect_ai not counted);
- evalkit: reading both logs with evalkit's Inspect source and gating them (`read_inspect_log` x 2 +
  `gate_runs`), timed around the calls in this Python (evalkit's import not counted).
The ratio is evalkit's time over Inspect's (the target: under 2). evalkit reads two logs where Inspect reads one,
so the ratio is conservative; but evalkit reads only each log's header and sample summaries, never the transcripts,
so for reference the script also times Inspect reading just those (`read_eval_log(header_only=True)` and
`read_eval_log_sample_summaries`). The whole command `evalkit adapt inspect BASELINE CANDIDATE` is timed too
(start-up included), for reference.

Run from the project root:  .venv/bin/python benchmarks/adapt.py
Last line: `inspect_ratio=<r>`. Generated logs go to benchmarks/.work/adapt/ (kept between runs: delete it to
regenerate).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))
from evalkit.adapt.framework import gate_runs  # noqa: E402
from evalkit.adapt.inspect import read_inspect_log  # noqa: E402
from evalkit.core.policy import STRICT_DEFAULT  # noqa: E402

SAMPLES = 10_000
REPEATS = 3
WORK = PROJECT_ROOT / "benchmarks/.work/adapt"
FIXTURES = PROJECT_ROOT / "tests/corpus/adapt/inspect"

SCALE = r"""
import sys
from inspect_ai.log import read_eval_log, write_eval_log
source, target, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = read_eval_log(source)
samples = []
for copy in range(-(-count // len(log.samples))):
    for sample in log.samples:
        samples.append(sample.model_copy(update={"id": f"{sample.id}-{copy}", "uuid": f"{sample.uuid}-{copy}"}))
log.samples = samples = samples[:count]
log.eval.dataset.samples = len(samples)
log.eval.dataset.sample_ids = [s.id for s in samples]
log.results.total_samples = log.results.completed_samples = len(samples)
write_eval_log(log, target)
"""

READ = r"""
import json, sys, time
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries
times, light = [], []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    log = read_eval_log(sys.argv[1])
    times.append(time.perf_counter() - start)
    assert len(log.samples) >= 10_000, len(log.samples)
    start = time.perf_counter()
    read_eval_log(sys.argv[1], header_only=True)
    summaries = read_eval_log_sample_summaries(sys.argv[1])
    light.append(time.perf_counter() - start)
    assert len(summaries) >= 10_000, len(summaries)
print(json.dumps([times, light]))
"""


def inspect_python() -> str:
    python = os.environ.get("EVALKIT_INSPECT_PYTHON") or str(PROJECT_ROOT / ".venv-inspect/bin/python")
    if not Path(python).exists():
        sys.exit(f"benchmarks/adapt.py: no Python with inspect-ai at {python}; set EVALKIT_INSPECT_PYTHON "
                 "(scripts/test.sh makes .venv-inspect)")
    return python


def make_logs(python: str) -> tuple[Path, Path]:
    WORK.mkdir(parents=True, exist_ok=True)
    out = []
    for name in ("baseline", "candidate"):
        target = WORK / f"{name}-{SAMPLES}.eval"
        if not target.exists():
            print(f"writing {target} with inspect-ai ...", flush=True)
            subprocess.run([python, "-c", SCALE, str(FIXTURES / f"{name}.eval"), str(target), str(SAMPLES)],
                           check=True)
        out.append(target)
    return out[0], out[1]


def main() -> None:
    python = inspect_python()
    baseline, candidate = make_logs(python)
    version = subprocess.run([python, "-c", "import inspect_ai; print(inspect_ai.__version__)"], check=True,
                             capture_output=True, text=True).stdout.strip()
    print(f"inspect-ai {version}; logs of {SAMPLES} samples: {baseline.stat().st_size / 1e6:.1f} MB, "
          f"{candidate.stat().st_size / 1e6:.1f} MB")

    read = subprocess.run([python, "-c", READ, str(candidate), str(REPEATS)], check=True, capture_output=True,
                          text=True)
    inspect_times, light_times = json.loads(read.stdout)
    evalkit_times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = gate_runs(STRICT_DEFAULT, read_inspect_log(baseline), read_inspect_log(candidate))
        evalkit_times.append(time.perf_counter() - start)
    decision = result.decision
    # the fixtures' regression is q1 and their fix q6: one of each per copy of the six samples
    ids = [f"q{1 + n % 6}-{n // 6}" for n in range(SAMPLES)]
    planted = (sum(i.startswith("q1-") for i in ids), sum(i.startswith("q6-") for i in ids))
    assert (decision.tests, len(decision.regressed), len(decision.fixed)) == (SAMPLES, *planted), \
        (decision.tests, len(decision.regressed), len(decision.fixed), planted)

    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "adapt", "inspect", str(baseline), str(candidate)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True)
    command = time.perf_counter() - start
    assert done.returncode == 1, done.stderr  # the planted regressions block

    best_inspect, best_evalkit = min(inspect_times), min(evalkit_times)
    print(f"inspect read_eval_log (one log): best {best_inspect:.3f} s of {[round(t, 3) for t in inspect_times]}")
    print(f"evalkit read both + gate: best {best_evalkit:.3f} s of {[round(t, 3) for t in evalkit_times]}; "
          f"decision {decision.decision}, {len(decision.regressed)} regressed, {len(decision.fixed)} fixed")
    print(f"for reference, inspect reading what evalkit reads (header_only + read_eval_log_sample_summaries, one "
          f"log): best {min(light_times):.3f} s of {[round(t, 3) for t in light_times]}")
    print(f"evalkit adapt inspect (whole command, start-up included): {command:.3f} s")
    print(f"inspect_ratio={best_evalkit / best_inspect:.3f}")


if __name__ == "__main__":
    main()
