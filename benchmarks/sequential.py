"""Benchmark: sequential repeats (`run.repeats=auto run.max_repeats=20`) against fixed repeats (`run.repeats=10`):
the calls each spends and how often each blocks, through the real pipeline against a loopback model whose per-case
pass probabilities are known.

The model (tests/fakes/flaky.py, served by a loopback OpenAI-compatible server in this process) decides each reply
from the seed the request carries, at temperature 0.8: right when sha256("<case>:<seed>") read as a number in
[0, 1) is below the case's pass probability under the system the request names. Samples sent with distinct seeds
are independent draws, and a run is reproducible.

The suite: 10 cases x 2 checks (the label; the reply is JSON). Under the baseline system 5 cases are always right,
4 are flaky (0.95, 0.9, 0.8, 0.6) and 1 is always wrong. Three scenarios, each over PAIRS baseline/candidate pairs
(default 200), under the suite's policy (the default, repeats.alpha = 0.05):
- A/A: the candidate is the same system with other seeds; a block is a false block.
- hard: the 0.95 case falls to 0.2 (one test breaks).
- broad: every case falls by 0.3 (to no less than 0).
Fixed: N = M = 10 (Fisher with Holm, the sign-flip suite test). Sequential: the baseline is a run of 40 samples per
case (what `run.repeats=auto run.max_repeats=20` takes without a baseline: `run.pool_repeats`, twice max_repeats),
the candidate samples in rounds of `run.repeat_batch` (default 2) until every test over a case is settled
(evalkit.run.rounds), at most 20; the gate decides it by the sequential rule (evalkit.gate.sequential_rule).
`calls_ratio` is the candidates' model calls, sequential over fixed, over all three scenarios (the baseline is
recorded once, on the main branch, and serves every pull request: its calls are counted for neither design).

How the pairs are made (1,200 real runs with several rounds of pytest each would take hours on a shared 2-CPU
machine), as benchmarks/repeats.py does: each system is recorded once as a pool of samples through the real
pipeline, `python -m evalkit mode=live run.repeats=1000 model.options.seed=S`, whose checks run on every sample
and whose report lists, per test, the samples that did not pass. A run is then a block of consecutive samples
(seeds S+j, S+j+1, ...): the fixed run's a block of 10; the sequential baseline's a block of 40; the sequential
candidate's, the rounds of the real round loop (`evalkit.run.rounds.sample_in_rounds`, the very function the
runner calls) over a block of 20, each round
reading the block's first n samples of each open case. Each pair's two reports are gated by
`evalkit.gate.decide`. A cross-check runs one pair per scenario for real (`python -m evalkit run.repeats=auto`
live, its baseline the real 40-sample run of the baseline's block), and requires each case's samples and the
decision to equal the block pair's, and a replay of the candidate to decide byte for byte as it did.

The line before the last is the detectable-effect calibration: over the drop scenarios' pairs, of the drops the
decision said it could detect (the suite's true mean drop in per-case pass fraction at or above the decision's
`detectable.suite.drop`, and each test's true drop at or above its `detectable.tests` figure), the share caught
(a block; for a test, the test among the regressed). At the policy's power (0.8) it should be at least 0.8.

Run from the project root:  .venv/bin/python benchmarks/sequential.py [PAIRS [POOL_FOLDER]]
(POOL_FOLDER keeps the pool reports, so a second run records no pool again.)
The last line is `calls_ratio=<r> false_block_rate=<r> detect_hard=<r> detect_broad=<r>`.
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

from evalkit.core.config import RunSettings  # noqa: E402
from evalkit.core.key import EvalKey  # noqa: E402
from evalkit.core.policy import Policy  # noqa: E402
from evalkit.gate.decide import decide  # noqa: E402
from evalkit.gate.decision import Decision, Verdict  # noqa: E402
from evalkit.gate.sequential_rule import pool as pool_of  # noqa: E402
from evalkit.records.report_reader import Counts, RunReport, report_from_mapping  # noqa: E402
from evalkit.run.execute import Execution  # noqa: E402
from evalkit.run.recording import Provenance, Recording  # noqa: E402
from evalkit.run.rounds import sample_in_rounds  # noqa: E402
from tests.fakes import FakeOpenAI  # noqa: E402
from tests.fakes.flaky import flaky_model, write_suite  # noqa: E402

PAIRS = 200
FIXED = 10
MOST = 20
POOL = 2 * MOST  # run.pool_repeats' default
BATCH = 2
CHUNK = 1000
TEMPERATURE = 0.8
SEED_RANGE = 10_000_000
CHECKS = ("test_label", "test_reply_is_json")
BASE = {"c0": 1.0, "c1": 1.0, "c2": 1.0, "c3": 1.0, "c4": 1.0, "h0": 0.95, "f0": 0.9, "f1": 0.8, "f2": 0.6,
        "x0": 0.0}
SYSTEMS = {"sys-base": BASE, "sys-hard": BASE | {"h0": 0.2},
           "sys-broad": {case: round(max(0.0, p - 0.3), 6) for case, p in BASE.items()}}
SCENARIO = {"A/A": "sys-base", "hard": "sys-hard", "broad": "sys-broad"}


def evalkit(root: Path, conf: Path, job: str, *overrides: str) -> dict[str, Any]:
    """One `python -m evalkit` run of the suite; returns its run report."""
    folder = root / job
    command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=[file://{conf}]", "suite=flaky_seq_bench",
               "run.progress=off", f"hydra.run.dir={folder}", *overrides]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "HYDRA_FULL_ERROR")}
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1) or not (folder / "report.json").is_file():
        raise SystemExit(f"{job}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return data


class Pool:
    """One pool run of a system: each test's outcome per sample, and the seed of sample 0."""

    def __init__(self, report: dict[str, Any], seed: int) -> None:
        self.report, self.seed = report, seed
        self.failed = {t["nodeid"]: set(t["repeats"]["not_passed"]) for t in report["tests"]}
        self.case = {t["nodeid"]: t["case"] for t in report["tests"]}

    def block(self, start: int, samples: Mapping[str, int] | int, sequential: dict[str, Any] | None = None,
              ) -> dict[str, Any]:
        """The run report of samples start .. start+n-1 of each case (n per case, or one n for all)."""
        tests = []
        for nodeid, failed in self.failed.items():
            case = self.case[nodeid]
            runs = samples if isinstance(samples, int) else samples[case]
            missed = sorted(s - start for s in failed if start <= s < start + runs)
            passed = runs - len(missed)
            tests.append({"nodeid": nodeid, "case": case, "outcome": "passed" if passed == runs else "failed",
                          "repeats": {"passed": passed, "runs": runs, "not_passed": missed}})
        cases = [{"id": case["id"], "status": case["status"]} for case in self.report["cases"]]
        data = {"eval": self.report["eval"], "provenance": self.report["provenance"], "tests": tests, "cases": cases}
        if sequential is not None:
            data["sequential"] = sequential
        return data


