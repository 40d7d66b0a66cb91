"""A run's confusion matrices (one per classification check) as text for the terminal, as a Markdown table and as
rows for the HTML page (whose template escapes them).

Predicted labels come from model replies, so every label is cut to LABEL_CHARS characters and, in Markdown,
escaped: a reply must not forge table cells, lines or markup.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from evalkit.records.report_reader import RunReport, json_list, json_object
from evalkit.records.values import Json

__all__ = ["LABEL_CHARS", "confusion_markdown", "confusion_tables", "confusion_text"]

LABEL_CHARS = 24


def _label(text: str) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= LABEL_CHARS else one[:LABEL_CHARS - 3] + "..."


def _matrices(report: RunReport) -> list[tuple[str, list[str], list[str], Mapping[str, Mapping[str, Json]]]]:
    out = []
    for check, block in sorted(report.classification.items()):
        if not isinstance(block, Mapping) or not isinstance(block.get("confusion"), Mapping):
            continue
        confusion: Mapping[str, Mapping[str, Json]] = {row: json_object(counts)
                                                       for row, counts in json_object(block["confusion"]).items()}
        columns = [str(label) for label in json_list(block.get("labels"))]
        out.append((str(check), list(confusion), columns, confusion))
    return out


def confusion_text(report: RunReport) -> str:
    """Each matrix under `CONFUSION <check> (rows: expected, columns: predicted)`; empty without any."""
    lines: list[str] = []
    for check, rows, columns, confusion in _matrices(report):
        width = max(len(_label(c)) for c in [*columns, *rows, "expected"]) + 2
        lines.append(f"CONFUSION {check} (rows: expected label, columns: predicted)")
        lines.append("  " + "".ljust(width) + "".join(_label(c).rjust(width) for c in columns))
        for row in rows:
            counts = confusion[row]
            lines.append("  " + _label(row).ljust(width) + "".join(str(counts.get(c, 0)).rjust(width)
                                                                   for c in columns))
    return "\n".join(lines)


def _cell(text: str) -> str:
    return html.escape(_label(text), quote=False).replace("|", "\\|").replace("`", "\\`").replace("*", "\\*") \
        .replace("_", "\\_").replace("[", "\\[")


def confusion_markdown(report: RunReport) -> list[str]:
    """Each matrix as a Markdown table (expected labels down, predicted across), titled; no lines without any."""
    lines: list[str] = []
    for check, rows, columns, confusion in _matrices(report):
        lines += [f"**Confusion matrix: {_cell(check)}** (rows: expected label, columns: predicted)", "",
                  "| expected \\ predicted | " + " | ".join(_cell(c) for c in columns) + " |",
                  "|---|" + "---:|" * len(columns)]
        lines += [f"| {_cell(row)} | " + " | ".join(str(confusion[row].get(c, 0)) for c in columns) + " |"
                  for row in rows]
        lines.append("")
    return lines


CELL = 28
"""The side of one cell of the matrix's chart, in pixels."""


def confusion_tables(report: RunReport) -> list[dict[str, Any]]:
    """Each matrix as `{check, columns, rows: [(expected, [count per column])], chart}`, labels cut, for a
    template; `chart` draws it as a grid whose cells darken with their count, right answers green and wrong ones
    red (drawn with SVG attributes: the pages' Content-Security-Policy admits no inline styles)."""
    out = []
    for check, rows, columns, confusion in _matrices(report):
        counts = [[_count(confusion[row].get(c, 0)) for c in columns] for row in rows]
        out.append({"check": check, "columns": [_label(c) for c in columns],
                    "rows": [(_label(row), line) for row, line in zip(rows, counts, strict=True)],
                    "chart": _chart(rows, columns, counts)})
    return out


def _count(cell: Json) -> int:
    """A matrix cell's count as the report holds it (a JSON number; 0 for anything else)."""
    return int(cell) if isinstance(cell, int | float) else 0


def _chart(rows: list[str], columns: list[str], counts: list[list[int]]) -> dict[str, Any]:
    top = max((n for line in counts for n in line), default=0) or 1
    cells = [{"x": j * CELL, "y": i * CELL, "n": n, "right": rows[i] == columns[j],
              "opacity": round(0.08 + 0.92 * n / top, 3) if n else 0.0,
              "title": f"expected {_label(rows[i])}, predicted {_label(columns[j])}: {n}"}
             for i, line in enumerate(counts) for j, n in enumerate(line)]
    return {"width": CELL * len(columns), "height": CELL * len(rows), "size": CELL, "cells": cells}
