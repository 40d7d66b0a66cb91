"""Drive the calls of a run: replay each from the recording, or call the provider and record it.

Task calls come first; judge calls are built from the task replies, so a changed reply makes its
judge call stale instead of silently reusing an old verdict.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from evalkit.config import Mode, ModelConfig
from evalkit.dataset import Case
from evalkit.providers.base import Provider, Reply, Request
from evalkit.recording import Entry, Hit, Provenance, Recording, lookup, request_fingerprint
from evalkit.suite import SuiteTask

__all__ = ["CallResult", "Execution", "execute"]

Status = Literal["replayed", "recorded", "missing", "stale", "failed", "blocked"]


@dataclass(frozen=True)
class CallResult:
    """The outcome of one call id: a reply, or the reason there is none."""

    status: Status
    reply: Reply | None = None
    reason: str | None = None

    @property
    def text(self) -> str | None:
        return self.reply.text if self.reply else None


@dataclass(frozen=True)
class Execution:
    """All calls of a run, and the recording to save (None when nothing new was recorded)."""

    calls: dict[str, CallResult]
    recording: Recording | None


def execute(*, task: SuiteTask, cases: Sequence[Case], prompt: str, model: ModelConfig,
            judge: ModelConfig | None, mode: Mode, recording: Recording, where: str,
            provider_for: Callable[[ModelConfig], Provider], version: str) -> Execution:
    """Obtain every call of the run. Failures of single calls are results, never exceptions."""
    judged = task.build_judge is not None and judge is not None
    # Set up every provider before the first call: a missing extra or credential for the judge must
    # be refused before the model is called, not after its replies would have to be thrown away.
    providers: dict[str, Provider] = {}
    if mode is not Mode.REPLAY:
        providers["model"] = provider_for(model)
        if judged and judge is not None:
            providers["judge"] = provider_for(judge)
    new_entries: dict[str, Entry] = {}

    def obtain(call_id: str, request: Request, role: str) -> CallResult:
        if mode is not Mode.LIVE:
            found = lookup(recording, where, call_id, request)
            if isinstance(found, Hit):
                return CallResult("replayed", found.reply)
            if mode is Mode.REPLAY:
                return CallResult(found.kind, reason=found.reason)
        try:
            reply = providers[role].complete(request)
        except Exception as error:  # a failed call is data about the run, not a crash of it
            return CallResult("failed", reason=f"{call_id}: live call failed: {type(error).__name__}: {error}")
        new_entries[call_id] = Entry(request_sha=request_fingerprint(request), request=request, reply=reply)
        return CallResult("recorded", reply)

    calls: dict[str, CallResult] = {}
    for case in cases:
        calls[f"task/{case.id}"] = obtain(f"task/{case.id}", task.build_task(case, prompt, model), "model")
    if judged and task.build_judge is not None and judge is not None:
        for case in cases:
            output = calls[f"task/{case.id}"]
            requests = task.build_judge(case, output.text or "", judge)
            for metric, request in requests.items():
                call_id = f"judge/{metric}/{case.id}"
                if output.text is None:
                    calls[call_id] = CallResult("blocked", reason=f"{call_id} needs task/{case.id}, which has no reply")
                else:
                    calls[call_id] = obtain(call_id, request, "judge")

    if not new_entries:
        return Execution(calls, None)
    kept = {} if mode is Mode.LIVE else dict(recording.calls)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if kept and recording.provenance.kind == "authored":
        # Adding live calls to a fixture does not make the fixture's other replies a model's.
        earlier = recording.provenance.note or "authored fixture"
        provenance = Provenance(kind="authored", evalkit_version=version, recorded_at=now,
                                note=f"{earlier}; {len(new_entries)} call(s) recorded live at {now}")
    else:
        provenance = Provenance(kind="recorded", note="recorded by a live evalkit run",
                                evalkit_version=version, recorded_at=now)
    updated = recording.model_copy(update={"calls": kept | new_entries, "provenance": provenance})
    return Execution(calls, updated)
