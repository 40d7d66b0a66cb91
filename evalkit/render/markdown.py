"""A decision as Markdown, for a pull-request comment: verdict first, then reasons and sections.

Every string from a report, a policy or an adapted file passes through evalkit.core.untrusted's `markdown` (or
sits in a code span): a pull-request comment must never fetch an image, open a link or forge a line."""

from __future__ import annotations

import re
from collections.abc import Mapping

from evalkit.core.key import changed_settings
from evalkit.core.untrusted import MAX_VALUE_CHARS, markdown, terminal
from evalkit.gate.decision import Decision
from evalkit.records.decision import Evidence, PolicyIdentity
from evalkit.records.report_reader import RunReport
from evalkit.render.answers import regressed_cases, render_answers
from evalkit.render.confusion import confusion_markdown
from evalkit.render.numbers import change, number
from evalkit.render.sections import decision_lists, sections
from evalkit.render.text import (
    NOTHING_CHANGED,
    detectable_lines,
    render_changed,
    render_counts,
    render_failure,
    render_statistics,
    sequential_line,
)
from evalkit.render.trajectory_view import MAX_CASES, partings, trajectory_of
from evalkit.render.transcript_view import case_messages, failing_turns, is_conversation

__all__ = ["render_markdown", "render_policy"]


def render_markdown(decision: Decision, candidate: RunReport | None = None, critical: tuple[str, ...] = (),
                    evidence: Evidence | None = None, baseline: RunReport | None = None) -> str:
    """The decision as a pull-request comment; with both reports, each regressed case's answers side by side."""
    lines = [f"### evalkit: **{str(decision.decision).upper()}**", ""]
    found = detectable_lines(decision)
    if found:
        lines += [f"{markdown(line)}  " for line in found[:-1]] + [markdown(found[-1]), ""]
    for title, items in (("Reasons", decision.reasons), ("For review", decision.review_reasons),
                         ("Warnings", decision.warnings)):
        if items:
            lines += [f"**{title}**", ""] + [f"- {markdown(item)}" for item in items] + [""]
    if decision.changed:
        settings = changed_settings(baseline.eval, candidate.eval) if baseline and candidate else None
        lines += [f"**Changed:** {markdown(render_changed(decision.changed, settings))}", ""]
    else:
        lines += [f"**Changed:** {markdown(NOTHING_CHANGED)}", ""]
    if decision.statistics:
        lines += [f"**Paired statistics:** {render_statistics(decision.statistics)}", ""]  # numbers, evalkit's words
    if decision.failures:
        lines += [f"<details><summary>Failures ({len(decision.failures)})</summary>", ""]
        lines += [f"- {markdown(render_failure(f))}" for f in decision.failures] + ["", "</details>", ""]
    if decision.pass_rate is not None:
        lines += [f"**Pass rate:** {decision.pass_rate:.3f} ({decision.passed} of {decision.tests} tests)", ""]
    if candidate is not None and candidate.sequential is not None:  # decided by the sequential rule, not fixed N
        lines += [f"**Sampled in rounds:** {markdown(sequential_line(candidate.sequential))}", ""]
    for title, names in decision_lists(decision, critical):
        lines += [f"<details><summary>{title.capitalize()} ({len(names)})</summary>", ""]
        lines += [f"- {_code(name)}{' (critical)' if marked else ''}{f': {_code(why)}' if why else ''}"
                  for name, marked, why in names]
        lines += ["", "</details>", ""]
    disagree = (decision.repeats or {}).get("disagree") or {}
    if disagree:
        lines += [f"<details><summary>Samples disagree ({len(disagree)}; passed of sampled)</summary>", ""]
        lines += [f"- {_code(name)}: {render_counts(sides)}" for name, sides in disagree.items()]
        lines += ["", "</details>", ""]
    if baseline is not None and candidate is not None and decision.regressed:
        lines += render_answers(baseline, candidate)
        lines += _partings(baseline, candidate)
        lines += _failing_turns(baseline, candidate, decision)
    changes = [(name, m) for name, m in decision.metrics.items() if m.get("status") != "unchanged"]
    if changes:
        lines += ["| metric | before | after | delta [95% paired interval] | status |", "|---|---|---|---|---|"]
        lines += [f"| {markdown(name, MAX_VALUE_CHARS)} | {number(m['before'])} | {number(m['after'])} | "
                  f"{change(m['delta'], m.get('interval'))} | {markdown(str(m['status']))} |"
                  for name, m in changes]
        lines.append("")
    if candidate is not None:
        for title, rows in sections(candidate, baseline, listed=disagree).items():
            lines += [f"**{title.capitalize()}**", ""]
            if rows:
                lines += ["| | |", "|---|---|"] + [f"| {markdown(str(label))} | {markdown(str(value))} |"
                                                   for label, value in rows]
            else:
                lines.append("not measured")
            lines.append("")
            if title == "quality":
                lines += confusion_markdown(candidate)
    if evidence is not None:
        lines += _evidence(evidence)
    return "\n".join(lines).rstrip() + "\n"


