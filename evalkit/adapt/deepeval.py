"""The DeepEval source: a saved DeepEval test run read into a neutral run.

DeepEval saves a test run as `test_run_<YYYYMMDD_HHMMSS>.json` in `DEEPEVAL_RESULTS_FOLDER` (or
`DisplayConfig(results_folder=...)` of `evaluate()`), and the latest one as `.deepeval/.latest_run_full.json`:
the serialised `deepeval.test_run.TestRun`, with `testCases` (and `conversationalTestCases`), each holding
`metricsData`: a metric's name, threshold, score, success and, when it raised, `error`. Here each metric of each
test case is an evalkit test `<task>::<metric>[<test case name>]`; a metric scored on the test case's trace
(`@observe(metrics=[...])`, DeepEval's integrations: `trace.metricsData` and `trace.<kind>Spans[].metricsData`)
is a test `<task>::<span name>/<metric>[<test case name>]` (`trace/<metric>` for the trace's own); each passed
or failed as DeepEval decided it
against the metric's threshold, `error` (unscored, never dropped) when the metric raised. The eval key: the task
is the run's `testFile` or `identifier`; DeepEval records no dataset hash (a Confident AI dataset's alias and
version at most), so the dataset is the fingerprint of the test cases' inputs, expected outputs and contexts;
the scorer is every metric with its threshold, strict mode and evaluation model (the judge); the model and
prompt are the run's `hyperparameters` (`model`, `prompt`), the other hyperparameters are shown as changed.
DeepEval's file carries no format version: a file without `testCases` and per-case `metricsData` (the TestRun
of DeepEval 1.x to 4.x) is refused, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey, fingerprint_inputs
from evalkit.core.errors import InputError
from evalkit.core.files import read_text_sha256
from evalkit.core.fingerprint import canonical_json
from evalkit.core.parsing import parse_json, refuse_lone_surrogates

__all__ = ["SOURCE", "read_deepeval"]

_INPUTS = ("input", "expectedOutput", "context", "retrievalContext", "expectedTools", "scenario", "expectedOutcome")
"""What a test case brings to the run (its dataset row), as opposed to what the application produced."""


def read_deepeval(path: Path) -> NeutralRun:
    """Read a saved DeepEval test run (`test_run_*.json`, `.deepeval/.latest_run_full.json`) into a neutral run."""
    text, digest = read_text_sha256(path, "DeepEval test run")
    where = str(path)
    data = parse_json(text, where, "DeepEval test run")
    refuse_lone_surrogates(data, where)
    if isinstance(data, dict) and set(data) == {"testRunData"} and isinstance(data["testRunData"], dict):
        data = data["testRunData"]  # .deepeval/.latest_test_run.json: the same run, under one key
    if isinstance(data, dict) and "testRunLink" in data and "testCases" not in data:
        raise InputError(f"{where}: the file holds only a link to the run on Confident AI (testRunLink), no "
                         "results; gate the test run DeepEval saves with DEEPEVAL_RESULTS_FOLDER")
    if not isinstance(data, dict) or not isinstance(data.get("testCases"), list):
        raise InputError(f"{where}: no testCases list; evalkit reads the test run DeepEval saves with "
                         "DEEPEVAL_RESULTS_FOLDER (test_run_<time>.json), .deepeval/.latest_run_full.json or "
                         ".deepeval/.latest_test_run.json")
    conversational = data.get("conversationalTestCases") or []
    if not isinstance(conversational, list):
        raise InputError(f"{where}: conversationalTestCases is not a list")
    cases = [*data["testCases"], *conversational]
    if not cases:
        raise InputError(f"{where}: the test run holds no test cases; was it cancelled before any was evaluated?")
    seen: dict[str, Mapping[str, Any]] = {}
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise InputError(f"{where}: test case {index} has no name; is the file truncated?")
        if case["name"] in seen:
            raise InputError(f"{where}: test case name {case['name']!r} appears twice; give each test case a unique "
                             "name (LLMTestCase(name=...)) so baseline and candidate pair by name")
        seen[case["name"]] = case
    _check_counts(data, cases, where)
    hyperparameters: dict[str, Any] = data.get("hyperparameters") or {}
    if not isinstance(hyperparameters, dict):
        raise InputError(f"{where}: hyperparameters is not an object")
    task = str(data.get("testFile") or data.get("identifier") or "deepeval")
    tests: list[AdaptedTest] = []
    errored: list[str] = []
    scorers: set[str] = set()
    judges: set[str] = set()
    scores: dict[str, list[float]] = {}
    for name, case in seen.items():
        metrics = [("", metric) for metric in case.get("metricsData") or []] + _span_metrics(case, name, where)
        if not metrics:
            raise InputError(f"{where}: test case {name!r} has no metricsData, on the case or on a span of its "
                             "trace: a sample without scores cannot be gated; rerun it with its metrics")
        failed = False
        for span, metric in metrics:
            test, judge = _metric_test(metric, task, name, where, span)
            scorers.add(f"{metric['name']}({_setting(metric)})")
            if judge:
                judges.add(judge)
            if test.outcome == "error":
                failed = True
            else:
                scores.setdefault(metric["name"], []).append(float(metric["score"]))
            tests.append(test)
        if failed:
            errored.append(name)
    others = {str(k): canonical_json(v) for k, v in sorted(hyperparameters.items()) if k not in ("model", "prompt")}
    dataset = data.get("datasetAlias")
    key = SourceKey(
        task=task,
        dataset=f"{dataset}@{data.get('datasetVersion') or 'unversioned'}" if dataset else f"test cases of {task}",
        dataset_sha=fingerprint_inputs((name, {field: case.get(field) for field in _INPUTS})
                                       for name, case in seen.items()),
        dataset_sha_from="sample inputs",
        scorer="; ".join(sorted(scorers)),
        model=_text(hyperparameters.get("model")),
        prompt=_prompt(hyperparameters, data.get("prompts")),
        prompt_version=_text(hyperparameters.get("prompt")),
        judge=", ".join(sorted(judges)) or None,
        components=others)
    notes = ["DeepEval's metric scores are reported as mean metrics, not gated per case; each metric's pass or fail "
             "against its threshold is gated"]
    flaky = sorted({str(m.get("name")) for c in cases for m in c.get("metricsData") or []
                    if isinstance(m, dict) and m.get("flaky")})
    if flaky:
        notes.append(f"metrics marked flaky ({', '.join(map(str, flaky))}) are gated like the others: evalkit does "
                     "not let a flag excuse a failure")
    return NeutralRun(
        source="deepeval", tool="DeepEval", key=key, tests=tuple(tests),
        metrics={f"{name}/mean_score": sum(values) / len(values) for name, values in sorted(scores.items())},
        errored=tuple(errored), notes=tuple(notes),
        provenance={"file_sha256": digest, "format_version": "TestRun (unversioned)",
                    "run_id": data.get("identifier")})


def _check_counts(data: Mapping[str, Any], cases: list[Any], where: str) -> None:
    """Refuse a run whose cases disagree with DeepEval's own pass and fail counts (an interrupted or edited run)."""
    passed, failed = data.get("testPassed"), data.get("testFailed")
    if isinstance(passed, int) and isinstance(failed, int) and passed + failed != len(cases):
        raise InputError(f"{where}: testPassed + testFailed is {passed + failed} but the run holds {len(cases)} "
                         "test cases; an interrupted or edited run: rerun it")


