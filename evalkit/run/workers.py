"""A suite's checks on several processes (`run.workers`, pytest-xdist), reported as one process reports them.

With xdist, a controller process collects nothing and runs nothing: workers do, and send it their test reports
as they finish. Left alone, that changes the run report: tests in the order they finished, every worker's
collection-time warnings once per worker, and a collection error or a crashed worker no longer stopping the
session (the other tests run, pytest exits 1, and the report looks like a run whose checks merely failed).

The controller half here puts back what one process would write: the tests in collection order, each warning
once, and, for a collection error, a crash or a test that never reported, the exit code that makes the runner
refuse the run as it refuses a single process that could not run its checks. What each test recorded
(its case, metrics, grade) travels on its own report (evalkit.run.plugin), so nothing of it depends on which
worker ran it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

from evalkit.core.errors import InputError

__all__ = ["XDIST_PACKAGE", "worker_count", "worker_args", "register_for_workers"]

XDIST_PACKAGE = "pytest-xdist"
_WARNINGS = "evalkit_warnings"  # the key of a worker's warnings in what it hands the controller when it finishes
_SESSION_WHEN = ("config", "collect")  # warnings every worker raises once, as one process would once


def worker_count(setting: int | str) -> int:
    """How many processes run the checks: `run.workers` as a number, or `auto`, the CPUs this process may use."""
    if setting != "auto":
        return int(setting)
    try:
        return max(1, len(os.sched_getaffinity(0)))  # a CPU set limited by taskset or a Slurm allocation
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def worker_args(workers: int) -> list[str]:
    """pytest's command-line arguments for this many processes; none for one (no xdist, as before it existed).

    A crashed worker is not replaced (`--max-worker-restart=0`): the run is refused anyway, so stop at once."""
    if workers <= 1:
        return []
    if importlib.util.find_spec("xdist") is None:
        raise InputError(f"run.workers={workers} runs the checks with {XDIST_PACKAGE}, which is not installed: "
                         f"pip install {XDIST_PACKAGE} (it comes with evalkit; reinstall evalkit), or run.workers=1")
    return ["-n", str(workers), "--max-worker-restart=0"]


def register_for_workers(config: pytest.Config) -> None:
    """Register the half of this module that the process needs: the controller's or a worker's (neither in a run
    on one process)."""
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(_Worker(config), "evalkit-worker")
    elif config.pluginmanager.hasplugin("xdist") and config.getoption("dist", "no") != "no":
        config.pluginmanager.register(_Controller(config), "evalkit-controller")


class _Worker:
    """A worker's half: its warnings, with the test that raised each, handed to the controller at its end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.warnings: list[dict[str, Any]] = []

    def pytest_warning_recorded(self, warning_message: Any, when: str, nodeid: str) -> None:
        # the entry pytest-json-report writes for a warning (its serialize.make_warning), and the test's node id
        self.warnings.append({"nodeid": nodeid, "entry": {
            "message": str(warning_message.message), "category": warning_message.category.__name__, "when": when,
            "filename": warning_message.filename, "lineno": warning_message.lineno}})

    def pytest_sessionfinish(self) -> None:
        # xdist sends `workeroutput` after every pytest_sessionfinish implementation has run
        self.config.workeroutput[_WARNINGS] = self.warnings  # type: ignore[attr-defined]


