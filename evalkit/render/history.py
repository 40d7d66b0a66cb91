"""One suite over many runs (`evalkit history`): a terminal table and an HTML page with inline SVG charts.

Each run is one row: when it ran, its eval key, its decision and the policy it was decided under (name and the
start of its SHA-256), pass rates, the suite's metrics, cost and latency.
Runs of different eval keys are never joined silently: every distinct key gets a label (K1, K2 ... in order of
first appearance) shown in its own column, a colour and a shaded band in the charts, and the charts connect only
consecutive runs of the same key; a note under the table says what each key changed against K1 and whether the
two are comparable at all (another dataset or judge: the gate's own rule), and which policies its runs were
decided under when they were not all one. Values to strings; no file is read here.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.gate.decide import changed_components, incomparability
from evalkit.records.report_reader import RunReport
from evalkit.render.html import render_page
from evalkit.render.money import run_usd, usd, usd_cell
from evalkit.render.numbers import NO_VALUE, number
from evalkit.render.text import render_changed

__all__ = ["HistoryRun", "Series", "history_rows", "key_notes", "render_history_text", "render_history_html",
           "PAGE_KIND"]

PAGE_KIND = "history"
"""The seal's kind in every history page (evalkit.render.html): how evalkit recognises a page of its own that it
may replace, and no other file."""
# Colours of the eval keys (points, lines, legend) and their bands; Okabe-Ito, readable by colour-blind readers.
_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
_BANDS = ("#e8f1f8", "#fbeee6", "#e6f5f1", "#f8eef4", "#fcf3e0", "#eaf5fc", "#fcfae3", "#eeeeee")
_WIDTH, _HEIGHT, _PAD_X, _PAD_Y = 720, 180, 56, 22


@dataclass(frozen=True)
class HistoryRun:
    """One run as read from its folder: the report, when it ran, and the decision beside it (if any)."""

    path: str
    """The report as shown to the reader (relative to the project where it can be)."""
    report: RunReport
    time: float
    """Seconds since the epoch: the report's `created` (pytest-json-report), else the file's modification time."""
    time_from_file: bool
    decision: str | None = None
    file: Path | None = None
    """Where the report was read (so that nothing is ever written over it)."""
    policy: tuple[str, str] | None = None
    """The name and SHA-256 of the policy its decision was made under; None without one (or an older file)."""
    counts: tuple[int, int] | None = None
    """(tests passed, tests) where `report` is a summary from the run index (evalkit.core.run_index), which keeps
    no tests; None: counted from the report's own outcomes."""

    @property
    def tests(self) -> tuple[int, int]:
        """Tests passed and tests."""
        return self.counts if self.counts is not None else (self.report.passed, len(self.report.outcomes))


@dataclass
class Series:
    """One chart: a value per run (None where the run has none)."""

    name: str
    values: list[float | None] = field(default_factory=list)
    rate: bool = False
    """Between 0 and 1: the chart's axis is fixed to [0, 1] so runs read against one scale."""
    money: bool = False
    """US dollars: shown as amounts (fractions of a cent stay visible)."""


def _key_text(report: RunReport) -> str:
    return json.dumps(report.eval, sort_keys=True, default=str)


def key_labels(runs: Sequence[HistoryRun]) -> list[str]:
    """K1, K2 ... per run: one label per distinct eval key, in order of first appearance."""
    seen: dict[str, str] = {}
    return [seen.setdefault(_key_text(run.report), f"K{len(seen) + 1}") for run in runs]


def key_notes(runs: Sequence[HistoryRun]) -> list[tuple[str, str]]:
    """(label, what it is against K1) per distinct key: the components that differ, and whether it is comparable."""
    firsts: dict[str, RunReport] = {}
    for label, run in zip(key_labels(runs), runs, strict=True):
        firsts.setdefault(label, run.report)
    reference = next(iter(firsts.values()), None)
    notes = []
    for label, report in firsts.items():
        if reference is None or report is reference:
            notes.append((label, "the first key: " + _describe(report.eval)))
            continue
        changed = render_changed(changed_components(reference.eval, report.eval)) or "no component"
        blocked = incomparability(reference.eval, report.eval)
        verdict = (("NOT comparable with K1 (the gate, K1 as the baseline: " + "; ".join(blocked) + ")") if blocked
                   else "comparable with K1")
        notes.append((label, f"changed against K1: {changed}; {verdict}"))
    policies = _policies_per_key(runs)
    return [(label, text + policies.get(label, "")) for label, text in notes]


