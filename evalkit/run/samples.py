"""Repeated samples of a run's calls (`run.repeats=N`): the call id of each sample and the seed it is sent with.

Sample 0 of a call keeps the call's plain id (`task/<case>`, `judge/<metric>/<case>`: evalkit.core.call_id) and its
request unchanged, whatever N: it is the call a single run makes, so a recording made with N = 1 serves sample 0 of
any N, and raising N records only the new samples. Sample i > 0 is `<id>#<i>` (a case id never holds `#`,
evalkit.core.dataset), sent with seed `options.seed + i` (`i` when no seed is set): the samples differ only by their
seed, and a rerun asks exactly the same requests (a server that honours seeds answers them alike). The sample index
and the seed are part of each entry's identity (its call id and request); a replay asking a sample the recording
lacks is refused.

The number of samples is not part of the eval key: the key names what is measured (model, prompt, dataset, judge), N
how many times. One recording then serves every N (a run with N = 3 replays samples 0-2 of a recording made with N =
10, and raising N with mode=record-missing records only the new samples); with N in the key, every change of N would
orphan the recording and show as a changed component. A gate is never silently wrong about N: each report's tests
carry their own counts (`repeats: {passed, runs}`), which the gate's tests weigh (k of N against k' of M), and a
report of single runs against one of repeated runs is gated as single runs with a warning.
"""

from __future__ import annotations

from evalkit.core.errors import InputError
from evalkit.records.call import Request

__all__ = ["seeded"]


def seeded(request: Request, sample: int, repeats: int, call_id: str, setting: str = "run.repeats") -> Request:
    """The request of sample `sample` of `repeats`: sample 0 unchanged (the single run's call), sample i > 0 sent
    with seed `options.seed + i` (`i` when no seed is set)."""
    if repeats == 1:
        return request
    base = request.options.get("seed", 0)
    if isinstance(base, bool) or not isinstance(base, int):
        raise InputError(f"{call_id}: options.seed is {base!r}; {setting}={repeats} sends sample i with seed "
                         "options.seed + i, so the seed must be an integer (or unset, for 0)")
    if sample == 0:
        return request
    return request.model_copy(update={"options": {**request.options, "seed": base + sample}})
