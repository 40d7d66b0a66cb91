"""The eval key: the identity of a run, built only from what changes the output.

What changes a reply is in it: the dataset's and the prompt's bytes, the model's name and every option sent with
its calls, the structured-output dialect, the judge and its options, and each suite component's settings. The
model's options and dialect form the `model` component, so a run at another temperature is another key, names
another recording and shows in `changed`. Transport settings (base URL, timeouts, retries, concurrency,
credentials, output paths) and a local runtime's load options (LOAD_OPTIONS) are deliberately absent, so pointing
a run at another server, folder or thread count never orphans its recording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from evalkit.core.dataset import Dataset
from evalkit.core.fingerprint import fingerprint

__all__ = ["KEY_VERSION", "ABSENT", "LOAD_OPTIONS", "EvalKey", "build_key", "changed_settings", "component_value",
           "identity_digest", "recording_path", "reply_settings", "safe_name", "settings_as_values",
           "settings_fingerprint", "with_settings"]

KEY_VERSION = 2  # bump when the meaning of a field changes; tests pin the keys of each version
# 2: the model's options and dialect joined the key (the `model` component), the judge's as `judge_sha`, and the
#    recording's file name ends in a digest of the whole key

LOAD_OPTIONS = frozenset({"n_ctx", "n_batch", "n_ubatch", "n_threads"})
"""Options a local runtime (llama.cpp) reads when it loads the model: how it computes, not what it is asked, so
they stay out of every identity (a smaller batch that works around a runtime bug must still replay)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]+")


