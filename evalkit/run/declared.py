"""A suite's declared checks as pytest tests: each entry of `checks.yaml` over each case becomes one test,
`checks.yaml::NAME[case-id]`, beside the suite's hand-written `test_*.py` checks and gated like them.

The checks themselves are judged by evalkit.judging.checks (pure); this module only collects them, hands each
the case's reply (or, for a judged kind, the judge's answer), fails it with the check's one-line message, and
records what a classification check saw for the run's classification metrics and what a judged check measured
(`<check>.score`, `<check>.win` ...) as the case's metrics. It also adds the judged checks' calls to the suite's
task (`with_check_judges`), so that they are made, recorded and replayed with the suite's own.

A check that could not run on a case (a case field it reads is missing there, its pattern ran past its time budget)
is skipped as `could not run: WHY`, its metrics recorded as unmeasured, and the case reported unscored with that
reason (evalkit.run.eval_block): the gate then treats the run as incomplete, never the check as passed or as an
ordinary failure that the baseline may share.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from evalkit.core.call_id import CallId
from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.core.files import decode, read_bytes
from evalkit.judging.checks import (
    ChecksFile,
    CheckSpec,
    Verdict,
    judge,
    judge_pair,
    judge_trajectory,
    parse_checks,
    planned_judge_calls,
    planned_trajectory_judge,
)
from evalkit.judging.judge_health import answer_verdict
from evalkit.judging.pairwise_check import PairwiseSpec
from evalkit.judging.turns import judge_turns
from evalkit.records.call import Request
from evalkit.records.trajectory import Trajectory
from evalkit.run.eval_block import CLASSIFIED, JUDGE_VERDICTS
from evalkit.run.execute import UNSCORED
from evalkit.run.suite import SuiteTask

if TYPE_CHECKING:
    from evalkit.run.plugin import _EvalRun

__all__ = ["CHECKS_FILE", "CLASSIFIED", "JUDGE_VERDICTS", "ChecksYaml", "DeclaredCheck", "majority", "read_checks",
           "with_check_judges"]

CHECKS_FILE = "checks.yaml"


def read_checks(suite_dir: Path, cases: Sequence[Case] | None = None) -> ChecksFile | None:
    """The suite's `checks.yaml`, validated, and with `cases` checked against the run's cases too (a case field no
    case has, a `where:` no case matches: evalkit.judging.check_spec); None when the suite declares no checks."""
    path = suite_dir / CHECKS_FILE
    if not path.is_file():
        return None
    checks = parse_checks(decode(read_bytes(path, "checks file"), path, "checks file"), str(path))
    if cases is not None:
        checks.check_cases(cases, str(path))
    return checks


class ChecksYaml(pytest.File):
    """The suite's `checks.yaml`, collected as one test per check and case."""

    run: _EvalRun

    def collect(self) -> Iterable[pytest.Item]:
        checks = read_checks(self.path.parent, self.run.run.cases)
        assert checks is not None  # collected only when the file exists
        load = _loader(self.path.parent)
        for spec in checks.checks:
            if spec.kind == "python":
                load(spec.options)  # a missing function is the suite's mistake: said at collection, not per case
            for case in self.run.run.cases:
                if spec.applies_to(case):
                    yield DeclaredCheck.from_parent(self, name=f"{spec.name}[{case.id}]", spec=spec, case=case,
                                                    load=load, evalrun=self.run)


