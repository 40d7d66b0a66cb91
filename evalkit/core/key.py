"""The eval key: the identity of a run, built only from what changes the output.

Transport settings (base URL, timeouts, credentials, output paths) are deliberately absent, so
pointing a run at another server or folder never orphans its recording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from evalkit.core.dataset import Dataset
from evalkit.core.fingerprint import fingerprint

__all__ = ["KEY_VERSION", "ABSENT", "EvalKey", "build_key", "changed_settings", "recording_path", "safe_name",
           "with_settings"]

KEY_VERSION = 1  # bump when the meaning of a field changes; tests pin the keys of each version

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
    components: dict[str, str] = {}
    """Suite-declared components: group name -> `option@fingerprint`."""

    @model_serializer(mode="wrap")
    def _without_absent_settings(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a provider without deployments leaves no trace, so the keys of every other run stay as they were
        data: dict[str, Any] = handler(self)
        for name in _PROVIDER_FIELDS:
            if data.get(name) is None:
                data.pop(name, None)
        return data


_PROVIDER_FIELDS = ("deployment", "api_version")


def build_key(*, suite: str, dataset: Dataset, model: str, prompt_version: str, prompt_text: str,
              judge_model: str | None, components: dict[str, tuple[str, dict[str, Any]]],
              deployment: str | None = None, api_version: str | None = None) -> EvalKey:
    """The key of a run. `components` maps group -> (chosen option, composed settings)."""
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
        components={group: f"{option}@{fingerprint(_numbers_as_values(settings))}"
                    for group, (option, settings) in sorted(components.items())},
    )


ABSENT = "(absent)"
"""How changed_settings names a setting that one side does not have."""


def with_settings(key: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """A report's `eval` block: the key, and beside it (`settings`) each suite component's composed settings, so a
    reader of two reports sees which setting changed, not only that a fingerprint did. The settings are not part
    of the key (its fingerprints already cover them); numbers are spelt as the fingerprint read them."""
    if not components:
        return key
    return {**key, "settings": {group: _numbers_as_values(settings) for group, settings in sorted(components.items())}}


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


def recording_path(key: EvalKey, root: Path) -> Path:
    """Where the recording of `key` lives: one file per model x prompt x dataset version (x components)."""
    parts = [key.model, *(v for v in (key.deployment, key.api_version) if v), key.prompt_version, key.dataset]
    parts += [f"{group}-{value.rsplit('@', 1)[-1][:8]}" for group, value in key.components.items()]
    return root / safe_name(key.suite) / ("-".join(safe_name(p) for p in parts) + ".json")
