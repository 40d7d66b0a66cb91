"""The terminal view of a decision: the verdict in one line first, then why."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalkit.core.untrusted import terminal
from evalkit.gate.decision import Decision, Verdict
from evalkit.gate.headline import suite_sentence, tests_sentence
from evalkit.records.report import Sequential
from evalkit.render.numbers import change, number
from evalkit.render.sections import decision_lists

__all__ = ["NOTHING_CHANGED", "samples_spread", "detectable_lines", "render_changed", "render_counts",
           "render_decision", "render_failure", "render_setting", "review_exit", "render_statistics", "sequential_line"]


NOTHING_CHANGED = ("- (the two reports' eval keys agree: no component or setting the key covers differs, so the "
                   "candidate measured the same system as the baseline; was the change applied?)")
"""`changed:` when nothing did: said, so that a change that never reached the run cannot pass unseen."""


def render_changed(changed: dict[str, tuple[Any, Any]], settings: Mapping[str, tuple[Any, Any]] | None = None) -> str:
    """The changed components, each followed by the settings of it that differ (evalkit.core.key.changed_settings):
    `components.retriever default@2bb0... -> default@91c4... (retriever.min_score 0.3 -> 0.25)`."""
    settings = settings or {}
    told: set[str] = set()
    parts = []
    for name, (before, after) in changed.items():
        group = name.removeprefix("components.") if name.startswith("components.") else None
        mine = [s for s in settings if group is not None and s.startswith(f"{group}.")]
        told.update(mine)
        diffs = "; ".join(_setting_change(s, *settings[s]) for s in mine)
        parts.append(f"{name} {before} -> {after}" + (f" ({diffs})" if diffs else ""))
    return ", ".join(parts + [_setting_change(s, *settings[s]) for s in settings if s not in told])


def _setting_change(name: str, before: Any, after: Any) -> str:
    return f"{name} {render_setting(before)} -> {render_setting(after)}"


def render_setting(value: Any) -> str:
    """A setting as its config spells it: strings bare, lists and mappings as JSON (one line)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_statistics(stats: dict[str, Any]) -> str:
    """One line a release owner can quote: estimate, interval, and what it rests on."""
    low, high = stats["interval"]
    line = (f"paired difference {stats['difference']:.3f}, {stats['confidence']:.0%} interval [{low:.3f}, "
            f"{high:.3f}], margin {stats['margin']} ({stats['groups']} groups, {stats['pairs']} of "
            f"{stats['planned']} cases paired; {stats['method']}, seed {stats['seed']}, {stats['resamples']} "
            f"resamples; estimand {stats['estimand']})")
    return line + (f"; {stats['warning']}" if stats.get("warning") else "")


def detectable_lines(decision: Decision) -> list[str]:
    """What the decision could have detected: the headline metric's figure (a go says it found no regression),
    then the repeated tests' figures; nothing for runs that were not compared."""
    found = decision.detectable or {}
    suite, tests = found.get("suite"), found.get("tests")
    lines = []
    if suite is not None:
        lead = "GO: no regression; " if decision.decision is Verdict.GO else "detectable: "
        lines.append(lead + suite_sentence(suite))
    elif decision.detectable is not None:
        lines.append("detectable: the two runs share no case or test to pair, so no drop could be detected")
    if tests is not None:
        lines.append("per test: " + tests_sentence(tests))
    return lines


def review_exit(exits: int | None) -> str:
    """What a review's exit code does to a CI job, said beside it: a review passes the job unless the policy says
    `review_fails: true`, which a `review_below` floor makes easy to miss."""
    if exits is None:
        return ""
    if exits == 0:
        return " (exit 0: a CI job passes; the policy's review_fails: true would fail it)"
    return f" (exit {exits}: a CI job fails, as the policy's review_fails asks)"


def render_counts(sides: Mapping[str, Any]) -> str:
    """Both sides' samples of a test: `candidate 7/10, baseline 10/10`."""
    return ", ".join(f"{side} {sides[side][0]}/{sides[side][1]}" for side in ("candidate", "baseline"))