class DeclaredCheck(pytest.Item):
    """One declared check over one case."""

    def __init__(self, *, spec: CheckSpec, case: Case, load: Callable[[str], Any], evalrun: _EvalRun,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.evalrun = evalrun
        self.spec = spec
        self.evalkit_case = case
        """The case, as the plugin finds it for a check over cases (evalkit.run.plugin._case_param)."""
        self.load = load
        self.classified: dict[str, str | None] | None = None
        """What a classification check saw on the first sample (with repeats, every sample records it)."""
        self.evalkit_reduce = spec.reduce
        """How its samples reduce to one outcome (evalkit.run.sample_protocol reads it, as a marker for others)."""
        self.verdicts: dict[str, list[str | None]] = {}
        """A judged check: sample -> the verdict of each of the judge's repeats (None: an answer without one). One
        dict, mutated by every sample, so the shown sample's record holds them all (evalkit.run.sample_protocol)."""
        self.passes: dict[str, list[bool]] = {}
        """A judged check: sample -> whether each of the judge's repeats passed the reply."""

    def runtest(self) -> None:
        evalrun = self.evalrun
        case = self.evalkit_case
        verdict = self._pairwise() if self.spec.kind == "pairwise" else self._verdict()
        for name, value in verdict.metrics.items():
            evalrun.keep_metric(self.nodeid, case.id, f"{self.spec.name}.{name}", value)
        if not verdict.ran:
            evalrun.could_not_run(self.nodeid, verdict.message)
            pytest.skip(f"could not run: {verdict.message}")
        if self.spec.kind == "classification":
            # the first sample's label, whichever sample's report is kept: the metrics count each case once
            if evalrun.sample == 0:
                self.classified = {"check": self.spec.name, "label": str(case.get(self.spec.options)),
                                   "predicted": verdict.predicted}
            if self.classified is not None:
                evalrun.recording.setdefault(self.nodeid, {})[CLASSIFIED] = self.classified
        if not verdict.passed:
            pytest.fail(verdict.message, pytrace=False)

    def _verdict(self) -> Verdict:
        evalrun, case, spec = self.evalrun, self.evalkit_case, self.spec
        if spec.call == "trajectory":
            task = str(CallId.task(case.id, evalrun.sample))
            outcome = evalrun.run.calls.get(task)
            if outcome is not None and outcome.status in UNSCORED:  # not measured: the case is reported unscored
                pytest.skip(f"unscored: {outcome.reason}")
            return judge_trajectory(spec, evalrun.run.trajectories.get(task))
        if spec.call != "judge" and spec.turn is not None:
            task = str(CallId.task(case.id, evalrun.sample))
            evalrun.text_of(task)  # an outcome that never came skips (unscored) or fails first
            return judge_turns(spec.turn, evalrun.run.trajectories.get(task),
                               lambda text: judge(spec, text, case, self.load))
        if spec.call != "judge":
            return judge(spec, evalrun.text_of(str(CallId.task(case.id, evalrun.sample))), case, self.load)
        if spec.judges_trajectory:
            task = str(CallId.task(case.id, evalrun.sample))
            outcome = evalrun.run.calls.get(task)
            if outcome is not None and outcome.status in UNSCORED:  # not measured: the case is reported unscored
                pytest.skip(f"unscored: {outcome.reason}")
            steps = evalrun.run.trajectories.get(task)
            conversation = spec.check_kind.shown == "conversation"
            if steps is None and not conversation:  # no judge was asked: no trajectory to show it
                return judge_trajectory(spec, None)
            if conversation and (steps is None or not Trajectory.model_validate(steps).assistant_turns()):
                # no judge was asked: a conversation judge with no assistant turn to read has measured nothing
                return Verdict.could_not_run(spec, f"no conversation to judge: case {case.id} has no assistant turn")
        missing = spec.missing_field(case)
        if missing is not None:  # no judge was asked: the case lacks what the judge reads
            return Verdict.could_not_run(spec, missing)
        answers = [evalrun.text_of(str(CallId.judge(spec.name, case.id, evalrun.sample, repeat)))
                   for repeat in range(evalrun.run.judge_repeats)]
        verdicts = [judge(spec, answer, case, self.load) for answer in answers]
        self._keep([answer_verdict(answer) for answer in answers], verdicts)
        return majority(verdicts)

    def _keep(self, levels: list[str | None], verdicts: list[Verdict]) -> None:
        """Record this sample's verdicts, one per judge repeat, for the report's `judges` block."""
        self.verdicts[str(self.evalrun.sample)] = levels
        self.passes[str(self.evalrun.sample)] = [v.passed for v in verdicts]
        self.evalrun.recording.setdefault(self.nodeid, {})[JUDGE_VERDICTS] = {
            "check": self.spec.name, "kind": self.spec.kind, "verdicts": self.verdicts, "passed": self.passes}

    def _pairwise(self) -> Verdict:
        """The reply against the other: the judge's two answers, or a tie without them when the replies were the
        same; skipped when the run had no baseline reply for the case."""
        evalrun, case, spec = self.evalrun, self.evalkit_case, self.spec
        assert isinstance(spec.options, PairwiseSpec)
        missing = spec.missing_field(case)
        if missing is not None:
            return Verdict.could_not_run(spec, missing)
        if spec.options.against == "baseline" and case.id not in evalrun.run.suite.baseline_cases:
            pytest.skip(f"not compared: the run has no baseline reply for case {case.id} (no baseline, or a "
                        "baseline whose recording is not in the project)")
        evalrun.text_of(str(CallId.task(case.id, evalrun.sample)))  # a reply that never came skips or fails first
        calls = [[str(CallId.judge(metric, case.id, evalrun.sample, repeat)) for metric in spec.judge_metrics]
                 for repeat in range(evalrun.run.judge_repeats)]
        if not all(call in evalrun.run.calls for call in calls[0]):  # the planner asked no judge: the same reply
            return judge_pair(spec, case, None, None)
        verdicts = [judge_pair(spec, case, evalrun.text_of(pair[0]), evalrun.text_of(pair[1])) for pair in calls]
        self._keep([next((name for name in ("win", "tie", "loss") if v.metrics.get(name) == 1.0), None)
                    for v in verdicts], verdicts)
        return majority(verdicts)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.spec.kind} check {self.name}"


