"""summary.html: a sweep's jobs as one sortable table, the suite's metrics as columns, each job linking its page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from evalkit.render.html import render_page

__all__ = ["render_summary_html"]

_TEXT_CHARS = 2_000  # of an override list, a `changed` line or an error shown in a cell


def render_summary_html(rows: list[dict[str, Any]], metrics: list[str], folders: list[str | None]) -> str:
    """One row per job (its `job.json`): decision, pass rates, regressions, input tokens and the `metrics`
    columns; `folders[i]` is job i's folder in the sweep (its report.html is linked), None when it has no page."""
    jobs = []
    for row, folder in zip(rows, folders, strict=True):
        values: dict[str, Any] = row["metrics"] if isinstance(row.get("metrics"), dict) else {}
        error = str(row["error"])[:_TEXT_CHARS] if row.get("error") else None
        jobs.append({
            "job": row.get("job", ""), "overrides": " ".join(map(str, row.get("overrides") or []))[:_TEXT_CHARS],
            "changed": str(row.get("changed") or "-")[:_TEXT_CHARS],
            "decision": "error" if error else str(row.get("decision") or "none"), "error": error,
            "cells": [_number(row.get(name)) for name in ("pass_rate", "case_pass_rate")]
            + [_count(row.get("regressed")), _count(row.get("input_tokens"))]
            + [_number(values.get(name)) for name in metrics],
            "link": f"{quote(folder)}/report.html" if folder is not None else None,
        })
    return render_page("summary.html.j2", jobs=jobs, metrics=metrics)


def _number(value: Any) -> tuple[str, str]:
    """(shown, sort key): a metric to three places; `-` (sorted last) when the job has none."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.3f}", repr(value)
    return "-", ""


def _count(value: Any) -> tuple[str, str]:
    return (str(value), str(value)) if isinstance(value, int) and not isinstance(value, bool) else ("-", "")
