"""evalkit's pytest plugin (entry point `pytest11`): cases as parameters, replies as fixtures, and
the eval key, per-case results and provenance added to pytest-json-report's report.

Inert unless pytest is started with `--evalkit-run=FILE` (the runner does that), so installing
evalkit changes nothing in other pytest sessions.

With `run.repeats=N` (N > 1) every check over a case runs once per sample, its fixtures handing out that sample's
replies, under the test's one node id: the test's entry is the first failing sample's (else the first that did not
pass, else sample 0's), so its outcome is `passed` only when every sample passed, and it carries
`"repeats": {"passed": k, "runs": N, "not_passed": [sample numbers]}` for the gate (evalkit.gate.repeats). A metric
is the mean over the samples that measured it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.call_id import CallId
from evalkit.core.config import BUILTIN_METRICS
from evalkit.core.dataset import Case
from evalkit.core.key import with_settings
from evalkit.core.report import PASSING
from evalkit.judging.slices import language_of_field, slice_cases
from evalkit.programs.candidate import is_scorable
from evalkit.programs.grade import Grade
from evalkit.run.execute import UNSCORED  # a case with such a call is skipped with the reason and reported unscored
from evalkit.run.workers import RECORDED, SHARD_OPTION, register_for_workers

RUN_OPTION = "--evalkit-run"
CARRIED = "evalkit_recorded"
"""The attribute of a test's teardown report holding what the test recorded (its case, metrics, grade), taken in
by pytest_runtest_logreport: the report is where a test's outcome and what it recorded meet."""
MACHINE_FIELDS = ("environment", "root")  # about the machine, not the eval: dropped from reports
REPLY_CHARS = 2000
"""A reply kept in a case's entry is cut after this many characters (with a marker): enough to see the answer,
not a copy of the recording."""


class RunInput:
    """What the runner hands to the pytest process: key, cases, call results, provenance."""

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self.key: dict[str, Any] = data["key"]
        self.provenance: dict[str, Any] = data["provenance"]
        self.cases = [Case(c["id"], c["fields"]) for c in data["cases"]]
        self.calls: dict[str, dict[str, Any]] = data["calls"]
        self.repeats: int = data.get("repeats", 1)
        """Samples of each call (`run.repeats`); the checks over a case run once per sample."""
        self.components: dict[str, Any] = data.get("components", {})
        suite = data.get("suite", {})
        self.slices: list[str | dict[str, Any]] = suite.get("slices", [])
        self.abstention_check: str = suite.get("abstention_check", "test_abstention")
        self.group_by: str | None = suite.get("group_by")
        # suites that run a candidate program: what each case's run left, and the references to grade it by
        self.programs: dict[str, dict[str, Any]] = data.get("programs", {})
        self.references: dict[str, dict[str, Any]] = data.get("references", {})

    def text_of(self, call_id: str) -> str:
        """The reply text of a call; a call without one fails the asking test with its reason."""
        call = self.calls.get(call_id)
        if call is None:
            pytest.fail(f"{call_id} was never made: the suite's task did not plan this call", pytrace=False)
        if call["status"] in UNSCORED:
            pytest.skip(f"unscored: {call['reason']}")
        if call["text"] is None:
            pytest.fail(call["reason"] or f"{call_id}: no reply text", pytrace=False)
        text: str = call["text"]
        return text


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalkit")
    group.addoption(RUN_OPTION, default=None, metavar="FILE",
                    help="run the suite's checks over the calls in FILE (written by `python -m evalkit`)")
    group.addoption(SHARD_OPTION, default=None, metavar="K/N",
                    help="run only shard K of N of the collected checks, writing a partial report for the runner "
                         "to merge (run.workers=N)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cases(select, judged=None): run this check only on cases where select(case) "
                            "is true (and, with judged=METRIC, where the run made that judge call)")
    path = config.getoption(RUN_OPTION)
    if path:
        shard = bool(config.getoption(SHARD_OPTION))
        config.pluginmanager.register(_EvalRun(RunInput(Path(path)), config.rootpath, shard), "evalkit-run")
        register_for_workers(config)


