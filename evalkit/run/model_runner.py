"""Run a model suite: load its cases, prompt, task and tools, obtain every call (replayed or live), hand them to
the suite's checks and write the run report.

Everything that is measured is loaded and checked before the first call: a dataset, prompt or checks file that
cannot serve the run is refused (exit 3) before any model is called.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalkit.core.call_id import CallId
from evalkit.core.config import Mode, ModelConfig, RunConfig
from evalkit.core.dataset import Dataset
from evalkit.core.errors import ConfigError, InputError
from evalkit.core.files import read_text
from evalkit.core.key import recording_path
from evalkit.core.loaders import load_cases
from evalkit.core.version import __version__
from evalkit.gate.sequential_rule import pool, verdicts
from evalkit.judging.check_spec import ChecksFile
from evalkit.live.contract import contract_problems
from evalkit.live.redact import Redactor
from evalkit.project.paths import project_path, project_root, shown
from evalkit.records.report_reader import Counts, RunReport, report_from_mapping
from evalkit.run.agent_loop import Agent, suite_agent, trajectories_json
from evalkit.run.checking import check_and_report, checks_report, run_provenance, suite_input
from evalkit.run.conversation import scripts_of
from evalkit.run.declared import read_checks, with_check_judges
from evalkit.run.eval_block import kept_text
from evalkit.run.execute import Execution, LiveSetup, Source, Workload, execute
from evalkit.run.identity import run_key, run_settings
from evalkit.run.looped_metrics import LoopedMetrics
from evalkit.run.media import attach_media, media_fields, media_section, refuse_media
from evalkit.run.otel_export import call_spans, export_text, write_export
from evalkit.run.record_or_replay import obtain
from evalkit.run.recording import Provenance, Recording, load_recording
from evalkit.run.rounds import sample_in_rounds
from evalkit.run.run_input import CallInput, RunInput
from evalkit.run.run_plan import RunPlan, RunResult
from evalkit.run.run_secrets import redactor_for
from evalkit.run.suite import load_task

__all__ = ["baseline_replies", "run_model_suite"]


def run_model_suite(plan: RunPlan) -> RunResult:
    """Execute and check one run of a model suite; writes `report.json` (and the recording, in live modes).

    With a baseline, its recorded task replies are offered to the suite's judge (pairwise judging), and a run
    sampled in rounds (`run.repeats=auto`) compares against its recorded samples (`plan.baseline_name` names it in
    the report)."""
    config = plan.config
    # validate_config guarantees a model suite its model, prompt and dataset file
    assert config.model is not None and config.prompt is not None and config.dataset.file is not None
    suite_dir = project_path(config.suite.path)
    dataset = load_cases(project_path(config.dataset.file), config.dataset.fields, config.dataset.name,
                         config.dataset.version, config.dataset.limits)
    media = media_fields(config.dataset)
    dataset = attach_media(dataset, media, project_path(config.dataset.file), config.dataset.limits)
    refuse_media(config.model, dataset, media)  # up front: never a refusal mid-run
    prompt_path = project_path(config.prompt.file)
    prompt_text = read_text(prompt_path, f"prompt {config.prompt.version}")
    agent = suite_agent(config.agent, suite_dir)  # its tools are part of the identity
    if agent is not None and scripts_of(dataset.cases, shown(project_path(config.dataset.file))) is not None:
        agent.toolbox.close()
        raise ConfigError(f"suite {config.suite.name}: a suite with tools cannot run conversation cases yet (its "
                          "cases' 'conversation' field); drop the tools, or the conversations")
    try:
        return _run_loaded(plan, suite_dir, dataset, prompt_path, prompt_text, agent)
    finally:
        if agent is not None:
            agent.toolbox.close()


def _run_loaded(plan: RunPlan, suite_dir: Path, dataset: Dataset, prompt_path: Path, prompt_text: str,
                agent: Agent | None) -> RunResult:
    """The run of a loaded model suite: its key, its calls, its checks and its report."""
    config, baseline, baseline_name, calls = plan.config, plan.baseline, plan.baseline_name, plan.calls
    assert config.model is not None and config.prompt is not None and calls is not None
    tools = agent.toolbox.identity() if agent is not None else None
    key, settings = run_key(config, dataset, prompt_text, tools), run_settings(config, tools)
    rec_path = recording_path(key, project_path(config.run.recordings))
    redact = redactor_for(config)
    read: dict[Path, Recording] = {}  # the baseline's recording, when it is this run's, is read once
    replies = baseline_replies(baseline, project_path(config.run.recordings), read)
    task = load_task(suite_dir, config.components, replies)
    declared = read_checks(suite_dir, dataset.cases)
    judged = sorted({c.kind for c in declared.checks if c.call == "judge"}) if declared is not None else []
    if config.judge is None and judged:
        raise ConfigError(f"{suite_dir / 'checks.yaml'}: {', '.join(judged)} checks need the suite's pinned judge; "
                          "add `- /judge: NAME` to the suite option's defaults (or pass judge=NAME)")
    most = config.run.most_samples
    _refuse_unreachable_reducers(declared, most, suite_dir)
    task = with_check_judges(task, declared, replies)
    scripts = scripts_of(dataset.cases, shown(project_path(config.dataset.file) if config.dataset.file else suite_dir))
    simulated = sorted(case for case, script in (scripts or {}).items() if script.simulated)
    if simulated and config.simulator is None:
        raise ConfigError(f"case {simulated[0]} (and {len(simulated) - 1} more) has a simulated user (conversation: "
                          "{persona, goal}), but the run has no simulator: add `- /simulator: NAME` to the suite "
                          "option's defaults, or pass simulator=NAME")
    work = Workload(task, dataset.cases, prompt_text, agent, scripts)

    def run_input(execution: Execution, provenance: Provenance) -> RunInput:
        return RunInput(
            key=key.model_dump(mode="json"), components=config.components, settings=settings,
            suite=suite_input(config, declared, replies),
            provenance=run_provenance(config, rec_path, provenance),
            cases=list(dataset.cases),
            calls={cid: CallInput(status=r.status, text=r.text, reason=r.reason,
                                  stop_reason=r.reply.stop_reason if r.reply else None,
                                  contract=contract_problems(r.reply) if r.reply else [])
                   for cid, r in execution.checked_calls().items()},
            trajectories=trajectories_json(execution.trajectories),
            repeats=most, samples=execution.samples or {},  # the checks run on every sample (sample_protocol)
            judge_repeats=calls.judge_repeats)

    def run_calls(recording: Recording, live: LiveSetup | None) -> Execution:
        source = Source(recording, shown(rec_path), live)

        def obtain_round(samples: Mapping[str, int] | None, prior: Execution | None) -> Execution:
            return execute(calls, work, source, samples=samples, prior=prior)

        if not config.run.sequential:
            return obtain_round(None, None)

        def counts(execution: Execution, samples: Mapping[str, int]) -> Mapping[str, Counts]:
            between = dataclasses.replace(execution, samples=dict(samples))
            data = checks_report(config, suite_dir, run_input(between, recording.provenance), redact)
            return report_from_mapping(data, f"a round of suite {config.suite.name}").repeats

        return sample_in_rounds(obtain_round, counts, cases=[case.id for case in dataset.cases],
                                settings=config.run, alpha=config.policy.repeats.alpha,
                                pool=pool(baseline) if baseline else None, recorded=recording.provenance.rounds,
                                recording=recording, replay=config.mode is Mode.REPLAY)

    started_ns = time.time_ns()  # where a trace export lays the calls that were not sent now (replayed ones)
    recording, execution = obtain(config, key, settings, rec_path, redact, _roles(config, work), run_calls,
                                  cached=read)
    extra, looped = _sections(config, work, prompt_path, dataset, execution, redact)
    report, report_path = check_and_report(config, suite_dir, run_input(execution, recording.provenance), redact,
                                           extra, sequential=_sequential(config, execution, baseline, baseline_name),
                                           looped=looped)
    if config.run.otel_export:
        _export_trace(config, execution, report, redact, started_ns)
    return RunResult(key, report, report_path, rec_path)


def _roles(config: RunConfig, work: Workload) -> dict[str, tuple[ModelConfig, str]]:
    """The providers a live run of the suite calls, by role, each with the words that name it in a refusal: the model
    under test, the judge where the suite judges, the simulated user where a conversation has one."""
    assert config.model is not None
    roles = {"model": (config.model, "the model under test")}
    if config.judge is not None and work.task.judged:
        roles["judge"] = (config.judge, "the suite's pinned judge")
    scripts = work.conversations
    if config.simulator is not None and scripts is not None and any(s.simulated for s in scripts.values()):
        roles["simulator"] = (config.simulator, "the simulated user")
    return roles


def _sections(config: RunConfig, work: Workload, prompt_path: Path, dataset: Dataset, execution: Execution,
              redact: Redactor) -> tuple[dict[str, Any], LoopedMetrics | None]:
    """What the runner adds to the checks' report (the `extra` sections), and what it adds from the checks' outcomes
    per case (an agent's or a conversation's metrics)."""
    assert config.prompt is not None
    texts = {"prompt": kept_text(work.prompt, config.prompt.version, shown(prompt_path), redact)}
    extra: dict[str, Any] = {"execution": execution.stats, "texts": texts}
    if media := media_fields(config.dataset):  # each media case's description and thumbnail, for report.html
        extra["media"] = media_section(dataset, media)
    looped = work.agent is not None or work.conversations is not None  # cases of several calls, each a trajectory
    if not looped:
        return extra, None
    # each case's trajectory, cut and (with the whole report) redacted like the outputs
    extra["trajectories"] = trajectories_json(execution.trajectories)
    return extra, LoopedMetrics(agent=work.agent is not None, trajectories=execution.trajectories,
                                reached=execution.reached)


def _export_trace(config: RunConfig, execution: Execution, report: RunReport, redact: Redactor,
                  started_ns: int) -> None:
    """Write `run.otel_export`: the run's calls as OTLP JSON, each case's span with its outcome from the report."""
    assert config.run.otel_export is not None and config.model is not None
    requests = execution.caller.requests if execution.caller is not None else {}
    providers = {"model": config.model.provider} | ({"judge": config.judge.provider} if config.judge else {}) | (
        {"simulator": config.simulator.provider} if config.simulator else {})
    passed = {str(case["id"]): bool(case["passed"]) for case in report.cases
              if isinstance(case.get("passed"), bool) and case.get("status") != "unscored"}
    spans = call_spans(execution.calls, requests, providers, started_ns)
    text = export_text(spans, suite=config.suite.name, mode=str(config.mode), passed=passed, version=__version__,
                       redact=redact, messages=config.run.otel_messages)
    write_export(Path(config.run.otel_export), text)


def _sequential(config: RunConfig, execution: Execution, baseline: RunReport | None,
                baseline_name: str | None) -> Callable[[Mapping[str, Counts]], dict[str, Any]] | None:
    """For a run sampled in rounds: the report's `sequential` block, from the final counts (so a replay that took
    the same samples writes the same block)."""
    if not config.run.sequential or execution.samples is None:
        return None
    run, samples, rounds = config.run, dict(execution.samples), execution.rounds
    alpha = config.policy.repeats.alpha

    def block(counts: Mapping[str, Counts]) -> dict[str, Any]:
        found = {} if baseline is None else verdicts(pool(baseline), counts, alpha=alpha, delta=run.repeat_delta,
                                                     futility=run.repeat_futility, paired=run.max_repeats)
        return {"max_repeats": run.max_repeats, "batch": run.repeat_batch, "delta": run.repeat_delta,
                "futility": run.repeat_futility, "alpha": alpha,
                "baseline": None if baseline is None else (baseline_name or "given"), "rounds": rounds,
                "samples": samples, "verdicts": {name: str(v) for name, v in sorted(found.items())}}

    return block


def _refuse_unreachable_reducers(declared: ChecksFile | None, repeats: int, suite_dir: Path) -> None:
    """A declared check reducing by `at_least K` with fewer samples could never pass: refused before any call (a
    hand-written test's marker is read when pytest collects it)."""
    for spec in declared.checks if declared is not None and repeats > 1 else ():
        if spec.reduce.rule == "at_least" and spec.reduce.value is not None and spec.reduce.value > repeats:
            raise ConfigError(f"{suite_dir / 'checks.yaml'}: check {spec.name}: reduce {spec.reduce.name} asks for "
                              f"more passing samples than the run takes (run.repeats={repeats}); lower it or run "
                              "more repeats")


def baseline_replies(baseline: RunReport | None, recordings: Path,
                     read: dict[Path, Recording] | None = None) -> dict[str, str]:
    """case id -> the baseline's task reply, from the recording its report names; empty when there is none. The
    recording read is kept in `read` under its resolved path, so a replay of the same file need not read it again.

    The report names the recording, so only a file inside the project's `recordings` folder or the run's is
    read: a baseline must not point evalkit at any file on the machine. One recorded elsewhere (in another run's
    folder) is not read, and the judge then has no baseline replies, as for a baseline without a recording."""
    name = baseline.provenance.get("recording") if baseline is not None else None
    if not isinstance(name, str) or "\0" in name:
        return {}
    path = project_path(name)
    if not any(_inside(path, folder) for folder in (project_root() / "recordings", recordings)):
        return {}
    if not os.path.lexists(path):
        return {}
    recording = load_recording(path)
    if read is not None:
        read[path.resolve()] = recording
    # sample 0 of each case: the reply a run with N = 1 would have made (evalkit.run.samples)
    out = {}
    for call_id, entry in recording.calls.items():
        try:
            which = CallId.parse(call_id)
        except InputError:  # a key no run of this evalkit makes is no baseline reply; replay refuses it by name
            continue
        if which == CallId.task(which.case) and entry.reply is not None and entry.reply.text is not None:
            out[which.case] = entry.reply.text
    return out


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True
