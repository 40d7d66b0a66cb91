"""The multirun summary: a Hydra callback that reads each job's `job.json` and writes one table.

Jobs write their own result files because `on_multirun_end` sees only the config, not job returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from evalkit.core.atomic import write_atomic
from evalkit.gate.decision import ExitCode
from evalkit.live.redact import Redactor
from evalkit.render.sweep_page import render_summary_html

__all__ = ["SweepSummary", "JOB_FILE", "sweep_exit_code", "render_summary", "metric_columns"]

JOB_FILE = "job.json"
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
    header = ["job", "overrides", "changed", "decision", "pass rate", "case pass rate", "regressed", "input tokens"]
    paired = any(row.get("paired") for row in rows)  # only sweeps whose policy asks for the bootstrap
    if paired:
        header.append("paired difference [interval]")
    header += metrics
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        rate, case_rate = row.get("pass_rate"), row.get("case_pass_rate")
        cells = [str(row.get("job", "")), " ".join(row.get("overrides", [])) or "(defaults)",
                 row.get("changed") or "-", (row.get("decision") or "error").upper(),
                 "-" if rate is None else f"{rate:.3f}", "-" if case_rate is None else f"{case_rate:.3f}",
                 "-" if row.get("regressed") is None else str(row["regressed"]),
                 "-" if row.get("input_tokens") is None else str(row["input_tokens"])]
        if paired:
            stats = row.get("paired")
            cells.append(f"{stats['difference']:.3f} [{stats['interval'][0]:.3f}, {stats['interval'][1]:.3f}]"
                         if stats else "-")
        values: dict[str, Any] = row["metrics"] if isinstance(row.get("metrics"), dict) else {}
        cells += [_metric(values.get(name)) for name in metrics]
        if row.get("error"):
            cells[3] = "ERROR: " + row["error"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


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

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        rows, folders = [], []
        for path in sorted(sweep_dir.glob(f"*/{JOB_FILE}"), key=lambda p: _job_number(p.parent.name)):
            rows.append(json.loads(path.read_text(encoding="utf-8")))
            folders.append(path.parent.name if (path.parent / "report.html").is_file() else None)
        # each job masked its own row; mask again with the sweep's key variables, in case a job could not
        rows = _redactor(config).scrub(rows)
        table = render_summary(rows)
        write_atomic(sweep_dir / "summary.md", table + "\n")
        write_atomic(sweep_dir / "summary.json", json.dumps(rows, indent=2, allow_nan=False) + "\n")
        write_atomic(sweep_dir / "summary.html", render_summary_html(rows, metric_columns(rows), folders))
        print(f"\nsweep summary ({len(rows)} jobs, {sweep_dir / 'summary.md'}):\n{table}")
        raise SystemExit(sweep_exit_code([int(r["exit_code"]) for r in rows]))


def _redactor(config: Any) -> Redactor:
    """The key variables the sweep's composed config names (`model.api_key_env`, `judge.api_key_env`)."""
    from omegaconf import OmegaConf

    names = [OmegaConf.select(config, f"{group}.api_key_env", default=None) for group in ("model", "judge")]
    return Redactor([name for name in names if isinstance(name, str)])


def _job_number(name: str) -> int:
    return int(name) if name.isdigit() else 1 << 30
