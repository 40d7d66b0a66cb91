"""The eval key: the identity of a run, built only from what changes the output.

Transport settings (base URL, timeouts, credentials, output paths) are deliberately absent, so
pointing a run at another server or folder never orphans its recording.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalkit.dataset import SHA_LENGTH, Dataset

__all__ = ["KEY_VERSION", "EvalKey", "build_key", "canonical_json", "fingerprint", "recording_path",
           "safe_name", "COMPARABILITY_FIELDS"]

KEY_VERSION = 1  # bump when the meaning of a field changes; tests pin the keys of each version

# Fields that must agree for two runs to be compared at all (the rest may differ: that is the change).
COMPARABILITY_FIELDS = ("dataset_sha", "judge_model")

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


def canonical_json(value: Any) -> str:
    """One spelling per value, so equal values always fingerprint alike."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(value: Any) -> str:
    """Short SHA-256 of a string's UTF-8 bytes, or of any other value's canonical JSON."""
    text = value if isinstance(value, str) else canonical_json(value)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:SHA_LENGTH]


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
        components={group: f"{option}@{fingerprint(settings)}"
                    for group, (option, settings) in sorted(components.items())},
    )


def safe_name(text: str) -> str:
    """A file-name-safe spelling on every filesystem: `gemma4:e2b` -> `gemma4-e2b`."""
    return _UNSAFE.sub("-", text).strip("-.") or "_"


def recording_path(key: EvalKey, root: Path) -> Path:
    """Where the recording of `key` lives: one file per model x prompt x dataset version (x components)."""
    parts = [key.model, key.prompt_version, key.dataset]
    parts += [f"{group}-{value.rsplit('@', 1)[-1][:8]}" for group, value in key.components.items()]
    return root / safe_name(key.suite) / ("-".join(safe_name(p) for p in parts) + ".json")
