"""Run a suite under an eval key: obtain the calls, run the pytest checks in a subprocess, and
return the run report.

pytest runs in a fresh process for every run, never in-process: the jobs of a Hydra sweep share a
process, and an in-process pytest would keep the first job's test modules for the next one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.core.atomic import write_atomic
from evalkit.core.call_id import CallId
from evalkit.core.config import Mode, ModelConfig, RunConfig
from evalkit.core.dataset import Dataset
from evalkit.core.errors import ConfigError, InputError, ProviderError, RecordingError, one_line
from evalkit.core.files import read_text
from evalkit.core.fingerprint import sha256
from evalkit.core.json_text import compact_json, indented_json, json_value
from evalkit.core.key import EvalKey, build_key, recording_path
from evalkit.core.loaders import load_cases
from evalkit.core.outputs import refuse_link
from evalkit.core.provider_specs import provider_spec
from evalkit.core.version import __version__
from evalkit.gate.sequential_rule import pool, verdicts
from evalkit.judging.check_spec import ChecksFile
from evalkit.live.budget import Budget, UnitBudget
from evalkit.live.contract import contract_problems
from evalkit.live.progress import progress_enabled
from evalkit.live.providers import Provider, make_provider
from evalkit.live.redact import MIN_SECRET, Redactor, credential_name
from evalkit.programs.candidate import ModelAccess, candidate_config, run_programs
from evalkit.programs.evidence import checks_fingerprint, judging_files, refuse_changes, snapshot
from evalkit.programs.isolation import probe_isolation
from evalkit.programs.turns import transcript
from evalkit.project.paths import PROJECT_ENV, project_path, project_root, shown
from evalkit.records.report_reader import Counts, RunReport, report_from_mapping
from evalkit.run.agent_loop import Agent, agent_metrics, suite_agent, trajectories_json
from evalkit.run.canonical import canonical_text
from evalkit.run.conversation import conversation_metrics, scripts_of
from evalkit.run.declared import read_checks, with_check_judges
from evalkit.run.destinations import check_run_destinations
from evalkit.run.eval_block import kept_text
from evalkit.run.execute import Execution, LiveSetup, ProgramCalls, execute, provider_limits
from evalkit.run.identity import closest_recording, reusable_calls, run_key, run_settings
from evalkit.run.journal import Journal, cut_torn_tail, journal_path, read_journal, recording_lock
from evalkit.run.manifest import load_manifest_dataset
from evalkit.run.media import attach_media, media_fields, media_section, refuse_media
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.otel_export import call_spans, export_text, write_export
from evalkit.run.plugin import RUN_OPTION
from evalkit.run.program_mcp import ProgramMcp
from evalkit.run.recording import ForeignRecording, Provenance, Recording, load_recording, save_recording
from evalkit.run.rounds import sample_in_rounds
from evalkit.run.run_input import CallInput, RunInput, SuiteInput, read_run_input
from evalkit.run.shards import merged_report, shard_file, shard_name
from evalkit.run.suite import load_task
from evalkit.run.workers import shard_args, worker_count

__all__ = ["RunResult", "run_suite", "run_checks"]

# pytest's exit codes that still mean "the checks ran": 0 all passed, 1 some failed.
_CHECKS_RAN = (0, 1)
_NO_TESTS = 5
PROGRAM_ENDPOINT_RUN_KIND = ("candidate program per case, its model calls through evalkit's endpoint (replayed from "
                             "the recording, or called live and recorded)")
PROGRAM_RUN_KIND = ("candidate program per case (authored deterministic fixtures in the shipped suite); "
                    "no model calls")
# Settings from the caller's environment that would change which checks run or how.
_PYTEST_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
_OWN_PLUGINS = ("evalkit.run.plugin", "pytest_jsonreport.plugin")
"""The plugins a suite's checks always need, by module name: loaded this way when the suite names its plugins."""


@dataclass(frozen=True)
class RunResult:
    key: EvalKey
    report: RunReport
    report_path: Path
    recording_path: Path | None
    """None for suites that run a candidate program making no model calls (they record nothing)."""
    execution: dict[str, Any]
    """Call statistics: statuses, and for live runs calls sent, retries, seconds and budget spent."""


