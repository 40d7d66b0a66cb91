"""Run a suite under an eval key: obtain the calls, run the pytest checks in a subprocess, and
return the run report.

pytest runs in a fresh process for every run, never in-process: the jobs of a Hydra sweep share a
process, and an in-process pytest would keep the first job's test modules for the next one.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.atomic import write_atomic
from evalkit.config import Mode, RunConfig
from evalkit.dataset import load_dataset
from evalkit.errors import InputError
from evalkit.execute import execute
from evalkit.key import EvalKey, build_key, recording_path
from evalkit.paths import PROJECT_ROOT, project_path
from evalkit.plugin import RUN_OPTION
from evalkit.providers import make_provider
from evalkit.recording import Provenance, Recording, load_recording, save_recording
from evalkit.report import RunReport, report_from_mapping
from evalkit.suite import load_task
from evalkit.version import __version__

__all__ = ["RunResult", "run_suite", "run_checks"]

# pytest's exit codes that still mean "the checks ran": 0 all passed, 1 some failed.
_CHECKS_RAN = (0, 1)
_NO_TESTS = 5
# Settings from the caller's environment that would change which checks run or how.
_PYTEST_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")


@dataclass(frozen=True)
class RunResult:
    key: EvalKey
    report: RunReport
    report_path: Path
    recording_path: Path


def run_suite(config: RunConfig) -> RunResult:
    """Execute and check one run; writes `report.json` (and the recording, in live modes)."""
    suite_dir = project_path(config.suite.path)
    dataset = load_dataset(project_path(config.dataset.file))
    prompt_path = project_path(config.prompt.file)
    try:
        prompt_text = prompt_path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"{prompt_path}: cannot read prompt {config.prompt.version} ({error.strerror})") from None
    key = build_key(
        suite=config.suite.name, dataset=dataset, model=config.model.name,
        prompt_version=config.prompt.version, prompt_text=prompt_text,
        judge_model=config.judge.name if config.judge else None,
        components={g: (config.choices.get(g, g), s) for g, s in config.components.items()},
    )
    rec_path = recording_path(key, project_path(config.run.recordings))
    if config.mode is Mode.REPLAY or rec_path.is_file():
        recording = load_recording(rec_path, key)
    else:
        recording = Recording(key=key, provenance=Provenance(kind="recorded"), calls={})
    execution = execute(
        task=load_task(suite_dir), cases=dataset.cases, prompt=prompt_text, model=config.model,
        judge=config.judge, mode=config.mode, recording=recording, where=_shown(rec_path),
        provider_for=make_provider, version=__version__,
    )
    if execution.recording is not None:
        save_recording(execution.recording, rec_path)
        recording = execution.recording

    out = Path(config.run.out)
    out.mkdir(parents=True, exist_ok=True)
    run_input = {
        "key": key.model_dump(mode="json"),
        "provenance": _provenance(config, rec_path, recording.provenance),
        "cases": [{"id": c.id, "fields": c.fields} for c in dataset.cases],
        "calls": {cid: {"status": r.status, "text": r.text, "reason": r.reason,
                        "stop_reason": r.reply.stop_reason if r.reply else None}
                  for cid, r in execution.calls.items()},
    }
    input_path = out / "run-input.json"
    write_atomic(input_path, json.dumps(run_input, ensure_ascii=False))
    data = run_checks(suite_dir, input_path, out)
    report = report_from_mapping(data, f"report of suite {config.suite.name}")
    report_path = out / "report.json"
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    write_atomic(report_path, text)
    if config.run.save_report:
        write_atomic(Path(config.run.save_report).expanduser(), text)
    return RunResult(key, report, report_path, rec_path)


def run_checks(suite_dir: Path, input_path: Path, out: Path) -> dict[str, Any]:
    """Run the suite's pytest checks over the obtained calls in a fresh process; return the raw report."""
    ini = out / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")  # isolates the suite from the caller's pytest config
    raw_path = out / "pytest-report.json"
    raw_path.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", str(suite_dir), "-q", "--no-header", "-p", "no:cacheprovider",
        "-p", "no:hydra_pytest", "-c", str(ini), "--rootdir", str(suite_dir),
        "--json-report", f"--json-report-file={raw_path}",
        "--json-report-omit", "collectors", "keywords", "log", "streams", "traceback",
        f"{RUN_OPTION}={input_path}",
    ]
    env = {k: v for k, v in os.environ.items() if k not in _PYTEST_ENV}
    done = subprocess.run(command, cwd=suite_dir, env=env, capture_output=True, text=True, check=False)
    log = out / "pytest.log"
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode == _NO_TESTS:
        raise InputError(f"{suite_dir}: pytest collected no tests (exit code 5); see {log}")
    if done.returncode not in _CHECKS_RAN or not raw_path.is_file():
        last = _last_error_line(done.stdout + done.stderr)
        raise InputError(f"{suite_dir}: the suite's checks did not run (pytest exit code {done.returncode}: "
                         f"{last}); see {log}")
    data: dict[str, Any] = json.loads(raw_path.read_text(encoding="utf-8"))
    raw_path.unlink()
    return data


def _last_error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ") or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def _shown(path: Path) -> str:
    """Project files are named relative to the project root, as a reviewer sees them in git."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _provenance(config: RunConfig, rec_path: Path, recording: Provenance) -> dict[str, Any]:
    return {
        "evalkit_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "mode": str(config.mode),
        "recording": _shown(rec_path),
        "recording_provenance": recording.kind,
        "recording_note": recording.note,
    }


def _git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
