"""The eval key: the identity of a run, built only from what changes the output.

Transport settings (base URL, timeouts, credentials, output paths) are deliberately absent, so
pointing a run at another server or folder never orphans its recording.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalkit.core.dataset import Dataset
from evalkit.core.fingerprint import fingerprint

__all__ = ["KEY_VERSION", "EvalKey", "build_key", "recording_path",
           "safe_name"]

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
    prompt_version: str
    prompt_sha: str
    """Fingerprint of the prompt text."""
    judge_model: str | None = None
    """The pinned judge (None when the suite judges nothing)."""
    components: dict[str, str] = {}
    """Suite-declared components: group name -> `option@fingerprint`."""


def build_key(*, suite: str, dataset: Dataset, model: str, prompt_version: str, prompt_text: str,
              judge_model: str | None, components: dict[str, tuple[str, dict[str, Any]]]) -> EvalKey:
    """The key of a run. `components` maps group -> (chosen option, composed settings)."""
    return EvalKey(
        suite=suite,
        dataset=dataset.label,
        dataset_sha=dataset.sha,
        model=model,
        prompt_version=prompt_version,
        prompt_sha=fingerprint(prompt_text),
        judge_model=judge_model,
        components={group: f"{option}@{fingerprint(_numbers_as_values(settings))}"
                    for group, (option, settings) in sorted(components.items())},
    )


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
    parts = [key.model, key.prompt_version, key.dataset]
    parts += [f"{group}-{value.rsplit('@', 1)[-1][:8]}" for group, value in key.components.items()]
    return root / safe_name(key.suite) / ("-".join(safe_name(p) for p in parts) + ".json")