def run_suite(config: RunConfig, baseline: RunReport | None = None, baseline_name: str | None = None) -> RunResult:
    """Execute and check one run; writes `report.json` (and the recording, in live modes).

    With a baseline, its recorded task replies are offered to the suite's judge (pairwise judging), and a run
    sampled in rounds (`run.repeats=auto`) compares against its recorded samples (`baseline_name` names it in the
    report)."""
    check_run_destinations(config)  # a run folder or save_report it may not write: refused before any work
    if config.suite.program is not None:
        return _run_program_suite(config)
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
        return _run_model_suite(config, suite_dir, dataset, prompt_path, prompt_text, agent, baseline,
                                baseline_name)
    finally:
        if agent is not None:
            agent.toolbox.close()


def _run_model_suite(config: RunConfig, suite_dir: Path, dataset: Dataset, prompt_path: Path, prompt_text: str,
                     agent: Agent | None, baseline: RunReport | None, baseline_name: str | None) -> RunResult:
    assert config.model is not None and config.prompt is not None
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
    looped = agent is not None or scripts is not None  # cases of several calls, each with its trajectory
    simulated = sorted(case for case, script in (scripts or {}).items() if script.simulated)
    if simulated and config.simulator is None:
        raise ConfigError(f"case {simulated[0]} (and {len(simulated) - 1} more) has a simulated user (conversation: "
                          "{persona, goal}), but the run has no simulator: add `- /simulator: NAME` to the suite "
                          "option's defaults, or pass simulator=NAME")

    def run_input(execution: Execution, provenance: Provenance) -> RunInput:
        return RunInput(
            key=key.model_dump(mode="json"), components=config.components, settings=settings,
            suite=_suite_input(config, declared, replies),
            provenance=_provenance(config, rec_path, provenance),
            cases=list(dataset.cases),
            calls={cid: CallInput(status=r.status, text=r.text, reason=r.reason,
                                  stop_reason=r.reply.stop_reason if r.reply else None,
                                  contract=contract_problems(r.reply) if r.reply else [])
                   for cid, r in execution.checked_calls().items()},
            trajectories=trajectories_json(execution.trajectories),
            repeats=most, samples=execution.samples or {},  # the checks run on every sample (sample_protocol)
            judge_repeats=config.judge.repeats if config.judge is not None else 1)

    def run_calls(recording: Recording, live: LiveSetup | None) -> Execution:
        def obtain(samples: Mapping[str, int] | None, prior: Execution | None) -> Execution:
            assert config.model is not None
            return execute(task=task, cases=dataset.cases, prompt=prompt_text, model=config.model,
                           judge=config.judge, mode=config.mode, recording=recording, where=shown(rec_path),
                           version=__version__, live=live, repeats=most, prices=config.prices, samples=samples,
                           prior=prior, agent=agent, conversations=scripts, simulator=config.simulator,
                           judge_repeats=config.judge.repeats if config.judge is not None else 1)

        if not config.run.sequential:
            return obtain(None, None)

        def counts(execution: Execution, samples: Mapping[str, int]) -> Mapping[str, Counts]:
            between = dataclasses.replace(execution, samples=dict(samples))
            data = _checks(config, suite_dir, run_input(between, recording.provenance), redact)
            return report_from_mapping(data, f"a round of suite {config.suite.name}").repeats

        return sample_in_rounds(obtain, counts, cases=[case.id for case in dataset.cases], settings=config.run,
                                alpha=config.policy.repeats.alpha, pool=pool(baseline) if baseline else None,
                                recorded=recording.provenance.rounds, recording=recording,
                                replay=config.mode is Mode.REPLAY)

    started_ns = time.time_ns()  # where a trace export lays the calls that were not sent now (replayed ones)
    if config.mode is Mode.REPLAY:
        if not os.path.lexists(rec_path):
            raise ReplayRefusal(no_recording(rec_path, key, settings))
        recording = load_recording(rec_path, key, read.get(rec_path.resolve()))
        execution = run_calls(recording, None)
    else:
        refuse_short_keys(config, redact)
        # Providers first: a missing extra or credential is refused before any lock, journal or call.
        providers = {"model": _provider(config.model, "the model under test")}
        if config.judge is not None and task.judged:
            providers["judge"] = _provider(config.judge, "the suite's pinned judge")
        if config.simulator is not None and scripts is not None and any(s.simulated for s in scripts.values()):
            providers["simulator"] = _provider(config.simulator, "the simulated user")
        notify = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
        with recording_lock(rec_path, config.run.lock_timeout_s, notify):
            recording, execution = _record(config, key, settings, rec_path, redact, providers, run_calls, notify)

    texts = {"prompt": kept_text(prompt_text, config.prompt.version, shown(prompt_path), redact)}
    extra: dict[str, Any] = {"execution": execution.stats, "texts": texts}
    if media := media_fields(config.dataset):  # each media case's description and thumbnail, for report.html
        extra["media"] = media_section(dataset, media)
    if looped:  # each case's trajectory, cut and (with the whole report) redacted like the outputs
        extra["trajectories"] = trajectories_json(execution.trajectories)
    finish = None
    if looped:
        def finish(data: dict[str, Any]) -> None:  # the agent's metrics need the checks' outcomes per case
            cases = [c for c in data.get("cases", ()) if isinstance(c, dict)]
            if agent is not None:
                data.setdefault("metrics", {}).update(agent_metrics(cases, execution.trajectories))
            if execution.reached:
                data.setdefault("metrics", {}).update(conversation_metrics(cases, execution.reached))
    report, report_path = _check_and_report(config, suite_dir, run_input(execution, recording.provenance), redact,
                                            extra, sequential=_sequential(config, execution, baseline, baseline_name),
                                            finish=finish)
    if config.run.otel_export:
        _export_trace(config, execution, report, redact, started_ns)
    return RunResult(key, report, report_path, rec_path, execution.stats)


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


