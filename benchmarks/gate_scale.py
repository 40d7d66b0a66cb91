"""Benchmark: wall time and peak memory of `python -m evalkit.gate` on two 1,000,000-test reports.

The script writes a baseline and a candidate run report of 1,000,000 tests each (250,000 cases x
4 checks) in the shape evalkit accepts: `{"eval": {...eval key...}, "tests": [{"nodeid": ...,
"outcome": ...}, ...]}`. Both keys share dataset_sha and judge_model (so they are comparable) and
differ in prompt_sha (the change under test). The candidate carries planted regressions, fixes and
critical failures, so the gate has real work to do and its answer can be checked.

It then runs, in a fresh subprocess,
    python -m evalkit.gate BASELINE CANDIDATE --policy POLICY.json --out decision.json
a few times, keeps the best wall time and the child's peak RSS (getrusage(RUSAGE_CHILDREN).ru_maxrss,
KiB on Linux; the script starts no other child, so that is the gate's own peak), and checks the
decision against what was planted. The last line is `gate_seconds=<s> peak_mb=<MB>`.
Targets: under 3 s and under 1 GB.

Run from the project root:  .venv/bin/python benchmarks/gate_scale.py
Standard library only (evalkit runs in the child). Temporary files are removed at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

CASES = 250_000
CHECKS = ("test_reply_is_json", "test_label", "test_score_in_range", "test_summary_short")
CRITICAL = ("test_reply_is_json", "test_label")
REPEATS = 3
TARGET_SECONDS, TARGET_MB = 3.0, 1024
PROJECT_ROOT = Path(__file__).resolve().parent.parent
OutcomeRule = Callable[[int, str], str]  # (case number, check) -> pytest outcome


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def eval_key(prompt_version: str) -> dict[str, object]:
    """An eval key as evalkit writes it; only the prompt differs between baseline and candidate."""
    return {"key_version": 1, "suite": "bench", "dataset": "bench@1", "dataset_sha": sha("dataset bench@1"),
            "model": "gemini-3.8-flash", "prompt_version": prompt_version,
            "prompt_sha": sha(f"prompt {prompt_version}"), "judge_model": "gemini-3.8-flash", "components": {}}


# --- the planted outcomes ---------------------------------------------------------------------
# Deterministic rules on the case number i; each is disjoint from the others by construction
# (see the residues), so the expected counts below follow from the rules alone.

def baseline_outcome(i: int, check: str) -> str:
    if check == "test_summary_short" and i % 500 == 0:
        return "failed"  # 500 failures, half of them fixed in the candidate
    if check == "test_label" and i % 1000 == 7:
        return "failed"  # 250 critical tests already failing on the baseline
    if check == "test_score_in_range" and i % 2500 == 11:
        return "skipped"  # 100 skipped on both sides: neither regression nor fix
    return "passed"


def candidate_outcome(i: int, check: str) -> str:
    if check == "test_summary_short" and i % 1000 == 0:
        return "passed"  # 250 fixes
    if check == "test_score_in_range" and i % 1000 == 3:
        return "failed"  # 250 regressions of a non-critical check
    if check == "test_reply_is_json" and i % 2000 == 5:
        return "error"  # 125 new critical failures (also regressions)
    return baseline_outcome(i, check)


def tests(outcome_of: OutcomeRule) -> Iterator[tuple[str, str]]:
    for i in range(CASES):
        for check in CHECKS:
            yield f"test_bench.py::{check}[case-{i:06d}]", outcome_of(i, check)


def expected_decision() -> dict[str, object]:
    """What the gate must answer, derived from the rules above without evalkit's code."""
    regressed, fixed, critical = [], [], []
    passed = 0
    for (nodeid, before), (_, after) in zip(tests(baseline_outcome), tests(candidate_outcome), strict=True):
        passed += after == "passed"
        if before == "passed" and after != "passed":
            regressed.append(nodeid)
        if before != "passed" and after == "passed":
            fixed.append(nodeid)
        if after != "passed" and nodeid.split("::")[-1].startswith(CRITICAL):
            critical.append(nodeid)
    return {"decision": "block", "regressed": sorted(regressed), "fixed": sorted(fixed),
            "critical_failures": sorted(critical), "missing_critical": [], "tests": CASES * len(CHECKS),
            "passed": passed}


