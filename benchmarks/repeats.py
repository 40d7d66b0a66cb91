"""Benchmark: how often the gate blocks repeated runs (`run.repeats`), measured through the real pipeline against a
loopback model whose per-case pass probabilities are known.

The model (tests/fakes/flaky.py, served by a loopback OpenAI-compatible server in this process) decides each reply
from the seed the request carries, at temperature 0.8: right when sha256("<case>:<seed>") read as a number in [0, 1)
is below the case's pass probability under the system the request names. Runs are therefore reproducible, and
samples sent with distinct seeds are independent draws.

The suite: 20 cases x 2 checks (the label; the reply is JSON). Under the baseline system 14 cases are always right,
5 are flaky (pass probabilities 0.9, 0.8, 0.7, 0.5, 0.3) and 1 is always wrong. Three scenarios under the suite's
policy (the default: repeats.alpha = 0.05), each over PAIRS baseline/candidate pairs (default 200) of N = M = 10:
- A/A: the candidate is the same system, sampled with other seeds. A block here is a false block;
  false_block_rate must stay at or below alpha, within sampling error.
- hard: one always-right case becomes always wrong; detect_hard (its block rate) must be >= 0.95.
- broad: half of the cases (10 always-right ones) fall to a coin flip; detect_broad must be >= 0.90.

How the pairs are made (400 full runs per figure, each with its own Hydra start and pytest process, would take
most of an hour on a shared 2-CPU machine): each system is recorded once as a large pool of samples through the
real pipeline, `python -m evalkit mode=live run.repeats=1000 model.options.seed=S` (chunks of 1,000 samples per
case, seeds S .. S+999, chunks and systems on disjoint seed ranges), whose pytest checks run on every sample and
whose report lists, per test, the samples that did not pass (`repeats.not_passed`). A run of N = 10 is then one
block of 10 consecutive samples (10 distinct seeds); each pair takes two disjoint blocks (the baseline's from the
baseline pool, the candidate's from its system's pool, never a block twice within a scenario), written as a run
report with the pool report's key and `repeats: {passed, runs: 10}` per test, and gated by evalkit.gate.decide
(what `evalkit gate` runs). The first block of a chunk is exactly what `run.repeats=10` with that chunk's
seed replays: the benchmark checks that for every pool (a real N = 10 replay of each recording gives the block's
counts) and gates one real pair through `evalkit gate`, whose decision must equal the block pair's.

A/A pairs with flaky tests end as `review` (unreliable_baseline): a review is not a block.

Run from the project root:  .venv/bin/python benchmarks/repeats.py [PAIRS]
The last line is `false_block_rate=<x> detect_hard=<y> detect_broad=<z>`.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from evalkit.core.policy import Policy  # noqa: E402
from evalkit.gate.decide import decide  # noqa: E402
from evalkit.gate.decision import Verdict  # noqa: E402
from evalkit.records.report_reader import RunReport, report_from_mapping  # noqa: E402
from tests.fakes import FakeOpenAI  # noqa: E402
from tests.fakes.flaky import flaky_model, write_suite  # noqa: E402

PAIRS = 200
RUNS = 10
CHUNK = 1000
"""Samples per case of one pool run (`run.repeats`)."""
TEMPERATURE = 0.8
STEADY = 14
FLAKY = (0.9, 0.8, 0.7, 0.5, 0.3)
SEED_RANGE = 10_000_000
"""Each system's seeds start at its index x SEED_RANGE: no two samples anywhere share a seed and a case."""