def _checks(config: RunConfig, suite_dir: Path, run_input: RunInput, redact: Redactor) -> dict[str, Any]:
    """Hand the run's input to the suite's checks; their raw report."""
    out = Path(config.run.out)
    out.mkdir(parents=True, exist_ok=True)
    input_path = out / "run-input.json"
    # what the checks read: key values masked (as in the recording), nothing else, so no pattern changes a grade
    given = run_input.model_dump(mode="json")
    _, text = redact.masked(given, lambda data: json.dumps(data, ensure_ascii=False), messages=False)
    write_atomic(input_path, text)
    return run_checks(suite_dir, input_path, out, redact, _key_variables(config), worker_count(config.run.workers),
                      config.run.shard_of, config.suite.pytest_plugins)


def _check_and_report(config: RunConfig, suite_dir: Path, run_input: RunInput, redact: Redactor,
                      extra: dict[str, Any], verify: Callable[[], None] = lambda: None,
                      sequential: Callable[[Mapping[str, Counts]], dict[str, Any]] | None = None,
                      finish: Callable[[dict[str, Any]], None] | None = None) -> tuple[RunReport, Path]:
    """Hand the run's input to the suite's checks, add `extra` sections (and `sequential`'s block, from the
    tests' counts, and what `finish` adds from the checks' outcomes), write `report.json` (and save_report).
    `verify` runs after the checks, before anything is written: it may refuse the run."""
    out = Path(config.run.out)
    data = _checks(config, suite_dir, run_input, redact)
    shard = config.run.shard_of
    verify()
    if shard is not None:
        return _write_shard(out, shard, out / "run-input.json", data, extra, redact, config.suite.name)
    data.update(extra)
    if finish is not None:
        finish(data)
    if sequential is not None:
        data["sequential"] = sequential(report_from_mapping(data, f"report of suite {config.suite.name}").repeats)
    compact = compact_json(data)
    if redact.leaves(compact):  # nothing to mask: the report is read as its file will hold it
        data = json_value(compact)
    else:  # strings only, before serialising: outcomes and the JSON stay intact
        data = redact.scrub(data)
        compact = compact_json(data)
    report = report_from_mapping(data, f"report of suite {config.suite.name}")
    report_path = out / "report.json"
    write_atomic(report_path, indented_json(data, compact=compact) + "\n")
    if config.run.save_report:  # a baseline to keep: its canonical form, so regenerating it changes no byte
        saved = Path(config.run.save_report).expanduser()
        try:  # the destination was checked before the run (evalkit.run.destinations); the disk may be full now
            write_atomic(saved, canonical_text(data))
        except OSError as error:
            raise InputError(f"run.save_report={saved}: cannot write the saved run report ({error.strerror or error})"
                             f"; the full report is {report_path}") from None
    return report, report_path


