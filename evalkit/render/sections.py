"""The run's sections — quality, cost, latency — side by side and never mixed into one score."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import msgspec

from evalkit.gate.decide import is_critical
from evalkit.gate.decision import Decision
from evalkit.records.report import Cost, Live
from evalkit.records.report_reader import RunReport, json_list, json_object
from evalkit.render.money import money_rows
from evalkit.render.numbers import number

__all__ = ["decision_lists", "judge_rows", "sections", "render_sections"]


SPLIT_SHOWN = 10
"""At most this many tests whose samples disagree are named, each with its k/N; the run report has them all."""

Listed = tuple[str, bool, str | None]
"""A listed test: its id, whether to mark it critical, and the first line of why it did not pass."""


def decision_lists(decision: Decision, critical: tuple[str, ...]) -> list[tuple[str, list[Listed]]]:
    """The decision's non-empty test lists, titled, each test with whether to mark it critical (only among the
    regressed: the other critical lists say so in their title) and the first line of why it did not pass (None
    when the report does not say); shared by the text and Markdown renderers."""
    lists = (("regressed", decision.regressed), ("new failing", decision.new_failing), ("fixed", decision.fixed),
             ("critical failures", decision.critical_failures), ("missing critical", decision.missing_critical))
    return [(title, [(name, title == "regressed" and is_critical(name, critical), decision.messages.get(name))
                     for name in names])
            for title, names in lists if names]


def sections(report: RunReport, baseline: RunReport | None = None, *,
             listed: Collection[str] = ()) -> dict[str, list[tuple[str, str]]]:
    """Each section as (label, value) rows; shared by the text and Markdown renderers. With the baseline, the cost
    in money says what it was there (each report at the prices it recorded). Tests in `listed` are left out of the
    rows of tests whose samples disagree: the decision above them lists those with both sides' k/N."""
    quality = [(name, number(value))
               for name, value in sorted(report.metrics.items())]
    for cut, values in report.slices.items():
        for name, block in json_object(values).items():
            s = json_object(block)
            failures, unsafe = (", ".join(map(str, json_list(s.get(key)))) for key in ("failures", "unsafe"))
            quality.append((f"slice {cut} = {name}",
                            f"{s['pass_rate']:.3f} of {s['cases']}; failing: {failures or '-'}; "
                            f"unsafe: {unsafe or '-'}"))
    denied = report.denied  # not run: the budget denied their calls, so they are no failures of the model
    failing = sorted(str(c.get("id")) for c in report.cases if not c.get("passed") and str(c.get("id")) not in denied)
    if report.cases:
        quality.append(("failing cases", ", ".join(failing) or "-"))
    if denied:
        quality.append(("not run (budget)", f"{', '.join(sorted(denied))}: "
                                            f"{'; '.join(sorted(set(denied.values())))}"))
    quality += _split(report, listed)
    quality += judge_rows(report)
    cost_data = report.execution.cost
    cost = []
    if cost_data is not None and cost_data != Cost():  # an empty section shows nothing, as it always did
        estimated = cost_data.estimated_calls or {}
        for name, value in (("model_calls", cost_data.model_calls), ("input_tokens", cost_data.input_tokens),
                            ("output_tokens", cost_data.output_tokens)):
            note = f" (estimated for {estimated[name]} calls: characters / 4)" if estimated.get(name) else ""
            cost.append((name, f"{0 if value is None else value}{note}"))
        if cost_data.judge_calls:
            cost.append(("judge calls (apart)", f"{cost_data.judge_calls}: {cost_data.judge_input_tokens} "
                                                f"input, {cost_data.judge_output_tokens} output tokens"))
        if cost_data.simulator_calls:  # a conversation's simulated user (evalkit.run.conversation)
            cost.append(("simulated user calls (apart)", f"{cost_data.simulator_calls}: "
                                                         f"{cost_data.simulator_input_tokens} input, "
                                                         f"{cost_data.simulator_output_tokens} output tokens"))
    cost += money_rows(report, baseline)
    live = report.execution.live
    if live is not None and live != Live():
        seconds = live.seconds if live.seconds is not None else 0.0
        cost.append(("live calls sent", f"{live.sent} ({live.retried} retried) in {seconds:.1f} s"))
    latency = report.execution.latency
    return {"quality": quality, "cost": cost,
            "latency": latency_rows(msgspec.to_builtins(latency) if latency is not None else {})}