def render_failure(failure: dict[str, Any]) -> str:
    known = "baseline fails it too" if not failure["new"] else "new"
    return f"{failure['id']}: {failure['candidate_reason']} ({known})"


def render_decision(decision: Decision, critical: tuple[str, ...] = (),
                    settings: Mapping[str, tuple[Any, Any]] | None = None, exits: int | None = None) -> str:
    """The decision for a terminal; `settings`, the component settings that differ, are named after `changed`;
    `exits`, the exit code the command ends with, is said for a review (whose code the policy chooses)."""
    lines = [f"decision: {decision.decision.upper()}" + (review_exit(exits) if decision.decision is Verdict.REVIEW
                                                         else "")]
    found = detectable_lines(decision)
    if decision.decision is Verdict.GO:  # what a go could have seen comes first; otherwise after the reasons
        lines += found
        found = []
    if decision.reasons:
        lines.append("reasons:")
        lines += [f"  - {r}" for r in decision.reasons]
    if decision.review_reasons:
        lines.append("for review:")
        lines += [f"  - {r}" for r in decision.review_reasons]
    if decision.warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in decision.warnings]
    lines += found
    lines.append(f"changed: {render_changed(decision.changed, settings) if decision.changed else NOTHING_CHANGED}")
    if decision.statistics:
        lines.append(render_statistics(decision.statistics))
    if decision.failures:
        new = sum(1 for f in decision.failures if f["new"])
        lines.append(f"failures ({len(decision.failures)}, {new} new):")
        lines += [f"  - {render_failure(f)}" for f in decision.failures]
    if decision.pass_rate is not None:
        lines.append(f"pass rate: {decision.pass_rate:.3f} ({decision.passed} of {decision.tests} tests passed)")
    for name, m in decision.metrics.items():  # a classification suite's headline figures, with their intervals
        headline = name.rsplit(".", 1)[-1] in ("accuracy", "macro_f1") and \
            name.split(".", 1)[0] not in ("precision", "recall", "f1")
        if m.get("interval") is not None and headline:
            lines.append(f"{name}: {number(m['before'])} -> {number(m['after'])} "
                         f"({change(m['delta'], m['interval'])}, 95% paired interval)")
    for title, names in decision_lists(decision, critical):
        lines.append(f"{title} ({len(names)}):")
        lines += [f"  - {name}{'  (critical)' if marked else ''}{f' -- {why}' if why else ''}"
                  for name, marked, why in names]
    disagree = (decision.repeats or {}).get("disagree") or {}
    if disagree:
        lines.append(f"samples disagree ({len(disagree)}; passed of sampled):")
        lines += [f"  - {name}: {render_counts(sides)}" for name, sides in disagree.items()]
    # every line holds report data (test ids, reasons, model names): nothing in it may forge a line of its own,
    # clear the screen or colour a verdict
    return "\n".join(terminal(line) for line in lines)


def samples_spread(samples: Mapping[str, int]) -> str:
    """How many samples the cases took, as `4` or `2 to 8`."""
    taken = sorted(samples.values())
    return f"{taken[0]}" if taken[0] == taken[-1] else f"{taken[0]} to {taken[-1]}"


def sequential_line(rounds: Sequential) -> str:
    """What a run sampled in rounds took: its samples, its rounds, and what it compared against."""
    spread, total = samples_spread(rounds.samples), sum(rounds.samples.values())
    if rounds.baseline is None:
        why = "no baseline: every case took run.pool_repeats, the pool later sequential runs compare against"
    else:
        settled = sum(v != "open" for v in rounds.verdicts.values())
        why = (f"against the baseline's samples; {settled} of {len(rounds.verdicts)} repeated tests settled (no "
               f"worse by {rounds.delta:g}, or regressed at alpha {rounds.alpha:g})")
    most = "" if rounds.baseline is None else f"most {rounds.max_repeats}, "
    return (f"sequential repeats: {total} samples over {len(rounds.samples)} cases ({spread} each, {most}"
            f"{rounds.rounds} round(s) of {rounds.batch}); {why}")