# --- files ------------------------------------------------------------------------------------

def write_report(path: Path, prompt_version: str, outcome_of: OutcomeRule) -> int:
    """Stream the report to disk (node ids are plain ASCII without quotes, so no escaping is needed)."""
    with path.open("w", encoding="utf-8") as out:
        out.write('{"eval": ' + json.dumps(eval_key(prompt_version)) + ',\n "tests": [\n')
        first = True
        for nodeid, outcome in tests(outcome_of):
            out.write(('  ' if first else ',\n  ') + f'{{"nodeid": "{nodeid}", "outcome": "{outcome}"}}')
            first = False
        out.write('\n ]\n}\n')
    return path.stat().st_size


def run_gate(baseline: Path, candidate: Path, policy: Path, decision: Path) -> float:
    """One gate run in a fresh interpreter; returns its wall time. Exit 1 is the expected `block`."""
    command = [sys.executable, "-m", "evalkit.gate", str(baseline), str(candidate),
               "--policy", str(policy), "--out", str(decision)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 1:
        raise SystemExit(f"gate exited {done.returncode}, expected 1 (block):\n{(done.stdout + done.stderr)[-3000:]}")
    return elapsed


def check_decision(path: Path, expected: dict[str, object]) -> None:
    got = json.loads(path.read_text(encoding="utf-8"))
    wrong = [k for k, v in expected.items() if got.get(k) != v]
    if wrong:
        raise SystemExit(f"decision differs from what was planted in: {', '.join(wrong)}")
    print(f"decision ok: {got['decision']}, {len(got['regressed'])} regressed, {len(got['fixed'])} fixed, "
          f"{len(got['critical_failures'])} critical failures, {got['passed']} of {got['tests']} passed; "
          f"reasons: {'; '.join(got['reasons'])}", flush=True)


def main() -> int:
    if resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss:  # ru_maxrss would mix in another child
        raise SystemExit("this process already ran a child; run the script on its own")
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-gate-") as tmp:
        root = Path(tmp)
        baseline, candidate = root / "baseline.json", root / "candidate.json"
        policy, decision = root / "policy.json", root / "decision.json"
        start = time.perf_counter()
        size_b = write_report(baseline, "v1", baseline_outcome)
        size_c = write_report(candidate, "v2", candidate_outcome)
        policy.write_text(json.dumps({"max_regressions": 0, "min_pass_rate": 0.9, "critical": list(CRITICAL)}),
                          encoding="utf-8")
        print(f"wrote 2 reports of {CASES * len(CHECKS):,} tests ({size_b / 1e6:.0f} MB, {size_c / 1e6:.0f} MB) "
              f"in {time.perf_counter() - start:.1f}s", flush=True)
        expected = expected_decision()

        times = []
        for rep in range(REPEATS):
            decision.unlink(missing_ok=True)
            times.append(run_gate(baseline, candidate, policy, decision))
            print(f"rep {rep + 1}/{REPEATS}: gate {times[-1]:.2f}s", flush=True)
            check_decision(decision, expected)
    # The maximum RSS over the gate children (all the same command); Linux reports KiB.
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    best = min(times)
    verdict = "met" if best < TARGET_SECONDS and peak_mb < TARGET_MB else "MISSED"
    print(f"targets (< {TARGET_SECONDS:.0f} s, < {TARGET_MB} MB): {verdict}", flush=True)
    print(f"gate_seconds={best:.2f} peak_mb={peak_mb:.0f}")
    return 0


if __name__ == "__main__":
    os.chdir(PROJECT_ROOT)
    sys.exit(main())