_SPAN_LISTS = ("baseSpans", "agentSpans", "llmSpans", "retrieverSpans", "toolSpans")
"""Where a trace keeps its spans by kind (deepeval.tracing.api.TraceApi)."""


def _span_metrics(case: Mapping[str, Any], name: str, where: str) -> list[tuple[str, Any]]:
    """The metrics DeepEval scored on the test case's trace (`@observe(metrics=[...])`: component-level evals and
    the framework integrations), each with where it was scored: `trace`, or the span's name (`retrieve`, and
    `retrieve#2` for a second span of that name in the trace)."""
    trace = case.get("trace")
    if trace is None:
        return []
    if not isinstance(trace, dict):
        raise InputError(f"{where}: test case {name!r}: trace is not an object")
    found: list[tuple[str, Any]] = [("trace", metric) for metric in _list(trace, "metricsData", name, where)]
    names: dict[str, int] = {}
    for kind in _SPAN_LISTS:
        for span in _list(trace, kind, name, where):
            if not isinstance(span, dict):
                raise InputError(f"{where}: test case {name!r}: an entry of trace.{kind} is not an object")
            span_metrics = _list(span, "metricsData", name, where)
            label = str(span.get("name") or kind.removesuffix("Spans"))
            names[label] = names.get(label, 0) + 1
            if names[label] > 1:
                label = f"{label}#{names[label]}"
            found += [(label, metric) for metric in span_metrics]
    return found


def _list(data: Mapping[str, Any], field: str, case: str, where: str) -> list[Any]:
    value = data.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: test case {case!r}: {field} is not a list")
    return value


def _metric_test(metric: Any, task: str, case: str, where: str, span: str = "") -> tuple[AdaptedTest, str | None]:
    """One metric of one test case (or of a span of its trace) as a test, and the metric's evaluation model (its
    judge), if any."""
    if not isinstance(metric, dict) or not isinstance(metric.get("name"), str):
        raise InputError(f"{where}: test case {case!r} has a metricsData entry without a name")
    name = metric["name"]
    nodeid = f"{task}::{span + '/' if span else ''}{name}[{case}]"
    judge = metric.get("evaluationModel")
    if metric.get("error"):
        return AdaptedTest(nodeid, "error", case, message=f"metric error: {str(metric['error'])[:200]}"), judge
    score, success = metric.get("score"), metric.get("success")
    if not isinstance(score, int | float) or isinstance(score, bool) or not isinstance(success, bool):
        raise InputError(f"{where}: test case {case!r}, metric {name!r} has no score or success and no error: a "
                         "sample without scores cannot be gated; rerun the metric")
    message = None if success else f"score {score} below threshold {metric.get('threshold')}: {metric.get('reason')}"
    return AdaptedTest(nodeid, "passed" if success else "failed", case,
                       message=message[:200] if message else None), judge


def _setting(metric: Mapping[str, Any]) -> str:
    """What decides a metric's pass or fail: its threshold, strict mode and evaluation model."""
    parts = [f"threshold={metric.get('threshold')}", f"strict={bool(metric.get('strictMode'))}"]
    if metric.get("evaluationModel"):
        parts.append(f"model={metric['evaluationModel']}")
    return ", ".join(parts)


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else canonical_json(value)


def _prompt(hyperparameters: Mapping[str, Any], prompts: Any) -> str | None:
    """The prompt as the run recorded it: the `prompt` hyperparameter and any tracked prompts."""
    parts = [canonical_json(hyperparameters["prompt"])] if "prompt" in hyperparameters else []
    if isinstance(prompts, list) and prompts:
        parts.append(canonical_json(prompts))
    return "\n".join(parts) or None


SOURCE = Source(
    name="deepeval", summary="DeepEval test runs (test_run_*.json from DEEPEVAL_RESULTS_FOLDER)", read=read_deepeval,
    description="Each metric of each test case becomes a test <task>::<metric>[<test case name>], passed or failed "
                "as DeepEval decided it against the metric's threshold; a metric that raised is an error "
                "(unscored, never dropped). Runs whose test cases or metric settings differ are incomparable.")
