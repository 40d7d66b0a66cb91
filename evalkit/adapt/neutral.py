"""The neutral run: what every source adapter reads another tool's output into, and its mapping to a run report.

A source (evalkit/adapt/<source>.py) knows one tool's format; this module knows evalkit's. Between them stands a
`NeutralRun`: the run's eval key as the tool recorded it (`SourceKey`), one `AdaptedTest` per sample x scorer,
run-level metrics, the samples that errored or went unscored, and notes on what is not gated. `to_run_report`
turns it into the run report the gate reads (evalkit.records.report_reader), checking what every source must honour:
unique test ids, a repeat count that agrees with its outcome, at least one test. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evalkit.core.errors import InputError
from evalkit.core.fingerprint import fingerprint

__all__ = ["ADAPTED_OUTCOMES", "AdaptedTest", "NeutralRun", "SourceKey", "fingerprint_inputs",
           "to_run_report"]

Outcome = Literal["passed", "failed", "error", "skipped"]
ADAPTED_OUTCOMES = frozenset({"passed", "failed", "error", "skipped"})
"""What a sample x scorer can come to: passed, failed, error (errored or unscored: it counts as not passing,
never dropped) and skipped (the tool itself skipped it; counted in pass_rate, not in ran_pass_rate)."""

UNRECORDED = "unrecorded"
"""Spelled in the eval key where the tool records no value (JUnit records no model)."""


@dataclass(frozen=True)
class SourceKey:
    """The eval key as the tool recorded it. Two runs whose task, dataset, scorer or `contract` differ are
    incomparable, each reason naming the field; a difference in model or prompt is the change under test."""

    task: str
    """The task, suite or benchmark name (joins the key's `suite` as `<source>:<task>`)."""
    dataset: str
    """The dataset's name as recorded (a file, a benchmark name, or `sample inputs of <task>`)."""
    dataset_sha: str
    """The dataset's fingerprint: the tool's own hash, or `fingerprint_inputs` of the samples' inputs."""
    dataset_sha_from: Literal["source", "sample inputs", "unrecorded"]
    """Where `dataset_sha` came from: recorded by the tool, computed here from the sample inputs, or nowhere
    (a test runner's JUnit XML has no dataset: `dataset_sha` is then a constant). The last two are said in the
    decision's warnings, so a reader knows what the dataset's identity rests on."""
    scorer: str
    """The scorers, or assertions, or metrics, with their settings and judge model where there is one: one text
    (e.g. `match(location=end)`); a change makes the runs incomparable."""
    model: str | None = None
    """The model under test; None when the tool records none."""
    prompt: str | None = None
    """The prompt, template or solver plan as text (hashed into `prompt_sha`); None when the tool records none."""
    prompt_version: str | None = None
    """A short name for the prompt (shown in the key), when the tool has one."""
    judge: str | None = None
    """The judge model of model-graded scorers, when the tool records it (also part of `scorer`)."""
    contract: Mapping[str, str] = field(default_factory=dict)
    """Further settings that decide what a score means (few-shot count, a threshold): a difference in any of
    them makes the runs incomparable, the reason naming it."""
    components: Mapping[str, str] = field(default_factory=dict)
    """Further settings of the system under test (generation config, solver options): shown as `changed`."""


@dataclass(frozen=True)
class AdaptedTest:
    """One sample x scorer (or assertion, or metric) as an evalkit test."""

    nodeid: str
    """`<task>::<scorer>[<sample id>]`: the scorer is the test, each sample a parameter of it."""
    outcome: Outcome
    case: str
    """The sample id: the case the test belongs to (pairs a case's tests in the gate's statistics)."""
    repeats: tuple[int, int] | None = None
    """(passed, runs) when the tool sampled it several times (epochs, repeats); the outcome is then `passed`
    only when every run passed."""
    message: str | None = None
    """Why it did not pass, one line (the score and the target, the error), shown in decisions."""


@dataclass(frozen=True)
class NeutralRun:
    """One run of another tool, read by its source adapter."""

    source: str
    """The source's command-line name (`inspect`, `junit`)."""
    tool: str
    """The tool and version that wrote the file, as the file records it (`inspect_ai 0.3.140`)."""
    key: SourceKey
    tests: tuple[AdaptedTest, ...]
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    """Run-level metrics (the tool's own aggregates: accuracy, mean score), higher is better."""
    errored: tuple[str, ...] = ()
    """Sample ids that errored or were not scored: their tests are `error`, listed here and in the report's
    cases as unscored, so an incomplete candidate cannot pass."""
    notes: tuple[str, ...] = ()
    """What the adapter left out or derived and why (one sentence each); they become the decision's warnings."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Where the run came from: the file's SHA-256, the tool's run id, its format version, ..."""


def fingerprint_inputs(inputs: Iterable[tuple[str, Any]]) -> str:
    """A dataset fingerprint from (sample id, input) pairs, for tools that record no hash of their dataset: the
    same samples with the same inputs give the same fingerprint, whatever order the run wrote them in."""
    return fingerprint(sorted(([sample, value] for sample, value in inputs), key=lambda pair: pair[0]))


def to_run_report(run: NeutralRun, where: str) -> dict[str, Any]:
    """The run report the gate reads (eval, tests, metrics, cases, provenance); refuses, naming `where`, a run
    with no tests, a duplicate test id, an unknown outcome or a repeat count that contradicts its outcome."""
    if not run.tests:
        raise InputError(f"{where}: the {run.source} run holds no scored samples, so there is nothing to gate")
    key = run.key
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for test in run.tests:
        if test.nodeid in seen:
            raise InputError(f"{where}: test {test.nodeid!r} appears twice; each sample x scorer may appear once "
                             "(duplicate sample ids?)")
        seen.add(test.nodeid)
        if test.outcome not in ADAPTED_OUTCOMES:
            raise InputError(f"{where}: test {test.nodeid!r} has outcome {test.outcome!r}; expected one of "
                             f"{', '.join(sorted(ADAPTED_OUTCOMES))}")
        entry: dict[str, Any] = {"nodeid": test.nodeid, "outcome": test.outcome, "case": test.case}
        if test.repeats is not None:
            passed, runs = test.repeats
            if not 0 <= passed <= runs or runs < 1 or (test.outcome == "passed") != (passed == runs):
                raise InputError(f"{where}: test {test.nodeid!r}: {passed} of {runs} runs passed but its outcome "
                                 f"is {test.outcome!r}")
            entry["repeats"] = {"passed": passed, "runs": runs}
        if test.message and test.outcome != "passed":
            # where pytest-json-report keeps it, so evalkit.core.failure reads it like any pytest failure
            entry["call"] = {"outcome": "failed" if test.outcome != "skipped" else "skipped",
                             "crash": {"message": test.message}}
        tests.append(entry)
    metrics = {}
    for name, value in run.metrics.items():
        if value is not None and (isinstance(value, bool) or not math.isfinite(value)):
            raise InputError(f"{where}: metric {name!r} is {value!r}; a metric is a finite number")
        metrics[name] = value
    return {
        "eval": {
            "suite": f"{run.source}:{key.task}",
            "dataset": key.dataset,
            "dataset_sha": key.dataset_sha,
            "model": key.model or UNRECORDED,
            "prompt_version": key.prompt_version or (UNRECORDED if key.prompt is None else
                                                     f"sha:{fingerprint(key.prompt)[:12]}"),
            "prompt_sha": fingerprint(key.prompt) if key.prompt is not None else UNRECORDED,
            # the scorer (and the contract) stand where evalkit keeps its judge, so `evalkit gate`
            # on two adapted reports also refuses runs scored differently
            "judge_model": "; ".join([f"scorer:{key.scorer}",
                                      *(f"{name}={value}" for name, value in sorted(key.contract.items()))]),
            "components": dict(sorted(key.components.items())),
        },
        "tests": tests,
        "metrics": metrics,
        "cases": [{"id": sample, "status": "unscored"} for sample in run.errored],
        "provenance": {
            "execution_mode": f"adapted:{run.source}",
            "tool": run.tool,
            "dataset_fingerprint": key.dataset_sha_from,
            "judge": key.judge,
            "errored": list(run.errored),
            "notes": list(run.notes),
            **dict(run.provenance),
        },
    }
