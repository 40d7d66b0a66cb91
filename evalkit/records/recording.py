"""A recording: the stored calls of one eval key (`recordings/SUITE/*.json`), its entries and their provenance.

A recording maps call ids (`task/<case-id>`, `judge/<metric>/<case-id>`, with `#<i>` for sample i > 0 of a run
with `run.repeats`) to the request's fingerprint, the request itself (so a reviewer can read it) and the reply, or
the failure that ended the call. Beside its key it keeps the readable settings the key's fingerprints cover, so a
replay refused for another identity can name the setting that differs. These are the models; reading, writing and
looking a call up are evalkit.run.recording's. The JSON Schema in docs/reference/schemas.md is generated from here.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

from evalkit.core.key import EvalKey
from evalkit.records.call import Reply, Request
from evalkit.records.values import Json

__all__ = ["FORMAT", "OLD_FORMATS", "Entry", "Failure", "FailureKind", "Provenance", "Recording", "ToolEntry"]

FORMAT: Final = "evalkit-recording/2"
# 1: named by model, prompt version and dataset only, so runs at other options shared (and overwrote) one file
OLD_FORMATS: Final = ("evalkit-recording/1",)


class Provenance(BaseModel):
    """Where the replies came from. Authored fixtures are never presented as a model's output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["recorded", "authored"]
    """`recorded` by a live run, or `authored` by hand (a fixture, not a model's output)."""
    note: str | None = None
    evalkit_version: str | None = None
    recorded_at: str | None = None
    producer: dict[str, dict[str, Json]] | None = None
    """By role (`model`, `judge`): what produced the live replies, as the provider describes it (for `llamacpp`:
    the model file's name and SHA-256, the runtime and its version, the dialect and settings); None where the
    provider describes nothing or the replies were authored."""
    samples: int | None = None
    """The most samples of one call the file holds (`task/<case>`, `task/<case>#1` ...: `run.repeats`, see
    evalkit.run.samples); None when it holds one sample per call, as every recording made with N = 1."""
    rounds: dict[str, int] | None = None
    """Case id -> the samples of its calls that the run sampling in rounds which last wrote the file took
    (`run.repeats=auto`, evalkit.run.rounds): a replay takes exactly these, so it decides as that run did; None
    when that run sampled every case alike."""


FailureKind = Literal["failed", "budget_denied"]


class Failure(BaseModel):
    """A call that ended without a reply; recorded so that replay reproduces the live run's outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FailureKind
    """`failed`: no reply after the allowed retries; `budget_denied`: never sent, the budget was spent."""
    reason: str


class Entry(BaseModel):
    """One call: what was asked and what came back (a reply, or the failure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_sha: str
    request: Request
    reply: Reply | None = None
    failure: Failure | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Entry:
        if (self.reply is None) == (self.failure is None):
            raise ValueError("an entry holds exactly one of 'reply' and 'failure'")
        return self


class ToolEntry(BaseModel):
    """One tool call of an agent's step and what it gave the model: replay serves it instead of calling the tool, so
    CI needs neither the model nor the tool's backend. It is served only to the same tool implementation
    (`fingerprint`) asked with the same arguments; anything else is stale."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    fingerprint: str | None = None
    """The tool implementation's fingerprint (evalkit.agents.tools); None for a tool the suite does not have."""
    arguments: JsonValue = None
    content: str
    error: bool = False
    error_message: str | None = None


class Recording(BaseModel):
    """All calls of one eval key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["evalkit-recording/2"] = FORMAT
    key: EvalKey
    settings: dict[str, Json] = {}
    """The readable settings the key's fingerprints cover, by group (`model`: options and dialect, `judge`, each
    suite component), as evalkit.core.key.with_settings shows them; not part of the identity."""
    provenance: Provenance
    calls: dict[str, Entry] = {}
    tools: dict[str, ToolEntry] = {}
    """Agents' tool results by `<step call id>|<tool call id>` (evalkit.run.agent_loop); absent from a file with
    none, so recordings made before agents existed read, and are written, unchanged."""
