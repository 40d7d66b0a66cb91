"""Secrets masked in what a run shows and what Hydra writes before the job starts: the terminal streams and the
.hydra/ YAML files."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evalkit.core.errors import EvalkitError, InputError

if TYPE_CHECKING:
    from evalkit.live.redact import Redactor

__all__ = ["MaskedStream", "scrub_hydra_files", "mask_pattern_overrides", "pattern_literals"]

PATTERNS_KEY = "run.secret_patterns"
_PATTERN_OVERRIDE = re.compile(r"^([+~]{0,2}run\.secret_patterns)=.*", re.S)


class MaskedStream(io.TextIOBase):
    """stdout or stderr with secrets masked in all that is written: evalkit's lines, Hydra's log, tracebacks."""

    redactors: list[Callable[[str], str]] = []

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @staticmethod
    def from_project(conf_dir: Path, argv: list[str]) -> Callable[[str], str]:
        from evalkit.core.config import env_names
        from evalkit.core.provider_specs import provider_specs
        from evalkit.live.redact import Redactor, credential_name

        typed = " ".join(argv)
        names = set(re.findall(r"(?:api_key|token)_env=([\w.-]+)", typed))
        providers = set(re.findall(r"provider=([\w.-]+)", typed))
        # a credential read through `${oc.env:...}` is shown resolved by `--cfg job --resolve`, before any job
        read = env_names(argv)
        for path in [*conf_dir.rglob("*.yaml"), *Path(__file__).parents[1].joinpath("conf").rglob("*.yaml")]:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            names |= set(re.findall(r"(?:api_key|token)_env:\s*['\"]?([\w.-]+)", text))
            providers |= set(re.findall(r"provider:\s*['\"]?([\w.-]+)", text))
            read |= env_names(text)
        try:
            specs = provider_specs()
        except EvalkitError:  # a broken plugin is reported once the config is composed
            specs = {}
        for provider in providers & set(specs):  # variables a provider reads by itself (Bedrock's AWS chain)
            names |= set(specs[provider].credential_env)
        return Redactor(sorted(names | {name for name in read if credential_name(name)})).values

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


def mask_pattern_overrides(overrides: list[str]) -> list[str]:
    """The overrides with the text of `run.secret_patterns=[...]` masked: a pattern written for a secret of no
    known shape is often the secret itself."""
    from evalkit.live.redact import MASK

    return [_PATTERN_OVERRIDE.sub(rf"\1=[{MASK}]", item) for item in overrides]


def pattern_literals(argv: list[str]) -> Callable[[str], str]:
    """Masks the text of each `run.secret_patterns` entry given on the command line, wherever it is shown:
    Hydra logs a sweep's overrides before any job starts. Entries shorter than the shortest key evalkit redacts
    would mask ordinary words, so only their override is masked (by `mask_pattern_overrides`)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from evalkit.live.redact import MASK, MIN_SECRET

    literals: set[str] = set()
    for arg in argv:
        if not _PATTERN_OVERRIDE.match(arg):
            continue
        try:
            value = OverridesParser.create().parse_override(arg).value()
        except (HydraException, ValueError):
            continue  # Hydra refuses it in its own words, before any job runs
        entries = value if isinstance(value, list) else [value]
        literals |= {entry for entry in entries if isinstance(entry, str) and len(entry) >= MIN_SECRET}
    if not literals:
        return lambda text: text
    found = re.compile("|".join(re.escape(item) for item in sorted(literals, key=len, reverse=True)))
    return lambda text: found.sub(MASK, text)


def scrub_hydra_files(hydra_cfg: Any, multirun: bool, redact: Redactor) -> None:
    """Rewrite the YAML files Hydra wrote before the job started (`.hydra/*.yaml`, a sweep's `multirun.yaml`)
    with the run's key values masked, when a config or override put one there, and the run's secret patterns
    masked wherever they are (an override, the composed config). Credential-shaped overrides never get this far
    (main refuses them); this catches a key value that only the composed config names."""
    import yaml

    from evalkit.core.atomic import write_atomic
    from evalkit.core.parsing import AliasBoundedLoader, TooManyAliases

    out = Path(hydra_cfg.runtime.output_dir)
    paths = list((out / hydra_cfg.output_subdir).glob("*.yaml")) if hydra_cfg.output_subdir else []
    if multirun:
        paths.append(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if redact.values(text) != text or PATTERNS_KEY.split(".")[1] in text:
            try:  # aliases bounded as in every reader: a file that stands for millions of values is not walked
                loaded = yaml.load(text, Loader=AliasBoundedLoader)  # noqa: S506 - a SafeLoader
            except TooManyAliases as error:
                raise InputError(f"{path}: {error}") from None
            data = _mask_patterns(redact.scrub(loaded, messages=False))
            write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _mask_patterns(data: Any) -> Any:
    """YAML data with `run.secret_patterns` masked: the composed config's list and every override setting it."""
    from evalkit.live.redact import MASK

    if isinstance(data, str):
        return mask_pattern_overrides([data])[0]
    if isinstance(data, list):
        return [_mask_patterns(item) for item in data]
    if not isinstance(data, dict):
        return data
    masked = {key: _mask_patterns(value) for key, value in data.items()}
    run = masked.get("run")
    if isinstance(run, dict) and isinstance(run.get("secret_patterns"), list):
        masked["run"] = {**run, "secret_patterns": [MASK] * len(run["secret_patterns"])}
    return masked