def _policy_cell(run: HistoryRun) -> str:
    # a name alone would hide an edit of the same policy: the hash's first characters tell two versions apart
    return "-" if run.policy is None else f"{run.policy[0]}@{run.policy[1][:_SHORT_SHA]}"


_SHORT_SHA = 8


def _policies_per_key(runs: Sequence[HistoryRun]) -> dict[str, str]:
    """Per key whose runs were decided under more than one policy, the note that says which, by row: their
    decisions differ partly because the rules did, not only the runs."""
    by_key: dict[str, dict[str, list[int]]] = {}
    for position, (label, run) in enumerate(zip(key_labels(runs), runs, strict=True), start=1):
        if run.policy is not None:
            by_key.setdefault(label, {}).setdefault(_policy_cell(run), []).append(position)
    return {label: (f"; its runs were decided under {len(found)} policies ("
                    + ", ".join(f"{cell}: run {', '.join(map(str, rows))}" for cell, rows in found.items())
                    + "): a change of decision between them may be the policy's, not the run's")
            for label, found in by_key.items() if len(found) > 1}


def _describe(key: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in key.items()
                     if name not in ("key_version", "components") and value not in (None, "", {}))


def _metric_names(runs: Sequence[HistoryRun]) -> list[str]:
    names: dict[str, None] = {}
    for run in runs:
        names.update(dict.fromkeys(run.report.metrics))
    builtin = [n for n in ("pass_rate", "case_pass_rate") if n in names]
    return builtin + sorted(n for n in names if n not in builtin)


def _cost(report: RunReport) -> list[float | None]:
    """Input tokens, output tokens and model calls, as the report's cost section counted them."""
    cost = report.execution.cost
    if cost is None:
        return [None, None, None]
    return [_figure(cost.input_tokens), _figure(cost.output_tokens), _figure(cost.model_calls)]


def _latency(report: RunReport) -> list[float | None]:
    """Mean and p95 time in flight, where the run measured any call."""
    latency = report.execution.latency
    if latency is None or not latency.measured_calls:
        return [None, None]
    return [_figure(latency.mean_ms), _figure(latency.p95_ms)]


