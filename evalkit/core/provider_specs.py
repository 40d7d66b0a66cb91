"""The provider extension point: each provider is one spec, found through the `evalkit.providers` entry points.

A provider module exports one `ProviderSpec` (its name, the factory that builds it, the structured-output
dialects it sends, the stop reasons its server reports, the extra that installs its client). evalkit's own
providers are registered like anyone else's (evalkit.core.registry), in evalkit's `pyproject.toml`:

    [project.entry-points."evalkit.providers"]
    openai = "evalkit.live.providers.openai:SPEC"

so a third-party package adds a provider with one entry point and no edit to evalkit. Loading a spec imports
the provider's module, never its client library (providers import that only when a live run builds them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from evalkit.core.errors import ConfigError
from evalkit.core.registry import Kind, load_all

if TYPE_CHECKING:
    from evalkit.core.config import ModelConfig

__all__ = ["GROUP", "PROVIDERS", "ProviderSpec", "StopKindName", "ToolChoiceName", "provider_specs", "provider_spec",
           "PROVIDER_SETTINGS"]

GROUP = "evalkit.providers"

StopKindName = Literal["finished", "truncated", "filtered", "other"]
"""The reply contract's kinds of stop (evalkit.live.contract.StopKind), by value."""

ToolChoiceName = Literal["auto", "none", "required", "named"]
"""A request's tool choice, by kind (evalkit.records.call.ToolChoice; `named` forces one tool)."""

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
    max_concurrency: int | None = None
    """The most calls it can serve at once (an in-process runtime: 1); None: as many as `run.concurrency` sends.
    A run sends no more than this, since more would only queue inside the provider and be timed as latency."""
    honours_seed: bool = True
    """Whether its API takes a seed; when not, `options.seed` stays in the request (so repeated samples are
    told apart) but is not sent, and samples are as reproducible as the server's sampling."""
    tool_stop_reasons: frozenset[str] = frozenset()
    """The stop reasons (of `stop_reasons`, kind `other`) that say the model stopped to call tools: a reply with one
    and no tool calls is a contract problem (evalkit.live.contract)."""
    tool_choices: tuple[ToolChoiceName, ...] = ()
    """The tool choices it can send (`named`: one tool forced); a request with another is refused before any call,
    naming the provider and the choice. Empty: it does not speak tool calling."""
    media: tuple[str, ...] | None = None
    """The kinds of media part it sends in its own wire format (`image`, `audio`); it refuses the others itself
    (evalkit.live.providers.media.refuse_untaken), and a run whose dataset names a kind it lacks is refused up front,
    naming the provider and the part. Empty: text only. None: a provider written before media parts existed, which
    make_provider keeps from every media part."""
    options: type[BaseModel] | None = None
    """The model of `model.options` for this provider (pydantic, `extra="forbid"`): the options it sends, so a typo
    is refused when the config is read, with this provider's own list and the closest name. None: it passes on
    options it does not know (an OpenAI-compatible server's extra body), and the server judges them."""


PROVIDERS: Kind[ProviderSpec] = Kind(GROUP, "provider", ProviderSpec, lambda spec: spec.name)
"""The provider extension point in evalkit's registry (evalkit.core.registry; public in evalkit.plugins)."""


@functools.cache
def provider_specs() -> Mapping[str, ProviderSpec]:
    """Every installed provider by name: evalkit's own and those other packages register."""
    specs = load_all(PROVIDERS)
    for spec in specs.values():
        if spec.options is not None and spec.options.model_config.get("extra") != "forbid":
            raise ConfigError(f"provider '{spec.name}': its options model {spec.options.__name__} must set "
                              "model_config = ConfigDict(extra='forbid'), so a mistyped option is refused")
        unknown = sorted(set(spec.settings) - set(PROVIDER_SETTINGS))
        if unknown:
            raise ConfigError(f"provider '{spec.name}': settings {', '.join(unknown)} are not model settings "
                              f"(known: {', '.join(PROVIDER_SETTINGS)})")
    _check_stop_reasons(specs)
    return specs


def provider_spec(name: str) -> ProviderSpec:
    """The spec of an installed provider; an unknown name is refused with the installed ones listed."""
    specs = provider_specs()
    if name not in specs:
        raise ConfigError(f"provider '{name}' is not installed (installed: {', '.join(specs)})")
    return specs[name]


def _check_stop_reasons(specs: Mapping[str, ProviderSpec]) -> None:
    """A stop reason means one kind whoever reports it: replies do not say which provider made them."""
    seen: dict[str, tuple[str, str]] = {}
    for spec in specs.values():
        unlisted = sorted(spec.tool_stop_reasons - set(spec.stop_reasons))
        if unlisted:
            raise ConfigError(f"provider '{spec.name}': tool stop reasons {', '.join(unlisted)} are not among its "
                              "stop_reasons")
        for reason, kind in spec.stop_reasons.items():
            if reason != reason.lower().strip():
                raise ConfigError(f"provider '{spec.name}': stop reason {reason!r} must be lower case")
            if reason in spec.tool_stop_reasons and kind != "other":
                raise ConfigError(f"provider '{spec.name}': tool stop reason {reason!r} must be of kind 'other'")
            earlier = seen.setdefault(reason, (kind, spec.name))
            if earlier[0] != kind:
                raise ConfigError(f"stop reason {reason!r} is '{earlier[0]}' for provider '{earlier[1]}' but "
                                  f"'{kind}' for provider '{spec.name}'")
