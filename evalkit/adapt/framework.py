"""The adapter framework: other eval tools' outputs gated like evalkit's own runs.

`evalkit adapt SOURCE BASELINE CANDIDATE [--policy P] [--out DIR]` reads both files with the SOURCE's
adapter into neutral runs (evalkit.adapt.neutral), maps each to a run report, refuses to compare runs whose task,
dataset, scorer or contract differ (each reason naming the field), and otherwise gates them with evalkit's own
`decide()`. What the adapters derived or left out (a dataset fingerprinted from its inputs, errored samples, what
the format cannot carry) is added to the decision's warnings.

How a source plugs in
---------------------
1. Write a module (evalkit's own: `evalkit/adapt/<source>.py`, the source's name with `-` as `_`) defining
   `SOURCE = Source(name="<source>", summary="<one line for --help>", read=<function>)`. `read(path)` takes the
   path given on the command line (a file, or a folder where the tool writes one) and returns a `NeutralRun`:
   - `key`: a `SourceKey` from what the file records: task, dataset and its hash (none recorded: use
     `fingerprint_inputs` over (sample id, input) and set `dataset_sha_from="sample inputs"`), model, scorer
     text (scorers/assertions/metrics with their settings and judge), prompt or template text, and `contract`
     for further settings that decide what a score means;
   - `tests`: one `AdaptedTest` per sample x scorer, nodeid `<task>::<scorer>[<sample id>]`, outcome passed /
     failed / error / skipped, `case` = sample id, `repeats=(passed, runs)` for epochs or repeats (one test,
     never one per epoch; `passed` only when every run passed), a one-line `message` for what did not pass;
   - `errored`: sample ids that errored or have no score: their tests are `error`, never dropped;
   - `metrics` (the tool's aggregates), `notes` (what is not gated and why), `provenance` (file SHA-256,
     format version, run id).
   Read files through `evalkit.core.files.read_bytes` (size-bounded) and `evalkit.core.parsing.parse_json`.
   Refuse bad input with one `InputError` line naming the file, the field and the fix: a truncated file, a
   failed or cancelled run, a sample without scores, duplicate sample ids, a mix of epochs, a format version
   older than the one read (name the version). Keep the module pure apart from reading the file.
2. Register it in the `evalkit.adapters` entry-point group (`ENTRY_POINT_GROUP`) of the package that holds it:
   `[project.entry-points."evalkit.adapters"]` `<source> = "<module>:SOURCE"` in its pyproject.toml, as
   evalkit registers deepeval, inspect, junit, lm-eval, otel and promptfoo in its own. Once the package is installed
   the source is offered on the command line; `--policy`, `--out` and the decision's rendering come with it. A
   third-party package plugs in the same way, without a change to evalkit.
3. Tests: `tests/adapt/test_adapt_<source>.py`; fixtures made by the real tool under `tests/corpus/adapt/<source>/`
   with a README giving the exact commands and tool version; a README section "Gating what other eval tools
   produce" per source.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.adapt.neutral import NeutralRun, to_run_report
from evalkit.core import registry
from evalkit.core.errors import InputError
from evalkit.core.policy import Policy
from evalkit.core.registry import Kind
from evalkit.gate.decide import changed_components, decide, refuse
from evalkit.gate.decision import Decision
from evalkit.gate.findings import Effect, Finding
from evalkit.gate.rules import incomparable_finding
from evalkit.records.report_reader import RunReport, report_from_mapping

__all__ = ["ENTRY_POINT_GROUP", "SOURCES", "Adaptation", "Source", "available_sources", "gate_runs",
           "incomparable_fields", "load_source"]

ENTRY_POINT_GROUP = "evalkit.adapters"
"""The entry-point group a source is registered in: `<name> = "<module>:SOURCE"`, evalkit's own sources in its
pyproject.toml and a third-party package's in its own, so a package that is installed is offered on the command
line (as pytest finds plugins in `pytest11` and inspect_ai in `inspect_ai`)."""


@dataclass(frozen=True)
class Source:
    """A source adapter: its command-line name, one line of help, and the function reading a path into a run."""

    name: str
    summary: str
    read: Callable[[Path], NeutralRun]
    description: str = ""
    """Longer help for `evalkit adapt <name> --help`: what maps to what."""
    read_thresholded: Callable[[Path, Mapping[str, float]], NeutralRun] | None = None
    """For a source whose scores are numbers: `read` with a pass threshold per scorer (`--pass-threshold
    SCORER=VALUE`), where full credit is not what passes; the thresholds join the run's contract."""
    read_checked: Callable[[Path, Path], NeutralRun] | None = None
    """For a source gated with evalkit's own checks (`--checks FILE`, then required): `read` with the checks
    file's path; the file's SHA-256 joins the run's contract, so runs checked with different files are
    incomparable."""


