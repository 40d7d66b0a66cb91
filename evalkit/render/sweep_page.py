"""summary.html: a sweep's jobs as one sortable table, the suite's metrics as columns, each job linking its page;
then the cases × jobs matrix: each case's outcome and reply in every job, filterable to the cases where jobs
disagree, as promptfoo's and Inspect's users compare prompts and models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import quote

from evalkit.render.html import render_page
from evalkit.render.money import usd_text

__all__ = ["MAX_MATRIX_ROWS", "JobCase", "render_summary_html"]

_TEXT_CHARS = 2_000  # of an override list, a `changed` line, an error or a reply shown in a cell
MAX_MATRIX_ROWS = 2_000
"""Cases in the matrix at most: those where jobs disagree first, then the others in the first job's order."""


class JobCase(NamedTuple):
    """One case as one job ran it: whether it passed (None: not scored) and its reply (None: none kept)."""

    passed: bool | None
    output: str | None


def render_summary_html(rows: list[dict[str, Any]], metrics: list[str], folders: list[str | None],
                        cases: Sequence[Mapping[str, JobCase] | None] = ()) -> str:
    """One row per job (its `job.json`): decision, pass rates, regressions, input tokens and the `metrics`
    columns; `folders[i]` is job i's folder in the sweep (its report.html is linked), None when it has no page.
    `cases[i]` is job i's cases by id (None when its report could not be read): the matrix below the table."""
    jobs = []
    for row, folder in zip(rows, folders, strict=True):
        values: dict[str, Any] = row["metrics"] if isinstance(row.get("metrics"), dict) else {}
        error = str(row["error"])[:_TEXT_CHARS] if row.get("error") else None
        jobs.append({
            "job": row.get("job", ""), "overrides": " ".join(map(str, row.get("overrides") or []))[:_TEXT_CHARS],
            "changed": str(row.get("changed") or "-")[:_TEXT_CHARS],
            "decision": "error" if error else str(row.get("decision") or "none"), "error": error,
            "cells": [_number(row.get(name)) for name in ("pass_rate", "case_pass_rate")]
            + [_count(row.get("regressed")), _count(row.get("input_tokens")), _usd(row)]
            + [_number(values.get(name)) for name in metrics],
            "link": f"{quote(folder)}/report.html" if folder is not None else None,
        })
    matrix, omitted = _matrix(cases)
    return render_page("summary.html.j2", jobs=jobs, metrics=metrics, matrix=matrix, omitted_cases=omitted,
                       disagreeing=sum(1 for row in matrix if row["disagree"]))


def _matrix(cases: Sequence[Mapping[str, JobCase] | None]) -> tuple[list[dict[str, Any]], int]:
    """Rows of the cases × jobs matrix, and how many cases were left out. A case disagrees when the jobs that ran
    it did not all pass it or all fail it."""
    if len(cases) < 2:
        return [], 0
    order: dict[str, None] = {}
    for job in cases:
        order.update(dict.fromkeys(job or {}))
    rows = []
    for case_id in order:
        cells = [None if job is None else job.get(case_id) for job in cases]
        outcomes = {cell.passed for cell in cells if cell is not None and cell.passed is not None}
        rows.append({"id": case_id[:_TEXT_CHARS], "disagree": len(outcomes) > 1, "cells": [_cell(c) for c in cells]})
    rows.sort(key=lambda row: not row["disagree"])  # stable: the jobs' order within each group
    return rows[:MAX_MATRIX_ROWS], max(len(rows) - MAX_MATRIX_ROWS, 0)


def _cell(case: JobCase | None) -> dict[str, Any]:
    if case is None:
        return {"outcome": "absent", "output": None, "cut": 0}
    outcome = "unscored" if case.passed is None else "passed" if case.passed else "failed"
    output = case.output
    cut = max(len(output) - _TEXT_CHARS, 0) if output is not None else 0
    return {"outcome": outcome, "output": output[:_TEXT_CHARS] if output is not None else None, "cut": cut}


def _number(value: Any) -> tuple[str, str]:
    """(shown, sort key): a metric to three places; `-` (sorted last) when the job has none."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.3f}", repr(value)
    return "-", ""


def _usd(row: Mapping[str, Any]) -> tuple[str, str]:
    """The job's cost at the prices its report recorded: an amount, "no price" (sorted last), or `-` (no cost in
    money recorded: the job failed, or ran no model)."""
    if "cost_usd" not in row:
        return "-", ""
    value = row["cost_usd"]
    known = isinstance(value, int | float) and not isinstance(value, bool)
    return usd_text(value), repr(value) if known else ""


def _count(value: Any) -> tuple[str, str]:
    return (str(value), str(value)) if isinstance(value, int) and not isinstance(value, bool) else ("-", "")
