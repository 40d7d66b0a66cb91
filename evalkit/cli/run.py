"""`evalkit run [overrides]` (evalkit.cli.run): compose -> run -> decide -> render -> exit code.

Exit codes: 0 go (and review), 1 block, 2 incomparable, 3 input or usage error, 4 internal error, 5 outage.
With `-m`, every job writes `job.json` and the sweep exits with its most severe job; a single run writes it only
when it ends without a decision (an error or an outage), so its folder says how it ended.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.cli.command_line import (
    check_flags,
    keep_package_conf,
    primary_config,
    refuse_credentials,
    refuse_resolved_credentials,
)
from evalkit.cli.guard import command, say, write_outputs
from evalkit.cli.hydra_errors import config_error, missing_option, output_dir_error
from evalkit.cli.masked import MaskedStream, mask_pattern_overrides, pattern_literals, scrub_hydra_files
from evalkit.core.errors import EvalkitError, OutageError, one_line

if TYPE_CHECKING:
    from evalkit.core.config import RunConfig
    from evalkit.core.policy import Policy
    from evalkit.live.redact import Redactor
    from evalkit.records.decision import PolicyIdentity


# A full disk or quota, or a read-only filesystem: an output that cannot be written (exit 3), not a crash.
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


class _Outcome:
    """Carries a single run's exit code out of Hydra, which discards the task function's return."""

    code: int = 0
    verbose: bool = False
    """`-v`: a sweep's jobs print their full blocks, as a single run does, rather than one line each."""


VERBOSE_FLAGS = ("-v", "--verbose")


def _job(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from evalkit.core import collector
    from evalkit.core.config import from_hydra
    from evalkit.gate.decision import ExitCode
    from evalkit.live.redact import Redactor
    from evalkit.run.run_secrets import redactor_for

    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    # the overrides as typed: iterating them through OmegaConf would resolve `${...}` inside them
    typed = OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False)
    row: dict[str, Any] = {"job": hydra_cfg.job.num if multirun else 0, "overrides": mask_pattern_overrides(
        [str(o) for o in typed] if isinstance(typed, list) else [])}
    # a refusal's command repeats the run's own: its overrides, and where it found its config options
    given = OmegaConf.to_container(hydra_cfg.overrides.hydra, resolve=False)
    searched = [str(o) for o in given if str(o).startswith("hydra.searchpath=")] if isinstance(given, list) else []
    redact = Redactor()  # credential shapes only, until the config names the run's key variables
    try:
        config = from_hydra(cfg)
        redact = redactor_for(config)
        refuse_resolved_credentials(config)
        redact.install_log_filter()
        MaskedStream.redactors = [*MaskedStream.redactors[:2], redact]
        scrub_hydra_files(hydra_cfg, multirun, redact)
        if multirun:  # a sweep's jobs may not write one another's saved report or trace
            from evalkit.sweeps.claims import claim_outputs

            claim_outputs(config, Path(hydra_cfg.sweep.dir), hydra_cfg.job.num)
        with collector.paused():  # the run builds large trees (evalkit.core.collector); its live calls resume it
            code = _run(config, row, redact, searched, brief=multirun and not _Outcome.verbose)
    except OutageError as error:  # the server failed, not the model: never a decision
        message = one_line(redact(str(error)))
        print(f"outage: {message}", file=sys.stderr)
        code, row["error"] = ExitCode.OUTAGE, message
    except EvalkitError as error:
        message = one_line(redact(str(error)))
        print(f"error: {message}", file=sys.stderr)
        code, row["error"] = ExitCode.INPUT_ERROR, message
    except Exception as error:  # a crash must never read as a decision
        if isinstance(error, OSError) and error.errno in _NO_SPACE:  # the machine's fault, not a bug: one line
            # written through evalkit.core.atomic, a failed write names the file it was to become
            where = error.filename or "a file in the run folder (the disk is full)"
            message = one_line(redact(f"{where}: cannot write it ({error.strerror}); free space and run again (a "
                                      "live run: continue with +run.resume=true)"))
            print(f"error: {message}", file=sys.stderr)
            code, row["error"] = ExitCode.INPUT_ERROR, message
        else:
            print(redact(traceback.format_exc()), file=sys.stderr, end="")
            code, row["error"] = ExitCode.INTERNAL_ERROR, redact(f"internal error: {type(error).__name__}: {error}")
    row["exit_code"] = int(code)
    from evalkit.core.atomic import write_atomic
    from evalkit.sweeps.summary import JOB_FILE

    job_file = Path(hydra_cfg.runtime.output_dir) / JOB_FILE
    if multirun:
        write_atomic(job_file, json.dumps(redact.scrub(row), indent=2) + "\n")
    else:
        _Outcome.code = int(code)
        if "error" in row:  # the run folder says how the run ended, as a sweep's job folder does, never half a run
            try:
                write_atomic(job_file, json.dumps(redact.scrub(row), indent=2) + "\n")
            except OSError:
                pass  # the folder cannot be written (the error just printed may say so): the line is the record
        else:  # a run into the folder of one that failed: its job.json would contradict this run's report
            job_file.unlink(missing_ok=True)


