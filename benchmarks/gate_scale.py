"""Benchmark: wall time and peak memory of `evalkit gate` on two 1,000,000-test reports, compact and full.

Compact: the script writes a baseline and a candidate run report of 1,000,000 tests each (250,000 cases x 4
checks) in the least shape evalkit accepts: `{"eval": {...eval key...}, "tests": [{"nodeid": ...,
"outcome": ...}, ...]}`. Both keys share dataset_sha and judge_model (so they are comparable) and differ in
prompt_sha (the change under test). The candidate carries planted regressions, fixes and critical failures, so
the gate has real work to do and its answer can be checked.

Full: the same tests and outcomes written as `python -m evalkit` writes its job folder's report.json (the shape
of a real one, scaled up): pytest-json-report's record (created, duration, exitcode, summary), each test with
nodeid, lineno, outcome, its setup / call / teardown stages with their durations (a failed stage with pytest's
crash and traceback text, a skip with its reason) and its case; then evalkit's blocks: format, eval,
provenance, the 250,000 cases (checks, calls, problems, the reply, the judge's reply, passed, per-case
metrics), pass_rate, metrics and execution; one-space indent, as the runner writes it. evalkit's runner omits
pytest-json-report's keywords, collectors, log, streams and traceback, so these reports do too.

Each measurement runs in a fresh subprocess, whose own wall time and peak RSS (os.wait4's rusage, ru_maxrss,
KiB on Linux) are read:
    evalkit gate BASELINE CANDIDATE --policy POLICY.json --out decision.json
on each pair (which writes decision.json and decision.xml, the decision as JUnit XML, beside it), and, on each
pair, the reference `json.loads` of each of the two files (read, parse, drop), the least any gate must do, as
Python runs it (its cyclic garbage collector on; on the full pair the same with the collector off, as the gate
runs, is printed for comparison): the parse floor. Reference and gate alternate, and the best of each is kept,
so the ratio is taken in one sitting; each child's CPU time (user + system, the gate's strict check in its child
process included) is printed beside its wall time, since the load of a shared machine changes it least. Each
decision is checked against what was planted. The last two lines are
    full_gate_s=<s> full_parse_s=<s> full_ratio=<r> full_peak_mb=<MB> compact_peak_mb=<MB>
    gate_s=<s> parse_floor_s=<s> ratio=<r>
the last one the compact pair's, the ratio this benchmark is judged on. Targets: compact at most 2x its parse
floor, decision.xml included, and under 1 GB; full at most 3x the reference parse and at most 1.5 GB.

Run from the project root:  .venv/bin/python benchmarks/gate_scale.py
Standard library only (evalkit runs in the child). Temporary files (about 1.2 GB) are removed at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
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
FULL_REPEATS = 2
TARGET_COMPACT_RATIO, TARGET_MB = 2.0, 1024
TARGET_RATIO, TARGET_FULL_MB = 3.0, 1536
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


# --- full reports: what `python -m evalkit` writes --------------------------------------------

_STARTED = 1796049091.3753755  # `created` of the real report this shape is taken from
_TRACEBACK = ("case = Case(id='{case}', fields={{'input': 'Import of tasks.csv reports success but drops 88 of "
              "500 tasks', 'label': 'bug', 'priority': 'p0'}})\nreply = {{'label': 'bug', 'priority': 'p0', "
              "'summary': 'tracker import silently drops tasks', 'score': {score}}}\n\n    def {check}(case, reply):\n"
              "        \"\"\"The reply's field holds what the case expects.\"\"\"\n>       assert {test}, "
              "f\"{{reply!r}} for {{case.id}}\"\nE       AssertionError: {message}\nE       assert False\n\n"
              "test_bench.py:{line}: AssertionError")


def _duration(i: int, stage: int) -> float:
    """A stage's duration in seconds, varied like real ones (tens to hundreds of microseconds)."""
    return ((i * 2654435761 + stage * 40503) % 997 + 17) * 3.0517578125e-7 + 1.1e-5


def _failed_stage(i: int, stage: int, check: str, message: str, line: int) -> dict[str, object]:
    case = f"case-{i:06d}"
    return {"duration": _duration(i, stage), "outcome": "failed",
            "crash": {"path": "test_bench.py", "lineno": line, "message": f"AssertionError: {message}\nassert False"},
            "longrepr": _TRACEBACK.format(case=case, score=1.25, check=check, test="ok", message=message, line=line)}


