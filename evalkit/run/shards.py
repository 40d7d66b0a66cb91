"""One run's checks on several machines (`run.shard=K/N`, a CI matrix), and `evalkit merge`, which joins them.

Each machine replays the same recording, runs shard K of N of the collected checks (the same contiguous blocks
`run.workers` uses, evalkit.run.workers) and writes `shard-K-of-N.json`: the input every shard's checks read,
the runner's own sections (calls, cost, latency, texts, trajectories), its partial pytest report with what each
test recorded, and for an agent or simulated conversations what their metrics are computed from once every case's
outcome is known (evalkit.run.looped_metrics). `merge_shard_files` checks that the files are the N shards of one
run (the same run input, each shard once) and computes the report one machine would have written: the partial
reports merged in shard order, the eval block computed once and the looped cases' metrics added, exactly as one
machine does. Nothing is gated until then: a shard alone is not a run.

Pure apart from `read_shard`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from evalkit.core.errors import InputError
from evalkit.core.files import read_bytes
from evalkit.run.eval_block import EvalBlock
from evalkit.run.looped_metrics import LoopedMetrics
from evalkit.run.run_input import RunInput
from evalkit.run.workers import RECORDED, SAMPLED, merge_shards

__all__ = ["FORMAT", "ShardFile", "shard_file", "shard_name", "read_shard", "merge_shard_files", "merged_report"]

FORMAT = "evalkit-shard/2"
"""Version 2 added `looped`; a version 1 file (no agent or conversation metrics) is refused: run its shard again."""


class ShardFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What one machine of a sharded run writes (`shard-K-of-N.json`)."""

    format: Literal["evalkit-shard/2"]
    shard: int
    shards: int
    run_input: dict[str, Any]
    """The run input every shard's checks read (evalkit.run.run_input), the same on each machine of one run."""
    sections: dict[str, Any]
    """The runner's own report sections (`execution`, `texts` ...), computed before the checks."""
    partial: dict[str, Any]
    """The shard's partial pytest-json-report, with what each test recorded (evalkit.run.workers)."""
    looped: dict[str, Any] | None = None
    """For an agent or simulated conversations, what their metrics are computed from (LoopedMetrics.to_json);
    None for other suites."""


def shard_name(shard: int, shards: int) -> str:
    return f"shard-{shard}-of-{shards}.json"


def shard_file(shard: int, shards: int, run_input: Mapping[str, Any], sections: Mapping[str, Any],
               partial: Mapping[str, Any], looped: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The content of one machine's shard file."""
    return {"format": FORMAT, "shard": shard, "shards": shards, "run_input": dict(run_input),
            "sections": dict(sections), "partial": dict(partial)} | ({"looped": dict(looped)} if looped else {})


def read_shard(path: Path) -> ShardFile:
    """A shard file, or one line saying what the file is not."""
    try:
        return msgspec.json.decode(read_bytes(path, "shard file"), type=ShardFile)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise InputError(f"{path}: not a shard file of format {FORMAT} ({error}); it is what `evalkit run "
                         "run.shard=K/N` writes in its job folder") from None


def merge_shard_files(files: Sequence[tuple[str, ShardFile]]) -> dict[str, Any]:
    """The run report of the N shards named `files` (where, shard): refused in one line unless they are shards
    1 to N of one run, each once."""
    if not files:
        raise InputError("no shard files: give the N files `evalkit run run.shard=K/N` wrote, one per shard")
    (first_where, first), *_ = files
    if len({shard.shards for _, shard in files}) > 1:
        split = ", ".join(f"{where}: of {shard.shards}" for where, shard in files)
        raise InputError(f"the shard files split their run differently ({split}); give the shards of one run")
    shards = first.shards
    seen: dict[int, str] = {}
    for where, shard in files:
        if not 1 <= shard.shard <= shards:
            raise InputError(f"{where}: shard {shard.shard} of {shards} is not a shard number 1 to {shards}")
        if shard.shard in seen:
            raise InputError(f"{where}: shard {shard.shard}/{shards} is given twice (also {seen[shard.shard]})")
        seen[shard.shard] = where
        if shard.run_input != first.run_input:
            raise InputError(f"{where}: shard {shard.shard}/{shards} is of another run than {first_where} (the "
                             f"input its checks read differs: {_difference(first.run_input, shard.run_input)}); "
                             "every shard must replay the same suite, cases and recording")
    missing = sorted(set(range(1, shards + 1)) - set(seen))
    if missing:
        raise InputError(f"shard(s) {', '.join(f'{k}/{shards}' for k in missing)} missing: the run is not complete "
                         "until every shard has run; give all of their files")
    ordered = [shard.partial for _, shard in sorted(files, key=lambda item: item[1].shard)]
    data = merged_report(ordered, RunInput.model_validate(first.run_input))
    data.update(first.sections)
    if first.looped is not None:  # the same on every shard: computed from the run, before the checks
        LoopedMetrics.from_json(first.looped, first.sections, first_where).add_to(data)
    return data


def merged_report(partials: Sequence[dict[str, Any]], run_input: RunInput) -> dict[str, Any]:
    """The shards' partial reports (in shard order) merged, with the eval block computed once from them."""
    data = merge_shards(list(partials))
    sampled = data.pop(SAMPLED, None) or {"outcomes": {}, "reducers": {}, "metrics": {}}
    sample_metrics = {case: {int(sample): values for sample, values in by_sample.items()}
                      for case, by_sample in sampled["metrics"].items()}
    EvalBlock(run_input, data.pop(RECORDED), sampled["outcomes"], sample_metrics,
              sampled["reducers"]).add_to(data)
    return data


def _difference(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return f"{', '.join(keys[:3])}{' ...' if len(keys) > 3 else ''}"
