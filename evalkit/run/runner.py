"""Run a suite under an eval key: the one entry point, `run(plan)`, hands the plan to the runner of its kind.

A model suite (evalkit.run.model_runner) sends each case to the model under test; a program suite
(evalkit.run.program_runner) runs a candidate program per case. Both obtain their calls the same way
(evalkit.run.record_or_replay), hand them to the suite's checks in a fresh pytest process and write the run report
(evalkit.run.checking).
"""

from __future__ import annotations

from evalkit.core.config import RunConfig
from evalkit.records.report_reader import RunReport
from evalkit.run.checking import run_checks
from evalkit.run.destinations import check_run_destinations
from evalkit.run.model_runner import baseline_replies, run_model_suite
from evalkit.run.program_runner import run_program_suite
from evalkit.run.run_plan import RunPlan, RunResult, plan_run

# run_checks and baseline_replies keep the import path they had before the runners were split
__all__ = ["RunResult", "baseline_replies", "run", "run_checks", "run_suite"]


def run(plan: RunPlan) -> RunResult:
    """Execute and check one run; writes `report.json` (and the recording, in live modes)."""
    check_run_destinations(plan.config)  # a run folder or save_report it may not write: refused before any work
    if plan.kind == "program":
        return run_program_suite(plan)
    return run_model_suite(plan)


def run_suite(config: RunConfig, baseline: RunReport | None = None, baseline_name: str | None = None) -> RunResult:
    """`run` of the plan of `config`: for callers that hold a config rather than a plan (tests, authoring scripts)."""
    return run(plan_run(config, baseline, baseline_name))
