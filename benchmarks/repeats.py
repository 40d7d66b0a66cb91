"""Benchmark: how often the gate blocks repeated runs, on simulated reports whose pass probabilities are known.

The decision over two repeated run reports is a pure function of the reports (evalkit.gate.decide with the
rule of evalkit.gate.repeats), so no model server is needed to measure its error rates: each simulated run
samples every test N = 10 times, each sample passing with the test's known probability (a seeded numpy
Generator), and is written in the report format `python -m evalkit.gate` reads
(`{"nodeid", "case", "outcome", "repeats": {"passed": k, "runs": n}}`).

The suite: 30 cases x 2 checks. 23 cases always pass, 6 are flaky (pass probabilities 0.9 to 0.3, the same
for both checks), 1 always fails. Three scenarios, each over PAIRS independent baseline/candidate pairs under
the default policy (repeats.alpha = 0.05; PAIRS = 1000 by default, at least 200):
- A/A: the candidate is the same system, sampled independently. A block here is a false block;
  false_block_rate must stay at or below alpha, within sampling error.
- hard: one always-right case becomes always wrong; detect_hard (its block rate) must be >= 0.95.
- broad: half of the cases (15 of the always-right ones) fall to a coin flip; detect_broad must be >= 0.90.

A/A pairs with flaky tests end as `review` (unreliable_baseline): a review is not a block.

Run from the project root:  .venv/bin/python benchmarks/repeats.py [PAIRS]
The last line is `false_block_rate=<x> detect_hard=<y> detect_broad=<z>`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

import numpy as np

from evalkit.core.policy import Policy
from evalkit.core.report import RunReport, report_from_mapping
from evalkit.gate.decide import decide
from evalkit.gate.decision import Verdict

PAIRS = 1000
RUNS = 10
CHECKS = ("test_label", "test_format")
FLAKY = (0.9, 0.8, 0.7, 0.6, 0.5, 0.3)
STEADY = 23
SEED = 20261130
KEY = {"suite": "sim", "dataset": "sim", "dataset_sha": "d0", "judge_model": "none"}


def suite() -> dict[str, float]:
    """case id -> the probability each of its checks passes a sample."""
    rates = {f"c{i:02d}": 1.0 for i in range(STEADY)}
    rates |= {f"f{i}": p for i, p in enumerate(FLAKY)}
    return rates | {"x0": 0.0}


def sample(rates: Mapping[str, float], rng: np.random.Generator, prompt: str) -> RunReport:
    """One repeated run: every test sampled RUNS times at its case's pass probability."""
    tests = []
    for case, p in rates.items():
        for check in CHECKS:
            passed = int(rng.binomial(RUNS, p))
            tests.append({"nodeid": f"test_sim.py::{check}[{case}]", "case": case,
                          "outcome": "passed" if passed == RUNS else "failed",
                          "repeats": {"passed": passed, "runs": RUNS}})
    return report_from_mapping({"eval": KEY | {"prompt_sha": prompt}, "tests": tests}, "simulated")


def block_rate(name: str, baseline: Mapping[str, float], candidate: Mapping[str, float], pairs: int,
               rng: np.random.Generator, policy: Policy) -> float:
    """Share of `pairs` independent baseline/candidate pairs that the gate blocks."""
    verdicts: dict[str, int] = {}
    for _ in range(pairs):
        decision = decide(policy, sample(baseline, rng, "p0"), sample(candidate, rng, "p1"))
        verdicts[str(decision.decision)] = verdicts.get(str(decision.decision), 0) + 1
    rate = verdicts.get(str(Verdict.BLOCK), 0) / pairs
    print(f"{name:>6}: {pairs} pairs, {dict(sorted(verdicts.items()))}, block rate {rate:.3f}")
    return rate


def main(argv: list[str]) -> int:
    pairs = int(argv[0]) if argv else PAIRS
    policy = Policy()
    alpha = policy.repeats.alpha
    rng = np.random.default_rng(SEED)
    rates = suite()
    print(f"suite: {len(rates)} cases x {len(CHECKS)} checks, N = M = {RUNS}, alpha = {alpha}")
    false_block = block_rate("A/A", rates, rates, pairs, rng, policy)
    hard = block_rate("hard", rates, rates | {"c00": 0.0}, pairs, rng, policy)
    broad = block_rate("broad", rates, rates | {f"c{i:02d}": 0.5 for i in range(15)}, pairs, rng, policy)
    # sampling error of the A/A rate: alpha plus two binomial standard errors at `pairs` pairs
    allowed = alpha + 2 * math.sqrt(alpha * (1 - alpha) / pairs)
    ok = false_block <= allowed and hard >= 0.95 and broad >= 0.90
    print(f"targets: false_block_rate <= {alpha} (+ sampling error: <= {allowed:.3f}), detect_hard >= 0.95, "
          f"detect_broad >= 0.90: {'met' if ok else 'MISSED'}")
    print(f"false_block_rate={false_block:.3f} detect_hard={hard:.3f} detect_broad={broad:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
