"""Sequential repeats (`run.repeats=auto`): sample a run's cases in rounds until each test's question is settled.

The first round takes `run.repeat_batch` samples of every case. After each round the suite's checks run over
every sample taken so far, and each repeated test is set against the baseline's recorded samples of the same test
(evalkit.gate.sequential_rule): shown worse (over the whole pool, as the gate decides), shown no worse than
`run.repeat_delta` below it (over the pool's samples beyond `max_repeats` where it has more: the suite's paired
guard bets against the first ones, and a choice of cases made by them would bias its bets), or still open. A case
with an open test takes another batch, up to `run.max_repeats`; a settled case is never sampled again (its counts,
and so its verdicts, cannot change). Once the gate's sequential rule already blocks the samples taken (a test
regressed, or the suite's paired guard reached its bar) no case is sampled again: an e-value that reached its bar
decides whatever follows, so more samples would only cost calls. Each sample is a call with its sample index, as
with a fixed `run.repeats` (evalkit.run.samples), so recordings, the journal, `+run.resume=true` and
`mode=record-missing` work round by round: an interrupted run resumes its journaled calls, and the same replies
settle the same tests.

Without a baseline (`baseline=none`, a first run, a run to bless) every case takes `run.pool_repeats` samples
(twice `max_repeats` unless set): a fixed run, and the pool later sequential runs are compared against.

The recording keeps how many samples each case took (`provenance.rounds`), and a replay takes exactly those in one
round, without re-deciding: its report, and the gate's decision on it, are the live run's byte for byte, whichever
baseline is current when it replays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

from evalkit.core.config import RunSettings
from evalkit.gate.sequential_rule import decided_block, open_cases, verdicts
from evalkit.records.report_reader import Counts
from evalkit.run.execute import Execution
from evalkit.run.recording import Recording

__all__ = ["Obtain", "sample_in_rounds"]

Obtain = Callable[[Mapping[str, int], Execution | None], Execution]
"""Obtain the calls of `samples` (case id -> how many), keeping those of the previous round's execution."""


def sample_in_rounds(obtain: Obtain, check: Callable[[Execution, Mapping[str, int]], Mapping[str, Counts]], *,
                     cases: list[str], settings: RunSettings, alpha: float, pool: Mapping[str, Counts] | None,
                     recorded: Mapping[str, int] | None, recording: Recording, replay: bool) -> Execution:
    """Sample in rounds (see the module). `check` runs the checks over an execution's samples and returns each
    repeated test's counts; `pool` is the baseline's samples of each test (None: no baseline); `recorded` the
    recording's per-case samples, which a replay (`replay`) takes as they are."""
    most, batch = settings.max_repeats or settings.most_samples, settings.repeat_batch
    if replay and recorded is not None:
        limit = settings.most_samples  # a pool's, or a candidate's
        samples = {case: min(limit, recorded.get(case, limit)) for case in cases}
        return _done(obtain(samples, None), samples, math.ceil(max(samples.values(), default=1) / batch),
                     recording, replay)
    if pool is None:
        samples = {case: settings.pool_samples for case in cases}
        return _done(obtain(samples, None), samples, math.ceil(settings.pool_samples / batch), recording, replay)
    samples = {case: batch for case in cases}
    execution, rounds = obtain(samples, None), 1
    while True:
        counts = check(execution, samples)  # no case stops by a pool sample the suite guard bets against:
        standing = verdicts(pool, counts, alpha=alpha, delta=settings.repeat_delta,
                            futility=settings.repeat_futility, paired=most)
        still = sorted(case for case in open_cases(counts, standing) if samples.get(case, most) < most)
        if not still or decided_block(pool, counts, alpha=alpha):
            return _done(execution, samples, rounds, recording, replay)
        for case in still:
            samples[case] = min(most, samples[case] + batch)
        execution, rounds = obtain(samples, execution), rounds + 1


def _done(execution: Execution, samples: dict[str, int], rounds: int, before: Recording,
          replay: bool) -> Execution:
    """The last round's execution, with the samples each case took, and (live modes) the recording to save naming
    them, so that its replay takes exactly these."""
    saved = execution.recording
    if not replay and (saved is not None or before.provenance.rounds != samples):
        base = saved if saved is not None else before
        provenance = base.provenance.model_copy(update={"rounds": dict(samples)})
        saved = base.model_copy(update={"provenance": provenance})
    return dataclasses.replace(execution, recording=saved, samples=dict(samples), rounds=rounds)