def majority(verdicts: Sequence[Verdict]) -> Verdict:
    """One verdict from the judge's K verdicts on one reply: passed when more than half passed (a tie fails: a
    reply the judge is split on has not shown it meets the check), each metric the mean of the repeats that
    measured it, and the message of the first repeat that did not pass, with the count. One verdict: itself."""
    if len(verdicts) == 1:
        return verdicts[0]
    passed = [v for v in verdicts if v.passed]
    names = dict.fromkeys(name for v in verdicts for name in v.metrics)
    metrics: dict[str, float | None] = {}
    for name in names:
        seen = [value for v in verdicts if (value := v.metrics.get(name)) is not None]
        metrics[name] = sum(seen) / len(seen) if seen else None
    ok = 2 * len(passed) > len(verdicts)
    first = next((v for v in verdicts if not v.passed), None)
    split = f"{len(passed)} of {len(verdicts)} judge repeats passed"
    message = "" if ok else f"{split}; {first.message}" if first is not None and first.message else split
    return Verdict(ok, message, metrics=metrics)


def with_check_judges(task: SuiteTask, checks: ChecksFile | None,
                      baseline_replies: Mapping[str, str] | None = None) -> SuiteTask:
    """The suite's task with its judged checks' calls added to the judge calls it plans itself (per check and case
    `judge/<check>/<case>`, or for pairwise `judge/<check>/new-first/<case>` and `.../old-first/...`); the task as
    it is when it declares none. `baseline_replies` (case id -> the baseline's reply) are what `pairwise: {against:
    baseline}` compares with."""
    specs = checks.checks if checks is not None else ()
    judged = [spec for spec in specs if spec.call == "judge" and not spec.judges_trajectory]
    goals = [spec for spec in specs if spec.judges_trajectory]
    if not judged and not goals:
        return task
    own, others = task.build_judge, dict(baseline_replies or {})

    def build_judge(case: Case, output_text: str, judge: ModelConfig) -> Mapping[str, Request]:
        planned = dict(own(case, output_text, judge)) if own is not None else {}
        for spec in judged:
            planned |= planned_judge_calls(spec, case, output_text, judge, others.get(case.id))
        return planned

    def build_trajectory_judge(case: Case, trajectory: Trajectory, judge: ModelConfig,
                               task_request: Request | None = None) -> Mapping[str, Request]:
        planned: dict[str, Request] = {}
        for spec in goals:
            planned |= planned_trajectory_judge(spec, case, trajectory, judge, task_request)
        return planned

    return SuiteTask(task.build_task, build_judge if judged else own,
                     build_trajectory_judge if goals else task.build_trajectory_judge)


def _loader(suite_dir: Path) -> Callable[[str], Any]:
    """Import a `python:` check's function with the suite's folder first on sys.path (where its conftest and
    helper modules live); a missing module or function is an input error naming it."""

    def load(target: str) -> Any:
        module_name, _, name = target.partition(":")
        if str(suite_dir) not in sys.path:
            sys.path.insert(0, str(suite_dir))
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise InputError(f"{suite_dir / CHECKS_FILE}: python check {target}: cannot import {module_name} "
                             f"({error})") from None
        function = getattr(module, name, None)
        if not callable(function):
            raise InputError(f"{suite_dir / CHECKS_FILE}: python check {target}: {module_name} defines no "
                             f"function {name}")
        return function

    return load