def render_policy(policy: PolicyIdentity) -> str:
    """One line: which policy decided, where it was read from, why it was the one, and its SHA-256."""
    version = f" version {policy.version}" if policy.version else ""
    source = " ".join([policy.source, *policy.overrides])
    return f"policy {policy.name}{version} from {source} ({policy.chosen_by}); sha256 {policy.sha256}"


def _evidence(evidence: Evidence) -> list[str]:
    """What decided: the policy in the open, the compared reports' hashes and keys folded below it."""
    lines = [f"**Decided by:** {markdown(render_policy(evidence.policy))}", "",
             "<details><summary>Compared reports</summary>", ""]
    for side, report in (("baseline", evidence.baseline), ("candidate", evidence.candidate)):
        key = ", ".join(f"{name} {_key_value(value)}" for name, value in report.eval.items()
                        if value not in ({}, None))
        lines.append(f"- {side}: {_code(report.path)} sha256 {_code(report.sha256)}; eval key: {markdown(key)}")
    return lines + [f"- evalkit {evidence.evalkit_version}", "", "</details>", ""]


def _key_value(value: object) -> str:
    if isinstance(value, Mapping):  # the suite's components: `retriever=default@1a2b...`
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _partings(baseline: RunReport, candidate: RunReport) -> list[str]:
    """For each regressed agent case, the first step where the candidate's trajectory parts from the baseline's
    and what each side did there; nothing for a suite without trajectories."""
    regressed = [case_id for case_id, _ in regressed_cases(baseline, candidate)]
    # a conversation's place is its turns (_failing_turns), not its steps
    found = partings(baseline, candidate, [c for c in regressed if not is_conversation(trajectory_of(candidate, c))])
    if not found:
        return []
    lines = ["**Where regressed agent cases part from the baseline** (the first step that differs; report.html "
             "sets both sides' steps side by side)", ""]
    for p in found[:MAX_CASES]:
        if p.unreadable:
            lines.append(f"- {_code(p.case)}: {markdown(p.unreadable)}")
        elif p.step is None:
            lines.append(f"- {_code(p.case)}: the same steps as the baseline (the difference is elsewhere)")
        else:
            lines.append(f"- {_code(p.case)}: step {p.step}: baseline {_code(p.baseline)}, "
                         f"candidate {_code(p.candidate)}")
    if len(found) > MAX_CASES:
        lines.append(f"- {len(found) - MAX_CASES} more regressed agent case(s): their trajectories are in "
                     "report.json")
    return [*lines, ""]


def _failing_turns(baseline: RunReport, candidate: RunReport, decision: Decision) -> list[str]:
    """For each regressed conversation, its first failing turn (the lowest a failing check names), the checks naming
    it, and what each side's assistant said there; nothing for a suite without conversations."""
    regressed = [case_id for case_id, _ in regressed_cases(baseline, candidate)]
    found = failing_turns(baseline, candidate, regressed, case_messages({**decision.messages, **candidate.messages}))
    if not found:
        return []
    lines = ["**Where regressed conversations first fail** (the lowest turn a failing check names; report.html shows "
             "the transcript beside the baseline's)", ""]
    for f in found[:MAX_CASES]:
        checks = ", ".join(_code(check) for check in f.checks)
        said = f"candidate {_code(f.candidate)}" + (f", baseline {_code(f.baseline)}" if f.baseline else "")
        lines.append(f"- {_code(f.case)}: turn {f.turn} ({checks}): {said}")
    if len(found) > MAX_CASES:
        lines.append(f"- {len(found) - MAX_CASES} more regressed conversation(s): their transcripts are in "
                     "report.json")
    return [*lines, ""]


def _code(text: str) -> str:
    """Inline code that holds any text (markup inside a code span is shown, never read): the fence is longer than
    any run of backticks inside, and control characters are shown as escapes so no line can be forged."""
    text = terminal(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""  # CommonMark strips one space each side
    return f"{fence}{pad}{text}{pad}{fence}"


