"""report.html: one run, and its decision against the baseline, as a page a reviewer opens and reads.

The page shows what decided (banner, reasons, policy), what changed (components and the settings that differ),
every test (filterable), a panel for every failing case (input, both sides' outputs with the differences marked,
an agent's steps beside the baseline's (evalkit.render.trajectory_view), the judge's verdicts, the failure
messages), metrics, slices, cost, latency and provenance. Everything from a report is untrusted text: the templates
escape it, and what is shown is cut to a size a browser handles (with a note saying so); the data itself stays
whole in report.json.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from markupsafe import Markup

from evalkit.core.isolation import isolation_label
from evalkit.core.key import changed_settings
from evalkit.gate.decide import is_critical
from evalkit.gate.decision import Decision
from evalkit.judging.judge_health import judge_warnings
from evalkit.records.decision import Evidence
from evalkit.records.report_reader import PASSING, RunReport, json_list, json_object
from evalkit.render.confusion import confusion_tables
from evalkit.render.html import breakable, render_page, shown
from evalkit.render.markdown import render_policy
from evalkit.render.numbers import change, number
from evalkit.render.sections import judge_rows, sections
from evalkit.render.text import detectable_lines, render_setting, render_statistics, sequential_line
from evalkit.render.text_diff import text_diffs
from evalkit.render.trajectory_view import trajectory_of, trajectory_view
from evalkit.render.transcript_view import failing_turn, is_conversation, transcript_view

__all__ = ["MAX_PANELS", "MAX_TEST_ROWS", "SHOWN_CHARS", "Clipped", "clip", "diff_sides", "render_report_html"]

SHOWN_CHARS = 20_000
"""Characters of one text (an output, an input, a judge reply) shown on the page; the rest is named, not shown."""
ID_CHARS = 300
"""Characters of a test or case id shown."""
MESSAGE_CHARS = 2_000
MAX_TEST_ROWS = 10_000
"""Rows of the test table at most: every test that did not pass or is tagged is kept; passing ones fill the rest."""
MAX_PANELS = 300
"""Failing-case panels at most (regressed cases first); the others are named below them."""
FILTERS = ("all", "regressed", "fixed", "critical", "new", "failing")

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class Clipped:
    """A text as shown: at most `limit` characters of it, and how many were left out (0 when all is shown)."""

    text: str
    cut: int = 0
    total: int = 0


def clip(value: Any, limit: int = SHOWN_CHARS) -> Clipped:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
    if len(text) <= limit:
        return Clipped(text, 0, len(text))
    return Clipped(text[:limit], len(text) - limit, len(text))


def diff_sides(before: str, after: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Both texts as (kind, text) segments, word by word: the baseline's with `del` where the candidate lost text,
    the candidate's with `ins` where it added text, `same` elsewhere (difflib.SequenceMatcher over words)."""
    a, b = _TOKENS.findall(before), _TOKENS.findall(after)
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if op == "equal":
            left.append(("same", "".join(a[i1:i2])))
            right.append(("same", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            right.append(("ins", "".join(b[j1:j2])))
    return left, right


@dataclass
class _Side:
    """One side's view of a case in a panel."""

    output: Clipped | None = None
    kept: bool = False
    segments: list[tuple[str, str]] = field(default_factory=list)
    more: list[tuple[int, Clipped | None]] = field(default_factory=list)
    """With repeats: the other samples' replies (sample number, reply), one click away under the first."""


def render_report_html(candidate: RunReport, decision: Decision | None = None, baseline: RunReport | None = None,
                       critical: tuple[str, ...] = (), evidence: Evidence | None = None,
                       critical_cases: tuple[str, ...] = ()) -> str:
    """The whole page. Without a decision (a run with baseline=none) it shows the run alone. `critical` and
    `critical_cases` are the policy's: their tests are tagged critical."""
    tests, counts, omitted = _test_rows(candidate, decision, baseline, critical, frozenset(critical_cases))
    panels, unshown = _panels(candidate, decision, baseline)
    return render_page(
        "report.html.j2",
        suite=str(candidate.eval.get("suite") or candidate.provenance.get("suite") or "run"),
        banner=_banner(decision, candidate) | {"sequential": _sequential(candidate)},
        tradeoff=_tradeoff(decision, baseline, candidate),
        policy=_policy(evidence),
        changed=_changed(decision, baseline, candidate),
        text_diffs=text_diffs(baseline.texts, candidate.texts) if baseline is not None else [],
        key=[(name, _key_text(value)) for name, value in candidate.eval.items() if name != "settings"],
        statistics=render_statistics(decision.statistics) if decision and decision.statistics else None,
        tests=tests, test_rows=_rows_html(tests), counts=counts,
        filters=FILTERS, omitted_rows=omitted, initial_filter=_initial_filter(counts),
        panels=panels, unshown_panels=unshown, gated=baseline is not None,
        metrics=_metrics(decision, candidate),
        slices=_slices(candidate),
        confusion=confusion_tables(candidate),
        run_sections=sections(candidate, baseline),
        judges=judge_rows(candidate),
        provenance=_provenance(candidate),
        compared=_compared(evidence),
        images=_images(candidate),
    )


_THUMBNAIL = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/]{1,70000}={0,2}")
"""A thumbnail the page shows: an image carried in the page, nothing a browser could fetch (the report is input)."""
MAX_IMAGES = 200
"""Image cases shown as thumbnails; the rest are counted."""


def _images(candidate: RunReport) -> dict[str, Any]:
    """Each image case's thumbnails (report.json's `media`), with their path, type, size and SHA-256; a thumbnail
    that is not an image `data:` URI is shown as missing, never put in the page."""
    shown = [image for case_id, images in list(candidate.media.items())[:MAX_IMAGES]
             for image in _thumbnails(case_id, images)]
    return {"shown": shown, "more": max(0, len(candidate.media) - MAX_IMAGES)}


def _thumbnails(case_id: object, images: object) -> list[dict[str, Any]]:
    """One case's images as the page shows them (`uri` None unless an image `data:` URI: nothing to fetch)."""
    shown = []
    for image in images if isinstance(images, list) else []:
        if not isinstance(image, dict):
            continue
        uri = image.get("thumbnail")
        shown.append({
            "case": str(case_id)[:ID_CHARS], "field": str(image.get("field", ""))[:ID_CHARS],
            "path": str(image.get("path", ""))[:200], "media_type": str(image.get("media_type", ""))[:40],
            "size": image.get("size") if isinstance(image.get("size"), int) else None,
            "sha256": str(image.get("sha256", ""))[:12],
            "uri": uri if isinstance(uri, str) and _THUMBNAIL.fullmatch(uri) else None,
            "why": str(image.get("why") or ("no thumbnail" if uri is not None else ""))[:200],
        })
    return shown


def _case_images(baseline: RunReport | None, candidate: RunReport, case_id: str) -> list[dict[str, Any]]:
    """A failing case's images, field by field: the baseline's thumbnail beside the candidate's (None on a side
    without it), and whether the bytes differ (by SHA-256), so a reviewer of a regressed image case sees what each
    run was shown. Both sides are report input: each goes through `_thumbnails`, never fetched."""
    after = _thumbnails(case_id, candidate.media.get(case_id))
    if not after:
        return []
    before = {i["field"]: i for i in _thumbnails(case_id, baseline.media.get(case_id))} if baseline else {}
    return [{"field": image["field"], "baseline": before.get(image["field"]), "candidate": image,
             "changed": image["field"] in before and before[image["field"]]["sha256"] != image["sha256"]}
            for image in after]


def _banner(decision: Decision | None, candidate: RunReport) -> dict[str, Any]:
    if decision is None:  # no gate to raise them: the judge's warnings are the run's own
        return {"verdict": "none", "title": "NOT GATED", "reasons": [clip("baseline=none: the run was not gated")],
                "review": [], "pass_line": None, "detectable": [],
                "warnings": [clip(w.message(), MESSAGE_CHARS) for w in judge_warnings(candidate.cases)]}
    pass_line = (f"pass rate {decision.pass_rate:.3f} ({decision.passed} of {decision.tests} tests passed)"
                 if decision.pass_rate is not None else None)
    return {"verdict": str(decision.decision), "title": str(decision.decision).upper(),
            "detectable": [clip(line, MESSAGE_CHARS) for line in detectable_lines(decision)],
            "reasons": [clip(r, MESSAGE_CHARS) for r in decision.reasons],
            "review": [clip(r, MESSAGE_CHARS) for r in decision.review_reasons],
            "warnings": [clip(w, MESSAGE_CHARS) for w in decision.warnings], "pass_line": pass_line}


def _sequential(candidate: RunReport) -> Clipped | None:
    """How a run sampled in rounds sampled (the terminal's line), for the banner; None for a fixed N."""
    return None if candidate.sequential is None else clip(sequential_line(candidate.sequential), MESSAGE_CHARS)


def _tradeoff(decision: Decision | None, baseline: RunReport | None,
              candidate: RunReport) -> list[tuple[str, str, str]]:
    """What the change traded, as the banner shows it: (label, value, tone) for regressed, fixed and critical
    tests, then the pass rate and the case pass rate with their change from the baseline."""
    if decision is None or baseline is None:
        return []
    critical = len(decision.critical_failures) + len(decision.missing_critical)
    rows = [("regressed", str(len(decision.regressed)), "bad" if decision.regressed else "even"),
            ("fixed", str(len(decision.fixed)), "good" if decision.fixed else "even"),
            ("critical failing", str(critical), "bad" if critical else "even")]
    before_rate = baseline.passed / len(baseline.outcomes) if baseline.outcomes else None
    after_rate = candidate.passed / len(candidate.outcomes) if candidate.outcomes else None
    for label, before, after in (("pass rate", before_rate, after_rate),
                                 ("case pass rate", baseline.metrics.get("case_pass_rate"),
                                  candidate.metrics.get("case_pass_rate"))):
        if isinstance(after, int | float):
            rows.append((label, *_with_delta(after, before)))
    return rows


def _with_delta(after: float, before: object) -> tuple[str, str]:
    if not isinstance(before, int | float):
        return f"{after:.3f}", "even"
    delta = after - before
    tone = "bad" if delta < -5e-4 else "good" if delta > 5e-4 else "even"
    return f"{after:.3f} ({delta:+.3f})", tone


def _initial_filter(counts: Mapping[str, int]) -> str:
    """The table opens on what matters: the regressed tests, else the failing ones, else all."""
    return next((name for name in ("regressed", "failing") if counts.get(name)), "all")


def _policy(evidence: Evidence | None) -> dict[str, Any] | None:
    if evidence is None:
        return None
    policy = evidence.policy
    rows = [(label, value) for value, label in
            ((policy.name, "name"), (policy.version, "version"), (policy.source, "read from"),
             (policy.chosen_by, "chosen by"), (policy.sha256, "SHA-256")) if value not in (None, "")]
    if policy.overrides:
        rows.append(("overrides", " ".join(policy.overrides)))
    return {"line": render_policy(policy), "rows": rows}


def _changed(decision: Decision | None, baseline: RunReport | None, candidate: RunReport) -> list[dict[str, Any]]:
    """Each changed component with the settings of it that differ; settings of unchanged components never
    differ (the fingerprint covers them), but any left over are listed on their own."""
    if decision is None or baseline is None:
        return []
    settings = changed_settings(baseline.eval, candidate.eval)
    out: list[dict[str, Any]] = []
    told: set[str] = set()
    for name, (before, after) in decision.changed.items():
        group = name.removeprefix("components.") if name.startswith("components.") else None
        mine = [(s, render_setting(old), render_setting(new)) for s, (old, new) in settings.items()
                if group is not None and s.startswith(f"{group}.")]
        told.update(s for s, _, _ in mine)
        texts = "program" if name == "components.candidate" else "prompt" if name.startswith("prompt") else None
        note = (f"the {texts}'s text: its diff is below" if texts in candidate.texts else
                f"its settings: components.{name} below" if f"components.{name}" in decision.changed else "")
        out.append({"name": name, "before": _key_text(before), "after": _key_text(after), "settings": mine,
                    "note": note})
    rest = [(s, render_setting(old), render_setting(new)) for s, (old, new) in settings.items() if s not in told]
    if rest:
        out.append({"name": "settings", "before": "", "after": "", "settings": rest})
    return out


def _key_text(value: Any) -> str:
    if isinstance(value, Mapping):
        return " ".join(f"{k}={v}" for k, v in value.items()) or "-"
    return "-" if value is None else str(value)


def _test_rows(candidate: RunReport, decision: Decision | None, baseline: RunReport | None,
               critical: tuple[str, ...],
               critical_cases: frozenset[str]) -> tuple[list[_Row], dict[str, int], int]:
    """Every test of either side with its outcomes and tags; the count per filter; how many rows were left out.
    Built for reports of many thousand tests: tags first, rows only for the tests that are shown."""
    regressed = set(decision.regressed) if decision else set()
    fixed = set(decision.fixed) if decision else set()
    critical_failing = set(decision.critical_failures) | set(decision.missing_critical) if decision else set()
    before = baseline.outcomes if baseline is not None else {}
    after = candidate.outcomes
    names: Iterable[str] = after
    if baseline is not None:
        names = [*after, *(n for n in before if n not in after)]
    tagged: list[tuple[str, str]] = []
    counts = dict.fromkeys(FILTERS, 0)
    for name in names:
        tags = []
        if name in regressed:
            tags.append("regressed")
        if name in fixed:
            tags.append("fixed")
        if (name in critical_failing or (critical and is_critical(name, critical))
                or (critical_cases and _case_of(name) in critical_cases)):
            tags.append("critical")
        if baseline is not None and name not in before:
            tags.append("new")
        if after.get(name) not in PASSING:
            tags.append("failing")
        for tag in tags:
            counts[tag] += 1
        tagged.append((name, " ".join(tags)))
    counts["all"] = len(tagged)
    if len(tagged) > MAX_TEST_ROWS:  # every tagged test stays; passing, untagged ones fill the room left
        room = MAX_TEST_ROWS - sum(1 for _, marks in tagged if marks)
        kept: list[tuple[str, str]] = []
        for name, marks in tagged:
            if marks or room > 0:
                kept.append((name, marks))
                room -= 0 if marks else 1
        omitted, tagged = len(tagged) - len(kept), kept
    else:
        omitted = 0
    messages = {**(decision.messages if decision else {}), **candidate.messages}
    # not gated: there is no baseline to be absent from, so its column says so neutrally
    absent_before = "absent" if baseline is not None else "-"
    tagged.sort(key=lambda row: _severity(row[1]))  # stable: the suite's order within each rank
    rows = [_Row(name[:ID_CHARS], max(len(name) - ID_CHARS, 0), _case_of(name)[:ID_CHARS],
                 before.get(name, absent_before), after.get(name, "absent"), marks,
                 *_cut(messages.get(name) or "", MESSAGE_CHARS))
            for name, marks in tagged]
    return rows, counts, omitted


_RANK = ("critical", "regressed", "failing", "new", "fixed")


def _severity(marks: str) -> int:
    """A row's rank in the table: failing critical tests first, then regressed, failing, new, fixed, the rest."""
    tags = marks.split()
    if "critical" in tags and "failing" in tags:
        return 0
    return next((rank for rank, tag in enumerate(_RANK[1:], start=1) if tag in tags), len(_RANK))


class _Row(NamedTuple):
    """One row of the test table: texts as shown, and how many characters of each were cut."""

    id: str
    id_cut: int
    case: str
    before: str
    after: str
    tags: str
    message: str
    message_cut: int


def _rows_html(rows: list[_Row]) -> Markup:
    """The test table's rows as the template would write them, written here: up to MAX_TEST_ROWS rows of seven
    values each, every value shown and escaped as the template's own output is (evalkit.render.html.shown)."""
    out = []
    for t in rows:
        id_note = f'<span class="note"> [{t.id_cut} more characters]</span>' if t.id_cut else ""
        tags = "".join(f'<span class="tag {shown(tag)}">{shown(tag)}</span>' for tag in t.tags.split(" ")
                       ) if t.tags else ""
        message_note = f'<span class="note"> [{t.message_cut} more characters]</span>' if t.message_cut else ""
        before, after = shown(t.before), shown(t.after)
        out.append(f'<tr data-tags="{shown(t.tags)}"><td><code>{breakable(t.id)}</code>{id_note}</td>'
                   f'<td>{shown(t.case)}</td><td class="{before}">{before}</td><td class="{after}">{after}</td>'
                   f"<td>{tags}</td><td>{shown(t.message)}{message_note}</td></tr>\n")
    return Markup("".join(out))


def _cut(text: str, limit: int) -> tuple[str, int]:
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _case_of(nodeid: str) -> str:
    """The case a parametrized check ran on: `test_recall[rc01]` -> `rc01` (the last `[...]` of the id)."""
    last = nodeid.rsplit("::", 1)[-1]
    return last[last.index("[") + 1:-1] if "[" in last and last.endswith("]") else ""


def _panels(candidate: RunReport, decision: Decision | None,
            baseline: RunReport | None) -> tuple[list[dict[str, Any]], list[str]]:
    """A panel for every candidate case that did not pass (regressed cases first), and the ids not shown."""
    regressed_cases = {_case_of(n) for n in (decision.regressed if decision else ())}
    failing = [c for c in candidate.cases if not c.get("passed") or c.get("status") == "unscored"]
    failing.sort(key=lambda c: str(c.get("id")) not in regressed_cases)
    before = {str(c.get("id")): c for c in baseline.cases} if baseline is not None else {}
    messages = _messages_by_case(candidate, decision)
    graded = {str(f.get("id")): f for f in (decision.failures if decision else ())}
    panels = []
    for index, case in enumerate(failing[:MAX_PANELS]):
        case_id = str(case.get("id"))
        old = before.get(case_id)
        base_side, cand_side = _sides(old, case)
        panels.append({
            "anchor": f"case-{index + 1}", "id": clip(case_id, ID_CHARS), "regressed": case_id in regressed_cases,
            "status": str(case.get("status") or ""), "input": clip(case["input"]) if "input" in case else None,
            "baseline": base_side, "candidate": cand_side, "has_baseline": old is not None,
            "checks": _checks(old, case), "messages": messages.get(case_id, []),
            "judges": _judges(old, case), "grades": _grades(old, case, graded.get(case_id)),
            "problems": [clip(p, MESSAGE_CHARS) for p in json_list(case.get("problems"))],
            "program": _program(case),
            "images": _case_images(baseline, candidate, case_id),
            **_steps(baseline, candidate, case_id, old is not None, messages.get(case_id, [])),
        })
    return panels, [str(c.get("id"))[:ID_CHARS] for c in failing[MAX_PANELS:]]


def _steps(baseline: RunReport | None, candidate: RunReport, case_id: str, has_baseline: bool,
           messages: Iterable[tuple[str, Clipped]]) -> dict[str, Any]:
    """A case's steps as its panel shows them: a conversation's transcript, its first failing turn marked
    (`transcript`), or an agent's trajectory (`trajectory`), each beside the baseline's."""
    old = trajectory_of(baseline, case_id) if has_baseline and baseline is not None else None
    new = trajectory_of(candidate, case_id)
    if is_conversation(new) or is_conversation(old):
        named = [(name.rsplit("[", 1)[0], message.text) for name, message in messages]
        return {"trajectory": None, "transcript": transcript_view(old, new, has_baseline, failing_turn(named))}
    return {"trajectory": trajectory_view(old, new, has_baseline), "transcript": None}


def _sides(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[_Side, _Side]:
    left, right = _Side(kept=old is not None and "output" in old), _Side(kept="output" in new)
    if left.kept and old is not None and old.get("output") is not None:
        left.output = clip(str(old["output"]))
    if right.kept and new.get("output") is not None:
        right.output = clip(str(new["output"]))
    for side, entry in ((left, old), (right, new)):
        outputs = entry.get("outputs") if entry is not None else None
        if isinstance(outputs, list):
            side.more = [(number, clip(str(text)) if text is not None else None)
                         for number, text in enumerate(outputs) if number > 0]
    if left.output is not None and right.output is not None:
        left.segments, right.segments = diff_sides(left.output.text, right.output.text)
    else:
        left.segments = [("same", left.output.text)] if left.output else []
        right.segments = [("same", right.output.text)] if right.output else []
    return left, right


def _checks(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    before: Mapping[str, Any] = _mapping(old.get("checks")) if old is not None else {}
    after = _mapping(new.get("checks"))
    names = [*after, *(n for n in before if n not in after)]
    return [(n, str(before.get(n, "absent" if old is not None else "-")), str(after.get(n, "absent"))) for n in names]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _messages_by_case(candidate: RunReport, decision: Decision | None) -> dict[str, list[tuple[str, Clipped]]]:
    out: dict[str, list[tuple[str, Clipped]]] = {}
    for nodeid, message in {**(decision.messages if decision else {}), **candidate.messages}.items():
        case = _case_of(nodeid)
        if case:
            out.setdefault(case, []).append((nodeid.split("::")[-1][:ID_CHARS], clip(message, MESSAGE_CHARS)))
    return out


def _judges(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[tuple[str, Clipped | None, Clipped | None]]:
    def replies(entry: Mapping[str, Any] | None) -> Mapping[str, Any]:
        value = entry.get("judge_replies") if entry is not None else None
        return value if isinstance(value, Mapping) else {}

    before, after = replies(old), replies(new)
    return [(metric, clip(str(before[metric])) if before.get(metric) is not None else None,
             clip(str(after[metric])) if after.get(metric) is not None else None)
            for metric in sorted({*before, *after})]


def _grades(old: Mapping[str, Any] | None, new: Mapping[str, Any],
            failure: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    """Graded suites: each verdict (task, quality, safety, review pending) and the grader's reason, both sides."""
    def grade(entry: Mapping[str, Any] | None) -> Mapping[str, Any]:
        value = entry.get("grade") if entry is not None else None
        return value if isinstance(value, Mapping) else {}

    before, after = grade(old), grade(new)
    if not before and not after:
        return []
    flags = ("task_pass", "quality_pass", "safety_pass", "review_pending")
    rows = [(flag, _verdict(before.get(flag)), _verdict(after.get(flag)))
            for flag in flags if flag in before or flag in after]
    rows.append(("reason", str(before.get("reason") or "-")[:MESSAGE_CHARS],
                 str(after.get("reason") or "-")[:MESSAGE_CHARS]))
    if failure is not None and failure.get("new") is False:
        rows.append(("known", "", "the baseline fails this case too"))
    return rows


def _verdict(value: Any) -> str:
    return {True: "pass", False: "fail", None: "-"}.get(value, str(value))


def _program(case: Mapping[str, Any]) -> list[tuple[str, Clipped]] | None:
    program = case.get("program")
    if not isinstance(program, Mapping):
        return None
    return [(name, clip(program[name], MESSAGE_CHARS)) for name in ("status", "reason", "response", "isolation")
            if program.get(name) is not None]


def _metrics(decision: Decision | None, candidate: RunReport) -> list[dict[str, Any]]:
    """Before, after, delta and status per metric, with a bar's widths (0-100, scaled to the larger side)."""
    if decision is not None:
        entries = [(name, m.get("before"), m.get("after"), m.get("delta"), str(m.get("status") or ""),
                    m.get("interval")) for name, m in decision.metrics.items()]
    else:
        entries = [(name, None, value, None, "", None) for name, value in sorted(candidate.metrics.items())]
    out = []
    for name, before, after, delta, status, interval in entries:
        numbers = [abs(v) for v in (before, after) if isinstance(v, int | float)]
        scale = max(numbers, default=0.0) or 1.0
        out.append({"name": name, "before": number(before), "after": number(after), "delta": change(delta, interval),
                    "status": status, "sort_delta": delta if isinstance(delta, int | float) else "",
                    "bar_before": _width(before, scale), "bar_after": _width(after, scale)})
    return out


def _width(value: Any, scale: float) -> float | None:
    return round(100 * abs(value) / scale, 1) if isinstance(value, int | float) else None


def _slices(report: RunReport) -> list[dict[str, Any]]:
    rows = []
    for cut, values in report.slices.items():
        if not isinstance(values, Mapping):
            continue
        for name, s in values.items():
            if isinstance(s, Mapping):
                rows.append({"cut": clip(str(cut), ID_CHARS), "value": clip(str(name), ID_CHARS),
                             "cases": s.get("cases"), "pass_rate": number(s.get("pass_rate")),
                             "failures": clip(", ".join(map(str, json_list(s.get("failures")))) or "-", MESSAGE_CHARS),
                             "unsafe": clip(", ".join(map(str, json_list(s.get("unsafe")))) or "-", MESSAGE_CHARS)})
    return rows


def _provenance(report: RunReport) -> list[tuple[str, Clipped]]:
    """Where the run's replies came from (authored or recorded), the run's mode, and for candidate programs the
    isolation that held, per case where the cases differ from the run's probe."""
    run_label = isolation_label(report.provenance.get("isolation"))
    rows = [(str(name), clip(run_label if name == "isolation" else value, MESSAGE_CHARS))
            for name, value in report.provenance.items()]
    rows += [(f"candidate {name}", clip(value, MESSAGE_CHARS)) for name, value in report.candidate.items()]
    labels: dict[str, int] = {}
    for case in report.cases:
        isolation = json_object(case.get("program")).get("isolation")
        if isinstance(isolation, str):
            labels[isolation] = labels.get(isolation, 0) + 1
    if labels and set(labels) != {run_label}:
        rows += [(f"isolation held for {count} case(s)", clip(label, MESSAGE_CHARS)) for label, count in labels.items()]
    return rows


def _compared(evidence: Evidence | None) -> list[dict[str, str]]:
    if evidence is None:
        return []
    return [{"side": side, "path": report.path, "sha256": report.sha256}
            for side, report in (("baseline", evidence.baseline), ("candidate", evidence.candidate))]