def _write_shard(out: Path, shard: tuple[int, int], input_path: Path, partial: dict[str, Any],
                 sections: dict[str, Any], redact: Redactor, suite: str) -> tuple[RunReport, Path]:
    """Write a machine's shard file (evalkit.run.shards) instead of a report; return its block of the checks as a
    report for the terminal's line, never written or gated: a shard alone is not a run."""
    run_input = json.loads(input_path.read_text(encoding="utf-8"))  # as the checks read it, key values masked
    path = out / shard_name(*shard)
    content = redact.scrub(shard_file(*shard, run_input, sections, partial))
    write_atomic(path, json.dumps(content, ensure_ascii=False, allow_nan=False) + "\n")
    own = merged_report([partial], RunInput.model_validate(run_input)) | sections
    return report_from_mapping(redact.scrub(own), f"shard {shard[0]}/{shard[1]} of suite {suite}"), path


def _run_program_suite(config: RunConfig) -> RunResult:
    """A suite that evaluates a candidate program: run it per case (no model, no recording), then the checks."""
    spec = config.suite.program
    # validate_config guarantees a program suite its manifest dataset
    assert spec is not None and config.dataset.manifest is not None
    split = config.split
    data_set = load_manifest_dataset(project_path(config.dataset.manifest), split, config.dataset.limits)
    option = config.choices.get(spec.component, spec.component)
    candidate = candidate_config(config.components.get(spec.component, {}), option, spec.component)
    program = project_path(candidate.program)
    if not program.exists():
        raise InputError(f"conf/{spec.component}/{option}.yaml: program {candidate.program} not found")
    if not program.is_file():  # a device (/dev/zero), a FIFO or a folder: reading it would never end or fail
        raise InputError(f"conf/{spec.component}/{option}.yaml: program {candidate.program} is not a regular file "
                         "(a device, a FIFO or a folder); name a script file")
    program_sha = sha256(program.read_bytes())
    name = config.choices.get("dataset", "dataset")
    components = {g: (config.choices.get(g, g), s) for g, s in config.components.items()}
    # the program's bytes are part of what is measured: editing it makes another candidate
    components[spec.component] = (option, {**config.components.get(spec.component, {}),
                                           "program_sha256": program_sha})
    suite_dir = project_path(config.suite.path)
    declared = read_checks(suite_dir, data_set.cases)  # a mistake in it is refused before the program runs
    model = _endpoint_model(config)
    key = build_key(suite=config.suite.name, dataset=data_set.identity(name), prompt_version="none",
                    prompt_text="", judge_model=_checks_fingerprint(suite_dir, program), components=components, **model)
    # Where the candidate is not confined to its task folder it runs as evalkit's own OS user: whatever it changed
    # in the suite or in evalkit's code while it ran (a grader that always passes) must refuse the run, never
    # become a decision. Checked again after the checks ran, for a descendant that escaped the kill of its process
    # tree (see provenance.isolation).
    before = snapshot(suite_dir)
    judging = judging_files(suite_dir, program)
    budget = UnitBudget(config.budget.max_units)
    where = shown(project_path(config.dataset.manifest))
    rec_path: Path | None = None
    recording: Recording | None = None
    calls: Execution | None = None
    if spec.endpoint:
        # The recording's identity leaves the program's file and bytes out (the candidate option's name stays):
        # each call's request is fingerprinted, so an edit that changes what the program asks is refused at its
        # first changed call, naming the field, and one that does not (a refactoring) replays as recorded.
        rec_components = {g: (config.choices.get(g, g), {k: v for k, v in s.items()
                                                          if g != spec.component or k != "program"})
                          for g, s in config.components.items()}
        rec_key = build_key(suite=config.suite.name, dataset=data_set.identity(name), prompt_version="none",
                            prompt_text="", judge_model=None, components=rec_components, **model)
        results, rec_path, recording, calls = _run_with_endpoint(
            config, rec_key, lambda access: run_programs(data_set.cases, spec, candidate, program, budget, access,
                                                         where))
    else:
        results = run_programs(data_set.cases, spec, candidate, program, budget, where=where)
    refuse_changes(before, snapshot(suite_dir), suite_dir, program, "while the candidate program ran")

    def verify() -> None:
        refuse_changes(judging, judging_files(suite_dir, program), suite_dir, program, "while the checks ran")

    provenance = {**_provenance(config, rec_path, recording.provenance if recording is not None else None),
                  "run_kind": PROGRAM_ENDPOINT_RUN_KIND if spec.endpoint else PROGRAM_RUN_KIND,
                  "isolation": probe_isolation().to_json()}
    run_input = RunInput(
        key=key.model_dump(mode="json"), components=config.components,
        suite=_suite_input(config, declared),
        provenance=provenance, cases=list(data_set.cases), programs=results,
        references=data_set.references)  # for the graders in the checks' process; never in a program's dir
    redact = redactor_for(config)  # a candidate's response could echo a key value: never write it
    execution = {"programs": dict(Counter(r["status"] for r in results.values())), "budget": budget.summary(),
                 **({"calls": calls.stats} if calls is not None else {})}
    extra = {
        "dataset": {"name": name, "version": data_set.version, "split": split, "synthetic": data_set.synthetic,
                    "purpose": data_set.purpose, "sha": data_set.sha, "cases": len(data_set.cases)},
        "candidate": {"option": option, "change": candidate.change, "program": candidate.program,
                      "args": list(candidate.args), "program_sha256": program_sha, "timeout_s": candidate.timeout_s,
                      "max_response_bytes": candidate.max_response_bytes, "limits": spec.limits.model_dump()},
        "execution": execution,
    }
    talked = {f"task/{case_id}": transcript(result, config.model.name if config.model else None)
              for case_id, result in results.items() if "turns" in result}
    if talked:  # each conversation's transcript (the turn protocol), shown by report.html as a model suite's
        extra["trajectories"] = trajectories_json(talked)
    try:  # a script's text, for the reviewer's diff; a binary program is named by its SHA-256 alone
        extra["texts"] = {"program": kept_text(program.read_bytes().decode("utf-8"), option, candidate.program,
                                               redact)}
    except (OSError, UnicodeDecodeError):
        pass
    report, report_path = _check_and_report(config, suite_dir, run_input, redact, extra, verify)
    return RunResult(key, report, report_path, rec_path, execution)


