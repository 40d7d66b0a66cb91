"""Recordings of format 1 converted to the current format, from what they hold.

Format 1 named a recording by model, prompt version and dataset only. The current key also holds what the model
and the judge were sent: that is read back from the recorded requests (the options of the task calls, of the judge
calls; a local runtime's load options left out). The structured-output dialect was never recorded, so the
converted key says the provider's default (`structured_output: null`); a run whose config names a dialect is then
refused naming it, and `mode=record-missing` records that identity. The calls and the provenance are kept as they
were; each entry's request fingerprint is taken again (load options are no longer part of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.core.call_id import CallId
from evalkit.core.errors import RecordingError
from evalkit.core.key import EvalKey, component_value, reply_settings, settings_as_values, settings_fingerprint
from evalkit.records.call import Request
from evalkit.run.recording import OLD_FORMATS, Entry, Provenance, Recording, request_fingerprint

__all__ = ["merged", "migrate_recording"]


def migrate_recording(data: Mapping[str, Any], where: str) -> Recording:
    """The current-format recording of a format-1 recording's data; refused (RecordingError) when it is not one,
    or when its calls do not tell one set of options per side."""
    if data.get("format") not in OLD_FORMATS:
        raise RecordingError(f"{where}: not a recording of an older format (format {data.get('format')!r})")
    try:
        old = dict(data["key"])
        calls = {call_id: Entry.model_validate(entry) for call_id, entry in dict(data["calls"]).items()}
        provenance = Provenance.model_validate(data["provenance"])
    except (KeyError, TypeError, ValueError) as error:
        raise RecordingError(f"{where}: not a readable format-1 recording ({error})") from None
    model = _settings(calls, "task/", where)
    if model is None:
        raise RecordingError(f"{where}: no task call to read the model's options from; re-record it with mode=live")
    judge = _settings(calls, "judge/", where)
    if old.get("judge_model") is not None and judge is None:
        raise RecordingError(f"{where}: no judge call to read the judge's options from; re-record it with mode=live")
    components = {**old.get("components", {}), "model": component_value(str(old["model"]), model)}
    key = EvalKey(**{**{k: v for k, v in old.items() if k != "key_version"}, "components": dict(sorted(
        components.items())), "judge_sha": settings_fingerprint(judge) if judge is not None else None})
    settings = settings_as_values({"model": model, **({"judge": judge} if judge is not None else {})})
    entries = {call_id: entry.model_copy(update={"request_sha": request_fingerprint(entry.request)})
               for call_id, entry in calls.items()}
    return Recording(key=key, settings=settings, provenance=provenance, calls=entries)


def merged(existing: Recording, migrated: Recording, where: str, target: str) -> Recording:
    """The recording already at `target` (the file of the converted recording's identity) with the converted calls
    of `where` added: refused when anything of either would be lost (a call recorded differently in the two, or
    calls to add under another provenance or other settings, which one file cannot hold)."""
    if existing.key != migrated.key:
        raise RecordingError(f"{where}: converts to {target}, which holds another identity; move that file away")
    differing = sorted(call for call, entry in migrated.calls.items()
                       if call in existing.calls and existing.calls[call] != entry)
    if differing:
        more = f" and {len(differing) - 1} more" if len(differing) > 1 else ""
        raise RecordingError(f"{where}: call {differing[0]}{more} recorded differently in {target}, the recording "
                             "of the same identity; keep one of the two files and run evalkit migrate again")
    added = {call: entry for call, entry in migrated.calls.items() if call not in existing.calls}
    if added and (existing.provenance != migrated.provenance or existing.settings != migrated.settings):
        raise RecordingError(f"{where}: {len(added)} of its calls are not in {target}, the recording of the same "
                             "identity, which has another provenance or other settings; one file holds one of each, "
                             "so re-record the missing calls with mode=record-missing, or keep one file")
    return existing.model_copy(update={"calls": {**existing.calls, **added}})


def _settings(calls: Mapping[str, Entry], prefix: str, where: str) -> dict[str, Any] | None:
    """The reply settings every sample-0 call under `prefix` was sent with (samples > 0 carry their own seeds)."""
    requests: list[Request] = [entry.request for call_id, entry in calls.items()
                               if call_id.startswith(prefix) and CallId.parse(call_id).sample == 0]
    found = {repr(sorted(reply_settings(r.options, None)["options"].items())) for r in requests}
    if len(found) > 1:
        raise RecordingError(f"{where}: the {prefix.rstrip('/')} calls were sent with different options; a "
                             "recording holds one identity, so re-record it with mode=live")
    return reply_settings(requests[0].options, None) if requests else None