def _run(config: RunConfig, row: dict[str, Any], redact: Redactor, searched: list[str], brief: bool = False) -> int:
    """Run, gate and write one job's files; print its blocks, or with `brief` (a sweep's job) one line, so the
    summary table a sweep ends with stays readable."""
    from evalkit.cli.evidence import evidence, report_identity
    from evalkit.core.atomic import write_atomic
    from evalkit.core.config import BUILTIN_METRICS, deprecations
    from evalkit.core.files import read_text_sha256
    from evalkit.core.key import changed_settings
    from evalkit.gate.compared import critical_of
    from evalkit.gate.decide import decide
    from evalkit.gate.decision import ExitCode, exit_code
    from evalkit.gate.isolation import refuse_short_isolation
    from evalkit.judging.judge_health import judge_warnings
    from evalkit.render.bundle import Decided, render_bundle
    from evalkit.render.report_page import render_report_html
    from evalkit.render.run_summary import job_line, run_summary, tests_line
    from evalkit.render.sections import render_sections
    from evalkit.render.text import render_changed, render_decision
    from evalkit.run.baseline import load_baseline, load_calibration
    from evalkit.run.mismatch import ReplayRefusal
    from evalkit.run.run_plan import plan_run
    from evalkit.run.runner import run

    for line in deprecations(config):
        print(line, file=sys.stderr)
    sharded = config.run.shard is not None  # one machine's shard of the checks: merged later, then gated
    baseline = (load_baseline(config.baseline, config.suite.baseline, config.suite.name)
                if config.baseline and not sharded else None)
    try:
        result = run(plan_run(config, baseline[1] if baseline else None, baseline[0] if baseline else None))
    except ReplayRefusal as refusal:  # name the command that records what is missing with this run's overrides
        raise refusal.for_command([*searched, *row.get("overrides", ())]) from None
    row["pass_rate"] = round(result.report.passed / len(result.report.outcomes), 3)
    row["case_pass_rate"] = result.report.metrics.get("case_pass_rate")
    execution = result.report.execution
    row["input_tokens"] = execution.cost.input_tokens if execution.cost is not None else None
    if execution.money is not None:  # the run's cost in dollars at the prices its report recorded; null: no price
        row["cost_usd"] = execution.money.get("usd")
    # the sweep summary's metric columns: those config names (sweep.metrics), else every one the report has
    # (pass_rate and case_pass_rate have columns of their own)
    chosen = config.sweep.metrics if config.sweep.metrics is not None else tuple(
        name for name in result.report.metrics if name not in BUILTIN_METRICS)
    row["metrics"] = {name: result.report.metrics.get(name) for name in chosen}
    tests = tests_line(result.report)
    run_line = run_summary(config.suite.name, f"{config.mode}", result)
    if sharded:
        say(f"decision: none (run.shard={config.run.shard}: one shard of the run's checks, not gated)")
        say(redact(f"shard {config.run.shard} of suite {config.suite.name}: {tests} in this shard "
                   f"({config.mode}, recording {result.recording_path.name if result.recording_path else 'none'}); "
                   f"shard file {result.report_path}\nwhen every shard has run: evalkit merge SHARD_FILES... "
                   "--out report.json, then evalkit gate BASELINE report.json"))
        return ExitCode.GO
    if baseline is None:
        write_atomic(Path(config.run.out) / "report.html", redact(render_report_html(result.report)))
        if brief:
            say(redact(job_line(row, "NOT GATED", tests, result.report_path)))
            return ExitCode.GO
        say("decision: none (baseline=none: the run was not gated)")
        judged = judge_warnings(result.report.cases)  # no gate to raise them: say them with the run
        if judged:
            say(redact("warnings:\n" + "\n".join(f"  - {w.message()}" for w in judged)))
        say(redact(run_line))
        return ExitCode.GO
    name, base_report, base_sha = baseline
    policy, policy_facts = _gate_policy(config, row.get("overrides", ()))
    refuse_short_isolation(policy, {"baseline": base_report, "candidate": result.report})
    calibration = load_calibration(config.baseline or "", config.suite.baseline) \
        if policy.min_judge_kappa is not None else None
    decision = decide(policy, base_report, result.report, calibration)
    _, candidate_sha = read_text_sha256(result.report_path, "report")  # the report.json just written
    facts = evidence(policy_facts, report_identity(name, base_sha, base_report),
                     report_identity(_shown_path(result.report_path), candidate_sha, result.report))
    bundle = render_bundle(Decided(decision, base_report, result.report, policy, facts, name), mask=redact)
    write_outputs({Path(config.run.out) / file: (text, file) for file, text in bundle.items()})
    critical = critical_of(policy, base_report, result.report)
    settings = changed_settings(base_report.eval, result.report.eval)
    row.update(decision=str(decision.decision), changed=render_changed(decision.changed, settings),
               regressed=len(decision.regressed), pass_rate=decision.pass_rate)
    if decision.statistics:
        row["paired"] = {k: decision.statistics[k] for k in ("difference", "interval", "groups", "seed", "resamples")}
    if brief:
        say(redact(job_line(row, str(decision.decision).upper(), tests, result.report_path)))
    else:
        exits = exit_code(decision.decision, policy.review_fails) if config.require_pass else ExitCode.GO
        say(redact(render_decision(decision, critical, settings, exits)))
        # the decision lists the tests whose samples disagree with both sides' k/N: the run's rows do not repeat them
        say(redact(render_sections(result.report, base_report, listed=(decision.repeats or {}).get("disagree") or ())))
        say(redact(run_line))
        say(redact(f"baseline: {name}"))
    if not config.require_pass:  # report-only: everything above was written; only the exit code differs
        return ExitCode.GO
    return exit_code(decision.decision, policy.review_fails)