def _endpoint_model(config: RunConfig) -> dict[str, Any]:
    """The model part of a program suite's key: the run's model where its program calls one through evalkit's
    endpoint, else none."""
    assert config.suite.program is not None
    if not config.suite.program.endpoint or config.model is None:
        return {"model": "none"}
    return {"model": config.model.name, "model_settings": run_settings(config)["model"],
            "deployment": config.model.deployment, "api_version": config.model.api_version}


def _run_with_endpoint(config: RunConfig, rec_key: EvalKey,
                       run: Callable[[ModelAccess], dict[str, dict[str, Any]]]
                       ) -> tuple[dict[str, dict[str, Any]], Path, Recording, Execution]:
    """Run the program's cases with evalkit's endpoint answering their model calls: replayed from the recording of
    `rec_key` (a call it cannot serve refuses the run, exit 3), or called live and recorded, as a model suite's."""
    spec, model = config.suite.program, config.model
    assert spec is not None and model is not None
    settings = run_settings(config)
    rec_path = recording_path(rec_key, project_path(config.run.recordings))
    python_env = project_path(spec.python_env) if spec.python_env else None
    results: dict[str, dict[str, Any]] = {}

    def run_calls(recording: Recording, live: LiveSetup | None) -> Execution:
        calls = ProgramCalls(model=model, mode=config.mode, recording=recording, where=shown(rec_path), live=live,
                             prices=config.prices)
        if spec.mcp:  # the program's MCP servers, behind evalkit's proxy: started before the first case
            calls.mcp = ProgramMcp(spec.mcp, project_path(config.suite.path), config.mode, recording,
                                   shown(rec_path), redactor_for(config), calls.caller.proxied)
        try:
            results.update(run(ModelAccess(calls.answer, model.name, python_env, lambda: calls.ended, calls.mcp)))
        finally:
            if calls.mcp is not None:
                calls.mcp.close()
        return calls.finish(__version__)

    if config.mode is Mode.REPLAY:
        if not os.path.lexists(rec_path):
            raise ReplayRefusal(no_recording(rec_path, rec_key, settings))
        recording = load_recording(rec_path, rec_key)
        execution = run_calls(recording, None)
    else:
        redact = redactor_for(config)
        refuse_short_keys(config, redact)
        providers = {"model": _provider(model, "the model the program calls")}
        notify = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
        with recording_lock(rec_path, config.run.lock_timeout_s, notify):
            recording, execution = _record(config, rec_key, settings, rec_path, redact, providers, run_calls, notify)
    return results, rec_path, recording, execution


def _refuse_unreachable_reducers(declared: ChecksFile | None, repeats: int, suite_dir: Path) -> None:
    """A declared check reducing by `at_least K` with fewer samples could never pass: refused before any call (a
    hand-written test's marker is read when pytest collects it)."""
    for spec in declared.checks if declared is not None and repeats > 1 else ():
        if spec.reduce.rule == "at_least" and spec.reduce.value is not None and spec.reduce.value > repeats:
            raise ConfigError(f"{suite_dir / 'checks.yaml'}: check {spec.name}: reduce {spec.reduce.name} asks for "
                              f"more passing samples than the run takes (run.repeats={repeats}); lower it or run "
                              "more repeats")