def full_test(i: int, check: str, outcome: str) -> dict[str, object]:
    """One test as pytest-json-report writes it under evalkit's runner (keywords and streams omitted)."""
    line = 10 + 8 * CHECKS.index(check)
    test: dict[str, object] = {"nodeid": f"test_bench.py::{check}[case-{i:06d}]", "lineno": line, "outcome": outcome}
    passed = {"duration": _duration(i, 0), "outcome": "passed"}
    teardown = {"duration": _duration(i, 2), "outcome": "passed"}
    if outcome == "passed":
        test.update(setup=passed, call={"duration": _duration(i, 1), "outcome": "passed"}, teardown=teardown)
    elif outcome == "failed":
        test.update(setup=passed, call=_failed_stage(i, 1, check, f"score 1.25 of case-{i:06d} outside [0, 1]",
                                                     line + 4), teardown=teardown)
    elif outcome == "error":  # a fixture failed: setup did not pass and the test body never ran
        test.update(setup=_failed_stage(i, 0, check, f"the reply of case-{i:06d} is not JSON", line - 3),
                    teardown=teardown)
    else:  # skipped in setup, with pytest's (path, line, reason)
        test.update(setup={"duration": _duration(i, 0), "outcome": "skipped",
                           "longrepr": f"('test_bench.py', {line}, 'Skipped: no score for case-{i:06d}')"},
                    teardown=teardown)
    test["case"] = f"case-{i:06d}"
    return test