class EvalKey(BaseModel):
    """Each component's name and fingerprint. Travels in every recording and run report as `eval`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_version: int = KEY_VERSION
    suite: str
    dataset: str
    """`name@version` from the dataset file."""
    dataset_sha: str
    """Fingerprint of the dataset file's bytes."""
    model: str
    deployment: str | None = None
    """Azure OpenAI's deployment (the model it serves, under the name calls go to); absent for other providers."""
    api_version: str | None = None
    """Azure OpenAI's `api-version` (it changes what the API accepts and returns); absent for other providers."""
    prompt_version: str
    prompt_sha: str
    """Fingerprint of the prompt text."""
    judge_model: str | None = None
    """The pinned judge (None when the suite judges nothing)."""
    judge_sha: str | None = None
    """Fingerprint of the judge's reply settings (reply_settings: the options sent, the dialect); None when the
    suite judges nothing. Like the judge's name, a change makes judged scores incomparable, not a candidate."""
    components: dict[str, str] = {}
    """Components: group name -> `option@fingerprint`. `model` is the model under test's reply settings (its
    options and dialect, named by the model); the others are the suite's declared components."""
    tools: dict[str, str] = {}
    """An agent suite's tools (evalkit.agents.tools): tool name -> the fingerprint of its implementation and
    schema, so a changed tool is `tools.<name>`; a program suite's MCP servers' tools as `<server>.<tool>`
    (evalkit.run.program_mcp); absent for suites without tools, whose keys stay as they were."""

    @model_serializer(mode="wrap")
    def _without_absent_settings(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a provider without deployments leaves no trace, so the keys of every other run stay as they were
        data: dict[str, Any] = handler(self)
        for name in _PROVIDER_FIELDS:
            if data.get(name) is None:
                data.pop(name, None)
        if not data.get("tools"):
            data.pop("tools", None)
        return data


_PROVIDER_FIELDS = ("deployment", "api_version")


def reply_settings(options: Mapping[str, Any], structured_output: str | None) -> dict[str, Any]:
    """What of a model's configuration, beside its name, changes its replies: every option sent with a call (not
    the LOAD_OPTIONS), and the structured-output dialect (None: the provider's default)."""
    return {"options": {name: value for name, value in sorted(options.items()) if name not in LOAD_OPTIONS},
            "structured_output": structured_output}


def build_key(*, suite: str, dataset: Dataset, model: str, prompt_version: str, prompt_text: str,
              judge_model: str | None, components: dict[str, tuple[str, dict[str, Any]]],
              model_settings: Mapping[str, Any] | None = None, judge_settings: Mapping[str, Any] | None = None,
              deployment: str | None = None, api_version: str | None = None,
              tools: Mapping[str, str] | None = None) -> EvalKey:
    """The key of a run. `components` maps group -> (chosen option, composed settings); `model_settings` and
    `judge_settings` are each side's reply_settings (None: a run that calls no model, or judges nothing);
    `deployment` and `api_version` are Azure OpenAI's (None for every other provider)."""
    chosen = dict(components)
    if model_settings is not None:
        chosen["model"] = (model, dict(model_settings))
    return EvalKey(
        suite=suite,
        dataset=dataset.label,
        dataset_sha=dataset.sha,
        model=model,
        deployment=deployment,
        api_version=api_version,
        prompt_version=prompt_version,
        prompt_sha=fingerprint(prompt_text),
        judge_model=judge_model,
        judge_sha=settings_fingerprint(judge_settings) if judge_settings is not None else None,
        components={group: component_value(option, settings) for group, (option, settings) in sorted(chosen.items())},
        tools=dict(sorted((tools or {}).items())),
    )


def component_value(option: str, settings: Mapping[str, Any]) -> str:
    """A component's entry in the key: its option and the fingerprint of its settings, `default@2bb026d3a1c4`."""
    return f"{option}@{fingerprint(_numbers_as_values(dict(settings)))}"


ABSENT = "(absent)"
"""How changed_settings names a setting that one side does not have."""


def with_settings(key: dict[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """A report's `eval` block: the key, and beside it (`settings`) what its fingerprints cover, by group (each
    suite component's composed settings, the model's and the judge's reply_settings), so a reader of two reports
    sees which setting changed, not only that a fingerprint did. The settings are not part of the key."""
    if not settings:
        return key
    return {**key, "settings": settings_as_values(settings)}


def settings_as_values(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings by group, sorted, numbers spelt as the fingerprint reads them (`0.0` as `0`)."""
    return {group: _numbers_as_values(value) for group, value in sorted(settings.items())}


def changed_settings(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The component settings that differ between two `eval` blocks, as `group.path` -> (before, after): e.g.
    `retriever.min_score` -> (0.3, 0.25); a side without the setting reads ABSENT. Empty when either report
    carries no settings (written before reports kept them, or not by evalkit)."""
    before, after = baseline.get("settings"), candidate.get("settings")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return {}
    flat_before, flat_after = _flatten(before), _flatten(after)
    names = [*flat_before, *(name for name in flat_after if name not in flat_before)]
    return {name: (flat_before.get(name, ABSENT), flat_after.get(name, ABSENT)) for name in names
            if flat_before.get(name, ABSENT) != flat_after.get(name, ABSENT)}


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = value
    return out


def _numbers_as_values(value: Any) -> Any:
    """`min_margin=0` and `min_margin=0.0` on the command line are one setting, so one eval key."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _numbers_as_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_as_values(v) for v in value]
    return value


def safe_name(text: str) -> str:
    """A file-name-safe spelling on every filesystem: `gemma4:e2b` -> `gemma4-e2b`."""
    return _UNSAFE.sub("-", text).strip("-.") or "_"


def settings_fingerprint(settings: Mapping[str, Any]) -> str:
    """The fingerprint of one side's reply settings (the judge's, in `judge_sha`)."""
    return fingerprint(_numbers_as_values(dict(settings)))


def identity_digest(key: EvalKey) -> str:
    """A short digest of the whole key: two keys differing in anything get different digests."""
    return fingerprint(key.model_dump(mode="json"))[:8]


def recording_path(key: EvalKey, root: Path) -> Path:
    """Where the recording of `key` lives: one file per key, `<suite>/<model>-<prompt>-<dataset>-<digest>.json`.

    The readable part tells a reviewer what was measured; the digest covers everything else (options, dialect,
    prompt and dataset bytes, judge, components), so runs differing in anything that changes a reply never
    share, and so never overwrite, a file, and a changed prompt changes no other prompt's file."""
    parts = [key.model, key.prompt_version, key.dataset, identity_digest(key)]
    return root / safe_name(key.suite) / ("-".join(safe_name(p) for p in parts) + ".json")