def record(root: Path, conf: Path, system: str, index: int, chunks: int, keep: Path | None) -> list[Pool]:
    """`chunks` pool runs of CHUNK samples per case of one system, recorded live (or, with `keep`, read from
    there when an earlier run of the benchmark kept them: the same seeds give the same replies)."""
    pools = []
    for chunk in range(chunks):
        seed = index * SEED_RANGE + chunk * CHUNK
        kept = keep / f"{system}-{seed}.json" if keep is not None else None
        if kept is not None and kept.is_file():
            pools.append(Pool(json.loads(kept.read_text(encoding="utf-8")), seed))
            continue
        started = time.perf_counter()
        report = evalkit(root, conf, f"pool-{system}-{chunk}", "mode=live", "baseline=none", f"model={system}",
                         f"model.options.seed={seed}", f"run.repeats={CHUNK}", "run.concurrency=16",
                         f"run.recordings={root / f'rec-{system}-{chunk}'}")
        print(f"pool {system} chunk {chunk}: seeds {seed}..{seed + CHUNK - 1}, {report['execution']['calls']}, "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        if kept is not None:
            kept.write_text(json.dumps(report), encoding="utf-8")
        pools.append(Pool(report, seed))
    return pools


def blocks(pools: list[Pool], size: int) -> list[tuple[Pool, int]]:
    return [(p, start) for p in pools for start in range(0, CHUNK - size + 1, size)]


def load(data: dict[str, Any]) -> RunReport:
    return report_from_mapping(data, "block report")


def sequential_candidate(settings: RunSettings, alpha: float, baseline: RunReport, pool: Pool,
                         start: int) -> dict[str, Any]:
    """The candidate a sequential run over samples start.. of `pool` would report: the rounds of the runner's own
    loop, each reading the block's first n samples of every case."""
    cases = sorted(set(pool.case.values()))

    def obtain(samples: Mapping[str, int], prior: Execution | None) -> Execution:
        return Execution({}, None, {}, samples=dict(samples))

    def check(execution: Execution, samples: Mapping[str, int]) -> Mapping[str, Counts]:
        return load(pool.block(start, samples)).repeats

    key = EvalKey(suite="s", dataset="d@1", dataset_sha="a", model="m", prompt_version="v1", prompt_sha="p")
    done = sample_in_rounds(obtain, check, cases=cases, settings=settings, alpha=alpha, pool=pool_of(baseline),
                            recorded=None, recording=Recording(key=key, provenance=Provenance(kind="recorded")),
                            replay=False)
    assert done.samples is not None
    block = {"max_repeats": MOST, "batch": settings.repeat_batch, "delta": settings.repeat_delta,
             "futility": settings.repeat_futility, "alpha": alpha, "baseline": "pool", "rounds": done.rounds,
             "samples": done.samples}
    return pool.block(start, done.samples, block)


def true_drops(system: str) -> tuple[float, dict[str, float]]:
    """The scenario's true drop in the suite's mean per-case pass fraction, and each test's."""
    after = SYSTEMS[system]
    tests = {f"test_flaky.py::{check}[{case}]": (BASE[case] - after[case] if check == "test_label" else 0.0)
             for case in BASE for check in CHECKS}
    suite = sum(tests.values()) / len(tests)
    return suite, tests


class Tally:
    def __init__(self) -> None:
        self.verdicts: dict[str, int] = {}
        self.calls = 0
        self.pairs = 0
        self.eligible = 0
        self.caught = 0

    def add(self, decision: Decision, calls: int, system: str) -> None:
        self.pairs += 1
        self.calls += calls
        self.verdicts[str(decision.decision)] = self.verdicts.get(str(decision.decision), 0) + 1
        if system == "sys-base":
            return
        suite_drop, test_drops = true_drops(system)
        shown = decision.detectable or {}
        reported = (shown.get("suite") or {}).get("drop")
        if reported is not None and suite_drop >= reported:
            self.eligible += 1
            self.caught += decision.decision is Verdict.BLOCK
        for name, drop in ((shown.get("tests") or {}).get("drops") or {}).items():
            if drop is not None and test_drops.get(name, 0.0) >= drop > 0:
                self.eligible += 1
                self.caught += name in decision.regressed

    @property
    def block_rate(self) -> float:
        return self.verdicts.get(str(Verdict.BLOCK), 0) / self.pairs


def samples_of(report: Mapping[str, Any]) -> list[tuple[str, int, int, list[int]]]:
    return [(t["nodeid"], t["repeats"]["passed"], t["repeats"]["runs"], t["repeats"]["not_passed"])
            for t in report["tests"]]


def cross_check(root: Path, conf: Path, pools: dict[str, list[Pool]], settings: RunSettings, alpha: float,
                policy: Policy) -> None:
    """One pair per scenario run for real: the same samples, the same decision, and a byte-identical replay."""
    base_pool, start = pools["sys-base"][-1], CHUNK - POOL
    seed = base_pool.seed + start
    auto = ["run.repeats=auto", f"run.max_repeats={MOST}", f"run.repeat_batch={settings.repeat_batch}",
            f"run.repeat_delta={settings.repeat_delta}", f"run.repeat_futility={settings.repeat_futility}"]
    real_base = evalkit(root, conf, "check-base", "mode=live", "baseline=none", "model=sys-base",
                        f"model.options.seed={seed}", f"run.recordings={root / 'rec-check'}", *auto)
    simulated_base = base_pool.block(start, POOL)
    if samples_of(real_base) != samples_of(simulated_base):
        raise SystemExit(f"the real {POOL}-sample baseline differs from its block of the pool")
    base_path = root / "check-base" / "report.json"
    for name, system in SCENARIO.items():
        pool, start = pools[system][-1], CHUNK - POOL - MOST if system == "sys-base" else CHUNK - MOST
        simulated = sequential_candidate(settings, alpha, load(simulated_base), pool, start)
        expected = decide(policy, load(simulated_base), load(simulated))
        overrides = [f"model={system}", f"model.options.seed={pool.seed + start}", f"baseline={base_path}",
                     f"run.recordings={root / 'rec-check'}", *auto]
        real = evalkit(root, conf, f"check-{name.replace('/', '')}", "mode=live", *overrides)
        if real["sequential"]["samples"] != simulated["sequential"]["samples"]:
            raise SystemExit(f"{name}: the real run took {real['sequential']['samples']}, its block pair "
                             f"{simulated['sequential']['samples']}")
        live = json.loads((root / f"check-{name.replace('/', '')}" / "decision.json").read_text(encoding="utf-8"))
        if live["decision"] != str(expected.decision):
            raise SystemExit(f"{name}: the real run decided {live['decision']}, its block pair {expected.decision}")
        evalkit(root, conf, f"replay-{name.replace('/', '')}", "mode=replay", *overrides)
        replayed = json.loads((root / f"replay-{name.replace('/', '')}" / "decision.json").read_text(
            encoding="utf-8"))
        for decision in (live, replayed):
            decision["evidence"].pop("candidate")
        if json.dumps(live) != json.dumps(replayed):
            raise SystemExit(f"{name}: the replay's decision differs from the live run's")
        print(f"cross-check {name}: a real run took the block pair's samples {real['sequential']['samples']}, "
              f"decided {live['decision']} as it did, and its replay decided byte for byte the same", flush=True)


def main(argv: list[str]) -> int:
    pairs = int(argv[0]) if argv else PAIRS
    keep = Path(argv[1]) if len(argv) > 1 else None  # a folder keeping the pool reports between runs
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    settings = RunSettings(out="unused", repeats="auto", max_repeats=MOST, repeat_batch=BATCH)
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-sequential-") as tmp, \
            FakeOpenAI(flaky_model(SYSTEMS), record=False) as server:
        root = Path(tmp)
        conf = write_suite(root, name="flaky_seq_bench", cases=list(BASE), url=server.base_url,
                           systems=list(SYSTEMS), temperature=TEMPERATURE)
        policy = Policy.model_validate(yaml.safe_load((conf / "policy" / "flaky.yaml").read_text(encoding="utf-8")))
        alpha = policy.repeats.alpha
        print(f"suite: {len(BASE)} cases x {len(CHECKS)} checks; fixed N = M = {FIXED}; sequential: baseline of "
              f"{POOL}, max_repeats {MOST}, batch {settings.repeat_batch}, delta {settings.repeat_delta}, futility "
              f"{settings.repeat_futility}; alpha {alpha}; {pairs} pairs per scenario", flush=True)
        per_chunk = CHUNK // MOST
        need = {"sys-base": math.ceil(pairs * (POOL + MOST) / CHUNK) + 1, "sys-hard": math.ceil(pairs / per_chunk) + 1,
                "sys-broad": math.ceil(pairs / per_chunk) + 1}  # the last chunk's end is the cross-check's
        pools = {system: record(root, conf, system, index, need[system], keep)
                 for index, system in enumerate(SYSTEMS)}
        cross_check(root, conf, pools, settings, alpha, policy)
        fixed_blocks = {s: blocks(pools[s][:-1], FIXED) for s in SYSTEMS}
        seq_blocks = {s: blocks(pools[s][:-1], MOST) for s in SYSTEMS}
        base_blocks = blocks(pools["sys-base"][:-1], POOL)
        tallies: dict[tuple[str, str], Tally] = {}
        for name, system in SCENARIO.items():
            offset = pairs if system == "sys-base" else 0  # A/A candidates: blocks after the baselines'
            seq_offset = pairs * POOL // MOST if system == "sys-base" else 0
            fixed, sequential = Tally(), Tally()
            for p in range(pairs):
                base_pool, start = fixed_blocks["sys-base"][p]
                cand_pool, cand_start = fixed_blocks[system][offset + p]
                fixed.add(decide(policy, load(base_pool.block(start, FIXED)),
                                 load(cand_pool.block(cand_start, FIXED))), FIXED * len(BASE), system)
                base_pool, start = base_blocks[p]
                baseline = load(base_pool.block(start, POOL))
                cand_pool, cand_start = seq_blocks[system][seq_offset + p]
                candidate = sequential_candidate(settings, alpha, baseline, cand_pool, cand_start)
                sequential.add(decide(policy, baseline, load(candidate)),
                               sum(candidate["sequential"]["samples"].values()), system)
            for design, tally in (("fixed", fixed), ("sequential", sequential)):
                tallies[(name, design)] = tally
                print(f"{name:>6} {design:>10}: {tally.pairs} pairs, {dict(sorted(tally.verdicts.items()))}, block "
                      f"rate {tally.block_rate:.3f}, {tally.calls / tally.pairs / len(BASE):.2f} samples per case",
                      flush=True)
    calls = {design: sum(tallies[(n, design)].calls for n in SCENARIO) for design in ("fixed", "sequential")}
    ratio = calls["sequential"] / calls["fixed"]
    false_block = tallies[("A/A", "sequential")].block_rate
    hard, broad = tallies[("hard", "sequential")].block_rate, tallies[("broad", "sequential")].block_rate
    for design in ("fixed", "sequential"):
        eligible = sum(tallies[(n, design)].eligible for n in ("hard", "broad"))
        caught = sum(tallies[(n, design)].caught for n in ("hard", "broad"))
        print(f"{design}: detectable-effect calibration {caught}/{eligible} = "
              f"{caught / eligible if eligible else float('nan'):.3f}", flush=True)
    ok = ratio <= 0.5 and false_block <= 0.05 and hard >= 0.99 and broad >= 0.95
    print(f"fixed N={FIXED}: false_block_rate={tallies[('A/A', 'fixed')].block_rate:.3f} "
          f"detect_hard={tallies[('hard', 'fixed')].block_rate:.3f} "
          f"detect_broad={tallies[('broad', 'fixed')].block_rate:.3f}; targets calls_ratio <= 0.5, "
          f"false_block_rate <= 0.05, detect_hard >= 0.99, detect_broad >= 0.95: {'met' if ok else 'MISSED'}")
    eligible = sum(tallies[(n, "sequential")].eligible for n in ("hard", "broad"))
    caught = sum(tallies[(n, "sequential")].caught for n in ("hard", "broad"))
    print(f"detectable_calibration={caught / eligible if eligible else float('nan'):.3f} "
          f"(sequential: {caught} of {eligible} drops at or above the reported detectable effect were caught)")
    print(f"calls_ratio={ratio:.3f} false_block_rate={false_block:.3f} detect_hard={hard:.3f} "
          f"detect_broad={broad:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