def full_case(i: int, outcome_of: OutcomeRule) -> dict[str, object]:
    """One case as evalkit's plugin writes it: its checks, calls, reply, judge reply and metrics."""
    case = f"case-{i:06d}"
    checks = {check: outcome_of(i, check) for check in CHECKS}
    outcomes = list(checks.values())
    return {"id": case, "status": "scored", "checks": checks,
            "calls": {f"task/{case}": "replayed", f"judge/rubric/{case}": "replayed"}, "problems": [],
            "output": json.dumps({"label": "bug", "priority": "p1", "score": 0.5 + (i % 50) / 100,
                                  "summary": f"import of tasks.csv for {case} drops {i % 500} of 500 tasks"}),
            "judge_replies": {"rubric": json.dumps({"relevance": 2 - i % 3 // 2, "format": 2,
                                                    "reason": "The summary states what the issue says."})},
            "passed": "passed" in outcomes and all(o in ("passed", "skipped") for o in outcomes),
            "metrics": {"rubric.format": 2.0, "rubric.relevance": float(2 - i % 3 // 2)}}


def write_full_report(path: Path, prompt_version: str, outcome_of: OutcomeRule) -> int:
    """Stream a full report to disk in the runner's layout (keys in its order, one-space indent)."""
    counts: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as out:
        out.write('{\n "created": ' + repr(_STARTED) + ',\n "duration": 1843.2519834041595,\n "exitcode": 1,\n')
        for i in range(CASES):
            for check in CHECKS:
                outcome = outcome_of(i, check)
                counts[outcome] = counts.get(outcome, 0) + 1
        summary = {**{k: counts[k] for k in sorted(counts)}, "total": CASES * len(CHECKS),
                   "collected": CASES * len(CHECKS)}
        out.write(' "summary": ' + json.dumps(summary, indent=1).replace("\n", "\n ") + ',\n "tests": [\n')
        for i in range(CASES):
            for n, check in enumerate(CHECKS):
                entry = json.dumps(full_test(i, check, outcome_of(i, check)), indent=1, ensure_ascii=False)
                out.write(("  " if i == n == 0 else ",\n  ") + entry.replace("\n", "\n  "))
        out.write("\n ],\n")
        key = eval_key(prompt_version)
        provenance = {"evalkit_version": "0.1.0", "git_commit": "812a2b6ef6c1caadcec1eaf419215338648b2285",
                      "python": "3.11.7", "mode": "replay", "suite": "bench",
                      "baseline": "suites/bench/runs/baseline.json", "policy": "bench",
                      "recording": f"recordings/bench/gemini-3.8-flash-{prompt_version}-bench@1.json",
                      "recording_provenance": "authored", "recording_note": "generated by benchmarks/gate_scale.py"}
        for name, value in (("format", "evalkit-run-report/1"), ("eval", key), ("provenance", provenance)):
            out.write(f' "{name}": ' + json.dumps(value, indent=1).replace("\n", "\n ") + ",\n")
        out.write(' "cases": [\n')
        passing_cases = 0
        for i in range(CASES):
            case = full_case(i, outcome_of)
            passing_cases += bool(case["passed"])
            entry = json.dumps(case, indent=1, ensure_ascii=False)
            out.write(("  " if i == 0 else ",\n  ") + entry.replace("\n", "\n  "))
        out.write("\n ],\n")
        total = CASES * len(CHECKS)
        pass_rate = round(counts["passed"] / total, 6)
        metrics = {"pass_rate": {"mean": pass_rate, "count": total, "unmeasured": 0},
                   "case_pass_rate": {"mean": round(passing_cases / CASES, 6), "count": CASES, "unmeasured": 0},
                   "rubric.format": {"mean": 2.0, "count": CASES, "unmeasured": 0},
                   "rubric.relevance": {"mean": 1.666668, "count": CASES, "unmeasured": 0}}
        execution = {"calls": {"replayed": 2 * CASES},
                     "cost": {"model_calls": CASES, "input_tokens": 240 * CASES, "output_tokens": 30 * CASES,
                              "estimated_calls": {"input_tokens": CASES, "output_tokens": CASES},
                              "judge_calls": CASES, "judge_input_tokens": 166 * CASES,
                              "judge_output_tokens": 22 * CASES},
                     "latency": {"measured_calls": 0}}
        out.write(' "pass_rate": ' + json.dumps(pass_rate) + ",\n")
        out.write(' "metrics": ' + json.dumps(metrics, indent=1).replace("\n", "\n ") + ",\n")
        out.write(' "execution": ' + json.dumps(execution, indent=1).replace("\n", "\n ") + "\n}\n")
    return path.stat().st_size


def run_child(command: list[str]) -> tuple[float, float, float, subprocess.CompletedProcess[str]]:
    """Run `command` in a fresh process: its wall time, its CPU time (user + system), its own peak RSS in MB,
    and what it printed. The CPU time is what a shared machine's load changes least."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        out.seek(0)
        done = subprocess.CompletedProcess(command, os.waitstatus_to_exitcode(status), out.read())
        return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, done


def run_gate(baseline: Path, candidate: Path, policy: Path, decision: Path) -> tuple[float, float, float]:
    """One gate run in a fresh interpreter: its wall time, CPU time and peak MB. Exit 1 is the expected `block`."""
    decision.unlink(missing_ok=True)
    elapsed, cpu, peak, done = run_child([sys.executable, "-m", "evalkit.cli.main", "gate", str(baseline),
                                          str(candidate), "--policy", str(policy), "--out", str(decision)])
    if done.returncode != 1:
        raise SystemExit(f"gate exited {done.returncode}, expected 1 (block):\n{done.stdout[-3000:]}")
    return elapsed, cpu, peak


_PARSE = ("import json, sys\nfor path in sys.argv[1:]:\n    with open(path, 'rb') as f:\n"
          "        data = json.loads(f.read())\n    del data\n")


def run_parse(*paths: Path, collect: bool = True) -> tuple[float, float, float]:
    """The reference: json.loads of each file in turn (read, parse, drop) in a fresh interpreter, as Python runs
    it (the cyclic garbage collector on) or, with collect=False, with the collector off as the gate runs."""
    script = _PARSE if collect else "import gc\ngc.disable()\n" + _PARSE
    elapsed, cpu, peak, done = run_child([sys.executable, "-c", script, *map(str, paths)])
    if done.returncode != 0:
        raise SystemExit(f"the reference parse failed:\n{done.stdout[-3000:]}")
    return elapsed, cpu, peak


def check_decision(path: Path, expected: dict[str, object]) -> None:
    got = json.loads(path.read_text(encoding="utf-8"))
    wrong = [k for k, v in expected.items() if got.get(k) != v]
    if wrong:
        raise SystemExit(f"decision differs from what was planted in: {', '.join(wrong)}")
    print(f"decision ok: {got['decision']}, {len(got['regressed'])} regressed, {len(got['fixed'])} fixed, "
          f"{len(got['critical_failures'])} critical failures, {got['passed']} of {got['tests']} passed; "
          f"reasons: {'; '.join(got['reasons'])}", flush=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-gate-") as tmp:
        root = Path(tmp)
        baseline, candidate = root / "baseline.json", root / "candidate.json"
        full_baseline, full_candidate = root / "full-baseline.json", root / "full-candidate.json"
        policy, decision = root / "policy.json", root / "decision.json"
        start = time.perf_counter()
        size_b = write_report(baseline, "v1", baseline_outcome)
        size_c = write_report(candidate, "v2", candidate_outcome)
        policy.write_text(json.dumps({"max_regressions": 0, "min_pass_rate": 0.9, "critical": list(CRITICAL)}),
                          encoding="utf-8")
        print(f"wrote 2 compact reports of {CASES * len(CHECKS):,} tests "
              f"({size_b / 1e6:.0f} MB, {size_c / 1e6:.0f} MB) "
              f"in {time.perf_counter() - start:.1f}s", flush=True)
        expected = expected_decision()

        times, peaks, floors = [], [], []
        for rep in range(REPEATS):  # alternately, so the machine's load falls on both alike
            elapsed, cpu, _ = run_parse(baseline, candidate)
            floors.append(elapsed)
            print(f"rep {rep + 1}/{REPEATS}: json.loads of both {elapsed:.2f}s ({cpu:.2f}s CPU)", flush=True)
            elapsed, cpu, peak = run_gate(baseline, candidate, policy, decision)
            times.append(elapsed)
            peaks.append(peak)
            print(f"rep {rep + 1}/{REPEATS}: gate {elapsed:.2f}s ({cpu:.2f}s CPU), {peak:.0f} MB", flush=True)
            check_decision(decision, expected)
            if not decision.with_suffix(".xml").is_file():
                raise SystemExit("the gate wrote no decision.xml beside decision.json")
        baseline.unlink()
        candidate.unlink()

        start = time.perf_counter()
        size_b = write_full_report(full_baseline, "v1", baseline_outcome)
        size_c = write_full_report(full_candidate, "v2", candidate_outcome)
        print(f"wrote 2 full reports of {CASES * len(CHECKS):,} tests ({size_b / 1e6:.0f} MB, {size_c / 1e6:.0f} MB) "
              f"in {time.perf_counter() - start:.1f}s", flush=True)
        parse_times, full_times, full_peaks = [], [], []
        for rep in range(FULL_REPEATS):  # alternately, so the machine's load falls on both alike
            elapsed, cpu, peak = run_parse(full_baseline, full_candidate)
            parse_times.append(elapsed)
            print(f"rep {rep + 1}/{FULL_REPEATS}: json.loads of both {elapsed:.2f}s ({cpu:.2f}s CPU), {peak:.0f} MB",
                  flush=True)
            elapsed, cpu, peak = run_parse(full_baseline, full_candidate, collect=False)
            print(f"rep {rep + 1}/{FULL_REPEATS}: json.loads of both, collector off, {elapsed:.2f}s ({cpu:.2f}s CPU), "
                  f"{peak:.0f} MB (not the reference: for comparison)", flush=True)
            elapsed, cpu, peak = run_gate(full_baseline, full_candidate, policy, decision)
            full_times.append(elapsed)
            full_peaks.append(peak)
            print(f"rep {rep + 1}/{FULL_REPEATS}: full gate {elapsed:.2f}s ({cpu:.2f}s CPU), {peak:.0f} MB", flush=True)
            check_decision(decision, expected)

    best, peak_mb, floor = min(times), max(peaks), min(floors)
    full_best, parse_best, full_peak = min(full_times), min(parse_times), max(full_peaks)
    compact_ratio, ratio = best / floor, full_best / parse_best
    verdict = "met" if compact_ratio <= TARGET_COMPACT_RATIO and peak_mb < TARGET_MB else "MISSED"
    print(f"compact targets (<= {TARGET_COMPACT_RATIO:.0f}x the parse floor, < {TARGET_MB} MB): {verdict}", flush=True)
    verdict = "met" if ratio <= TARGET_RATIO and full_peak <= TARGET_FULL_MB else "MISSED"
    print(f"full targets (<= {TARGET_RATIO:.0f}x the reference parse, <= {TARGET_FULL_MB} MB): {verdict}", flush=True)
    print(f"full_gate_s={full_best:.2f} full_parse_s={parse_best:.2f} full_ratio={ratio:.2f} "
          f"full_peak_mb={full_peak:.0f} compact_peak_mb={peak_mb:.0f}")
    print(f"gate_s={best:.2f} parse_floor_s={floor:.2f} ratio={compact_ratio:.2f}")
    return 0


if __name__ == "__main__":
    os.chdir(PROJECT_ROOT)
    sys.exit(main())
