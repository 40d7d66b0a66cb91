"""The terminal view of a decision: the verdict in one line first, then why."""

from __future__ import annotations

from typing import Any

from evalkit.gate.decision import Decision
from evalkit.render.sections import decision_lists

__all__ = ["render_decision", "render_changed", "render_statistics", "render_failure"]


def render_changed(changed: dict[str, tuple[Any, Any]]) -> str:
    return ", ".join(f"{name} {before} -> {after}" for name, (before, after) in changed.items())


def render_statistics(stats: dict[str, Any]) -> str:
    """One line a release owner can quote: estimate, interval, and what it rests on."""
    low, high = stats["interval"]
    line = (f"paired difference {stats['difference']:.3f}, {stats['confidence']:.0%} interval [{low:.3f}, "
            f"{high:.3f}], margin {stats['margin']} ({stats['groups']} groups, {stats['pairs']} of "
            f"{stats['planned']} cases paired; {stats['method']}, seed {stats['seed']}, {stats['resamples']} "
            f"resamples; estimand {stats['estimand']})")
    return line + (f"; {stats['warning']}" if stats.get("warning") else "")


def render_failure(failure: dict[str, Any]) -> str:
    known = "baseline fails it too" if not failure["new"] else "new"
    return f"{failure['id']}: {failure['candidate_reason']} ({known})"


def render_decision(decision: Decision, critical: tuple[str, ...] = ()) -> str:
    lines = [f"decision: {decision.decision.upper()}"]
    if decision.reasons:
        lines.append("reasons:")
        lines += [f"  - {r}" for r in decision.reasons]
    if decision.review_reasons:
        lines.append("for review:")
        lines += [f"  - {r}" for r in decision.review_reasons]
    if decision.warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in decision.warnings]
    if decision.changed:
        lines.append(f"changed: {render_changed(decision.changed)}")
    if decision.statistics:
        lines.append(render_statistics(decision.statistics))
    if decision.failures:
        new = sum(1 for f in decision.failures if f["new"])
        lines.append(f"failures ({len(decision.failures)}, {new} new):")
        lines += [f"  - {render_failure(f)}" for f in decision.failures]
    if decision.pass_rate is not None:
        lines.append(f"pass rate: {decision.pass_rate:.3f} ({decision.passed} of {decision.tests} tests passed)")
    for title, names in decision_lists(decision, critical):
        lines.append(f"{title} ({len(names)}):")
        lines += [f"  - {name}{'  (critical)' if marked else ''}{f' -- {why}' if why else ''}"
                  for name, marked, why in names]
    # a list item holds report data (test ids, reasons): a line break in it must not forge a line of its own
    return "\n".join(_one_line(line) if line.startswith("  - ") else line for line in lines)


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")