class _EvalRun:
    """The active half of the plugin, registered only for an evalkit run."""

    def __init__(self, run: RunInput, root: Path, shard: bool = False) -> None:
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
            self.recorded[report.nodeid] = recorded

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
        return self.run.text_of(str(CallId.task(case.id, self.sample)))

    @pytest.fixture
    def judge_reply(self, case: Case) -> Callable[[str], str]:
        """`judge_reply(metric)`: the judge's reply text for this case (`judge/<metric>/<case-id>`)."""
        sample = self.sample
        return lambda metric: self.run.text_of(str(CallId.judge(metric, case.id, sample)))

    @pytest.fixture
    def record_metric(self, case: Case, request: pytest.FixtureRequest) -> Callable[[str, float | None], None]:
        """`record_metric(name, value)`: a number about this case; None when it could not be measured."""

        def record(name: str, value: float | None) -> None:
            if name in BUILTIN_METRICS:
                raise ValueError(f"case {case.id}: {name!r} is computed by evalkit; record another metric name")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value)):
                raise ValueError(f"case {case.id}: metric {name!r} must be a finite number or None, got {value!r}")
            self._recording(request).setdefault("metrics", {})[name] = None if value is None else float(value)
            if self.run.repeats > 1:  # averaged over the samples (run.workers is 1 then: RunSettings says why)
                by_sample = self.sample_metrics.setdefault(case.id, {})
                by_sample.setdefault(self.sample, {})[name] = None if value is None else float(value)

        return record

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
        if self.run.repeats == 1 or not isinstance(_case_param(item), Case):
            return None  # pytest's own protocol
        from _pytest.runner import runtestprotocol  # pytest's protocol for one run of an item, as reruns use it

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        runs = []
        for sample in range(self.run.repeats):
            self.sample = sample
            if hasattr(item, "_json_report_extra"):  # pytest-json-report's per-run details: one dict per sample
                item._json_report_extra = {}
            reports = runtestprotocol(item, log=False, nextitem=nextitem)
            runs.append((reports, _outcome(item.config, reports)))
        self.sample = 0
        outcomes = [outcome for _, outcome in runs]
        self.sampled[item.nodeid] = outcomes
        shown = next((i for i, o in enumerate(outcomes) if o in ("failed", "error")),
                     next((i for i, o in enumerate(outcomes) if o not in PASSING), 0))
        for report in runs[shown][0]:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

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
            return
        EvalBlock(self.run, self.recorded, self.sampled, self.sample_metrics).add_to(json_report)


