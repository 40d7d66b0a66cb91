"""Run a program suite: run the candidate program once per case (its model calls, if any, answered through
evalkit's endpoint: replayed from the recording or called live and recorded), then the suite's checks, and write the
run report.

A conversation case with a simulated user (`conversation: {persona, goal, stop, max_turns}`) is played against the
program through the turn protocol (evalkit.programs.turns): each user turn is asked of the run's `simulator` with the
persona request of a model suite's conversation (evalkit.run.conversation.persona_request), through the same
recorded call path as the program's own model calls (ProgramCalls), as `user/<case>@<n>`; so a replay plays it back
offline, and the simulator (model, options, persona prompt) is the `simulator` component of the key, as for a model
suite: a changed persona is refused in replay naming it. The stop phrase ends the conversation as having reached its
goal (the program's turns before it are the turns to goal), `max_turns` as not having reached it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalkit.core.call_id import CallId
from evalkit.core.config import RunConfig, SimulatorConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.core.fingerprint import sha256
from evalkit.core.key import EvalKey, build_key, recording_path
from evalkit.live.budget import UnitBudget
from evalkit.programs.candidate import ModelAccess, candidate_config, run_programs
from evalkit.programs.evidence import checks_fingerprint, judging_files, refuse_changes, snapshot
from evalkit.programs.isolation import probe_isolation
from evalkit.programs.turns import FIELD, UserSide, UserTurnFailed, transcript
from evalkit.project.paths import project_path, shown
from evalkit.records.call import Message
from evalkit.run.agent_loop import trajectories_json
from evalkit.run.checking import check_and_report, run_provenance, suite_input
from evalkit.run.conversation import persona_request, script_of, stop_phrase, turn_limit
from evalkit.run.declared import read_checks
from evalkit.run.eval_block import kept_text
from evalkit.run.execute import Execution, LiveSetup, ProgramCalls, Source
from evalkit.run.identity import run_settings, simulator_settings
from evalkit.run.looped_metrics import LoopedMetrics
from evalkit.run.manifest import load_manifest_dataset
from evalkit.run.program_mcp import McpServers, ProgramMcp
from evalkit.run.record_or_replay import obtain
from evalkit.run.recording import Recording
from evalkit.run.run_input import RunInput
from evalkit.run.run_plan import RunPlan, RunResult
from evalkit.run.run_secrets import redactor_for

__all__ = ["run_program_suite"]

PROGRAM_ENDPOINT_RUN_KIND = ("candidate program per case, its model calls through evalkit's endpoint (replayed from "
                             "the recording, or called live and recorded)")
PROGRAM_RUN_KIND = ("candidate program per case (authored deterministic fixtures in the shipped suite); "
                    "no model calls")


def run_program_suite(plan: RunPlan) -> RunResult:
    """A suite that evaluates a candidate program: run it per case (no model, no recording), then the checks."""
    config = plan.config
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
    where = shown(project_path(config.dataset.manifest))
    simulated = any(isinstance(case.get(FIELD), dict) for case in data_set.cases)
    if simulated and (config.simulator is None or not spec.endpoint):
        # one line before any case runs; the first such case is named (user_side says the same per case)
        case = next(c for c in data_set.cases if isinstance(c.get(FIELD), dict))
        raise InputError(f"{where}: case {case.id}: field '{FIELD}' holds a simulated user's brief, but the run "
                         f"{'has no simulator' if config.simulator is None else 'calls no model'}: add `- /simulator: "
                         "NAME` to the suite option's defaults (or pass simulator=NAME), and `suite.program.endpoint: "
                         "true` (the simulated user's turns are recorded calls)")
    sim = simulator_settings(config)
    if sim is not None:  # a changed persona prompt is a changed component, named as `simulator.prompt`
        components["simulator"] = (config.choices.get("simulator", sim["model"]), sim)
    # the program's MCP servers, behind evalkit's proxy, are started and listed before the key is built: their tools
    # are in it as an agent's are (`tools.<server>.<tool>`), so a baseline made with another server version or tool
    # list is incomparable or a declared change (policy tool_changes), never a silent one
    servers = McpServers(spec.mcp, suite_dir) if spec.mcp else None
    try:  # closed once the cases ran
        key = build_key(suite=config.suite.name, dataset=data_set.identity(name), prompt_version="none",
                        prompt_text="", judge_model=_checks_fingerprint(suite_dir, program), components=components,
                        tools=servers.identity() if servers is not None else None, **model)
        # Where the candidate is not confined to its task folder it runs as evalkit's own OS user: whatever it
        # changed in the suite or in evalkit's code while it ran (a grader that always passes) must refuse the run,
        # never become a decision. Checked again after the checks ran, for a descendant that escaped the kill of its
        # process tree (see provenance.isolation).
        before = snapshot(suite_dir)
        judging = judging_files(suite_dir, program)
        budget = UnitBudget(config.budget.max_units)
        rec_path: Path | None = None
        played: dict[str, dict[str, Any]] = {}
        """Each simulated conversation, by case id: its turns to goal (`reached`, None: not reached), and the
        simulated user's closing turn (`closing`, the one that said the stop phrase; None: it never did)."""
        recording: Recording | None = None
        calls: Execution | None = None
        if spec.endpoint:
            # The recording's identity leaves the program's file and bytes out (the candidate option's name stays):
            # each call's request is fingerprinted, so an edit that changes what the program asks is refused at its
            # first changed call, naming the field, and one that does not (a refactoring) replays as recorded.
            rec_components = {g: (config.choices.get(g, g), {k: v for k, v in s.items()
                                                              if g != spec.component or k != "program"})
                              for g, s in config.components.items()}
            if sim is not None:
                rec_components["simulator"] = components["simulator"]
            rec_key = build_key(suite=config.suite.name, dataset=data_set.identity(name), prompt_version="none",
                                prompt_text="", judge_model=None, components=rec_components, **model)
            results, rec_path, recording, calls = _run_with_endpoint(
                plan, rec_key, servers,
                lambda access, simulate: run_programs(data_set.cases, spec, candidate, program, budget, access,
                                                      where, simulate),
                where, played)
        else:
            results = run_programs(data_set.cases, spec, candidate, program, budget, where=where)
    finally:
        if servers is not None:
            servers.close()
    refuse_changes(before, snapshot(suite_dir), suite_dir, program, "while the candidate program ran")
    for case_id, outcome in played.items():  # the simulated user's calls and outcome, in the case's transcript
        if case_id in results:
            for entry in results[case_id].get("turns", ()):
                entry["user_call"] = str(CallId.user_turn(case_id, int(entry["turn"])))
            results[case_id]["simulated"] = outcome
    reached = {f"task/{case_id}": outcome["reached"] for case_id, outcome in played.items() if case_id in results}

    def verify() -> None:
        refuse_changes(judging, judging_files(suite_dir, program), suite_dir, program, "while the checks ran")

    provenance = {**run_provenance(config, rec_path, recording.provenance if recording is not None else None),
                  "run_kind": PROGRAM_ENDPOINT_RUN_KIND if spec.endpoint else PROGRAM_RUN_KIND,
                  "isolation": probe_isolation().to_json()}
    run_input = RunInput(
        key=key.model_dump(mode="json"), components=config.components,
        suite=suite_input(config, declared),
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

    # goal rate and turns to goal, as a model suite's simulated conversations have them
    looped = LoopedMetrics(agent=False, reached=reached) if reached else None
    report, report_path = check_and_report(config, suite_dir, run_input, redact, extra, verify, looped=looped)
    return RunResult(key, report, report_path, rec_path)


def _endpoint_model(config: RunConfig) -> dict[str, Any]:
    """The model part of a program suite's key: the run's model where its program calls one through evalkit's
    endpoint, else none."""
    assert config.suite.program is not None
    if not config.suite.program.endpoint or config.model is None:
        return {"model": "none"}
    return {"model": config.model.name, "model_settings": run_settings(config)["model"],
            "deployment": config.model.deployment, "api_version": config.model.api_version}


def _run_with_endpoint(plan: RunPlan, rec_key: EvalKey, servers: McpServers | None,
                       run: Callable[[ModelAccess, Callable[[Case], UserSide] | None], dict[str, dict[str, Any]]],
                       where: str, played: dict[str, dict[str, Any]]
                       ) -> tuple[dict[str, dict[str, Any]], Path, Recording, Execution]:
    """Run the program's cases with evalkit's endpoint answering their model calls: replayed from the recording of
    `rec_key` (a call it cannot serve refuses the run, exit 3), or called live and recorded, as a model suite's; a
    simulated user's turns are the simulator's calls on the same path (each conversation's outcome kept in
    `played`)."""
    config, calls = plan.config, plan.calls
    spec, model = config.suite.program, config.model
    assert spec is not None and model is not None and calls is not None
    settings = run_settings(config)
    rec_path = recording_path(rec_key, project_path(config.run.recordings))
    python_env = project_path(spec.python_env) if spec.python_env else None
    results: dict[str, dict[str, Any]] = {}

    def run_calls(recording: Recording, live: LiveSetup | None) -> Execution:
        answering = ProgramCalls(calls, Source(recording, shown(rec_path), live))
        if servers is not None:  # the program's MCP servers, behind evalkit's proxy (started before the key)
            answering.mcp = ProgramMcp(servers, config.mode, recording, shown(rec_path), redactor_for(config),
                                       answering.caller.proxied)
        simulator = config.simulator
        simulate = (None if simulator is None else
                    lambda case: _simulated_user(case, where, answering, simulator, played))
        results.update(run(ModelAccess(answering.answer, model.name, python_env, lambda: answering.ended,
                                       answering.mcp), simulate))
        return answering.finish()

    roles = {"model": (model, "the model the program calls")}
    if config.simulator is not None:  # a live run with a simulated user needs the simulator's provider too
        roles["simulator"] = (config.simulator, "the simulated user")
    recording, execution = obtain(config, rec_key, settings, rec_path, redactor_for(config), roles, run_calls)
    return results, rec_path, recording, execution


def _simulated_user(case: Case, where: str, calls: ProgramCalls, simulator: SimulatorConfig,
                    played: dict[str, dict[str, Any]]) -> UserSide:
    """The user side of a case with a simulated user: each turn asked of the simulator (`user/<case>@<n>`), shown
    the conversation so far from its side; its stop phrase ends the conversation as having reached its goal, its
    turn limit as not. Its text is data: sent as a message's content, never formatted, parsed or run."""
    script = script_of(case, where)
    heard: list[Message] = []
    outcome: dict[str, Any] = {"reached": None, "closing": None}
    played[case.id] = outcome

    def turn(n: int, reply: str | None) -> str | None:
        if reply is not None:
            heard.append(Message(role="user", content=reply or "(no reply)"))
        if n > turn_limit(script, simulator):
            return None
        call_id = str(CallId.user_turn(case.id, n))
        result = calls.simulate(call_id, persona_request(script, heard, simulator))
        if result is None:  # the run is refused once the cases ran, naming the call
            raise UserTurnFailed("failed", f"{call_id}: the recording cannot serve it")
        if result.reply is None:
            raise UserTurnFailed(result.status, f"{call_id}: {result.reason}")
        text = result.reply.text or ""
        heard.append(Message(role="assistant", content=text or "(silence)"))
        if stop_phrase(script, simulator) in text:
            outcome.update(reached=n - 1, closing={"turn": n, "user": text, "user_call": call_id})
            if n == 1:
                raise UserTurnFailed("failed", f"{call_id}: the simulated user ended the conversation before the "
                                     "program's first turn")
            return None
        return text

    return turn


def _checks_fingerprint(suite_dir: Path, program: Path) -> str:
    """The graders of a program suite play the judge's part: the suite's conftest, tests and the suite modules
    they import decide the scores (evalkit.programs.evidence), so a change to them makes runs incomparable, as a
    new judge model would. The program under test is never part of it, wherever it lives."""
    return checks_fingerprint(suite_dir, program)
