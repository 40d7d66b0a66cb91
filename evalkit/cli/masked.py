"""Secrets masked in what a run shows and what Hydra writes before the job starts: the terminal streams and the
.hydra/ YAML files."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evalkit.core.errors import EvalkitError

if TYPE_CHECKING:
    from evalkit.live.redact import Redactor

__all__ = ["MaskedStream", "scrub_hydra_files"]


class MaskedStream(io.TextIOBase):
    """stdout or stderr with secrets masked in all that is written: evalkit's lines, Hydra's log, tracebacks."""

    redactors: list[Callable[[str], str]] = []

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @staticmethod
    def from_project(conf_dir: Path, argv: list[str]) -> Callable[[str], str]:
        from evalkit.core.provider_specs import provider_specs
        from evalkit.live.redact import Redactor

        typed = " ".join(argv)
        names = set(re.findall(r"(?:api_key|token)_env=([\w.-]+)", typed))
        providers = set(re.findall(r"provider=([\w.-]+)", typed))
        for path in [*conf_dir.rglob("*.yaml"), *Path(__file__).parents[1].joinpath("conf").rglob("*.yaml")]:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            names |= set(re.findall(r"(?:api_key|token)_env:\s*['\"]?([\w.-]+)", text))
            providers |= set(re.findall(r"provider:\s*['\"]?([\w.-]+)", text))
        try:
            specs = provider_specs()
        except EvalkitError:  # a broken plugin is reported once the config is composed
            specs = {}
        for provider in providers & set(specs):  # variables a provider reads by itself (Bedrock's AWS chain)
            names |= set(specs[provider].credential_env)
        return Redactor(sorted(names)).values

    def write(self, text: str) -> int:
        shown = text
        for redact in MaskedStream.redactors:
            shown = redact(shown)
        try:
            self._stream.write(shown)
        except BrokenPipeError:  # a reader that went away (`| head`): the rest goes nowhere, not into tracebacks
            self._gone()
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def _gone(self) -> None:
        self._stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  (lives as long as the process)

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # (TextIOBase declares it read-only, as here)
        return self._stream.encoding


def scrub_hydra_files(hydra_cfg: Any, multirun: bool, redact: Redactor) -> None:
    """Rewrite the YAML files Hydra wrote before the job started (`.hydra/*.yaml`, a sweep's `multirun.yaml`)
    with the run's key values masked, when a config or override put one there. Credential-shaped overrides never
    get this far (main refuses them); this catches a key value that only the composed config names."""
    import yaml

    from evalkit.core.atomic import write_atomic

    out = Path(hydra_cfg.runtime.output_dir)
    paths = list((out / hydra_cfg.output_subdir).glob("*.yaml")) if hydra_cfg.output_subdir else []
    if multirun:
        paths.append(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if redact.values(text) != text:
            data = redact.scrub(yaml.safe_load(text), messages=False)
            write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
