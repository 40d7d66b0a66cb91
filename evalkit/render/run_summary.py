"""What a run prints about itself under its decision: the run line (suite, tests, mode, recording, report), rounds,
live calls and tokens, budget refusals, cost; and a sweep job's one line. Values to strings; the command prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.core.isolation import isolation_label
from evalkit.records.report import Live
from evalkit.records.report_reader import RunReport
from evalkit.render.money import money_line
from evalkit.render.text import sequential_line
from evalkit.run.run_plan import RunResult

__all__ = ["job_line", "run_summary", "tests_line"]


def tests_line(report: RunReport) -> str:
    return f"{report.passed} of {len(report.outcomes)} tests passed"


def run_summary(suite: str, mode: str, result: RunResult) -> str:
    """The lines under a run's decision: what ran and where its report is, then rounds, live calls, budget
    refusals and cost where the run has them."""
    report, tests = result.report, tests_line(result.report)
    if result.recording_path is None:  # a candidate-program suite: no model calls, nothing recorded
        budget_used = report.execution.budget or {}
        text = (f"run: suite {suite}, candidate {report.candidate.get('option')} on split "
                f"{report.dataset.get('split')}, {tests} (candidate programs, no model calls); "
                f"units spent {budget_used.get('spent_units')}, unknown reservations "
                f"{budget_used.get('unknown_reservations')}, denied cases {budget_used.get('denied_cases')}; "
                f"report {result.report_path}\n"
                f"isolation: {isolation_label(report.provenance.get('isolation'))}")
    else:
        text = (f"run: suite {suite}, {tests} ({mode}, recording {result.recording_path.name}, "
                f"{report.provenance.get('recording_provenance')}); report {result.report_path}")
    if report.sequential is not None:
        text += "\n" + sequential_line(report.sequential)
    live = report.execution.live
    if live is not None and live != Live():
        budget = live.budget
        seconds = live.seconds if live.seconds is not None else 0.0
        text += (f"\nlive: {live.sent} calls sent ({live.retried} retried) in {seconds:.1f} s; "
                 f"input tokens {budget.get('input_tokens')}, output tokens {budget.get('output_tokens')} "
                 f"(estimated where the provider reported none; {budget.get('unknown_usage_calls')} calls "
                 f"with unknown usage); calls {report.execution.calls}")
        denied = live.denied
        if denied is not None:  # the budget's refusals, said plainly: their cases are unscored, not failed
            text += (f"\nbudget: {denied.calls} call(s) denied before they were sent: "
                     f"{denied.first.removeprefix('budget_denied: ')}; their cases are unscored, and a "
                     "gate treats the run as incomplete")
    cost = money_line(report)
    if cost is not None:
        text += f"\n{cost}"
    return text


def job_line(row: dict[str, Any], decision: str, tests: str, report: Path) -> str:
    """A sweep job's one line: its number and overrides, the decision and its key numbers, where its report is
    (what changed is in the summary table, which the sweep prints last)."""
    overrides = " ".join(row.get("overrides", ())) or "(no overrides)"
    regressed = f", {row['regressed']} regressed" if row.get("regressed") else ""
    return f"job {row['job']} {overrides}: {decision}, {tests}{regressed}; report {report}"
