"""One run as the composed config asks for it, and what it produced: a frozen plan built once (plan_run), read by
both runners, and the result either returns (RunResult).

The runners (evalkit.run.model_runner, evalkit.run.program_runner) and the call path (evalkit.run.execute) used to
take the config, the baseline and a dozen loose keyword arguments each; they now read one plan. What a run loads
from files (the dataset, the prompt, the suite's task and tools) is not in it: the runner that needs it reads it,
so a refusal still comes in the order it always did, and building a plan reads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evalkit.core.config import Mode, ModelConfig, RunConfig, SimulatorConfig
from evalkit.core.key import EvalKey
from evalkit.core.prices import PriceEntry
from evalkit.core.version import __version__
from evalkit.records.report_reader import RunReport

__all__ = ["CallSettings", "RunPlan", "RunResult", "SuiteKind", "plan_run"]

SuiteKind = Literal["model", "program"]
"""A model suite sends each case to the model under test; a program suite runs a candidate program per case."""


@dataclass(frozen=True)
class CallSettings:
    """How every model call of a run is made: what evalkit.run.execute (and a program's endpoint calls) read."""

    mode: Mode
    """Replayed from the recording, or called live (and recorded)."""
    model: ModelConfig
    """The model under test (a program suite's: the one its program calls through evalkit's endpoint)."""
    judge: ModelConfig | None = None
    """The suite's pinned judge; its calls are made only where the suite's task judges."""
    simulator: SimulatorConfig | None = None
    """A conversation suite's simulated user."""
    repeats: int = 1
    """Samples of each task call (`run.repeats`; with `run.repeats=auto`, the most a case may take)."""
    judge_repeats: int = 1
    """Judge calls of each sample's reply (`judge.repeats`)."""
    prices: Mapping[str, PriceEntry] | None = None
    """The price table: with one, the run's cost in money is computed and `budget.max_usd` enforced at its prices."""
    version: str = __version__
    """The evalkit version a recording this run saves names in its provenance."""


@dataclass(frozen=True)
class RunPlan:
    """Everything a run takes before it reads a file: its config, its kind, how its calls are made, its baseline."""

    config: RunConfig
    kind: SuiteKind
    calls: CallSettings | None
    """None for a program suite whose program calls no model through evalkit's endpoint."""
    baseline: RunReport | None = None
    """With a baseline, its recorded task replies are offered to the suite's judge (pairwise judging), and a run
    sampled in rounds compares against its recorded samples."""
    baseline_name: str | None = None
    """How the report names that baseline."""


def plan_run(config: RunConfig, baseline: RunReport | None = None, baseline_name: str | None = None) -> RunPlan:
    """The plan of one run of `config` (validated: a model suite has its model, a program suite its program)."""
    kind: SuiteKind = "program" if config.suite.program is not None else "model"
    calls = None
    if config.model is not None and (kind == "model" or config.suite.program is not None and
                                     config.suite.program.endpoint):
        calls = CallSettings(mode=config.mode, model=config.model, judge=config.judge, simulator=config.simulator,
                             repeats=config.run.most_samples,
                             judge_repeats=config.judge.repeats if config.judge is not None else 1,
                             prices=config.prices)
    return RunPlan(config=config, kind=kind, calls=calls, baseline=baseline, baseline_name=baseline_name)


@dataclass(frozen=True)
class RunResult:
    """What one run produced: its key, its report (and where it was written) and its recording."""

    key: EvalKey
    report: RunReport
    report_path: Path
    recording_path: Path | None
    """None for suites that run a candidate program making no model calls (they record nothing). The call
    statistics are the report's, typed (`report.execution`)."""
