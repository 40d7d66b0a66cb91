"""Hand a run's input to the suite's checks and write what they report: the checks run in a fresh pytest process
(run_checks), and the runner's sections are added to their report before `report.json` is written
(check_and_report).

pytest runs in a fresh process for every run, never in-process: the jobs of a Hydra sweep share a
process, and an in-process pytest would keep the first job's test modules for the next one.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalkit.core.atomic import write_atomic
from evalkit.core.config import RunConfig
from evalkit.core.errors import InputError
from evalkit.core.json_text import compact_json, indented_json, json_value
from evalkit.core.version import __version__
from evalkit.judging.check_spec import ChecksFile
from evalkit.live.redact import Redactor
from evalkit.project.paths import PROJECT_ENV, project_root, shown
from evalkit.records.report_reader import Counts, RunReport, report_from_mapping
from evalkit.run.canonical import canonical_text
from evalkit.run.looped_metrics import LoopedMetrics
from evalkit.run.plugin import RUN_OPTION
from evalkit.run.recording import Provenance
from evalkit.run.run_input import RunInput, SuiteInput, read_run_input
from evalkit.run.run_secrets import key_variables
from evalkit.run.shards import merged_report, shard_file, shard_name
from evalkit.run.workers import shard_args, worker_count

__all__ = ["check_and_report", "checks_report", "run_checks", "run_provenance", "suite_input"]

# pytest's exit codes that still mean "the checks ran": 0 all passed, 1 some failed.
_CHECKS_RAN = (0, 1)
_NO_TESTS = 5
# Settings from the caller's environment that would change which checks run or how.
_PYTEST_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
_OWN_PLUGINS = ("evalkit.run.plugin", "pytest_jsonreport.plugin")
"""The plugins a suite's checks always need, by module name: loaded this way when the suite names its plugins."""


def checks_report(config: RunConfig, suite_dir: Path, run_input: RunInput, redact: Redactor) -> dict[str, Any]:
    """Hand the run's input to the suite's checks; their raw report."""
    out = Path(config.run.out)
    out.mkdir(parents=True, exist_ok=True)
    input_path = out / "run-input.json"
    # what the checks read: key values masked (as in the recording), nothing else, so no pattern changes a grade
    given = run_input.model_dump(mode="json")
    _, text = redact.masked(given, lambda data: json.dumps(data, ensure_ascii=False), messages=False)
    write_atomic(input_path, text)
    return run_checks(suite_dir, input_path, out, redact, key_variables(config), worker_count(config.run.workers),
                      config.run.shard_of, config.suite.pytest_plugins)


def check_and_report(config: RunConfig, suite_dir: Path, run_input: RunInput, redact: Redactor,
                      extra: dict[str, Any], verify: Callable[[], None] = lambda: None,
                      sequential: Callable[[Mapping[str, Counts]], dict[str, Any]] | None = None,
                      looped: LoopedMetrics | None = None) -> tuple[RunReport, Path]:
    """Hand the run's input to the suite's checks, add `extra` sections (and `sequential`'s block, from the
    tests' counts, and `looped`'s metrics, from the checks' outcomes), write `report.json` (and save_report); a
    shard of a run writes its shard file instead, `looped` in it for `evalkit merge`.
    `verify` runs after the checks, before anything is written: it may refuse the run."""
    out = Path(config.run.out)
    data = checks_report(config, suite_dir, run_input, redact)
    shard = config.run.shard_of
    verify()
    if shard is not None:
        return _write_shard(out, shard, out / "run-input.json", data, extra, looped, redact, config.suite.name)
    data.update(extra)
    if looped is not None:
        looped.add_to(data)
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
                 sections: dict[str, Any], looped: LoopedMetrics | None, redact: Redactor,
                 suite: str) -> tuple[RunReport, Path]:
    """Write a machine's shard file (evalkit.run.shards) instead of a report; return its block of the checks as a
    report for the terminal's line, never written or gated: a shard alone is not a run."""
    run_input = json.loads(input_path.read_text(encoding="utf-8"))  # as the checks read it, key values masked
    path = out / shard_name(*shard)
    content = redact.scrub(shard_file(*shard, run_input, sections, partial,
                                      looped.to_json() if looped is not None else None))
    write_atomic(path, json.dumps(content, ensure_ascii=False, allow_nan=False) + "\n")
    own = merged_report([partial], RunInput.model_validate(run_input)) | sections
    return report_from_mapping(redact.scrub(own), f"shard {shard[0]}/{shard[1]} of suite {suite}"), path


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


def suite_input(config: RunConfig, declared: ChecksFile | None,
                 baseline_replies: Mapping[str, str] | None = None) -> SuiteInput:
    """What the suite's checks need from its config: slices, the abstention check, the group field, the checks its
    `checks.yaml` (`declared`, read once by the run) marks critical, and the cases the baseline replied to (a
    pairwise check against the baseline compares only those)."""
    return SuiteInput(slices=[s if isinstance(s, str) else s.model_dump() for s in config.suite.slices],
                      abstention_check=config.suite.abstention_check, group_by=config.suite.group_by,
                      critical=list(declared.critical) if declared is not None else [],
                      baseline_cases=sorted(baseline_replies or {}))


def run_provenance(config: RunConfig, rec_path: Path | None, recording: Provenance | None) -> dict[str, Any]:
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
