"""The repeated-sample protocol: one check over a case run once per sample, reported once.

This is the only module that reaches into pytest's and pytest-json-report's private parts. pytest offers no
public way to run an item's setup, call and teardown several times under one node id, so this does what
pytest-rerunfailures does: it runs `_pytest.runner.runtestprotocol` per sample, without logging, then logs the
reports of the one sample it shows. pytest-json-report collects a test's `extra` details on the item
(`_json_report_extra`), which would pile up over the samples; each sample starts it afresh.

Both are pinned: SUPPORTED names the versions this was written and tested against, and tests/run/test_sample_protocol.py
fails when an installed version falls outside them, so an upgrade that could break the protocol is seen at once
rather than as wrong repeat counts.

Which sample is shown follows the test's reducer (evalkit.core.reducer: `all` by default, or what a `reduce`
marker or a declared check's `reduce:` says), so the test's outcome is the reduced one.

The one other private part evalkit touches lives here too, under the same pins: the terminal reporter's lookup of
a failed test's teardown reports, which scans every report of the run once per failure (pytest-dev/pytest#13360),
replaced for an evalkit run by an index built once (`index_teardown_reports`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest

from evalkit.core.reducer import ALL, Reducer, parse_reducer
from evalkit.records.report_reader import PASSING

__all__ = ["SUPPORTED", "index_teardown_reports", "reducer_of", "run_samples", "shown_sample"]

SUPPORTED: Final = {"pytest": ((8, 0), (10, 0)), "pytest-json-report": ((1, 5), (2, 0))}
"""Distribution -> [lowest, above highest) major.minor this protocol supports (also pyproject's bounds)."""


def run_samples(item: pytest.Item, nextitem: pytest.Item | None, samples: int,
                use_sample: Callable[[int], None], reducer: Reducer = ALL) -> list[str]:
    """Run `item` once per sample (calling `use_sample(i)` before sample i, so its fixtures hand out that sample's
    replies), log the shown sample's reports (by `reducer`) as the test's, and return each sample's outcome."""
    from _pytest.runner import runtestprotocol  # pytest's protocol for one run of an item, as reruns use it

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runs = []
    for sample in range(samples):
        use_sample(sample)
        if hasattr(item, "_json_report_extra"):  # pytest-json-report's per-run details: one dict per sample
            item._json_report_extra = {}
        reports = runtestprotocol(item, log=False, nextitem=nextitem)
        runs.append((reports, _outcome(item.config, reports)))
    use_sample(0)
    outcomes = [outcome for _, outcome in runs]
    for report in runs[shown_sample(outcomes, reducer)][0]:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return outcomes


def shown_sample(outcomes: list[str], reducer: Reducer = ALL) -> int:
    """The sample whose reports stand for the test. When the reducer passes the samples' counts and none errored
    (an error is no verdict, so no reducer outvotes it): the first passing sample. Otherwise the first failing
    one, else the first that did not pass, else sample 0; so with `all` the test's outcome is `passed` only when
    every sample passed."""
    passed = sum(o in PASSING for o in outcomes)
    if "error" not in outcomes and reducer.passes(passed, len(outcomes)):
        return next((i for i, o in enumerate(outcomes) if o in PASSING), 0)
    return next((i for i, o in enumerate(outcomes) if o in ("failed", "error")),
                next((i for i, o in enumerate(outcomes) if o not in PASSING), 0))


def _outcome(config: pytest.Config, reports: list[pytest.TestReport]) -> str:
    """One run's outcome as pytest-json-report writes it: the last phase's status that is not a pass."""
    outcome = "passed"
    for report in reports:
        status = config.hook.pytest_report_teststatus(report=report, config=config)[0]
        if status not in ("passed", ""):
            outcome = status
    return str(outcome)


def reducer_of(item: pytest.Item, samples: int) -> Reducer:
    """The reducer of a test: its `reduce` marker, a declared check's `reduce:` (`evalkit_reduce`), else `all`. One
    that cannot be read, or needs more samples than the run takes, is a usage error naming the test."""
    marker = item.get_closest_marker("reduce")
    try:
        if marker is not None:
            if len(marker.args) + len(marker.kwargs) != 1:
                raise ValueError("give one rule: reduce('majority'), reduce(mean=0.8) or reduce(at_least=3)")
            reducer = parse_reducer(marker.args[0] if marker.args else dict(marker.kwargs))
        else:
            reducer = getattr(item, "evalkit_reduce", ALL)
    except ValueError as error:
        raise pytest.UsageError(f"{item.nodeid}: {error}") from None
    if reducer.rule == "at_least" and reducer.value is not None and reducer.value > samples:
        raise pytest.UsageError(f"{item.nodeid}: reduce {reducer.name} asks for more passing samples than the run "
                                f"takes (run.repeats={samples}); lower it or run more repeats")
    return reducer


def index_teardown_reports(reporter: Any) -> None:
    """Replace the terminal reporter's `_get_teardown_reports(node_id)` (a scan of every passed stage's report,
    called once per failed test as the summary shows it) with a lookup in an index of the teardown reports built
    once, keyed by the node id's text (a string in pytest 8, a structured NodeId whose text is that string in
    pytest 9). A reporter without that method is left as it is."""
    if not callable(getattr(reporter, "_get_teardown_reports", None)):
        return
    index: dict[str, list[Any]] = {}
    for report in reporter.getreports(""):
        if report.when == "teardown":
            index.setdefault(str(report.nodeid), []).append(report)
    reporter._get_teardown_reports = lambda node_id: index.get(str(node_id), [])
