"""The multirun summary: a Hydra callback that reads each job's `job.json` and writes one table.

Jobs write their own result files because `on_multirun_end` sees only the config, not job returns, and a job
may have run in another process or on another machine (joblib, submitit, Slurm). The summary is built from
those files alone: a job folder without a readable `job.json` (its process was killed) is an error row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from evalkit.core.atomic import write_atomic
from evalkit.core.console import say
from evalkit.core.errors import EvalkitError
from evalkit.core.untrusted import MAX_VALUE_CHARS, markdown
from evalkit.gate.decision import ExitCode
from evalkit.live.redact import Redactor
from evalkit.records.report_reader import read_reports
from evalkit.render.money import usd_text
from evalkit.render.sweep_page import JobCase, render_summary_html

__all__ = ["SweepSummary", "JOB_FILE", "SUBMITIT_LAUNCHERS", "sweep_exit_code", "render_summary", "read_rows",
           "job_folders", "metric_columns"]

JOB_FILE = "job.json"
# hydra-submitit-launcher's launchers (their `_target_`) and evalkit's subclasses that wait on every job and give
# one that ended without a result (scancel, a time limit) an error row, where the plugin's raise at the first.
SUBMITIT_LAUNCHERS = {
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher":
        "hydra_plugins.evalkit_launchers.submitit.EvalkitSlurmLauncher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher":
        "hydra_plugins.evalkit_launchers.submitit.EvalkitLocalLauncher",
}
# A sweep exits with its most severe job: errors first, then block, incomparable, go.
_SEVERITY = [ExitCode.INTERNAL_ERROR, ExitCode.INPUT_ERROR, ExitCode.OUTAGE, ExitCode.BLOCK, ExitCode.INCOMPARABLE,
             ExitCode.GO]


def sweep_exit_code(codes: list[int]) -> int:
    for code in _SEVERITY:
        if code in codes:
            return int(code)
    return int(ExitCode.GO) if not codes else max(codes)


def render_summary(rows: list[dict[str, Any]]) -> str:
    """A Markdown table, one row per job, the suite's metrics as the last columns; also readable in a terminal."""
    metrics = metric_columns(rows)
    header = ["job", "overrides", "changed", "decision", "pass rate", "case pass rate", "regressed", "input tokens",
              "cost USD"]
    paired = any(row.get("paired") for row in rows)  # only sweeps whose policy asks for the bootstrap
    if paired:
        header.append("paired difference [interval]")
    header += [markdown(name, MAX_VALUE_CHARS) for name in metrics]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        rate, case_rate = row.get("pass_rate"), row.get("case_pass_rate")
        cells = [str(row.get("job", "")), " ".join(row.get("overrides", [])) or "(defaults)",
                 row.get("changed") or "-", (row.get("decision") or ("error" if row.get("error") else "none")).upper(),
                 "-" if rate is None else f"{rate:.3f}", "-" if case_rate is None else f"{case_rate:.3f}",
                 "-" if row.get("regressed") is None else str(row["regressed"]),
                 "-" if row.get("input_tokens") is None else str(row["input_tokens"]),
                 usd_text(row["cost_usd"]) if "cost_usd" in row else "-"]
        if row.get("error"):
            cells[3] = "ERROR: " + row["error"]
        values: dict[str, Any] = row["metrics"] if isinstance(row.get("metrics"), dict) else {}
        # every cell can hold text from a job's report or overrides: never a tag, link or cell of its own
        shown = [markdown(cell) for cell in (*cells, *(_metric(values.get(name)) for name in metrics))]
        if paired:  # numbers evalkit formats itself, so the brackets stay brackets in a terminal too
            stats = row.get("paired")
            shown.insert(len(cells), f"{stats['difference']:.3f} [{stats['interval'][0]:.3f}, "
                                     f"{stats['interval'][1]:.3f}]" if stats else "-")
        lines.append("| " + " | ".join(shown) + " |")
    return "\n".join(lines)


