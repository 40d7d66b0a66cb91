"""`python -m evalkit [overrides]` (evalkit.cli.run): compose -> run -> decide -> render -> exit code.

Exit codes: 0 go (and review), 1 block, 2 incomparable, 3 input or usage error, 4 internal error.
With `-m`, every job writes `job.json` and the sweep exits with its most severe job.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.core.errors import EvalkitError

if TYPE_CHECKING:
    from evalkit.core.config import RunConfig



class _Outcome:
    """Carries a single run's exit code out of Hydra, which discards the task function's return."""

    code: int = 0


def _job(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from evalkit.core.config import from_hydra
    from evalkit.gate.decision import ExitCode
    from evalkit.live.redact import Redactor
    from evalkit.run.runner import redactor_for

    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    row: dict[str, Any] = {"job": hydra_cfg.job.num if multirun else 0,
                           "overrides": list(hydra_cfg.overrides.task)}
    redact = Redactor()  # credential shapes only, until the config names the run's key variables
    try:
        config = from_hydra(cfg)
        redact = redactor_for(config)
        redact.install_log_filter()
        code = _run(config, row)
    except EvalkitError as error:
        message = redact(str(error))
        print(f"error: {message}", file=sys.stderr)
        code, row["error"] = ExitCode.INPUT_ERROR, message
    except Exception as error:  # a crash must never read as a decision
        print(redact(traceback.format_exc()), file=sys.stderr, end="")
        code, row["error"] = ExitCode.INTERNAL_ERROR, redact(f"internal error: {type(error).__name__}: {error}")
    row["exit_code"] = int(code)
    if multirun:
        from evalkit.cli.sweep import JOB_FILE
        from evalkit.core.atomic import write_atomic

        write_atomic(Path(hydra_cfg.runtime.output_dir) / JOB_FILE, json.dumps(row, indent=2) + "\n")
    else:
        _Outcome.code = int(code)


def _say(text: str) -> None:
    """Print to stdout; a reader that went away (`| head`) must not turn the decision into a crash."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _run(config: RunConfig, row: dict[str, Any]) -> int:
    from evalkit.core.atomic import write_atomic
    from evalkit.gate.decide import decide
    from evalkit.gate.decision import ExitCode, exit_code
    from evalkit.render.markdown import render_markdown
    from evalkit.render.sections import render_sections
    from evalkit.render.text import render_changed, render_decision
    from evalkit.run.baseline import load_baseline
    from evalkit.run.runner import run_suite

    baseline = load_baseline(config.baseline, config.suite.baseline, config.suite.name) if config.baseline else None
    result = run_suite(config, baseline[1] if baseline else None)
    row["pass_rate"] = round(result.report.passed / len(result.report.outcomes), 3)
    row["case_pass_rate"] = result.report.metrics.get("case_pass_rate")
    row["input_tokens"] = result.execution.get("cost", {}).get("input_tokens")
    tests = f"{result.report.passed} of {len(result.report.outcomes)} tests passed"
    if result.recording_path is None:  # a candidate-program suite: no model calls, nothing recorded
        budget_used = result.execution.get("budget", {})
        run_line = (f"run: suite {config.suite.name}, candidate {result.report.candidate.get('option')} on split "
                    f"{result.report.dataset.get('split')}, {tests} (candidate programs, no model calls); "
                    f"units spent {budget_used.get('spent_units')}, unknown reservations "
                    f"{budget_used.get('unknown_reservations')}, denied cases {budget_used.get('denied_cases')}; "
                    f"report {result.report_path}\nisolation: {result.report.provenance.get('isolation')}")
    else:
        run_line = (f"run: suite {config.suite.name}, {tests} ({config.mode}, recording {result.recording_path.name}, "
                    f"{result.report.provenance.get('recording_provenance')}); report {result.report_path}")
    live = result.execution.get("live")
    if live:
        budget = live["budget"]
        run_line += (f"\nlive: {live['sent']} calls sent ({live['retried']} retried) in {live['seconds']:.1f} s; "
                     f"input tokens {budget['input_tokens']}, output tokens {budget['output_tokens']} "
                     f"(estimated where the provider reported none; {budget['unknown_usage_calls']} calls "
                     f"with unknown usage); calls {result.execution['calls']}")
    if baseline is None:
        _say("decision: none (baseline=none: the run was not gated)")
        _say(run_line)
        return ExitCode.GO
    name, base_report = baseline
    decision = decide(config.policy, base_report, result.report)
    write_atomic(Path(config.run.out) / "decision.json",
                 json.dumps({"baseline": name, **decision.to_json()}, indent=2) + "\n")
    write_atomic(Path(config.run.out) / "decision.md",
                 render_markdown(decision, result.report, config.policy.critical, base_report))
    row.update(decision=str(decision.decision), changed=render_changed(decision.changed),
               regressed=len(decision.regressed), pass_rate=decision.pass_rate)
    if decision.statistics:
        row["paired"] = {k: decision.statistics[k] for k in ("difference", "interval", "groups", "seed", "resamples")}
    _say(render_decision(decision, config.policy.critical))
    _say(render_sections(result.report))
    _say(run_line)
    _say(f"baseline: {name}")
    if not config.require_pass:  # report-only: everything above was written; only the exit code differs
        return ExitCode.GO
    return exit_code(decision.decision, config.policy.review_fails)


def main() -> int:
    """Run Hydra with evalkit's error handling: one line per refusal, decision codes kept distinct."""
    import hydra
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    from evalkit.gate.decision import ExitCode

    # Make Hydra raise instead of printing and exiting 1, which would read as `block`.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    from evalkit.project.paths import PROJECT_ROOT

    app = hydra.main(config_path=str(PROJECT_ROOT / "conf"), config_name="config", version_base="1.3")(_job)
    try:
        app()
    except MissingConfigException as error:
        print(f"error: {_missing_option(error)}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except (HydraException, OmegaConfBaseException) as error:
        print(f"error: {_config_error(error)}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    return _Outcome.code


def _missing_option(error: Any) -> str:
    message = str(error).splitlines()[0]
    options = getattr(error, "options", None)
    if options:
        return f"{message.strip()} (available: {', '.join(sorted(options))})"
    return message


def _config_error(error: BaseException) -> str:
    """One line for a composition error; an unknown key lists the keys that exist there."""
    from evalkit.core.config import RunConfig
    from evalkit.core.errors import fields_at

    cause = error.__cause__ or error
    full_key = getattr(cause, "full_key", None)
    first = str(error).splitlines()[0]
    if full_key and "not in struct" in str(cause):
        parts = tuple(str(full_key).split("."))
        allowed = fields_at(RunConfig, parts[:-1])
        hint = f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""
        return f"command line: unknown key '{full_key}'{hint}"
    return f"config: {first}"


if __name__ == "__main__":
    sys.exit(main())
