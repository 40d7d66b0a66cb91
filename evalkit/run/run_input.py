"""The run input: what the runner hands to the pytest process that runs a suite's checks (`run-input.json`).

One typed model, written by the runner (evalkit.run.runner) and read by the plugin (evalkit.run.plugin) and, for a
run on several processes, by the runner again to compute the eval block from the shards' merged tests. The file
lives only for one run, in the run's output folder, and is read by the evalkit that wrote it: a file of another
format (left from an older evalkit in a reused folder) is refused, never guessed at.

The texts in it are the recording's, with the run's key values masked (the runner scrubs it before writing), so
nothing a check reads can be a credential.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.core.files import read_bytes

__all__ = ["FORMAT", "CallInput", "RunInput", "SuiteInput", "read_run_input", "run_input_schema"]

FORMAT: Final = "evalkit-run-input/1"


class CallInput(msgspec.Struct, forbid_unknown_fields=True):
    """One call's result as the checks see it: its status, reply text, why it has none, and what the reply
    contract found wrong with it (evalkit.live.contract)."""

    status: str
    text: str | None
    reason: str | None
    stop_reason: str | None = None
    contract: list[str] = []


class SuiteInput(msgspec.Struct, forbid_unknown_fields=True):
    """What the checks need from the suite's config."""

    slices: list[str | dict[str, Any]] = []
    abstention_check: str = "test_abstention"
    group_by: str | None = None
    critical: list[str] = []
    """The checks `checks.yaml` marks critical: they block on failure like the policy's `critical:`."""
    baseline_cases: list[str] = []
    """The cases the run had a baseline reply for: a `pairwise` check against the baseline compares only those
    (and skips the others, saying so)."""


class RunInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The eval key, the cases, each call's result, and the run's provenance."""

    format: Literal["evalkit-run-input/1"] = FORMAT
    key: dict[str, Any]
    provenance: dict[str, Any]
    cases: list[Case]
    calls: dict[str, CallInput] = {}
    repeats: int = 1
    """Samples of each call (`run.repeats`; the most a case may take, `run.max_repeats`, when sampled in rounds);
    the checks over a case run once per sample."""
    judge_repeats: int = 1
    """How many times the judge judged each reply (`judge.repeats`): a declared judged check reads every repeat."""
    samples: dict[str, int] = {}
    """A run sampled in rounds (`run.repeats=auto`): case id -> the samples it took, in place of `repeats`."""
    components: dict[str, Any] = {}
    settings: dict[str, Any] | None = None
    """What the key's fingerprints cover, shown beside it (the components, the model's and judge's options);
    the components when not given."""
    suite: SuiteInput = msgspec.field(default_factory=SuiteInput)
    programs: dict[str, dict[str, Any]] = {}
    """Suites that run a candidate program: what each case's run left, by case id."""
    references: dict[str, dict[str, Any]] = {}
    """The private references to grade each case's program run by."""
    trajectories: dict[str, dict[str, Any]] = {}
    """An agent suite: `task/<case>` (with `#<i>` for sample i) -> its trajectory (records.trajectory.Trajectory
    as JSON), which the trajectory checks of `checks.yaml` read."""

    def samples_of(self, case_id: str) -> int:
        """How many samples of the case's calls the run took."""
        return self.samples.get(case_id, self.repeats)

    @property
    def shown_settings(self) -> dict[str, Any]:
        return self.settings if self.settings is not None else self.components


_DECODER = msgspec.json.Decoder(RunInput)


def read_run_input(path: Path) -> RunInput:
    """The run input at `path`; anything else (another format, a torn file) is refused in one line."""
    try:
        return _DECODER.decode(read_bytes(path, "run input"))
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise InputError(f"{path}: not a run input of format {FORMAT} ({error}); it is written by `evalkit run` "
                         "for its own checks, so run the suite again rather than reusing the file") from None


def run_input_schema() -> dict[str, Any]:
    """The JSON Schema of the run input (docs/reference/schemas.md)."""
    return msgspec.json.schema(RunInput)
