"""The run input (`run-input.json`): what the runner hands to the pytest process that runs a suite's checks.

One model, written by the runner (evalkit.run.runner) and read by the plugin (evalkit.run.plugin) and, for a run on
several processes, by the runner again to compute the eval block from the shards' merged tests. The file lives
only for one run, in the run's output folder, and is read by the evalkit that wrote it: a file of another format
(left from an older evalkit in a reused folder) is refused, never guessed at (evalkit.run.run_input reads it).

The texts in it are the recording's, with the run's key values masked (the runner scrubs it before writing), so
nothing a check reads can be a credential. The parts other modules define (the eval key, the provenance, a
program's run, a trajectory) are held as JSON, never as `Any`. The JSON Schema in docs/reference/schemas.md is
generated from here.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalkit.core.dataset import Case
from evalkit.records.values import Json

__all__ = ["FORMAT", "CallInput", "RunInput", "SliceInput", "SuiteInput"]

FORMAT: Final = "evalkit-run-input/1"


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class CallInput(_Input):
    """One call's result as the checks see it: its status, reply text, why it has none, and what the reply
    contract found wrong with it (evalkit.live.contract)."""

    status: str
    text: str | None
    reason: str | None
    stop_reason: str | None = None
    contract: list[str] = []


class SliceInput(_Input):
    """A slice of the run (evalkit.core.config.SliceSpec): a case field or `language(<field>)`, and the field
    values that choose its cases."""

    by: str
    where: dict[str, Json] = {}


class SuiteInput(_Input):
    """What the checks need from the suite's config."""

    slices: list[str | SliceInput] = []
    abstention_check: str = "test_abstention"
    group_by: str | None = None
    critical: list[str] = []
    """The checks `checks.yaml` marks critical: they block on failure like the policy's `critical:`."""
    baseline_cases: list[str] = []
    """The cases the run had a baseline reply for: a `pairwise` check against the baseline compares only those
    (and skips the others, saying so)."""


class RunInput(_Input):
    """The eval key, the cases, each call's result, and the run's provenance."""

    format: Literal["evalkit-run-input/1"] = FORMAT
    key: dict[str, Json]
    """The eval key (evalkit.core.key.EvalKey as JSON)."""
    provenance: dict[str, Json]
    cases: list[Case]
    calls: dict[str, CallInput] = {}
    repeats: int = 1
    """Samples of each call (`run.repeats`; the most a case may take, `run.max_repeats`, when sampled in rounds);
    the checks over a case run once per sample."""
    judge_repeats: int = 1
    """How many times the judge judged each reply (`judge.repeats`): a declared judged check reads every repeat."""
    samples: dict[str, int] = {}
    """A run sampled in rounds (`run.repeats=auto`): case id -> the samples it took, in place of `repeats`."""
    components: dict[str, Json] = {}
    settings: dict[str, Json] | None = None
    """What the key's fingerprints cover, shown beside it (the components, the model's and judge's options);
    the components when not given."""
    suite: SuiteInput = Field(default_factory=SuiteInput)
    programs: dict[str, dict[str, Json]] = {}
    """Suites that run a candidate program: what each case's run left, by case id."""
    references: dict[str, dict[str, Json]] = {}
    """The private references to grade each case's program run by."""
    trajectories: dict[str, dict[str, Json]] = {}
    """An agent suite: `task/<case>` (with `#<i>` for sample i) -> its trajectory (records.trajectory.Trajectory
    as JSON), which the trajectory checks of `checks.yaml` read."""

    def samples_of(self, case_id: str) -> int:
        """How many samples of the case's calls the run took."""
        return self.samples.get(case_id, self.repeats)

    @property
    def shown_settings(self) -> dict[str, Json]:
        return self.settings if self.settings is not None else self.components
