"""Obtain a run's calls: replayed from the recording of its identity, or called live under the recording's lock,
journaled so an interrupted run can resume, and saved to that recording.

A model suite (evalkit.run.model_runner) and a program suite whose program calls a model through evalkit's endpoint
(evalkit.run.program_runner) obtain their calls here alike; `run_calls` is what each does with the recording.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalkit.core.config import Mode, ModelConfig, RunConfig
from evalkit.core.errors import ProviderError, RecordingError, one_line
from evalkit.core.key import EvalKey
from evalkit.core.outputs import refuse_link
from evalkit.live.budget import Budget
from evalkit.live.progress import progress_enabled
from evalkit.live.providers import Provider, make_provider
from evalkit.live.redact import Redactor
from evalkit.project.paths import shown
from evalkit.run.execute import Execution, LiveSetup, provider_limits
from evalkit.run.identity import closest_recording, reusable_calls
from evalkit.run.journal import Journal, cut_torn_tail, journal_path, read_journal_tools, recording_lock
from evalkit.run.mismatch import ReplayRefusal
from evalkit.run.recording import (
    Entry,
    ForeignRecording,
    Provenance,
    Recording,
    ToolEntry,
    load_recording,
    save_recording,
)
from evalkit.run.run_secrets import refuse_short_keys

__all__ = ["no_recording", "obtain"]

RunCalls = Callable[[Recording, LiveSetup | None], Execution]
"""What a runner does with the recording: obtain its calls from it (and, given a LiveSetup, call and record)."""


def obtain(config: RunConfig, key: EvalKey, settings: dict[str, Any], rec_path: Path, redact: Redactor,
           roles: Mapping[str, tuple[ModelConfig, str]], run_calls: RunCalls,
           cached: Mapping[Path, Recording] | None = None) -> tuple[Recording, Execution]:
    """The recording the run's calls came from, and its execution: replayed (a recording this identity lacks is a
    refusal that names the closest one), or in a live mode called through the providers of `roles` (role -> its
    model and the words that name it in a refusal) and recorded. `cached` holds recordings already read, by
    resolved path (a baseline's, when it is this run's)."""
    if config.mode is Mode.REPLAY:
        if not os.path.lexists(rec_path):
            raise ReplayRefusal(no_recording(rec_path, key, settings))
        recording = load_recording(rec_path, key, cached.get(rec_path.resolve()) if cached else None)
        return recording, run_calls(recording, None)
    refuse_short_keys(config, redact)
    # Providers first: a missing extra or credential is refused before any lock, journal or call.
    providers = {role: _provider(model, words) for role, (model, words) in roles.items()}
    notify = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    with recording_lock(rec_path, config.run.lock_timeout_s, notify):
        return _record(config, key, settings, rec_path, redact, providers, run_calls, notify)


def _provider(model: ModelConfig, role: str) -> Provider:
    """The provider of one side of a live run; a refusal says which side, so a judge's missing key does not read
    as the model under test's."""
    try:
        return make_provider(model)
    except ProviderError as error:
        raise ProviderError(f"{role}: {error}") from None


def no_recording(rec_path: Path, key: EvalKey, settings: dict[str, Any]) -> str:
    """Why a replay has no recording: none of this identity, and the closest one there is, by what differs."""
    closest = closest_recording(rec_path.parent, key, settings)
    if closest is None:
        return f"{shown(rec_path)}: no recording of this identity (nor of any other in {shown(rec_path.parent)})"
    path, differs = closest
    more = f" (and {len(differs) - 1} more)" if len(differs) > 1 else ""
    return (f"{shown(rec_path)}: no recording of this identity; the closest, {path.name}, was recorded with "
            f"{differs[0]}{more}")


