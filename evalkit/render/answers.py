"""The baseline's and the candidate's answers for each regressed case, side by side, for decision.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.core.untrusted import pre_text
from evalkit.records.report_reader import RunReport

__all__ = ["MAX_CASES", "regressed_cases", "render_answers"]

MAX_CASES = 10
"""Answer blocks shown at most; the rest are named (a pull-request comment has a size limit)."""

_NOT_KEPT = "(not in this report: it was written before evalkit kept answers; regenerate it to see one)"


def regressed_cases(baseline: RunReport, candidate: RunReport) -> list[tuple[str, list[str]]]:
    """Cases present on both sides with a check that passed on the baseline and does not on the candidate, each
    with those checks, in the candidate's case order."""
    before = {str(c.get("id")): c for c in baseline.cases if isinstance(c, Mapping)}
    out = []
    for case in candidate.cases:
        if not isinstance(case, Mapping) or str(case.get("id")) not in before:
            continue
        old, new = _checks(before[str(case.get("id"))]), _checks(case)
        lost = [name for name, outcome in old.items() if outcome == "passed" and new.get(name) != "passed"]
        if lost:
            out.append((str(case.get("id")), lost))
    return out


def _checks(case: Mapping[str, Any]) -> Mapping[str, Any]:
    checks = case.get("checks")
    return checks if isinstance(checks, Mapping) else {}


def render_answers(baseline: RunReport, candidate: RunReport) -> list[str]:
    """Markdown lines: one collapsed block per regressed case with both sides' task output and judge replies;
    nothing when neither report kept answers (a plain pytest report has none)."""
    cases = {str(c.get("id")): c for c in candidate.cases if isinstance(c, Mapping)}
    before = {str(c.get("id")): c for c in baseline.cases if isinstance(c, Mapping)}
    regressed = [(case_id, lost) for case_id, lost in regressed_cases(baseline, candidate)
                 if "output" in cases[case_id] or "output" in before[case_id]]
    lines: list[str] = []
    for case_id, lost in regressed[:MAX_CASES]:
        old, new = before[case_id], cases[case_id]
        lines += [f"<details><summary>Answers of regressed case <code>{_escape(case_id)}</code> "
                  f"({_escape(', '.join(lost))})</summary>", "", "<table>",
                  "<tr><th></th><th>baseline</th><th>candidate</th></tr>",
                  _row("task output", _cell(old, old.get("output")), _cell(new, new.get("output")))]
        judged = sorted({*_replies(old), *_replies(new)})
        lines += [_row(f"judge: {metric}", _cell(old, _replies(old).get(metric)), _cell(new, _replies(new).get(metric)))
                  for metric in judged]
        lines += ["</table>", "", "</details>", ""]
    if len(regressed) > MAX_CASES:
        rest = ", ".join(case_id for case_id, _ in regressed[MAX_CASES:])
        lines += [f"{len(regressed) - MAX_CASES} more regressed case(s), answers in report.json: {_escape(rest)}", ""]
    return lines


def _replies(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    replies = entry.get("judge_replies")
    return replies if isinstance(replies, Mapping) else {}


def _row(label: str, before: str, after: str) -> str:
    return f"<tr><th>{_escape(label)}</th><td>{before}</td><td>{after}</td></tr>"


def _cell(entry: Mapping[str, Any], text: Any) -> str:
    """One side's reply; a report from before answers were kept says so rather than showing an empty cell."""
    if "output" not in entry:
        return f"<em>{_NOT_KEPT}</em>"
    return "<em>(no reply)</em>" if text is None else f"<pre>{_escape(str(text))}</pre>"


def _escape(text: str) -> str:
    # A reply is untrusted text: escaped, it cannot open tags. Its newlines become character references so that
    # each row stays one line: a blank line would end the HTML block and GitHub would read the rest as Markdown.
    # Control characters and bidirectional overrides are shown as escapes, as on the report page. A `](` becomes
    # `&#93;(`: a renderer that read Markdown inside the HTML block would still find no link or image there.
    return pre_text(text).replace("\r", "").replace("\n", "&#10;").replace("](", "&#93;(")
