"""evalkit's pytest plugin (entry point `pytest11`): cases as parameters, replies as fixtures, and the eval block
added to pytest-json-report's report.

Inert unless pytest is started with `--evalkit-run=FILE` (the runner does that), so installing evalkit changes
nothing in other pytest sessions. This module is only pytest's surface: the eval block is computed by
evalkit.run.eval_block (pure), and with `run.repeats=N` (N > 1) each check over a case runs once per sample through
evalkit.run.sample_protocol, its fixtures handing out that sample's replies, under the test's one node id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.call_id import CallId
from evalkit.core.config import BUILTIN_METRICS
from evalkit.core.dataset import Case
from evalkit.programs.candidate import is_scorable
from evalkit.programs.grade import Grade
from evalkit.run.declared import CHECKS_FILE, ChecksYaml
from evalkit.run.eval_block import COULD_NOT_RUN, EvalBlock
from evalkit.run.execute import UNSCORED  # a case with such a call is skipped with the reason and reported unscored
from evalkit.run.run_input import RunInput, read_run_input
from evalkit.run.sample_protocol import index_teardown_reports, reducer_of, run_samples
from evalkit.run.workers import RECORDED, SAMPLED, SHARD_OPTION, register_for_workers

RUN_OPTION = "--evalkit-run"
CARRIED = "evalkit_recorded"
"""The attribute of a test's teardown report holding what the test recorded (its case, metrics, grade), taken in
by pytest_runtest_logreport: the report is where a test's outcome and what it recorded meet."""
MACHINE_FIELDS = ("environment", "root")  # about the machine, not the eval: dropped from reports
LEAN_OMITS = frozenset({"streams", "log"})
"""What the runner leaves out of pytest-json-report's stages (`--json-report-omit`) so that a stage with nothing to
show is only its duration and outcome (_EvalRun.pytest_json_runtest_stage)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalkit")
    group.addoption(RUN_OPTION, default=None, metavar="FILE",
                    help="run the suite's checks over the calls in FILE (written by `evalkit run`)")
    group.addoption(SHARD_OPTION, default=None, metavar="K/N",
                    help="run only shard K of N of the collected checks, writing a partial report for the runner "
                         "to merge (run.workers=N)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cases(select, judged=None): run this check only on cases where select(case) "
                            "is true (and, with judged=METRIC, where the run made that judge call)")
    config.addinivalue_line("markers", "reduce(rule): with run.repeats=N, how the N samples' outcomes become the "
                            "test's: reduce('all'), reduce('majority'), reduce(mean=0.8), reduce(at_least=3)")
    path = config.getoption(RUN_OPTION)
    if path:
        shard = bool(config.getoption(SHARD_OPTION))
        omitted = config.getoption("json_report_omit", None) or ()
        run = _EvalRun(read_run_input(Path(path)), config.rootpath, shard, lean_stages=LEAN_OMITS <= set(omitted))
        config.pluginmanager.register(run, "evalkit-run")
        register_for_workers(config)


class _EvalRun:
    """The active half of the plugin, registered only for an evalkit run."""

    def __init__(self, run: RunInput, root: Path, shard: bool = False, *, lean_stages: bool = False) -> None:
        self.run = run
        self.root = root
        self.shard = shard
        """A shard of a run on several processes (evalkit.run.workers): its report is partial, without eval block."""
        self.recording: dict[str, dict[str, Any]] = {}
        """node id -> what the test is recording in this process, until its teardown report carries it off."""
        self.recorded: dict[str, dict[str, Any]] = {}
        """node id -> what the test recorded, from its report."""
        self.sample = 0
        """The sample whose replies the fixtures hand out now (always 0 for single runs)."""
        self.sampled: dict[str, list[str]] = {}
        """nodeid -> each sample's outcome, for the checks run once per sample."""
        self.sample_metrics: dict[str, dict[int, dict[str, float | None]]] = {}
        """case id -> sample -> the metrics that sample's checks recorded."""
        self.reducers: dict[str, str] = {}
        """nodeid -> the reducer of its samples (evalkit.core.reducer), for the checks run once per sample."""
        self.lean_stages = lean_stages
        """Whether pytest-json-report leaves streams and logs out, so a quiet stage is its duration and outcome."""
        self.unrun: dict[str, str] = {}
        """nodeid -> why a declared check could not run on its case (in any of its samples), until its report is
        logged: with repeats, the report logged may be another sample's than the one that could not run."""

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """The suite's declared checks (evalkit.run.declared), collected beside its test modules."""
        if file_path.name == CHECKS_FILE and file_path.parent == self.root:
            collector = ChecksYaml.from_parent(parent, path=file_path)
            collector.run = self
            return collector
        return None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "case" not in metafunc.fixturenames:
            return
        cases = self.run.cases
        marker = metafunc.definition.get_closest_marker("cases")
        if marker is not None and marker.args:
            select: Callable[[Case], bool] = marker.args[0]
            cases = [c for c in cases if select(c)]
        if marker is not None and "judged" in marker.kwargs:  # only cases this run made that judge call for
            metric = marker.kwargs["judged"]
            cases = [c for c in cases if str(CallId.judge(metric, c.id)) in self.run.calls]
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown":  # the last report of a test: everything it recorded is recorded
            case = _case_param(item)
            recorded = self.recording.pop(item.nodeid, {})
            if isinstance(case, Case):
                recorded["case"] = case.id
            if recorded:
                setattr(report, CARRIED, recorded)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        recorded = getattr(report, CARRIED, None)
        if isinstance(recorded, dict):
            why = self.unrun.pop(report.nodeid, None)
            self.recorded[report.nodeid] = recorded if why is None else {**recorded, COULD_NOT_RUN: why}

    def could_not_run(self, nodeid: str, why: str) -> None:
        """Record that the test `nodeid` (a declared check) could not run on its case: the case is unscored."""
        self.unrun.setdefault(nodeid, why)

    def text_of(self, call_id: str) -> str:
        """The reply text of a call; a call without one fails the asking test with its reason (an unscored call
        skips it, and the case is reported unscored)."""
        call = self.run.calls.get(call_id)
        if call is None:
            pytest.fail(f"{call_id} was never made: the suite's task did not plan this call", pytrace=False)
        if call.status in UNSCORED:
            pytest.skip(f"unscored: {call.reason}")
        if call.text is None:
            pytest.fail(call.reason or f"{call_id}: no reply text", pytrace=False)
        return call.text

    def _recording(self, request: pytest.FixtureRequest) -> dict[str, Any]:
        return self.recording.setdefault(request.node.nodeid, {})

    # Function-scoped: they only hand out the run's data, and pytest deprecates session-scoped fixtures defined
    # as instance methods (PytestRemovedIn10Warning), which a registered plugin object's fixtures are.
    @pytest.fixture
    def eval_key(self) -> dict[str, Any]:
        """The eval key of this run."""
        return self.run.key

    @pytest.fixture
    def components(self) -> dict[str, Any]:
        """The composed settings of the suite's declared components (`components["retriever"]["k"]`)."""
        return self.run.components

    @pytest.fixture
    def task_reply(self, case: Case) -> str:
        """The model's reply text for this case (`task/<case-id>`)."""
        return self.text_of(str(CallId.task(case.id, self.sample)))

    @pytest.fixture
    def judge_reply(self, case: Case) -> Callable[[str], str]:
        """`judge_reply(metric)`: the judge's reply text for this case (`judge/<metric>/<case-id>`)."""
        sample = self.sample
        return lambda metric: self.text_of(str(CallId.judge(metric, case.id, sample)))

    @pytest.fixture
    def record_metric(self, case: Case, request: pytest.FixtureRequest) -> Callable[[str, float | None], None]:
        """`record_metric(name, value)`: a number about this case; None when it could not be measured."""

        def record(name: str, value: float | None) -> None:
            if name in BUILTIN_METRICS:
                raise ValueError(f"case {case.id}: {name!r} is computed by evalkit; record another metric name")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value)):
                raise ValueError(f"case {case.id}: metric {name!r} must be a finite number or None, got {value!r}")
            self.keep_metric(request.node.nodeid, case.id, name, None if value is None else float(value))

        return record

    def keep_metric(self, nodeid: str, case_id: str, name: str, value: float | None) -> None:
        """Record a metric of a case for the test `nodeid` (record_metric's, and a judged declared check's)."""
        self.recording.setdefault(nodeid, {}).setdefault("metrics", {})[name] = value
        if self.run.repeats > 1:  # averaged over the samples, once every shard's are in (EvalBlock)
            self.sample_metrics.setdefault(case_id, {}).setdefault(self.sample, {})[name] = value

    @pytest.fixture
    def program_run(self, case: Case) -> dict[str, Any]:
        """What the candidate program left for this case: `response`, `artifacts` (watched file -> text),
        `visible_files`... A case the program could not finish (timeout, crash, invalid response, budget) is
        skipped as unscored with the reason."""
        run = self.run.programs.get(case.id)
        if run is None:
            pytest.fail(f"case {case.id}: this run executed no candidate program for it", pytrace=False)
        if not is_scorable(run):
            pytest.skip(f"unscored: {run['reason']}")
        return run

    @pytest.fixture
    def reference(self, case: Case) -> dict[str, Any]:
        """The case's private reference (from the manifest dataset's references file)."""
        try:
            return self.run.references[case.id]
        except KeyError:
            pytest.fail(f"case {case.id}: the dataset has no reference for it", pytrace=False)

    @pytest.fixture
    def record_grade(self, case: Case, request: pytest.FixtureRequest) -> Callable[[Grade], None]:
        """`record_grade(grade)`: the grader's verdicts for this case (evalkit.programs.grade.Grade), for the gate."""

        def record(grade: Grade) -> None:
            if not isinstance(grade, Grade):
                raise TypeError(f"case {case.id}: record_grade takes an evalkit.Grade, got {type(grade).__name__}")
            self._recording(request)["grade"] = grade.to_json()

        return record

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        """With N > 1 samples, run a check over a case once per sample and report it once (see the module)."""
        case = _case_param(item)
        if self.run.repeats == 1 or not isinstance(case, Case):
            return None  # pytest's own protocol
        reducer = reducer_of(item, self.run.repeats)
        self.sampled[item.nodeid] = run_samples(item, nextitem, self.run.samples_of(case.id), self._use_sample,
                                                reducer)
        self.reducers[item.nodeid] = reducer.name
        return True

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """A reducer that cannot be read, or asks for more samples than the run takes, is the suite's mistake: said
        once, naming the test, before anything runs."""
        if self.run.repeats > 1:
            for item in items:
                reducer_of(item, self.run.repeats)

    def _use_sample(self, sample: int) -> None:
        self.sample = sample

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """Before pytest writes its summary: each failed test's teardown report found through one index instead of
        a scan of every report of the run (pytest's own lookup scans them all once per failure, pytest-dev/pytest
        #13360: a suite of N declared checks that fail as often as they pass took time in N squared)."""
        index_teardown_reports(terminalreporter)
        return (yield)

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_runtest_stage(self, report: pytest.TestReport) -> dict[str, Any] | None:
        """A stage without a failure or skip to show, as pytest-json-report writes it when the runner leaves out
        streams and logs, without rendering its empty text (a terminal writer per stage); any other stage, and
        any stage when streams or logs are kept, is pytest-json-report's own (None: the next implementation)."""
        if report.longrepr is not None or not self.lean_stages or hasattr(report, "node"):  # node: xdist's line
            return None
        return {"duration": report.duration, "outcome": report.outcome}

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        for field in MACHINE_FIELDS:
            json_report.pop(field, None)
        for test in json_report.get("tests", []):  # failure locations relative to the suite, not this machine
            for stage in ("setup", "call", "teardown"):
                crash = (test.get(stage) or {}).get("crash")
                if isinstance(crash, dict) and isinstance(crash.get("path"), str):
                    crash["path"] = _relative(crash["path"], self.root)
        if self.shard:  # a partial report: the runner merges the shards' and computes the eval block once
            json_report[RECORDED] = self.recorded
            if self.run.repeats > 1:  # each sample's outcome and metrics travel with it (JSON keys: text)
                json_report[SAMPLED] = {"outcomes": self.sampled, "reducers": self.reducers, "metrics": {
                    case: {str(sample): metrics for sample, metrics in by_sample.items()}
                    for case, by_sample in self.sample_metrics.items()}}
            return
        EvalBlock(self.run, self.recorded, self.sampled, self.sample_metrics, self.reducers).add_to(json_report)


def _case_param(item: pytest.Item) -> object:
    """The `case` a check over cases was parametrized with, or a declared check's case (None for other tests)."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("case") if callspec is not None else getattr(item, "evalkit_case", None)


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path