def _suite_input(config: RunConfig, declared: ChecksFile | None,
                 baseline_replies: Mapping[str, str] | None = None) -> SuiteInput:
    """What the suite's checks need from its config: slices, the abstention check, the group field, the checks its
    `checks.yaml` (`declared`, read once by the run) marks critical, and the cases the baseline replied to (a
    pairwise check against the baseline compares only those)."""
    return SuiteInput(slices=[s if isinstance(s, str) else s.model_dump() for s in config.suite.slices],
                      abstention_check=config.suite.abstention_check, group_by=config.suite.group_by,
                      critical=list(declared.critical) if declared is not None else [],
                      baseline_cases=sorted(baseline_replies or {}))


def _checks_fingerprint(suite_dir: Path, program: Path) -> str:
    """The graders of a program suite play the judge's part: the suite's conftest, tests and the suite modules
    they import decide the scores (evalkit.programs.evidence), so a change to them makes runs incomparable, as a
    new judge model would. The program under test is never part of it, wherever it lives."""
    return checks_fingerprint(suite_dir, program)


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


def _provider(model: ModelConfig, role: str) -> Provider:
    """The provider of one side of a live run; a refusal says which side, so a judge's missing key does not read
    as the model under test's."""
    try:
        return make_provider(model)
    except ProviderError as error:
        raise ProviderError(f"{role}: {error}") from None


def redactor_for(config: RunConfig) -> Redactor:
    """What this run must never write: the values of its credential variables and secret-shaped text."""
    return Redactor(_key_variables(config), config.run.secret_patterns)


def _key_variables(config: RunConfig) -> list[str]:
    """The environment variables holding the run's credentials: `api_key_env` and `token_env` of the model, the
    judge and the simulated user, those their providers read by themselves (Bedrock's AWS chain), and any variable
    named like a credential that the config reads through `${oc.env:...}`."""
    names: list[str] = []
    for model in (config.model, config.judge, config.simulator):
        if model is not None:
            names += [n for n in (model.api_key_env, model.token_env) if n]
            names += provider_spec(model.provider).credential_env
    names += [name for name in config.env_read if credential_name(name)]
    return list(dict.fromkeys(names))


def refuse_short_keys(config: RunConfig, redact: Redactor) -> None:
    """A key value under MIN_SECRET characters cannot be masked without masking ordinary words: refuse it before a
    live run can write it anywhere."""
    if redact.short_keys:
        names = ", ".join(redact.short_keys)
        raise ProviderError(f"{names}: the key is shorter than {MIN_SECRET} characters, too short for evalkit to "
                            "redact from recordings and reports; use the real key, or, for a server that needs "
                            "none, unset the config's api_key_env (model.api_key_env=null)")


def no_recording(rec_path: Path, key: EvalKey, settings: dict[str, Any]) -> str:
    """Why a replay has no recording: none of this identity, and the closest one there is, by what differs."""
    closest = closest_recording(rec_path.parent, key, settings)
    if closest is None:
        return f"{shown(rec_path)}: no recording of this identity (nor of any other in {shown(rec_path.parent)})"
    path, differs = closest
    more = f" (and {len(differs) - 1} more)" if len(differs) > 1 else ""
    return (f"{shown(rec_path)}: no recording of this identity; the closest, {path.name}, was recorded with "
            f"{differs[0]}{more}")