class EvalBlock:
    """The eval block of a run report (key, provenance, cases, pass rates, metrics, slices), computed from the
    report's tests and what each test recorded: by the plugin for a run on one process, by the runner from the
    merged tests of its shards (evalkit.run.workers), the same function either way."""

    def __init__(self, run: RunInput, recorded: dict[str, dict[str, Any]],
                 sampled: dict[str, list[str]] | None = None,
                 sample_metrics: dict[str, dict[int, dict[str, float | None]]] | None = None) -> None:
        self.run = run
        self.recorded = recorded
        """node id -> what the test recorded (its case, metrics, grade)."""
        self.sampled = sampled or {}
        """nodeid -> each sample's outcome, for the checks run once per sample."""
        self.sample_metrics = sample_metrics or {}
        """case id -> sample -> the metrics that sample's checks recorded."""
        self.metrics: dict[str, dict[str, float | None]] = {}
        self.grades: dict[str, dict[str, Any]] = {}

    def add_to(self, json_report: dict[str, Any]) -> None:
        """Add the eval block to a report that holds its tests (and marks each test with its case)."""
        self._merge_recorded(json_report.get("tests", []))
        json_report["format"] = "evalkit-run-report/1"
        json_report["eval"] = with_settings(self.run.key, self.run.components)
        json_report["provenance"] = self.run.provenance
        tests = json_report.get("tests", [])
        for test in tests:
            outcomes = self.sampled.get(test["nodeid"])
            if outcomes is not None:
                not_passed = [i for i, outcome in enumerate(outcomes) if outcome not in PASSING]
                test["repeats"] = {"passed": len(outcomes) - len(not_passed), "runs": len(outcomes),
                                   "not_passed": not_passed}
        if self.run.repeats > 1:
            self.metrics = _sample_means(self.sample_metrics)
        json_report["cases"] = self._cases(tests)
        passed = sum(t["outcome"] == "passed" for t in tests)
        json_report["pass_rate"] = round(passed / len(tests), 6) if tests else None
        metrics = aggregate_metrics(self.metrics)
        cases = json_report["cases"]
        scored = [c for c in cases if c["checks"]]
        metrics["pass_rate"] = {"mean": json_report["pass_rate"], "count": len(tests), "unmeasured": 0}
        metrics["case_pass_rate"] = {"mean": round(sum(c["passed"] for c in scored) / len(scored), 6) if scored
                                     else None, "count": len(scored), "unmeasured": len(cases) - len(scored)}
        json_report["metrics"] = metrics
        if self.run.slices:
            json_report["slices"] = self._slices(cases)

    def _merge_recorded(self, tests: list[dict[str, Any]]) -> None:
        """Each case's metrics and grade from what its tests recorded, in the tests' order (collection order, also
        merged from shards: evalkit.run.workers): a metric recorded twice keeps the later test's value."""
        for test in tests:
            recorded = self.recorded.get(test["nodeid"], {})
            if "case" not in recorded:
                continue
            if "metrics" in recorded:
                self.metrics.setdefault(recorded["case"], {}).update(recorded["metrics"])
            if "grade" in recorded:
                self.grades[recorded["case"]] = recorded["grade"]

    def _slices(self, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        results = {c["id"]: c for c in cases}
        out: dict[str, dict[str, Any]] = {}
        for spec in self.run.slices:
            by, where = (spec, {}) if isinstance(spec, str) else (spec["by"], spec.get("where", {}))
            chosen = [c for c in self.run.cases if all(c.get(k) == v for k, v in where.items())]
            match = re.fullmatch(r"language\((\w+)\)", by)
            key = language_of_field(match.group(1)) if match else by
            label = by + "".join(f" where {k}={v}" for k, v in where.items())
            cut = slice_cases(chosen, results, key, abstention_check=self.run.abstention_check)
            out[label] = {name: s.model_dump(mode="json") for name, s in cut.items()}
        return out

    def _cases(self, tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_case: dict[str, dict[str, Any]] = {
            c.id: {"id": c.id, "status": "scored", "checks": {}, "calls": {}, "problems": [],
                   "input": _capped(c.fields)} for c in self.run.cases}
        for test in tests:
            case_id = self.recorded.get(test["nodeid"], {}).get("case")
            if case_id is None:
                continue
            test["case"] = case_id
            check = test["nodeid"].split("::")[-1].split("[", 1)[0]
            by_case[case_id]["checks"][check] = test["outcome"]
        for call_id, call in self.run.calls.items():
            which = CallId.parse(call_id)
            case_id = which.case
            if case_id in by_case:
                by_case[case_id]["calls"][call_id] = call["status"]
                if which.sample == 0:
                    _keep_reply(by_case[case_id], which, call.get("text"))
                if call["reason"]:
                    by_case[case_id]["problems"].append(call["reason"])
                if call["status"] in UNSCORED:
                    by_case[case_id]["status"] = "unscored"
                # the reply contract (text when finished, a known stop reason), recorded or live
                by_case[case_id]["problems"] += [f"{call_id}: {p}" for p in call.get("contract", [])]
        for case_id, run in self.run.programs.items():
            entry = by_case.get(case_id)
            if entry is None:
                continue
            entry["program"] = run
            if not is_scorable(run):
                entry["status"] = "unscored"
                entry["problems"].append(f"candidate program: {run['reason']}")
                entry["grade"] = Grade.unscored(run["reason"]).to_json()
            elif case_id in self.grades:
                entry["grade"] = self.grades[case_id]
        if self.run.group_by:
            for case in self.run.cases:
                by_case[case.id]["group"] = case.get(self.run.group_by)
        sampled: dict[str, list[list[str]]] = {}
        for test in tests:
            if test.get("case") is not None and test["nodeid"] in self.sampled:
                sampled.setdefault(test["case"], []).append(self.sampled[test["nodeid"]])
        for entry in by_case.values():
            # A case passes when every check that ran passed; a check skipped as not applicable does not fail it
            # (a case whose calls failed or were denied is unscored, which the gate treats on its own).
            outcomes = list(entry["checks"].values())
            entry["passed"] = _case_passed(outcomes)
            entry["metrics"] = self.metrics.get(entry["id"], {})
            if self.run.repeats > 1:  # the samples in which the case passed, by the same rule
                checks = sampled.get(entry["id"], [])
                entry["repeats"] = {"passed": sum(_case_passed([c[s] for c in checks])
                                                  for s in range(self.run.repeats)), "runs": self.run.repeats}
        return list(by_case.values())


def _outcome(config: pytest.Config, reports: list[pytest.TestReport]) -> str:
    """One run's outcome as pytest-json-report writes it: the last phase's status that is not a pass."""
    outcome = "passed"
    for report in reports:
        status = config.hook.pytest_report_teststatus(report=report, config=config)[0]
        if status not in ("passed", ""):
            outcome = status
    return str(outcome)


def _case_passed(outcomes: list[str]) -> bool:
    return "passed" in outcomes and all(o in ("passed", "skipped") for o in outcomes)


def _case_param(item: pytest.Item) -> object:
    """The `case` a check over cases was parametrized with (None for other tests)."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("case") if callspec is not None else None


def _sample_means(by_case: dict[str, dict[int, dict[str, float | None]]]) -> dict[str, dict[str, float | None]]:
    """Each case's metrics: per name, the mean over the samples that measured it (the value itself with one
    sample); None when none could."""
    out: dict[str, dict[str, float | None]] = {}
    for case_id, samples in by_case.items():
        seen: dict[str, list[float]] = {}
        for sample in sorted(samples):
            for name, value in samples[sample].items():
                seen.setdefault(name, [])
                if value is not None:
                    seen[name].append(value)
        out[case_id] = {name: sum(values) / len(values) if values else None for name, values in seen.items()}
    return out


def _keep_reply(entry: dict[str, Any], call_id: CallId, text: str | None) -> None:
    """The case's task reply as `output`, each judge reply under `judge_replies[<metric>]`, cut to REPLY_CHARS.

    The texts come from run-input.json, which the runner wrote redacted, so cutting cannot split a secret that
    redaction would then miss; the report's strings are redacted again, one by one, when it is written."""
    if call_id.kind == "task":
        entry["output"] = cap_reply(text)
    else:
        entry.setdefault("judge_replies", {})[call_id.metric] = cap_reply(text)


def cap_reply(text: str | None) -> str | None:
    """A reply cut to REPLY_CHARS characters, the cut said at its end; None (no reply) stays None."""
    if text is None or len(text) <= REPLY_CHARS:
        return text
    return f"{text[:REPLY_CHARS]} [... cut: {len(text) - REPLY_CHARS} more characters]"


def _capped(value: Any) -> Any:
    """A case's input as the report keeps it (beside its output, for a reader of a failing case): each string cut
    like a reply, so one long field cannot swell the report."""
    if isinstance(value, str):
        return cap_reply(value)
    if isinstance(value, dict):
        return {str(k): _capped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_capped(v) for v in value]
    return value


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def aggregate_metrics(per_case: dict[str, dict[str, float | None]]) -> dict[str, dict[str, Any]]:
    """Each metric's mean over the cases that measured it, and how many did; None when none could."""
    values: dict[str, list[float | None]] = {}
    for metrics in per_case.values():
        for name, value in metrics.items():
            values.setdefault(name, []).append(value)
    out: dict[str, dict[str, Any]] = {}
    for name, seen in sorted(values.items()):
        measured = [v for v in seen if v is not None]
        out[name] = {"mean": round(sum(measured) / len(measured), 6) if measured else None,
                     "count": len(measured), "unmeasured": len(seen) - len(measured)}
    return out
