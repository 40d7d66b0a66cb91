"""The provider extension point: each provider is one spec, found through the `evalkit.providers` entry points.

A provider module exports one `ProviderSpec` (its name, the factory that builds it, the structured-output
dialects it sends, the stop reasons its server reports, the extra that installs its client). evalkit's own
providers are registered like anyone else's, in evalkit's `pyproject.toml`:

    [project.entry-points."evalkit.providers"]
    openai = "evalkit.live.providers.openai:SPEC"

so a third-party package adds a provider with one entry point and no edit to evalkit. Loading a spec imports
the provider's module, never its client library (providers import that only when a live run builds them).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from evalkit.core.errors import ConfigError

if TYPE_CHECKING:
    from evalkit.core.config import ModelConfig

__all__ = ["GROUP", "BUILTIN", "ProviderSpec", "StopKindName", "provider_specs", "provider_spec",
           "PROVIDER_SETTINGS"]

GROUP = "evalkit.providers"

BUILTIN = {
    "anthropic": "evalkit.live.providers.anthropic:SPEC",
    "azure": "evalkit.live.providers.azure:SPEC",
    "bedrock": "evalkit.live.providers.bedrock:SPEC",
    "gemini": "evalkit.live.providers.gemini:SPEC",
    "llamacpp": "evalkit.live.providers.llamacpp:SPEC",
    "ollama": "evalkit.live.providers.ollama:SPEC",
    "openai": "evalkit.live.providers.openai:SPEC",
}
"""evalkit's own providers, as its pyproject.toml registers them. Read from here as well as from the installed
metadata, so that a source tree, or an editable install made before a provider was added, still finds them."""

StopKindName = Literal["finished", "truncated", "filtered", "other"]
"""The reply contract's kinds of stop (evalkit.live.contract.StopKind), by value."""

PROVIDER_SETTINGS = ("deployment", "api_version", "region", "token_env", "model_file")
"""ModelConfig fields only some providers read; a spec lists the ones it takes, and the config refuses the rest."""


@dataclass(frozen=True)
class ProviderSpec:
    """Everything evalkit needs to know about a provider before it calls it."""

    name: str
    """What `model.provider` says (and the entry point's name)."""
    factory: Callable[[ModelConfig], Any]
    """Builds the provider (an evalkit.live.providers.Provider) for a model config, importing its client now."""
    dialects: tuple[str, ...] = ()
    """The `structured_output` values it sends, its default first; empty: one native way, and no setting."""
    stop_reasons: Mapping[str, StopKindName] = field(default_factory=dict)
    """Every stop reason its replies carry (lower-case, as the provider passes them on), and its kind."""
    extra: str | None = None
    """The evalkit extra that installs its client (`pip install -e ".[extra]"`); None for a third party."""
    requirements: tuple[str, ...] = ()
    """What to install when its client is missing, should the extra's metadata be unavailable."""
    settings: tuple[str, ...] = ()
    """The provider-specific ModelConfig fields it reads (of PROVIDER_SETTINGS)."""
    credential_env: tuple[str, ...] = ()
    """Environment variables it reads credentials from by itself (not through `api_key_env`): their values are
    redacted from everything a run writes, like a key's."""
    honours_seed: bool = True
    """Whether its API takes a seed; when not, `options.seed` stays in the request (so repeated samples are
    told apart) but is not sent, and samples are as reproducible as the server's sampling."""


@functools.cache
def provider_specs() -> Mapping[str, ProviderSpec]:
    """Every installed provider by name: evalkit's own and those other packages register."""
    targets = dict(BUILTIN)
    owners = {name: "evalkit" for name in BUILTIN}
    for point in entry_points(group=GROUP):
        owner = point.dist.name if point.dist is not None else "an unknown package"
        if point.name in targets and targets[point.name] != point.value:
            raise ConfigError(f"provider '{point.name}' is registered twice, by {owners[point.name]} "
                              f"({targets[point.name]}) and by {owner} ({point.value}); uninstall one of them")
        targets[point.name] = point.value
        owners.setdefault(point.name, owner)
    specs = {}
    for name, target in sorted(targets.items()):
        specs[name] = _load(name, target, owners[name])
    _check_stop_reasons(specs)
    return MappingProxyType(specs)


def provider_spec(name: str) -> ProviderSpec:
    """The spec of an installed provider; an unknown name is refused with the installed ones listed."""
    specs = provider_specs()
    if name not in specs:
        raise ConfigError(f"provider '{name}' is not installed (installed: {', '.join(specs)})")
    return specs[name]


def _load(name: str, target: str, owner: str) -> ProviderSpec:
    module_name, _, attribute = target.partition(":")
    try:
        loaded = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"provider '{name}' (from {owner}): {target} cannot be loaded "
                          f"({type(error).__name__}: {error}); reinstall {owner}") from None
    if not isinstance(loaded, ProviderSpec) or loaded.name != name:
        raise ConfigError(f"provider '{name}' (from {owner}): {target} is not a ProviderSpec named '{name}'")
    unknown = sorted(set(loaded.settings) - set(PROVIDER_SETTINGS))
    if unknown:
        raise ConfigError(f"provider '{name}' (from {owner}): settings {', '.join(unknown)} are not model "
                          f"settings (known: {', '.join(PROVIDER_SETTINGS)})")
    return loaded


def _check_stop_reasons(specs: Mapping[str, ProviderSpec]) -> None:
    """A stop reason means one kind whoever reports it: replies do not say which provider made them."""
    seen: dict[str, tuple[str, str]] = {}
    for spec in specs.values():
        for reason, kind in spec.stop_reasons.items():
            if reason != reason.lower().strip():
                raise ConfigError(f"provider '{spec.name}': stop reason {reason!r} must be lower case")
            earlier = seen.setdefault(reason, (kind, spec.name))
            if earlier[0] != kind:
                raise ConfigError(f"stop reason {reason!r} is '{earlier[0]}' for provider '{earlier[1]}' but "
                                  f"'{kind}' for provider '{spec.name}'")
