"""A suite's checks on several processes (`run.workers`): evalkit's own shards, merged into the report one process
writes.

With N > 1 workers the runner starts N ordinary pytest processes (no controller, no pytest-xdist). Each collects
the whole suite, in the same order, and keeps only its share (`--evalkit-shard=k/N`): one contiguous block of the
collected checks, so a module's checks and fixtures stay in one process and the blocks, read in shard order, are
the collection order. Each shard writes a partial report: its tests and what each test recorded, no eval block.
`merge_shards` joins the partial reports into what one process's pytest-json-report writes (tests in collection
order, summary recounted, collection-time warnings once), and the runner computes the eval block once, from the
merged tests (evalkit.run.eval_block.EvalBlock), exactly as one process computes it.

A shard that could not run its checks (a collection error, a crash, `pytest.exit`, an internal error) makes the
runner refuse the run, naming the shard, as it refuses one process that could not run its checks.
"""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.core.config import available_cpus
from evalkit.core.errors import InputError

__all__ = ["SHARD_OPTION", "RECORDED", "SAMPLED", "worker_count", "shard_args", "parse_shard", "shard_block",
           "register_for_workers", "merge_shards"]

SHARD_OPTION = "--evalkit-shard"
RECORDED = "evalkit_recorded"
"""The key of a partial report holding node id -> what the test recorded (its case, metrics, grade)."""
SAMPLED = "evalkit_sampled"
"""The key of a partial report of a run with repeated samples: `outcomes` (node id -> each sample's outcome),
`reducers` (node id -> the reducer of its samples) and `metrics` (case id -> sample number, as text -> the metrics
that sample's checks recorded)."""
_SESSION_WHEN = ("config", "collect")  # warnings every shard raises once, as one process raises them once
_NO_TESTS = 5  # pytest's exit code for a session that ran no test: a shard whose block is empty


def worker_count(setting: int | str) -> int:
    """How many processes run the checks: `run.workers` as a number, or `auto`, the CPUs this process may use."""
    return int(setting) if setting != "auto" else available_cpus()


def shard_args(shard: int, shards: int) -> list[str]:
    """pytest's command-line arguments for shard `shard` (1-based) of `shards`; none for a run on one process."""
    return [] if shards <= 1 else [f"{SHARD_OPTION}={shard}/{shards}"]


def parse_shard(value: str) -> tuple[int, int]:
    """`k/N` as (k, N), 1 <= k <= N; anything else is refused in one line."""
    shard, _, shards = value.partition("/")
    if not (shard.isdigit() and shards.isdigit() and 1 <= int(shard) <= int(shards)):
        raise InputError(f"{SHARD_OPTION}={value}: expected k/N with 1 <= k <= N (shard k of N), e.g. 1/2")
    return int(shard), int(shards)


def shard_block(count: int, shard: int, shards: int) -> range:
    """The positions of the collected checks shard k of N keeps: one contiguous block, the blocks' sizes differing
    by at most one."""
    return range(count * (shard - 1) // shards, count * shard // shards)


def register_for_workers(config: pytest.Config) -> None:
    """In a shard's process, keep only its block of the collected checks; in a run on one process, nothing."""
    value = config.getoption(SHARD_OPTION, None)
    if value:
        config.pluginmanager.register(_Shard(*parse_shard(value)), "evalkit-shard")


class _Shard:
    """A shard's half: its block of the checks, after every other plugin has chosen and ordered them."""

    def __init__(self, shard: int, shards: int) -> None:
        self.shard, self.shards = shard, shards

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # not reported as deselected: the checks of the other blocks run in the other shards
        block = shard_block(len(items), self.shard, self.shards)
        items[:] = items[block.start:block.stop]


def merge_shards(partials: list[dict[str, Any]]) -> dict[str, Any]:
    """The report one process's pytest-json-report writes, from the shards' partial reports (in shard order):
    tests in collection order, summary counted as pytest-json-report counts it, collection-time warnings once.
    What each test recorded stays under RECORDED, for the eval block."""
    merged = dict(partials[0])  # its keys in the order one process writes them
    tests = [test for partial in partials for test in partial.get("tests", [])]
    ran = [p["exitcode"] for p in partials if p.get("tests")]
    merged["exitcode"] = max(ran) if ran else partials[0]["exitcode"]
    merged["duration"] = max(p["duration"] for p in partials)
    counted: dict[str, Any] = {}
    for test in tests:  # pytest-json-report's make_summary: outcomes in order of first appearance
        counted[test["outcome"]] = counted.get(test["outcome"], 0) + 1
    counted["total"] = len(tests)
    first = partials[0]["summary"]
    deselected = first.get("deselected", 0)  # each shard saw the same deselections, before keeping its block
    counted["collected"] = sum(p["summary"]["collected"] - deselected for p in partials) + deselected
    if deselected:
        counted["deselected"] = deselected
    merged["summary"] = counted
    recorded: dict[str, Any] = {}
    for partial in partials:
        recorded.update(partial.get(RECORDED, {}))
    warnings = _warnings(partials)
    sampled = _sampled(partials)
    for key in ("tests", "warnings", RECORDED, SAMPLED):
        merged.pop(key, None)
    if "tests" in partials[0]:
        merged["tests"] = tests
    if warnings:
        merged["warnings"] = warnings
    merged[RECORDED] = recorded
    if sampled is not None:
        merged[SAMPLED] = sampled
    return merged


def _sampled(partials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The shards' per-sample outcomes and metrics, joined in shard order (a case whose checks fell in two shards
    gets both shards' metrics, the later shard's value kept for a name recorded twice, as one process keeps the
    later test's)."""
    blocks = [p[SAMPLED] for p in partials if SAMPLED in p]
    if not blocks:
        return None
    outcomes: dict[str, list[str]] = {}
    reducers: dict[str, str] = {}
    metrics: dict[str, dict[str, dict[str, float | None]]] = {}
    for block in blocks:
        outcomes.update(block["outcomes"])
        reducers.update(block.get("reducers", {}))
        for case, by_sample in block["metrics"].items():
            for sample, values in by_sample.items():
                metrics.setdefault(case, {}).setdefault(sample, {}).update(values)
    return {"outcomes": outcomes, "reducers": reducers, "metrics": metrics}


def _warnings(partials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Config and collection warnings from the first shard (every shard raises the same ones), then the warnings
    raised while checking, shard after shard (block after block: the tests' collection order)."""
    first = partials[0].get("warnings", [])
    early = [w for w in first if w["when"] in _SESSION_WHEN]
    during = [w for partial in partials for w in partial.get("warnings", []) if w["when"] not in _SESSION_WHEN]
    return early + during