def _record(config: RunConfig, key: EvalKey, settings: dict[str, Any], rec_path: Path, redact: Redactor,
            providers: dict[str, Provider], run_calls: Callable[[Recording, LiveSetup | None], Execution],
            notify: Callable[[str], None]) -> tuple[Recording, Execution]:
    """A live or record-missing run, under the recording's lock, journaled so a crash can resume. It records into
    the recording of this identity, whatever is at its path; the terminal says which file changed and why."""
    journal_file = journal_path(rec_path)
    refuse_link(rec_path, "recording")  # before any call; the lock refused one when it was opened
    refuse_link(journal_file, "journal")
    if os.path.lexists(journal_file) and not config.run.resume:
        raise RecordingError(f"{journal_file}: an interrupted live run left this journal; continue it with "
                             "+run.resume=true, or delete the journal to start afresh")
    resumed = {}
    if config.run.resume:
        cut = cut_torn_tail(journal_file)
        resumed = read_journal(journal_file)
        if cut:
            print(f"resuming: cut a torn last line ({cut} bytes, a write the interruption cut short) off "
                  f"{journal_file}; kept {len(resumed)} journaled call(s)", file=sys.stderr, flush=True)
    fresh = Recording(key=key, settings=settings, provenance=Provenance(kind="recorded"), calls={})
    existed, replaced = rec_path.is_file(), None
    recording = fresh
    if existed:
        try:
            recording = load_recording(rec_path, key)
        except ForeignRecording as error:  # re-recording is never refused: this identity is recorded in its place
            replaced = one_line(str(error).split("; ")[0], 300)
    # the settings are written as this run composed them (a file migrated from an older format may lack some)
    recording = recording.model_copy(update={"settings": settings})
    reusable = reusable_calls(rec_path.parent, key) if config.mode is Mode.RECORD_MISSING else {}
    at_once, lowered = provider_limits(config.run.concurrency,
                                       {role: {"model": config.model, "judge": config.judge,
                                               "simulator": config.simulator}[role] for role in providers})
    if lowered:
        # a note on stderr before any call (stdout begins with the decision); an outage's own line follows it
        notify(lowered)
    live = LiveSetup(providers=providers, settings=config.run, budget=Budget(config.budget), resumed=resumed,
                     reusable=reusable, redact=redact, redact_reply=redact.values, at_once=at_once,
                     progress=progress_enabled(config.run.progress))
    with Journal(journal_file, redact) as journal:
        live.journal = journal
        execution = run_calls(recording, live)
    if execution.recording is not None:
        try:
            save_recording(execution.recording, rec_path, redact)
        except OSError as error:  # a full disk: every call is in the journal, which stays for the next run
            raise RecordingError(f"{rec_path}: cannot write the recording ({error.strerror or error}); the journal "
                                 f"{journal_file} keeps every call: free space, then continue with "
                                 "+run.resume=true") from None
        notify(_what_changed(config.mode, rec_path, key, settings, existed, replaced, execution))
        recording = execution.recording
    journal_file.unlink(missing_ok=True)  # compacted into the recording
    return recording, execution


def _what_changed(mode: Mode, rec_path: Path, key: EvalKey, settings: dict[str, Any], existed: bool,
                  replaced: str | None, execution: Execution) -> str:
    """One line naming the recording file a live run wrote and why, so a reviewer knows what `git diff` will show."""
    assert execution.recording is not None
    statuses = execution.stats.get("calls", {})
    recorded = statuses.get("recorded", 0) + statuses.get("resumed", 0)
    calls = f"{len(execution.recording.calls)} calls"
    if statuses.get("reused"):  # replies to the very same requests, taken from the other recordings
        calls += f": {recorded} recorded, {statuses['reused']} reused from other recordings of the same requests"
    where = shown(rec_path)
    if replaced is not None:
        return f"recording: replaced {where} ({replaced}) with this identity's {calls}"
    if not existed:
        closest = closest_recording(rec_path.parent, key, settings)
        other = (f"; other recordings are unchanged (the closest, {closest[0].name}, differs in {closest[1][0]})"
                 if closest else "")
        return f"recording: new file {where}, the first recording of this identity ({calls}){other}"
    if mode is Mode.LIVE:
        return (f"recording: re-recorded {where}: mode=live recorded all {recorded} calls of this identity again "
                "(git diff shows what changed)")
    return f"recording: added {recorded} call(s) to {where} (missing, stale or failed for this identity)"