class _Controller:
    """The controller's half: collection order, warnings once each, and refusals where one process stops."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.order: dict[str, int] = {}
        self.reported: set[str] = set()
        self.outputs: dict[str, list[dict[str, Any]]] = {}
        self.uncollected: list[str] = []
        self.down: dict[str, str] = {}  # worker id -> why it went down
        self.running: dict[str, str] = {}  # worker id -> the check it was running then
        self.problems: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # every worker collects the same tests (xdist refuses a run where they differ) in the order one would run
        self.order = {nodeid: index for index, nodeid in enumerate(ids)}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # xdist forwards only failed collections, each once
            lines = [line.strip().removeprefix("E").strip() for line in str(report.longrepr).splitlines()]
            self.uncollected.append(f"could not collect {report.nodeid or 'the suite'} "
                                    f"({([line for line in lines if line] or ['no message'])[-1]})")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reported.add(report.nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        if error is not None:
            self.down[node.gateway.id] = str(error)
        elif _WARNINGS in node.workeroutput:
            self.outputs[node.gateway.id] = node.workeroutput[_WARNINGS]

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport) -> None:
        # called after pytest_testnodedown, with the report xdist made up for the check (its `node`: the worker)
        worker = getattr(report, "node", None)
        self.running[worker.gateway.id if worker is not None else "?"] = crashitem

    def pytest_internalerror(self) -> None:
        self.problems.append("an internal error in a worker or the controller")

    @pytest.hookimpl(optionalhook=True, wrapper=True)
    def pytest_json_runtest_stage(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        """A stage as pytest-json-report writes it, without the worker's line: pytest starts a report's text with
        `[gw1] linux -- Python ...` when it knows the worker that sent it (`report.node`, set by xdist)."""
        node = report.__dict__.pop("node", None)
        try:
            return (yield)
        finally:
            if node is not None:
                report.__dict__["node"] = node

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        """Before evalkit's plugin adds the eval block: tests in collection order, summary counted in that order,
        warnings as one process raises them."""
        tests = json_report.get("tests")
        if isinstance(tests, list):
            tests.sort(key=lambda test: self.order.get(test["nodeid"], len(self.order)))  # stable: unknown last
            summary = json_report.get("summary", {})
            counted: dict[str, Any] = {}
            for test in tests:  # pytest-json-report's make_summary: outcomes in order of first appearance
                counted[test["outcome"]] = counted.get(test["outcome"], 0) + 1
            counted["total"] = len(tests)
            json_report["summary"] = {**counted, **{k: v for k, v in summary.items() if k in ("collected",
                                                                                              "deselected")}}
        if "warnings" in self.config.option.json_report_omit:
            return
        warnings = self._warnings()
        json_report.pop("warnings", None)
        if warnings:
            json_report["warnings"] = warnings

    def _warnings(self) -> list[dict[str, Any]]:
        """Config and collection warnings from one worker (each worker raises the same ones), then each test's
        warnings in the tests' collection order, then any raised outside a test and after collection."""
        if not self.outputs:
            return []
        first = self.outputs[min(self.outputs, key=lambda gw: (len(gw), gw))]  # gw0 before gw10
        early = [w["entry"] for w in first if w["nodeid"] not in self.order and w["entry"]["when"] in _SESSION_WHEN]
        late = [w["entry"] for w in first if w["nodeid"] not in self.order
                and w["entry"]["when"] not in _SESSION_WHEN]
        during = [w for output in self.outputs.values() for w in output if w["nodeid"] in self.order]
        during.sort(key=lambda w: self.order[w["nodeid"]])  # stable: a test's warnings keep their order
        return early + [w["entry"] for w in during] + late

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Where one process would have stopped, make pytest's exit code say so: the runner then refuses the
        run (evalkit.run.runner.run_checks) instead of reporting checks that never ran."""
        if self.uncollected and not self.config.option.continue_on_collection_errors:
            self.problems += self.uncollected  # one process stops after collecting: "Interrupted: N errors ..."
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            return
        for worker, error in sorted(self.down.items()):
            running = self.running.get(worker)
            self.problems.append(f"worker {worker} went down ({error})" + (f" while running {running}"
                                                                           if running else ""))
        missing = [nodeid for nodeid in self.order if nodeid not in self.reported]
        if missing and not self.problems:
            self.problems.append(f"{len(missing)} of {len(self.order)} checks never reported (first: {missing[0]})")
        if self.problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR  # otherwise pytest's own refusal stands

    def pytest_unconfigure(self) -> None:
        # on stderr, after pytest's summary: the last error line, which the runner quotes when it refuses the run
        for problem in self.problems:
            print(f"E   evalkit: the checks on {XDIST_PACKAGE} workers did not all run: {problem}", file=sys.stderr)