def _shown_path(path: Path) -> str:
    """The report's path as decision.json and decision.md name it: from the working folder where it lies below
    it, else its name alone (it lies beside them), never this machine's absolute path, which a pull-request
    comment would publish and no reader can open."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return path.name


def _gate_policy(config: RunConfig, overrides: Any) -> tuple[Policy, PolicyIdentity]:
    """The policy the gate decides under, and its identity: the composed one, or with `policy_from=git:REF` the
    same policy option as it is at REF (a pull request decided under its base branch's policy)."""
    if config.policy_from is None:
        return config.policy, _run_policy(config, overrides)
    from evalkit.cli.base_policy import policy_at_ref
    from evalkit.cli.evidence import policy_identity

    option = config.choices.get("policy", "policy")
    policy, where = policy_at_ref(config.policy_from, option, [str(o) for o in overrides])
    at = f"as it is at {where['at']}" if where["at"] else "as evalkit ships it"
    return policy, policy_identity(policy, fallback_name=option, source=where["source"],
                                   chosen_by=f"policy_from={config.policy_from}: option {option!r} {at}")


def _run_policy(config: RunConfig, overrides: Any) -> PolicyIdentity:
    """The identity of the policy this run composed: its option, the command-line `policy.*` overrides, and why."""
    from evalkit.cli.evidence import policy_identity

    option = config.choices.get("policy", "policy")
    given = [str(o) for o in overrides]
    keys = [o for o in given if o.lstrip("+~").split("=", 1)[0].startswith("policy.")]
    chosen = next((o for o in given if o.lstrip("+~").split("=", 1)[0] == "policy"), None)
    suite_option = config.choices.get("suite", config.suite.name)
    why = (f"{chosen} on the command line" if chosen else
           f"the default of suite {config.suite.name}, conf/suite/{suite_option}.yaml")
    return policy_identity(config.policy, fallback_name=option, source=f"conf/policy/{option}.yaml",
                           chosen_by=why, overrides=keys)


def _help(argv: list[str]) -> int:
    from evalkit.cli.run_help import run_help
    from evalkit.project.paths import PACKAGE_CONF, find_project

    root = find_project()
    print(run_help(root / "conf" if root is not None else None, PACKAGE_CONF, argv), end="")
    return 0


@command
def main() -> int:
    """Run Hydra with evalkit's error handling: one line per refusal, decision codes kept distinct."""
    import hydra
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    from evalkit.gate.decision import ExitCode
    from evalkit.project.conf_files import check_conf_aliases, conf_folders

    # Make Hydra raise instead of printing and exiting 1, which would read as `block`.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    _Outcome.verbose = any(arg in VERBOSE_FLAGS for arg in sys.argv[1:])
    sys.argv[1:] = [keep_package_conf(arg) for arg in sys.argv[1:] if arg not in VERBOSE_FLAGS]
    try:
        check_flags(sys.argv[1:])
        refuse_credentials(sys.argv[1:])
        if any(arg in ("--help", "-h") for arg in sys.argv[1:]):  # Hydra's lists one config folder only
            return _help(sys.argv[1:])
        conf_dir, config_name = primary_config(sys.argv[1:])
        # Hydra's YAML loader has no bound on aliases: a bomb in conf/ is refused before Hydra composes it
        check_conf_aliases(conf_folders(conf_dir, sys.argv[1:]))
    except EvalkitError as error:
        print(f"error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    app = hydra.main(config_path=str(conf_dir), config_name=config_name, version_base="1.3")(_job)
    # Hydra logs a sweep's overrides before its first job knows the run's key variables: mask, from the start,
    # the values of every variable any config or override names in api_key_env.
    MaskedStream.redactors = [MaskedStream.from_project(conf_dir, sys.argv[1:]), pattern_literals(sys.argv[1:])]
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout), MaskedStream(sys.stderr)
    try:
        app()
    except MissingConfigException as error:
        print(f"error: {one_line(missing_option(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except (HydraException, OmegaConfBaseException) as error:
        print(f"error: {one_line(config_error(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except ValueError as error:  # Hydra's override parser (an integer of more digits than Python converts)
        print(f"error: command line: a value cannot be read ({one_line(str(error), 200)})", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except OSError as error:  # Hydra's own output folders (the task's errors are caught inside it)
        print(f"error: {output_dir_error(error)}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    finally:
        sys.stdout, sys.stderr = streams
    return _Outcome.code


if __name__ == "__main__":
    sys.exit(main())