SOURCES: Kind[Source] = Kind(ENTRY_POINT_GROUP, "source", Source, lambda source: source.name)
"""The adapter extension point in evalkit's registry (evalkit.core.registry; public in evalkit.plugins)."""


def available_sources() -> list[str]:
    """The sources registered in the `evalkit.adapters` entry points, in name order."""
    return list(registry.entries(SOURCES))


def load_source(name: str) -> Source:
    """The adapter registered as `name` (its module is imported only when used)."""
    known = registry.entries(SOURCES)
    if name not in known:
        raise InputError(f"unknown source {name!r}; known sources: {', '.join(known)}")
    return registry.load(SOURCES, name)


@dataclass(frozen=True)
class Adaptation:
    """Both runs as run reports (the mappings written to `--out`, and as the gate read them) and the decision."""

    baseline: Mapping[str, Any]
    candidate: Mapping[str, Any]
    baseline_report: RunReport
    candidate_report: RunReport
    decision: Decision


def incomparable_fields(baseline: NeutralRun, candidate: NeutralRun) -> list[str]:
    """Why two runs measure different things (empty when they are comparable), each reason naming the field."""
    b, c = baseline.key, candidate.key
    reasons = []
    if baseline.source != candidate.source:
        reasons.append(f"source: baseline is a {baseline.source} run, candidate a {candidate.source} run")
    if b.task != c.task:
        reasons.append(f"task: baseline ran task {b.task!r}, candidate task {c.task!r}; gate runs of one task")
    if (b.dataset, b.dataset_sha) != (c.dataset, c.dataset_sha):
        how = ("" if "sample inputs" not in (b.dataset_sha_from, c.dataset_sha_from)
               else " (fingerprinted from the sample inputs: the samples or their inputs differ)")
        reasons.append(f"dataset: baseline ran {b.dataset} ({b.dataset_sha[:12]}), candidate ran {c.dataset} "
                       f"({c.dataset_sha[:12]}){how}; rerun the baseline on the candidate's dataset")
    if b.scorer != c.scorer:
        reasons.append(f"scorer: baseline scored with {b.scorer}, candidate with {c.scorer}; scores are not "
                       "comparable: rerun the baseline with the candidate's scorer")
    for name in sorted(set(b.contract) | set(c.contract)):
        if b.contract.get(name) != c.contract.get(name):
            reasons.append(f"{name}: baseline {b.contract.get(name)!r}, candidate {c.contract.get(name)!r}; "
                           f"rerun the baseline with the candidate's {name}")
    return reasons


def gate_runs(policy: Policy, baseline: NeutralRun, candidate: NeutralRun, *, baseline_where: str = "baseline",
              candidate_where: str = "candidate") -> Adaptation:
    """Map both runs to run reports and gate the candidate against the baseline under `policy`."""
    adapted_baseline = to_run_report(baseline, baseline_where)
    adapted_candidate = to_run_report(candidate, candidate_where)
    base_report = report_from_mapping(adapted_baseline, baseline_where)
    cand_report = report_from_mapping(adapted_candidate, candidate_where)
    reasons = incomparable_fields(baseline, candidate)
    if reasons:  # named by field here; decide() would word them as evalkit's own suites' keys
        decision = refuse(policy, [incomparable_finding(policy, reason) for reason in reasons],
                          changed_components(base_report.eval, cand_report.eval))
    else:
        decision = decide(policy, base_report, cand_report)
    before, after = _notes(baseline), _notes(candidate)
    notes = ([f"baseline and candidate: {note}" for note in before if note in after]
             + [f"baseline: {note}" for note in before if note not in after]
             + [f"candidate: {note}" for note in after if note not in before])
    decision = dataclasses.replace(decision, findings=(
        *decision.findings, *(Finding("adapter_note", Effect.WARN, note, subject=note) for note in notes)))
    return Adaptation(adapted_baseline, adapted_candidate, base_report, cand_report, decision)


def _notes(run: NeutralRun) -> list[str]:
    """What a reader of the decision must know about how the run was read."""
    notes = list(run.notes)
    if run.key.dataset_sha_from == "unrecorded":
        notes.append(f"{run.tool} records no dataset: runs of different data cannot be told apart, only runs "
                     "of different tests")
    if run.key.dataset_sha_from == "sample inputs":
        notes.append(f"{run.tool} records no fingerprint of dataset {run.key.dataset}; its identity is the "
                     f"fingerprint of the sample inputs ({run.key.dataset_sha[:12]})")
    if run.errored:
        shown = ", ".join(run.errored[:5]) + (", ..." if len(run.errored) > 5 else "")
        notes.append(f"{len(run.errored)} sample(s) errored or were not scored; they count as errored tests, "
                     f"never dropped: {shown}")
    return notes
