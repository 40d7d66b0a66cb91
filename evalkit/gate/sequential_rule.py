"""The gate's rule for a run sampled in rounds (`run.repeats=auto`), and the runner's rule for when to stop. Pure.

A candidate sampled in rounds stopped sampling each case when every test over it was settled against the
baseline's recorded samples (the pool): shown worse, or shown no worse than `delta` below it
(evalkit.gate.sequential). The fixed-N rule (evalkit.gate.repeats, Fisher's test with Holm) would not keep its
error rate over such a run, since when to stop depended on what the samples showed; this rule does, whatever the
stopping, because both of its guards are e-processes, evaluated at the samples the run took:
- per test, the mixture likelihood ratio of a drop against the pool (`drop_evalue`), Bonferroni over the tests
  compared: a test regressed when its E reaches m / (alpha / 2);
- for the suite, `SuiteBets` over each case's paired changes, sample by sample: candidate sample i against the
  pool's sample i of the same case, blocking when its wealth reaches 1 / (alpha / 2). Every bet is on a sample
  the rounds chose to take before it was drawn, so each is fair or worse while no case got worse.

The two halves of alpha add up as the fixed rule's do. Both are functions of the reports alone (each test's
counts and the samples that did not pass), so a replay that took the same samples decides byte for byte as the
live run did, and a gate against another baseline than the one the rounds compared with stays valid (the stopping
rule never enters an e-value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from evalkit.gate.repeats import RepeatsOutcome
from evalkit.gate.sequential import Counts2, SuiteBets, Verdict, drop_evalue, rise_evalue, settle
from evalkit.gate.stats import paired_fraction_bootstrap
from evalkit.records.report_reader import FAILING, PASSING, Counts, RunReport

__all__ = ["compare_sequential", "decided_block", "open_cases", "pool", "unpaired", "verdicts"]


def pool(report: RunReport) -> dict[str, Counts]:
    """Each test's recorded samples: its repeats, or for a report of single runs its one outcome (a test that was
    skipped measured nothing and is left out)."""
    if report.repeats:
        return dict(report.repeats)
    out = {}
    for nodeid, outcome in report.outcomes.items():
        if outcome in PASSING:
            out[nodeid] = Counts(1, 1)
        elif outcome in FAILING:
            out[nodeid] = Counts(0, 1, not_passed=(0,))
    return out


def unpaired(pool: Mapping[str, Counts], paired: int) -> dict[str, Counts]:
    """Each test's pool samples from index `paired` on: those the suite guard never pairs with a candidate sample
    (it pairs sample i with sample i, and a candidate takes at most `paired`), for the rounds to choose cases by.
    Were the rounds to choose by the samples the guard bets against, a case whose paired pool samples happened to
    pass would be sampled on while others stopped, and the bets would no longer be fair under the null. A test with
    no samples beyond `paired`, or whose failed samples are not listed, is given whole (the guard's bound is then
    exact only where its pool is all passes or all failures)."""
    out = {}
    for name, counts in pool.items():
        listed = len(counts.not_passed) == counts.runs - counts.passed
        if counts.runs <= paired or not listed:
            out[name] = counts
            continue
        failed = sum(1 for sample in counts.not_passed if sample >= paired)
        runs = counts.runs - paired
        out[name] = Counts(runs - failed, runs, counts.case, counts.reduce,
                           tuple(sample - paired for sample in counts.not_passed if sample >= paired))
    return out


def verdicts(baseline: Mapping[str, Counts], candidate: Mapping[str, Counts], *, alpha: float, delta: float,
             futility: float, paired: int | None = None) -> dict[str, Verdict]:
    """Where each of the candidate's repeated tests stands against the pool: its drop's E over the whole pool held
    to its Bonferroni share of alpha / 2 (as the gate holds it), the no-worse side at `futility` over the pool's
    samples from `paired` on (`unpaired`: those the suite guard never bets against; the whole pool when None);
    `new` for a test the baseline lacks."""
    compared = [name for name in candidate if name in baseline]
    level = alpha / 2 / max(1, len(compared))
    choosing = unpaired(baseline, paired) if paired is not None else baseline
    out = {}
    for name, counts in candidate.items():
        base = baseline.get(name)
        if base is None:
            out[name] = Verdict.NEW
            continue
        apart = choosing[name]  # unpaired keeps every test of the pool
        out[name] = settle(Counts2(base.passed, base.runs, counts.passed, counts.runs), level=level,
                           futility=futility, delta=delta,
                           choosing=Counts2(apart.passed, apart.runs, counts.passed, counts.runs))
    return out


def open_cases(candidate: Mapping[str, Counts], verdicts: Mapping[str, Verdict]) -> set[str]:
    """The cases with a test still open: those to sample again."""
    return {counts.case for name, counts in candidate.items()
            if counts.case is not None and verdicts.get(name) is Verdict.OPEN}


def _sample_passes(tests: list[Counts]) -> list[bool] | None:
    """A case's samples: sample s passed when every test over the case passed it; None when a test does not list
    which of its samples failed."""
    if not tests or any(len(t.not_passed) != t.runs - t.passed for t in tests):
        return None
    runs = min(t.runs for t in tests)
    failed = {sample for t in tests for sample in t.not_passed}
    return [sample not in failed for sample in range(runs)]


def _paired_changes(baseline: Mapping[str, Counts], candidate: Mapping[str, Counts],
                    names: list[str]) -> list[float] | None:
    """Each case's paired changes, pool sample i minus candidate sample i (-1, 0 or 1), for every sample both
    sides took; None when a side does not list which samples failed."""
    by_case: dict[str, list[str]] = {}
    for name in names:
        by_case.setdefault(candidate[name].case or name, []).append(name)
    changes: list[float] = []
    for case in sorted(by_case):
        before = _sample_passes([baseline[n] for n in by_case[case]])
        after = _sample_passes([candidate[n] for n in by_case[case]])
        if before is None or after is None:
            return None
        changes += [float(b) - float(a) for b, a in zip(before, after, strict=False)]
    return changes


def decided_block(baseline: Mapping[str, Counts], candidate: Mapping[str, Counts], *, alpha: float) -> bool:
    """Whether the gate's sequential rule already blocks these samples (a test regressed, or the suite guard
    reached its bar): the rounds stop there, since more samples cannot undo a block (an e-value that reached its
    bar decides, whatever comes after)."""
    names = sorted(name for name in candidate if name in baseline)
    if not names:
        return False
    bar = math.log(len(names) / (alpha / 2))
    if any(drop_evalue(Counts2(baseline[n].passed, baseline[n].runs, candidate[n].passed, candidate[n].runs)) >= bar
           for n in names):
        return True
    changes = _paired_changes(baseline, candidate, names)
    return changes is not None and SuiteBets().update(changes).log_value >= math.log(2 / alpha)


def compare_sequential(baseline: Mapping[str, Counts], candidate: Mapping[str, Counts], *, alpha: float,
                       max_repeats: int, seed: int = 17, resamples: int = 2000) -> RepeatsOutcome:
    """Both guards over the tests repeated on both sides, each at alpha / 2 (see the module). `regressed` and
    `suite_p` hold always-valid p-values (1 / E, at most 1); `improved` the tests whose rise the same test turned
    round shows at the per-test level (reported as fixed, deciding nothing)."""
    share = alpha / 2
    names = sorted(name for name in candidate if name in baseline)
    unreliable = tuple(name for name in names if 0 < baseline[name].passed < baseline[name].runs)
    if not names:
        return RepeatsOutcome(alpha, insufficient_data="no test is repeated on both sides", method="sequential")
    bar = math.log(len(names) / share)
    both = {name: Counts2(baseline[name].passed, baseline[name].runs, candidate[name].passed, candidate[name].runs)
            for name in names}
    evidence = {name: drop_evalue(counts) for name, counts in both.items()}
    regressed = {name: min(1.0, math.exp(-e)) for name, e in evidence.items() if e >= bar}
    rises = {name: rise_evalue(counts) for name, counts in both.items()}
    improved = {name: min(1.0, math.exp(-e)) for name, e in rises.items() if e >= bar}  # reported, never deciding
    # the best outcome: a test passing all its pool samples failing every one of max_repeats candidate samples
    best = max(drop_evalue(Counts2(baseline[n].passed, baseline[n].runs, 0, max_repeats)) for n in names)
    insufficient = None
    if best < bar:
        insufficient = (f"{len(names)} test(s) against pools of {min(baseline[n].runs for n in names)} to "
                        f"{max(baseline[n].runs for n in names)} sample(s): even every one of {max_repeats} "
                        f"candidate samples failing gives E {math.exp(best):.3g}, below {len(names)} / (alpha/2) "
                        f"= {math.exp(bar):.3g}; record a baseline with more samples (run.repeats=auto without a "
                        "baseline takes run.pool_repeats of each case) or raise run.max_repeats")
    groups = [candidate[n].case or baseline[n].case or n for n in names]
    before = [baseline[n].passed / baseline[n].runs for n in names]
    after = [candidate[n].passed / candidate[n].runs for n in names]
    suite = paired_fraction_bootstrap(groups, before, after, seed=seed, resamples=resamples, confidence=1 - alpha)
    changes = _paired_changes(baseline, candidate, names)
    if changes is None:
        why = "a report does not list which samples failed (repeats.not_passed), so no sample can be paired"
        return RepeatsOutcome(alpha, regressed, unreliable, "; ".join(filter(None, (insufficient, why))), suite,
                              None, False, improved, method="sequential")
    wealth = SuiteBets().update(changes).log_value
    return RepeatsOutcome(alpha, regressed, unreliable, insufficient, suite, min(1.0, math.exp(-wealth)),
                          wealth >= math.log(1 / share), improved, method="sequential")
