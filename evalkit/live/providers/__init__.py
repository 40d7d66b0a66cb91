"""Providers: one module per kind of server, imported only when a live run chooses it."""

from __future__ import annotations

import importlib

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError
from evalkit.live.providers.base import Message, Provider, Reply, Request, Usage

__all__ = ["Message", "Provider", "Reply", "Request", "Usage", "make_provider", "AVAILABLE", "DIALECTS"]

# provider name -> module under evalkit.live.providers; each exposes `create(config) -> Provider`.
AVAILABLE = {"gemini": "gemini", "llamacpp": "llamacpp", "ollama": "ollama", "openai": "openai"}

DIALECTS = {"openai": ("json_schema", "json_object", "prompt"), "llamacpp": ("json_object", "prompt")}
"""The `structured_output` dialects each provider can send; the others have one native way (Ollama's
`format`, Gemini's `responseJsonSchema`) and take no setting."""


def make_provider(config: ModelConfig) -> Provider:
    """The provider for a model config. Imports the provider's SDK only now, not at evalkit import."""
    module_name = AVAILABLE.get(config.provider)
    if module_name is None:
        known = ", ".join(sorted(AVAILABLE))
        raise ConfigError(f"model '{config.name}': provider '{config.provider}' has no live call path "
                          f"in this version (available: {known}); replay its recording instead (mode=replay)")
    dialects = DIALECTS.get(config.provider, ())
    if config.structured_output is not None and config.structured_output not in dialects:
        takes = f"takes one of: {', '.join(dialects)}" if dialects else "sends schemas its own way; remove the setting"
        raise ConfigError(f"model '{config.name}': structured_output '{config.structured_output}' is not something "
                          f"the {config.provider} provider sends ({takes})")
    module = importlib.import_module(f"evalkit.live.providers.{module_name}")
    provider: Provider = module.create(config)
    return provider