def _figure(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pass_rate(run: HistoryRun) -> float | None:
    passed, tests = run.tests
    return passed / tests if tests else None


def history_rows(runs: Sequence[HistoryRun]) -> tuple[list[str], list[list[str]], list[Series]]:
    """The table (header, rows of text) and the charted series, in the runs' order."""
    metrics = [m for m in _metric_names(runs) if m != "pass_rate"]
    header = ["#", "time (UTC)", "key", "decision", "policy", "tests", "pass rate", *metrics, "input tokens",
              "output tokens", "model calls", "cost USD", "latency mean ms", "latency p95 ms", "run"]
    series = [Series("pass rate", rate=True), *(Series(m, rate=_is_rate(m, runs)) for m in metrics),
              Series("input tokens"), Series("cost USD", money=True), Series("latency mean ms")]
    rows = []
    for position, (label, run) in enumerate(zip(key_labels(runs), runs, strict=True), start=1):
        report = run.report
        values = [_pass_rate(run), *(report.metrics.get(m) for m in metrics)]
        cost, latency = _cost(report), _latency(report)
        for one, value in zip(series, [*values, cost[0], run_usd(report), latency[0]], strict=True):
            one.values.append(value)
        # each run at the prices its report recorded: the history never reprices an old run
        rows.append([str(position), _time(run), label, (run.decision or "-").upper(), _policy_cell(run),
                     "{}/{}".format(*run.tests), *(number(v) for v in values),
                     *(_int(v) for v in cost), usd_cell(report), *(_int(v) for v in latency), run.path])
    return header, rows, series


def _is_rate(name: str, runs: Sequence[HistoryRun]) -> bool:
    values = [run.report.metrics.get(name) for run in runs]
    return all(v is None or 0.0 <= v <= 1.0 for v in values)


def _time(run: HistoryRun) -> str:
    text = dt.datetime.fromtimestamp(run.time, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    return text + (" (file time)" if run.time_from_file else "")


def _int(value: float | None) -> str:
    return NO_VALUE if value is None else f"{value:.0f}"


def render_history_text(suite: str, runs: Sequence[HistoryRun], notes: Sequence[str] = ()) -> str:
    """A fixed-width table for the terminal, then the eval keys and the notes."""
    header, rows, _ = history_rows(runs)
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [f"history of suite {suite}: {len(runs)} run(s), oldest first", ""]
    for cells in (header, *rows):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip())
    lines += ["", "eval keys:"] + [f"  {label}: {text}" for label, text in key_notes(runs)]
    lines += [f"note: {note}" for note in notes]
    return "\n".join(line.replace("\r", "\\r").replace("\n", "\\n") if i else line for i, line in enumerate(lines))


def _chart(series: Series, labels: Sequence[str]) -> dict[str, Any]:
    """Geometry of one chart: points, the lines joining consecutive runs of one key, and a band per key span."""
    count = len(series.values)
    numbers = [v for v in series.values if v is not None]
    low, high = (0.0, 1.0) if series.rate else (min(numbers, default=0.0), max(numbers, default=1.0))
    if high == low:  # one value (or none): an axis around it; dollars from zero, never below
        low, high = (0.0, high * 2 or 1.0) if series.money else (low - 1.0 if low else 0.0, high + 1.0)
    inner_w, inner_h = _WIDTH - 2 * _PAD_X, _HEIGHT - 2 * _PAD_Y
    step = inner_w / (count - 1) if count > 1 else 0.0

    def x(i: int) -> float:
        return round(_PAD_X + (i * step if count > 1 else inner_w / 2), 1)

    def y(v: float) -> float:
        return round(_PAD_Y + inner_h * (1 - (v - low) / (high - low)), 1)

    colour = {label: _COLOURS[(int(label[1:]) - 1) % len(_COLOURS)] for label in labels}
    points: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    bands: list[dict[str, Any]] = []
    segment: list[str] = []
    segment_key: str | None = None

    def flush() -> None:
        if len(segment) > 1 and segment_key is not None:
            lines.append({"points": " ".join(segment), "colour": colour[segment_key]})

    point = usd if series.money else number if series.rate else _int
    start = 0
    every = -(-count // 30) or 1  # run numbers under at most 30 points, so they stay legible
    for i, (label, value) in enumerate(zip(labels, series.values, strict=True)):
        if i and labels[i - 1] != label:
            bands.append(_band(labels[start], x(start), x(i - 1), step))
            start = i
        if value is None or label != segment_key:  # a gap, or another key: the line stops here
            flush()
            segment, segment_key = [], None
        if value is None:
            continue
        segment.append(f"{x(i)},{y(value)}")
        segment_key = label
        points.append({"x": x(i), "y": y(value), "colour": colour[label],
                       "n": str(i + 1) if i % every == 0 else "",
                       "title": f"run {i + 1} ({label}): {series.name} {point(value)}"})
    flush()
    if count:
        bands.append(_band(labels[start], x(start), x(count - 1), step))
    axis = usd if series.money else number if series.rate or high <= 10 else _int
    return {"name": series.name, "width": _WIDTH, "height": _HEIGHT, "points": points, "lines": lines,
            "bands": bands, "top": _PAD_Y, "bottom": _HEIGHT - _PAD_Y, "left": _PAD_X, "right": _WIDTH - _PAD_X,
            "high": axis(high), "low": axis(low), "missing": count - len(numbers)}


def _band(label: str, first: float, last: float, step: float) -> dict[str, Any]:
    """The shaded span of one key's consecutive runs: from halfway to the run before to halfway to the run after,
    within the plot."""
    left = _PAD_X if not step else max(_PAD_X, first - step / 2)
    right = _WIDTH - _PAD_X if not step else min(_WIDTH - _PAD_X, last + step / 2)
    index = (int(label[1:]) - 1) % len(_BANDS)
    return {"x": round(left, 1), "width": round(right - left, 1), "fill": _BANDS[index], "label": label}


def render_history_html(suite: str, runs: Sequence[HistoryRun], notes: Sequence[str] = ()) -> str:
    """The history page: charts (inline SVG, no script needed), the table (sortable), the eval keys, the notes."""
    header, rows, series = history_rows(runs)
    labels = key_labels(runs)
    keys = [{"label": label, "text": text, "colour": _COLOURS[(int(label[1:]) - 1) % len(_COLOURS)],
             "band": _BANDS[(int(label[1:]) - 1) % len(_BANDS)]} for label, text in key_notes(runs)]
    charts = [_chart(one, labels) for one in series if any(v is not None for v in one.values)]
    unmeasured = [one.name for one in series if all(v is None for v in one.values)]
    return render_page("history.html.j2", kind=PAGE_KIND, suite=suite, header=header, rows=rows, charts=charts,
                       keys=keys, notes=list(notes), unmeasured=unmeasured, count=len(runs))