def _record(config: RunConfig, key: EvalKey, settings: dict[str, Any], rec_path: Path, redact: Redactor,
            providers: dict[str, Provider], run_calls: Callable[[Recording, LiveSetup | None], Execution],
            notify: Callable[[str], None]) -> tuple[Recording, Execution]:
    """A live or record-missing run, under the recording's lock, journaled so a crash can resume. It records into
    the recording of this identity, whatever is at its path; the terminal says which file changed and why."""
    journal_file = journal_path(rec_path)
    refuse_link(rec_path, "recording")  # before any call; the lock refused one when it was opened
    refuse_link(journal_file, "journal")
    if os.path.lexists(journal_file) and not config.run.resume:
        raise RecordingError(f"{journal_file}: an interrupted live run left this journal; continue it with "
                             "+run.resume=true, or delete the journal to start afresh")
    resumed: dict[str, Entry] = {}
    resumed_tools: dict[str, ToolEntry] = {}  # an agent's tool results, served again instead of called again
    if config.run.resume:
        cut = cut_torn_tail(journal_file)
        resumed, resumed_tools = read_journal_tools(journal_file)
        if cut:
            print(f"resuming: cut a torn last line ({cut} bytes, a write the interruption cut short) off "
                  f"{journal_file}; kept {len(resumed)} journaled call(s)", file=sys.stderr, flush=True)
    fresh = Recording(key=key, settings=settings, provenance=Provenance(kind="recorded"), calls={})
    existed, replaced = rec_path.is_file(), None
    recording = fresh
    if existed:
        try:
            recording = load_recording(rec_path, key)
        except ForeignRecording as error:  # re-recording is never refused: this identity is recorded in its place
            replaced = one_line(str(error).split("; ")[0], 300)
    # the settings are written as this run composed them (a file migrated from an older format may lack some)
    recording = recording.model_copy(update={"settings": settings})
    reusable = reusable_calls(rec_path.parent, key) if config.mode is Mode.RECORD_MISSING else {}
    at_once, lowered = provider_limits(config.run.concurrency,
                                       {role: {"model": config.model, "judge": config.judge,
                                               "simulator": config.simulator}[role] for role in providers})
    if lowered:
        # a note on stderr before any call (stdout begins with the decision); an outage's own line follows it
        notify(lowered)
    live = LiveSetup(providers=providers, settings=config.run, budget=Budget(config.budget), resumed=resumed,
                     resumed_tools=resumed_tools,
                     reusable=reusable, redact=redact, redact_reply=redact.values, at_once=at_once,
                     progress=progress_enabled(config.run.progress))
    with Journal(journal_file, redact) as journal:
        live.journal = journal
        execution = run_calls(recording, live)
    if execution.recording is not None:
        try:
            save_recording(execution.recording, rec_path, redact)
        except OSError as error:  # a full disk: every call is in the journal, which stays for the next run
            raise RecordingError(f"{rec_path}: cannot write the recording ({error.strerror or error}); the journal "
                                 f"{journal_file} keeps every call: free space, then continue with "
                                 "+run.resume=true") from None
        notify(_what_changed(config.mode, rec_path, key, settings, existed, replaced, execution))
        recording = execution.recording
    journal_file.unlink(missing_ok=True)  # compacted into the recording
    return recording, execution


def _what_changed(mode: Mode, rec_path: Path, key: EvalKey, settings: dict[str, Any], existed: bool,
                  replaced: str | None, execution: Execution) -> str:
    """One line naming the recording file a live run wrote and why, so a reviewer knows what `git diff` will show."""
    assert execution.recording is not None
    statuses = execution.stats.get("calls", {})
    recorded = statuses.get("recorded", 0) + statuses.get("resumed", 0)
    calls = f"{len(execution.recording.calls)} calls"
    if statuses.get("reused"):  # replies to the very same requests, taken from the other recordings
        calls += f": {recorded} recorded, {statuses['reused']} reused from other recordings of the same requests"
    where = shown(rec_path)
    if replaced is not None:
        return f"recording: replaced {where} ({replaced}) with this identity's {calls}"
    if not existed:
        closest = closest_recording(rec_path.parent, key, settings)
        other = (f"; other recordings are unchanged (the closest, {closest[0].name}, differs in {closest[1][0]})"
                 if closest else "")
        return f"recording: new file {where}, the first recording of this identity ({calls}){other}"
    if mode is Mode.LIVE:
        return (f"recording: re-recorded {where}: mode=live recorded all {recorded} calls of this identity again "
                "(git diff shows what changed)")
    return f"recording: added {recorded} call(s) to {where} (missing, stale or failed for this identity)"
