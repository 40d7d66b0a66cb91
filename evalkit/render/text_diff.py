"""The diffs of the texts two runs measured (their prompts, their candidate programs), for "What changed".

A reviewer of a prompt change wants to read the change itself, not that `prompt_sha` differs. Each run report
keeps the texts it measured (evalkit.run.eval_block.kept_text); this compares them by SHA-256 and gives a unified
diff of each that changed, cut to MAX_LINES lines. A baseline written before reports kept their texts gets a note
instead of a diff, never a made-up one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_LINES", "TextDiff", "text_diffs"]

MAX_LINES = 200
"""The most diff lines a page shows of one text; the rest is counted, and both texts are in the reports."""


@dataclass(frozen=True)
class TextDiff:
    """One measured text that differs: what it is, each side's label, the diff's lines as (kind, text), with kind
    `add`, `remove`, `context` or `hunk`, and a note when there is no diff to show."""

    name: str
    before: str
    after: str
    lines: tuple[tuple[str, str], ...] = ()
    more: int = 0
    note: str = ""
    counts: dict[str, int] = field(default_factory=dict)


def text_diffs(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[TextDiff]:
    """Each text the candidate measured whose SHA-256 differs from the baseline's, as a diff."""
    out = []
    for name, new in sorted(after.items()):
        old = before.get(name)
        if old is not None and old.get("sha256") == new.get("sha256"):
            continue
        label_new = _label(new)
        if old is None:
            out.append(TextDiff(name, "(not kept)", label_new, note=f"the baseline's report keeps no {name} text "
                                "(written before reports kept them, or not by evalkit run), so there is no diff "
                                "to show; the candidate's is in its report"))
            continue
        old_lines, new_lines = str(old.get("text", "")).splitlines(), str(new.get("text", "")).splitlines()
        lines: list[tuple[str, str]] = []
        for line in list(difflib.unified_diff(old_lines, new_lines, lineterm="", n=2))[2:]:  # no file headers
            kind = {"@": "hunk", "+": "add", "-": "remove"}.get(line[:1], "context")
            lines.append((kind, line))
        counts = {"added": sum(k == "add" for k, _ in lines), "removed": sum(k == "remove" for k, _ in lines)}
        cut = " (each report keeps the first 20,000 characters; the diff is of those)" if old.get("cut") or new.get(
            "cut") else ""
        note = "" if lines else "the texts differ only in what splitlines does not show (line endings, a final " \
                                "newline)"
        out.append(TextDiff(name, _label(old), label_new, tuple(lines[:MAX_LINES]), max(0, len(lines) - MAX_LINES),
                            note + cut, counts))
    return out


def _label(text: Mapping[str, Any]) -> str:
    version = f"{text.get('version')} " if text.get("version") else ""
    return f"{version}{text.get('path', '')} (sha256 {str(text.get('sha256', ''))[:12]})"