def read_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per job folder of the sweep (a folder holding `job.json` or Hydra's `.hydra/`), by job number.

    A folder whose `job.json` is missing or unreadable is an error row (exit 5: the job's process ended before
    it could write its result, e.g. killed by the cluster), never a crash of the summary.
    """
    from evalkit.core.errors import InputError
    from evalkit.core.files import read_text
    from evalkit.core.parsing import parse_json

    rows = []
    for folder in job_folders(sweep_dir):
        try:
            row = parse_json(read_text(folder / JOB_FILE, "job result"), str(folder / JOB_FILE), "job result")
            if not isinstance(row, dict) or not isinstance(row.get("exit_code"), int):
                raise InputError(f"{folder / JOB_FILE}: not a job result (no exit_code)")
        except InputError as error:
            row = {"job": _job_number(folder.name) if folder.name.isdigit() else folder.name,
                   "overrides": _overrides(folder), "exit_code": int(ExitCode.OUTAGE),
                   "error": f"the job wrote no result ({error}); read its log in {folder}"}
        rows.append(row)
    return rows


def job_folders(sweep_dir: Path) -> list[Path]:
    """The sweep's job folders (holding `job.json` or Hydra's `.hydra/`), by job number."""
    folders = {p.parent for p in sweep_dir.glob(f"*/{JOB_FILE}")} | {p.parent for p in sweep_dir.glob("*/.hydra")}
    return sorted(folders, key=lambda p: (_job_number(p.name), p.name))


def _overrides(folder: Path) -> list[str]:
    """The job's overrides as Hydra saved them in `.hydra/overrides.yaml`; none if unreadable."""
    from evalkit.core.errors import InputError
    from evalkit.core.files import read_text
    from evalkit.core.parsing import parse_yaml

    path = folder / ".hydra" / "overrides.yaml"
    try:
        given = parse_yaml(read_text(path, "job overrides"), str(path))
    except InputError:
        return []
    return [str(o) for o in given] if isinstance(given, list) else []


def metric_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The metrics the jobs report (each job wrote those `sweep.metrics` names, or all of its own), in the order
    the first job naming each has them."""
    names: dict[str, None] = {}
    for row in rows:
        if isinstance(row.get("metrics"), dict):
            names.update(dict.fromkeys(row["metrics"]))
    return list(names)


def _metric(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else "-"


class SweepSummary(Callback):
    """Prints and writes `summary.md`, `summary.json` and `summary.html` (each job linking its report.html) in the
    sweep directory; sets the exit code."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        """Run the submitit launchers as evalkit's subclasses, which account for every job (see launchers.py);
        forget the output files an earlier sweep into the same folder claimed (claims.py)."""
        from omegaconf import open_dict, read_write

        from evalkit.sweeps.claims import clear_claims

        clear_claims(Path(config.hydra.sweep.dir))
        target = config.hydra.get("launcher", {}).get("_target_")
        if target in SUBMITIT_LAUNCHERS:
            with read_write(config.hydra), open_dict(config.hydra):
                config.hydra.launcher._target_ = SUBMITIT_LAUNCHERS[target]

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        folders = job_folders(sweep_dir)
        rows = read_rows(sweep_dir)  # one per folder, in the same order
        links = [folder.name if (folder / "report.html").is_file() else None for folder in folders]
        # each job masked its own row; mask again with the sweep's key variables, in case a job could not
        rows = _redactor(config).scrub(rows)  # the cases' replies below are masked the same way
        table = render_summary(rows)
        write_atomic(sweep_dir / "summary.md", table + "\n")
        write_atomic(sweep_dir / "summary.json", json.dumps(rows, indent=2, allow_nan=False) + "\n")
        redact = _redactor(config)
        cases = [_job_cases(folder / "report.json", redact) for folder in folders]
        write_atomic(sweep_dir / "summary.html", render_summary_html(rows, metric_columns(rows), links, cases))
        say(f"\nsweep summary ({len(rows)} jobs, {sweep_dir / 'summary.md'}):\n{table}")
        raise SystemExit(sweep_exit_code([int(r["exit_code"]) for r in rows]))


def _job_cases(report: Path, redact: Redactor) -> dict[str, JobCase] | None:
    """A job's cases for the summary's matrix, by id; None when the job wrote no report that can be read (its
    row says why)."""
    if not report.is_file():
        return None
    try:
        ((read, _),) = read_reports([report])
    except EvalkitError:
        return None
    cases = {}
    for case in read.cases:
        passed = None if case.get("status") == "unscored" else case.get("passed")
        output = case.get("output")
        text = None if output is None else redact(output if isinstance(output, str) else json.dumps(output))
        cases[str(case.get("id"))] = JobCase(passed if isinstance(passed, bool) else None, text)
    return cases


def _redactor(config: Any) -> Redactor:
    """The credential variables the sweep's composed config names (`api_key_env`, `token_env` of the model and the
    judge) and those their providers read by themselves (Bedrock's AWS chain)."""
    from omegaconf import OmegaConf

    from evalkit.core.provider_specs import provider_specs

    names: list[str] = []
    for group in ("model", "judge"):
        names += [OmegaConf.select(config, f"{group}.{field}", default=None) for field in ("api_key_env", "token_env")]
        spec = provider_specs().get(str(OmegaConf.select(config, f"{group}.provider", default="")))
        names += spec.credential_env if spec is not None else ()
    return Redactor([name for name in names if isinstance(name, str)])


def _job_number(name: str) -> int:
    return int(name) if name.isdigit() else 1 << 30
