"""`python -m evalkit [overrides]` (evalkit.cli.run): compose -> run -> decide -> render -> exit code.

Exit codes: 0 go (and review), 1 block, 2 incomparable, 3 input or usage error, 4 internal error.
With `-m`, every job writes `job.json` and the sweep exits with its most severe job.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evalkit.cli.guard import command, say
from evalkit.core.errors import EvalkitError, OutageError, one_line

if TYPE_CHECKING:
    from evalkit.core.config import RunConfig
    from evalkit.live.redact import Redactor



# A full disk or quota, or a read-only filesystem: an output that cannot be written (exit 3), not a crash.
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


class _Outcome:
    """Carries a single run's exit code out of Hydra, which discards the task function's return."""

    code: int = 0


def _job(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from evalkit.core.config import from_hydra
    from evalkit.gate.decision import ExitCode
    from evalkit.live.redact import Redactor
    from evalkit.run.runner import redactor_for

    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    # the overrides as typed: iterating them through OmegaConf would resolve `${...}` inside them
    typed = OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False)
    row: dict[str, Any] = {"job": hydra_cfg.job.num if multirun else 0,
                           "overrides": [str(o) for o in typed] if isinstance(typed, list) else []}
    redact = Redactor()  # credential shapes only, until the config names the run's key variables
    try:
        config = from_hydra(cfg)
        redact = redactor_for(config)
        redact.install_log_filter()
        _Shown.redactors = [*_Shown.redactors[:1], redact]
        _scrub_hydra_files(hydra_cfg, multirun, redact)
        code = _run(config, row, redact)
    except OutageError as error:  # the server failed, not the model: never a decision
        message = redact(str(error))
        print(f"outage: {message}", file=sys.stderr)
        code, row["error"] = ExitCode.OUTAGE, message
    except EvalkitError as error:
        message = one_line(redact(str(error)))
        print(f"error: {message}", file=sys.stderr)
        code, row["error"] = ExitCode.INPUT_ERROR, message
    except Exception as error:  # a crash must never read as a decision
        if isinstance(error, OSError) and error.errno in _NO_SPACE:  # the machine's fault, not a bug: one line
            message = redact(f"{error.filename or 'a file of this run'}: cannot write it ({error.strerror}); free "
                             "space and run again (a live run: continue with +run.resume=true)")
            print(f"error: {message}", file=sys.stderr)
            code, row["error"] = ExitCode.INPUT_ERROR, message
        else:
            print(redact(traceback.format_exc()), file=sys.stderr, end="")
            code, row["error"] = ExitCode.INTERNAL_ERROR, redact(f"internal error: {type(error).__name__}: {error}")
    row["exit_code"] = int(code)
    if multirun:
        from evalkit.cli.sweep import JOB_FILE
        from evalkit.core.atomic import write_atomic

        write_atomic(Path(hydra_cfg.runtime.output_dir) / JOB_FILE, json.dumps(redact.scrub(row), indent=2) + "\n")
    else:
        _Outcome.code = int(code)



def _scrub_hydra_files(hydra_cfg: Any, multirun: bool, redact: Redactor) -> None:
    """Rewrite the YAML files Hydra wrote before the job started (`.hydra/*.yaml`, a sweep's `multirun.yaml`)
    with the run's key values masked, when a config or override put one there. Credential-shaped overrides never
    get this far (main refuses them); this catches a key value that only the composed config names."""
    import yaml

    from evalkit.core.atomic import write_atomic

    out = Path(hydra_cfg.runtime.output_dir)
    paths = list((out / hydra_cfg.output_subdir).glob("*.yaml")) if hydra_cfg.output_subdir else []
    if multirun:
        paths.append(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if redact.values(text) != text:
            data = redact.scrub(yaml.safe_load(text), messages=False)
            write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _run(config: RunConfig, row: dict[str, Any], redact: Redactor) -> int:
    from evalkit.cli.evidence import evidence, report_identity
    from evalkit.core.atomic import write_atomic
    from evalkit.core.files import read_text_sha256
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
        say("decision: none (baseline=none: the run was not gated)")
        say(redact(run_line))
        return ExitCode.GO
    name, base_report, base_sha = baseline
    decision = decide(config.policy, base_report, result.report)
    _, candidate_sha = read_text_sha256(result.report_path, "report")  # the report.json just written
    facts = evidence(_run_policy(config, row.get("overrides", ())), report_identity(name, base_sha, base_report),
                     report_identity(str(result.report_path), candidate_sha, result.report))
    written = redact.scrub({"baseline": name, **decision.to_json(), "evidence": facts})
    write_atomic(Path(config.run.out) / "decision.json", json.dumps(written, indent=2, allow_nan=False) + "\n")
    write_atomic(Path(config.run.out) / "decision.md",
                 redact(render_markdown(decision, result.report, config.policy.critical, facts, base_report)))
    row.update(decision=str(decision.decision), changed=render_changed(decision.changed),
               regressed=len(decision.regressed), pass_rate=decision.pass_rate)
    if decision.statistics:
        row["paired"] = {k: decision.statistics[k] for k in ("difference", "interval", "groups", "seed", "resamples")}
    say(redact(render_decision(decision, config.policy.critical)))
    say(redact(render_sections(result.report)))
    say(redact(run_line))
    say(redact(f"baseline: {name}"))
    if not config.require_pass:  # report-only: everything above was written; only the exit code differs
        return ExitCode.GO
    return exit_code(decision.decision, config.policy.review_fails)


def _run_policy(config: RunConfig, overrides: Any) -> dict[str, Any]:
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


@command
def main() -> int:
    """Run Hydra with evalkit's error handling: one line per refusal, decision codes kept distinct."""
    import hydra
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    from evalkit.gate.decision import ExitCode

    # Make Hydra raise instead of printing and exiting 1, which would read as `block`.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    sys.argv[1:] = [_keep_package_conf(arg) for arg in sys.argv[1:]]
    try:
        _check_flags(sys.argv[1:])
        _refuse_credentials(sys.argv[1:])
        conf_dir, config_name = _primary_config(sys.argv[1:])
    except EvalkitError as error:
        print(f"error: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    app = hydra.main(config_path=str(conf_dir), config_name=config_name, version_base="1.3")(_job)
    # Hydra logs a sweep's overrides before its first job knows the run's key variables: mask, from the start,
    # the values of every variable any config or override names in api_key_env.
    _Shown.redactors = [_Shown.from_project(conf_dir, sys.argv[1:])]
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Shown(sys.stdout), _Shown(sys.stderr)
    try:
        app()
    except MissingConfigException as error:
        print(f"error: {_missing_option(error)}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except (HydraException, OmegaConfBaseException) as error:
        print(f"error: {one_line(_config_error(error))}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except ValueError as error:  # Hydra's override parser (an integer of more digits than Python converts)
        print(f"error: command line: a value cannot be read ({one_line(str(error), 200)})", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except OSError as error:  # Hydra's own output folders (the task's errors are caught inside it)
        print(f"error: {_output_dir_error(error)}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    finally:
        sys.stdout, sys.stderr = streams
    return _Outcome.code


class _Shown(io.TextIOBase):
    """stdout or stderr with secrets masked in all that is written: evalkit's lines, Hydra's log, tracebacks."""

    redactors: list[Callable[[str], str]] = []

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @staticmethod
    def from_project(conf_dir: Path, argv: list[str]) -> Callable[[str], str]:
        from evalkit.live.redact import Redactor

        names = set(re.findall(r"api_key_env=([\w.-]+)", " ".join(argv)))
        for path in [*conf_dir.rglob("*.yaml"), *Path(__file__).parents[1].joinpath("conf").rglob("*.yaml")]:
            try:
                names |= set(re.findall(r"api_key_env:\s*['\"]?([\w.-]+)", path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
        return Redactor(sorted(names)).values

    def write(self, text: str) -> int:
        shown = text
        for redact in _Shown.redactors:
            shown = redact(shown)
        try:
            self._stream.write(shown)
        except BrokenPipeError:  # a reader that went away (`| head`): the rest goes nowhere, not into tracebacks
            self._gone()
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def _gone(self) -> None:
        self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  (lives as long as the process)

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # (TextIOBase declares it read-only, as here)
        return self._stream.encoding


def _refuse_credentials(argv: list[str]) -> None:
    """Refuse an override that carries a credential before Hydra writes it into .hydra/, multirun.yaml, job.json,
    the sweep summary and the terminal; the one way in for a key is an environment variable named by api_key_env."""
    from evalkit.core.errors import InputError
    from evalkit.live.redact import override_credential

    for arg in argv:
        found = override_credential(arg)
        if found:
            where = arg.split("=", 1)[0] if "=" in arg else "an argument"
            raise InputError(f"command line {where}=...: the value holds {found}; overrides are written to .hydra/, "
                             "job.json and sweep summaries and shown, so evalkit refuses credentials there: put the "
                             "key in an environment variable and name it with model.api_key_env (or "
                             "judge.api_key_env)")


# Hydra's own flags (hydra/_internal/utils.py get_args_parser); any other `-x` is refused before Hydra sees it
_FLAGS = {"--help", "-h", "--hydra-help", "--version", "--cfg", "-c", "--resolve", "--package", "-p", "--run",
          "-r", "--multirun", "-m", "--shell-completion", "-sc", "--config-path", "-cp", "--config-name", "-cn",
          "--config-dir", "-cd", "--experimental-rerun", "--info", "-i"}


_INFO = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")  # Hydra's --info choices


def _check_flags(argv: list[str]) -> None:
    """Refuse an unknown `--flag` in one line (Hydra's argparse would print its usage and exit 2: incomparable)."""
    for index, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in ("--cfg", "-c"):
            value = value if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            if value not in ("job", "hydra", "all"):
                raise EvalkitError(f"command line: {flag} takes job, hydra or all (got {value[:40]!r})")
        if flag in ("--info", "-i"):  # an optional value: the next argument, unless it is another flag
            following = argv[index + 1] if index + 1 < len(argv) else None
            value = value if eq else following if following is not None and not following.startswith("-") else ""
            if value and value not in _INFO:
                raise EvalkitError(f"command line: {flag} takes nothing or one of {', '.join(_INFO)} "
                                   f"(got {value[:40]!r})")
        if arg.startswith("-") and arg.split("=", 1)[0] not in _FLAGS and not arg.lstrip("-")[:1].isdigit():
            shown_arg = arg if len(arg) <= 60 else arg[:57] + "..."
            raise EvalkitError(f"command line: unknown option {shown_arg!r}; evalkit takes overrides (key=value, "
                               "e.g. model=gemma4) and Hydra's flags (-m, --cfg job, --help)")


def _output_dir_error(error: OSError) -> str:
    where = error.filename or "an output folder"
    return one_line(f"cannot create the run folder {where} ({error.strerror or error}); hydra.run.dir and "
                    "hydra.sweep.dir must name folders that can be created (not files)")


def _missing_option(error: Any) -> str:
    message = str(error).splitlines()[0]
    options = getattr(error, "options", None)
    if options:
        return f"{message.strip()} (available: {', '.join(sorted(options))})"
    if "Could not load 'evalkit'" in message:  # the project's config.yaml does not reach the package's configs
        return (f"{message.strip()}: evalkit's base settings ship in the package; add `hydra: {{searchpath: "
                "[pkg://evalkit.conf]}` to the project's conf/config.yaml (python -m evalkit.new project writes it)")
    return message


_HELP_FLAGS = ("--help", "-h", "--hydra-help")
PACKAGE_SEARCHPATH = "pkg://evalkit.conf"


def _keep_package_conf(arg: str) -> str:
    """`hydra.searchpath=[file://extra]` replaces the project's list; evalkit's own configs stay searched, last."""
    name, sep, value = arg.partition("=")
    if name != "hydra.searchpath" or not sep or PACKAGE_SEARCHPATH in value:
        return arg
    inner = value.strip()
    inner = inner[1:-1].strip() if inner.startswith("[") and inner.endswith("]") else inner
    return f"hydra.searchpath=[{inner + ',' if inner else ''}{PACKAGE_SEARCHPATH}]"


def _primary_config(argv: list[str]) -> tuple[Path, str]:
    """The project's conf/ and its config.yaml; outside any project, `--help` still shows evalkit's own."""
    from omegaconf import OmegaConf

    from evalkit.project.paths import PACKAGE_CONF, find_project, project_root

    root = find_project()
    if root is None and any(arg in _HELP_FLAGS for arg in argv):
        OmegaConf.register_new_resolver("evalkit_project", lambda: str(Path.cwd()), replace=True)
        return PACKAGE_CONF, "evalkit"
    root = project_root()  # no project (or a wrong EVALKIT_PROJECT) is one line saying how to make one
    # job folders go under the project root, wherever evalkit is started from (evalkit/conf/evalkit.yaml)
    OmegaConf.register_new_resolver("evalkit_project", lambda: str(root), replace=True)
    return root / "conf", "config"


def _config_error(error: BaseException) -> str:
    """One line for a composition error; an unknown key lists the keys that exist there."""
    from evalkit.core.config import RunConfig
    from evalkit.core.errors import fields_at

    cause = error.__cause__ or error
    full_key = getattr(cause, "full_key", None)
    first = str(error).splitlines()[0]
    overridden = re.match(r"Could not override '([\w/]+)'\. No match in the defaults list", first)
    if overridden:  # the group exists, but the chosen suite's defaults do not compose it
        group = overridden.group(1)
        given = next((a for a in sys.argv[1:] if a.lstrip("+~").split("=")[0] == group), f"{group}=...")
        return (f"command line {given}: the suite composes no {group} to choose (a suite that evaluates a "
                f"candidate program has no model or prompt; its option in conf/suite/ lists the groups it uses)")
    parse = re.match(r"(?:Error parsing override '(.*)'|\w*(?:Lexer|Parse|Parser)\w*Exception: (.*))$", first)
    if parse or "LexerNoViableAltException" in str(error):
        given = (parse.group(1) or parse.group(2)) if parse else first
        name, _, value = given.partition("=")
        return (f"command line: cannot parse the override {given!r}: values with characters other than letters, "
                f"digits and _-./: need quotes, e.g. {name}='\"{value}\"' (single quotes for the shell, "
                "double quotes for Hydra)")
    if full_key and "not in struct" in str(cause):
        parts = tuple(str(full_key).split("."))
        allowed = fields_at(RunConfig, parts[:-1])
        hint = f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""
        return f"command line: unknown key '{full_key}'{hint}"
    return f"config: {first}"


if __name__ == "__main__":
    sys.exit(main())
