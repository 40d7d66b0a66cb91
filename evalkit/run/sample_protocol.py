"""The repeated-sample protocol: one check over a case run once per sample, reported once.

This is the only module that reaches into pytest's and pytest-json-report's private parts. pytest offers no
public way to run an item's setup, call and teardown several times under one node id, so this does what
pytest-rerunfailures does: it runs `_pytest.runner.runtestprotocol` per sample, without logging, then logs the
reports of the one sample it shows. pytest-json-report collects a test's `extra` details on the item
(`_json_report_extra`), which would pile up over the samples; each sample starts it afresh.

Both are pinned: SUPPORTED names the versions this was written and tested against, and tests/test_sample_protocol.py
fails when an installed version falls outside them, so an upgrade that could break the protocol is seen at once
rather than as wrong repeat counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import pytest

from evalkit.core.report import PASSING

__all__ = ["SUPPORTED", "run_samples", "shown_sample"]

SUPPORTED: Final = {"pytest": ((8, 0), (10, 0)), "pytest-json-report": ((1, 5), (2, 0))}
"""Distribution -> [lowest, above highest) major.minor this protocol supports (also pyproject's bounds)."""


def run_samples(item: pytest.Item, nextitem: pytest.Item | None, samples: int,
                use_sample: Callable[[int], None]) -> list[str]:
    """Run `item` once per sample (calling `use_sample(i)` before sample i, so its fixtures hand out that sample's
    replies), log the shown sample's reports as the test's, and return each sample's outcome."""
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
    for report in runs[shown_sample(outcomes)][0]:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return outcomes


def shown_sample(outcomes: list[str]) -> int:
    """The sample whose reports stand for the test: the first failing one, else the first that did not pass,
    else sample 0; so the test's outcome is `passed` only when every sample passed."""
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