def systems() -> dict[str, dict[str, float]]:
    """System (model name) -> case id -> the probability that a sample's reply is right."""
    base = {f"c{i:02d}": 1.0 for i in range(STEADY)} | {f"f{i}": p for i, p in enumerate(FLAKY)} | {"x0": 0.0}
    return {"sys-base": base, "sys-hard": base | {"c00": 0.0},
            "sys-broad": base | {f"c{i:02d}": 0.5 for i in range(len(base) // 2)}}


def evalkit(root: Path, conf: Path, job: str, *overrides: str) -> dict[str, Any]:
    """One `python -m evalkit` run of the suite; returns its run report."""
    folder = root / job
    command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{conf}]", "suite=flaky_bench",
               "baseline=none", "run.progress=off", f"hydra.run.dir={folder}", *overrides]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not (folder / "report.json").is_file():
        raise SystemExit(f"{job}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return data


def pool(root: Path, conf: Path, system: str, index: int, chunks: int) -> list[dict[str, Any]]:
    """`chunks` pool runs of CHUNK samples per case of one system, recorded live; their run reports."""
    reports = []
    for chunk in range(chunks):
        seed = index * SEED_RANGE + chunk * CHUNK
        started = time.perf_counter()
        report = evalkit(root, conf, f"pool-{system}-{chunk}", "mode=live", f"model={system}",
                         f"model.options.seed={seed}", f"run.repeats={CHUNK}", "run.concurrency=16",
                         f"run.recordings={root / f'rec-{system}-{chunk}'}")
        calls = report["execution"]["calls"]
        print(f"pool {system} chunk {chunk}: seeds {seed}..{seed + CHUNK - 1}, calls {calls}, "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        reports.append(report)
    return reports


def block(report: Mapping[str, Any], start: int, runs: int = RUNS) -> dict[str, Any]:
    """The run report of samples start .. start+runs-1 of a pool run, in the format the runner writes."""
    tests = []
    for test in report["tests"]:
        failed = sum(1 for sample in test["repeats"]["not_passed"] if start <= sample < start + runs)
        passed = runs - failed
        tests.append({"nodeid": test["nodeid"], "case": test["case"],
                      "outcome": "passed" if passed == runs else "failed",
                      "repeats": {"passed": passed, "runs": runs}})
    cases = [{"id": case["id"], "status": case["status"]} for case in report["cases"]]
    return {"eval": report["eval"], "provenance": report["provenance"] | {"repeats": runs}, "tests": tests,
            "cases": cases}


def blocks(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every block of RUNS samples of a system's pool, in seed order."""
    return [block(report, start) for report in reports for start in range(0, CHUNK, RUNS)]


def counts(report: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    return {t["nodeid"]: (t["repeats"]["passed"], t["repeats"]["runs"]) for t in report["tests"]}


def block_rate(name: str, pairs: list[tuple[dict[str, Any], dict[str, Any]]], policy: Policy) -> float:
    """Share of the pairs that the gate blocks."""
    verdicts: dict[str, int] = {}
    for baseline, candidate in pairs:
        decision = decide(policy, load(baseline), load(candidate))
        verdicts[str(decision.decision)] = verdicts.get(str(decision.decision), 0) + 1
    rate = verdicts.get(str(Verdict.BLOCK), 0) / len(pairs)
    print(f"{name:>6}: {len(pairs)} pairs, {dict(sorted(verdicts.items()))}, block rate {rate:.3f}", flush=True)
    return rate


def load(data: dict[str, Any]) -> RunReport:
    return report_from_mapping(data, "block report")


def cross_check(root: Path, conf: Path, pools: dict[str, list[dict[str, Any]]], policy_file: Path) -> None:
    """Block 0 of every pool run equals a real `run.repeats=10` replay of its recording, and one real pair gated
    by `evalkit gate` decides as its block pair does."""
    real = {}
    for index, (system, reports) in enumerate(pools.items()):
        for chunk, report in enumerate(reports):
            seed = index * SEED_RANGE + chunk * CHUNK
            replayed = evalkit(root, conf, f"replay-{system}-{chunk}", "mode=replay", f"model={system}",
                               f"model.options.seed={seed}", f"run.repeats={RUNS}",
                               f"run.recordings={root / f'rec-{system}-{chunk}'}")
            if counts(replayed) != counts(block(report, 0)):
                raise SystemExit(f"{system} chunk {chunk}: a real N = {RUNS} replay differs from block 0 of the pool")
            real.setdefault(system, (root / f"replay-{system}-{chunk}" / "report.json", block(report, 0)))
    (base_path, base_block), (hard_path, hard_block) = real["sys-base"], real["sys-hard"]
    out = root / "decision.json"
    done = subprocess.run([sys.executable, "-m", "evalkit.cli.main", "gate", str(base_path), str(hard_path), "--policy",
                           str(policy_file), "--out", str(out), "--no-require-pass"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"evalkit gate failed (exit {done.returncode}): {done.stderr[-1000:]}")
    gated = json.loads(out.read_text(encoding="utf-8"))["decision"]
    policy = Policy.model_validate(yaml.safe_load(policy_file.read_text(encoding="utf-8")))
    blocked = str(decide(policy, load(base_block), load(hard_block)).decision)
    if gated != blocked:
        raise SystemExit(f"the real pair decided {gated}, its block pair {blocked}")
    print(f"cross-check: block 0 of each of {sum(len(r) for r in pools.values())} pool runs equals a real "
          f"run.repeats={RUNS} replay; a real pair through evalkit gate decided {gated}, as its block "
          "pair did", flush=True)


def main(argv: list[str]) -> int:
    pairs = int(argv[0]) if argv else PAIRS
    per_chunk = CHUNK // RUNS
    rates = systems()
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-repeats-") as tmp, \
            FakeOpenAI(flaky_model(rates), record=False) as server:
        root = Path(tmp)
        conf = write_suite(root, name="flaky_bench", cases=list(rates["sys-base"]), url=server.base_url,
                           systems=list(rates), temperature=TEMPERATURE)
        policy_file = conf / "policy" / "flaky.yaml"
        policy = Policy.model_validate(yaml.safe_load(policy_file.read_text(encoding="utf-8")))
        alpha = policy.repeats.alpha
        print(f"suite: {len(rates['sys-base'])} cases x 2 checks, N = M = {RUNS}, alpha = {alpha}, temperature "
              f"{TEMPERATURE}; pools of {CHUNK} samples per case per run", flush=True)
        need = {"sys-base": 2 * pairs, "sys-hard": pairs, "sys-broad": pairs}  # blocks of RUNS samples
        pools = {system: pool(root, conf, system, index, math.ceil(need[system] / per_chunk))
                 for index, system in enumerate(rates)}
        cross_check(root, conf, pools, policy_file)
        base, hard, broad = (blocks(pools[s]) for s in ("sys-base", "sys-hard", "sys-broad"))
        false_block = block_rate("A/A", [(base[2 * p], base[2 * p + 1]) for p in range(pairs)], policy)
        detect_hard = block_rate("hard", [(base[p], hard[p]) for p in range(pairs)], policy)
        detect_broad = block_rate("broad", [(base[pairs + p], broad[p]) for p in range(pairs)], policy)
    # sampling error of the A/A rate: alpha plus two binomial standard errors at `pairs` pairs
    allowed = alpha + 2 * math.sqrt(alpha * (1 - alpha) / pairs)
    ok = false_block <= allowed and detect_hard >= 0.95 and detect_broad >= 0.90
    print(f"targets: false_block_rate <= {alpha} (+ sampling error: <= {allowed:.3f}), detect_hard >= 0.95, "
          f"detect_broad >= 0.90: {'met' if ok else 'MISSED'}")
    print(f"false_block_rate={false_block:.3f} detect_hard={detect_hard:.3f} detect_broad={detect_broad:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