def run_checks(suite_dir: Path, input_path: Path, out: Path, redact: Callable[[str], str] = lambda text: text,
               hidden: Iterable[str] = (), workers: int = 1, shard: tuple[int, int] | None = None,
               plugins: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the suite's pytest checks over the obtained calls in a fresh process; return the raw report.

    The `hidden` variables (the run's credentials) stay out of the checks' environment: the checks read replies,
    never call a model, and what they print reaches pytest.log. With `workers` above 1 the checks run in that many
    pytest processes, each on its shard of them, and their partial reports are merged into the report one process
    writes (evalkit.run.workers). With `shard` (K, N) one process runs shard K of N and its partial report is
    returned as it is, for `evalkit merge` (evalkit.run.shards). With `plugins` (the suite's `pytest_plugins`) the
    process loads only those installed plugins, evalkit's and pytest-json-report; with None, every installed one."""
    ini = out / "pytest.ini"
    write_atomic(ini, "[pytest]\n")  # isolates the suite from the caller's pytest config
    shards = max(1, workers)
    blocks = [shard] if shard is not None else [(k, shards) for k in range(1, shards + 1)]
    partial = shard is not None or shards > 1
    raw_paths = [out / ("pytest-report.json" if not partial else f"pytest-report-{k}.json") for k, _ in blocks]
    for raw_path in raw_paths:
        raw_path.unlink(missing_ok=True)
    dropped = set(_PYTEST_ENV) | set(hidden)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    # the checks' process runs in the suite folder: name the project absolutely, whatever EVALKIT_PROJECT said
    env[PROJECT_ENV] = str(project_root())
    loading: list[str] = []  # None: pytest loads every installed plugin, as it does by default
    if plugins is not None:  # by module name, so no other installed plugin is even imported
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        loading = [arg for name in (*_OWN_PLUGINS, *plugins) for arg in ("-p", name)]
    # each process's output to a file of its own, not a pipe: a pipe read after another process's would stall a
    # shard that fills it, and the shards would run one after another
    streams = [((out / f"pytest-{k}.out").open("w+", encoding="utf-8"),
                (out / f"pytest-{k}.err").open("w+", encoding="utf-8")) for k, _ in blocks]
    processes = [subprocess.Popen([
        sys.executable, "-m", "pytest", str(suite_dir), "-q", "--no-header", "-p", "no:cacheprovider",
        "-p", "no:hydra_pytest", "-c", str(ini), "--rootdir", str(suite_dir),
        "--json-report", f"--json-report-file={raw_path}",
        "--json-report-omit", "collectors", "keywords", "log", "streams", "traceback",
        *loading, f"{RUN_OPTION}={input_path}", *shard_args(k, of),
    ], cwd=suite_dir, env=env, stdout=stdout, stderr=stderr, text=True)
        for (k, of), raw_path, (stdout, stderr) in zip(blocks, raw_paths, streams, strict=True)]
    codes = [process.wait() for process in processes]
    outputs = []  # each process's stdout, then its stderr
    for pair in streams:
        text = ""
        for stream in pair:
            with stream:
                stream.seek(0)
                text += stream.read()
            Path(stream.name).unlink()
        outputs.append(text)
    log = out / "pytest.log"
    if not partial:
        write_atomic(log, redact(outputs[0]))
    else:
        shown = zip(blocks, codes, outputs, strict=True)
        write_atomic(log, redact("".join(f"--- shard {k}/{of} (pytest exit code {code}) ---\n{output}"
                                         for (k, of), code, output in shown)))
    if all(code == _NO_TESTS for code in codes) and shard is None:
        raise InputError(f"{suite_dir}: pytest collected no tests (exit code 5); see {log}")
    for index, ((k, of), code, raw_path) in enumerate(zip(blocks, codes, raw_paths, strict=True)):
        # a shard whose block is empty (fewer checks than shards) ran nothing, as pytest says with exit code 5
        if (code not in _CHECKS_RAN and (not partial or code != _NO_TESTS)) or not raw_path.is_file():
            last = _last_error_line(outputs[index])
            where = "" if not partial else f"shard {k}/{of}: "
            raise InputError(f"{suite_dir}: the suite's checks did not run ({where}pytest exit code {code}: "
                             f"{last}); see {log}")
    partials = [json_value(raw_path.read_text(encoding="utf-8")) for raw_path in raw_paths]
    for raw_path in raw_paths:
        raw_path.unlink()
    if not partial or shard is not None:
        data: dict[str, Any] = partials[0]
        return data
    return merged_report(partials, read_run_input(input_path))


def _last_error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ") or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def _provenance(config: RunConfig, rec_path: Path | None, recording: Provenance | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "evalkit_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "mode": str(config.mode),
        # which suite the run belongs to, the baseline it would replace (evalkit bless) and the policy
        # it composed (evalkit gate without --policy)
        "suite": config.suite.name,
        "baseline": config.suite.baseline,
        "policy": config.choices.get("policy"),
    }
    if rec_path is not None and recording is not None:
        out.update(recording=shown(rec_path), recording_provenance=recording.kind, recording_note=recording.note)
    if config.run.most_samples > 1:  # absent for single runs, so their reports stay as they were
        out["repeats"] = config.run.repeats
    return out


def _git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_root(), capture_output=True,
                              text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
