"""Credentials come only from the environment variables a model config names, and are checked before any call."""

from __future__ import annotations

import os

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError

__all__ = ["api_key", "env_secret", "masked"]


def api_key(config: ModelConfig) -> str | None:
    """The value of `config.api_key_env` (None when the config names no variable); missing or empty is refused."""
    return env_secret(config.name, config.provider, config.api_key_env)


def env_secret(model: str, provider: str, variable: str | None) -> str | None:
    """The value of the environment variable `variable` (None when no variable is named); missing or empty is
    refused, naming the variable."""
    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise ProviderError(f"{model} ({provider}) needs the environment variable {variable}; set it before a live "
                            "run")
    return value


def masked(message: str, secret: str | None) -> str:
    """A message safe to raise: the credential replaced, should a server or SDK have echoed it."""
    return message.replace(secret, "***") if secret else message
