"""Providers: one module per kind of server, each exporting a spec (evalkit.core.provider_specs) and imported
only when a live run chooses it."""

from __future__ import annotations

from evalkit.core.config import ModelConfig
from evalkit.core.provider_specs import provider_spec
from evalkit.live.providers.base import Provider
from evalkit.live.providers.media import WithoutMedia
from evalkit.live.providers.toolcalls import WithoutTools
from evalkit.records.call import Message, Reply, Request, Usage

__all__ = ["Message", "Provider", "Reply", "Request", "Usage", "make_provider"]


def make_provider(config: ModelConfig) -> Provider:
    """The provider for a model config, built by its spec's factory. The provider's client library is imported
    only now, not at evalkit import; the config was checked against the spec when it was composed. A provider whose
    spec declares no tool choices (one written before tools existed) is kept from requests that use tools, which it
    would send without them; one whose spec says nothing of media (written before media parts existed) is kept from
    requests with images or audio the same way (every built-in provider refuses the kinds it lacks itself)."""
    spec = provider_spec(config.provider)
    provider: Provider = spec.factory(config)
    if not spec.tool_choices:
        provider = WithoutTools(provider, config.name, spec.name)
    return provider if spec.media is not None else WithoutMedia(provider, config.name, spec.name)