def latency_rows(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The latency section's rows: time in flight, and where known the server's own time, the wait for a slot and
    the run's pace, each named for what it measures; replayed latencies say they were recorded."""
    timed = int(data.get("measured_calls") or 0)
    if not timed:
        return []
    recorded = int(data.get("recorded_calls") or 0)
    source = ("all recorded: replayed replies keep the latency measured when they were recorded" if recorded == timed
              else f"{recorded} of them recorded earlier (replayed)" if recorded else "measured in this run")
    rows = [("in flight (send to reply)", f"mean {data['mean_ms']} ms, p95 {data['p95_ms']} ms over {timed} calls; "
                                          f"{source}")]
    service = data.get("service") or {}
    if service:
        rows.append(("server's own time", f"mean {service['mean_ms']} ms, p95 {service['p95_ms']} ms over "
                                          f"{service['calls']} calls (as the server reported it; the rest of the "
                                          "time in flight was queueing at the server and the network)"))
    wait = data.get("wait") or {}
    if wait:
        rows.append(("wait for a slot", f"mean {wait['mean_ms']} ms, p95 {wait['p95_ms']} ms (queued in evalkit "
                                        "behind run.concurrency, the rate limits and retry pauses; not in flight)"))
    pace = data.get("pace") or {}
    if pace:
        line = (f"{pace['calls']} calls in {pace['seconds']:.1f} s: {pace['ms_per_call']} ms per call, "
                f"{pace['in_flight_mean']} in flight on average at run.concurrency={pace['concurrency']}")
        if not service and float(pace["in_flight_mean"]) >= 1.5:
            line += ("; in-flight times overlap, so if the server answers one call at a time most of each was "
                     "queueing there (run.concurrency=1 measures the service time)")
        rows.append(("pace", line))
    return rows


def judge_rows(report: RunReport) -> list[tuple[str, str]]:
    """Each judged check's row: how many times its judge judged each reply and, with more than one, its
    self-agreement (the share of replies whose verdicts agree, Fleiss' kappa over its levels) and its flips."""
    rows = []
    for check, block in sorted(report.judges.items()):
        agreement = block.self_agreement
        if agreement is None:
            rows.append((f"judge {check}", "judged once per reply: its self-agreement is not measured "
                                           "(judge.repeats=3 measures it)"))
            continue
        share = "n/a" if agreement.agreement is None else f"{agreement.agreement:.3f}"
        kappa = "n/a (one level only)" if agreement.fleiss_kappa is None else f"{agreement.fleiss_kappa:.3f}"
        unread = f"; {agreement.unread} left out (an answer without a verdict)" if agreement.unread else ""
        flips = [flip.case for flip in block.flips]
        flipped = (f"; flips on {len(flips)} case(s): {', '.join(flips[:SPLIT_SHOWN])}"
                   + (", ..." if len(flips) > SPLIT_SHOWN else "")) if flips else "; no flips"
        rows.append((f"judge {check}", f"judged {agreement.repeats}x per reply: self-agreement {share} "
                                       f"({agreement.agreeing} of {agreement.replies} replies), Fleiss' kappa "
                                       f"{kappa}{unread}{flipped}"))
    return rows


def _split(report: RunReport, listed: Collection[str]) -> list[tuple[str, str]]:
    """The repeated tests whose samples disagree (0 < k < N): k/N, the reducer and the outcome it gave."""
    split = [(name, c) for name, c in report.repeats.items() if 0 < c.passed < c.runs and name not in listed]
    rows = [("samples disagree (k/N)" if index == 0 else "",
             f"{name} {c.passed}/{c.runs} ({c.reduce}: {report.outcomes.get(name, 'absent')})")
            for index, (name, c) in enumerate(split[:SPLIT_SHOWN])]
    if len(split) > SPLIT_SHOWN:
        rows.append(("", f"... and {len(split) - SPLIT_SHOWN} more (each test's `repeats` in the run report)"))
    return rows


def render_sections(report: RunReport, baseline: RunReport | None = None, *, listed: Collection[str] = ()) -> str:
    from evalkit.render.confusion import confusion_text  # its own module: labels from replies need care

    lines = []
    for title, rows in sections(report, baseline, listed=listed).items():
        lines.append(title.upper())
        lines += [f"  {label:<31} {value}" for label, value in rows] or ["  not measured"]
        if title == "quality" and report.classification:
            lines.append(confusion_text(report))
    return "\n".join(lines)
