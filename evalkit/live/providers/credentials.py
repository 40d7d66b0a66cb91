"""Credentials come only from the environment variable a model config names, and are checked before any call."""

from __future__ import annotations

import os

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError

__all__ = ["api_key", "masked"]


def api_key(config: ModelConfig) -> str | None:
    """The value of `config.api_key_env` (None when the config names no variable); missing or empty is refused."""
    if not config.api_key_env:
        return None
    value = os.environ.get(config.api_key_env)
    if not value:
        raise ProviderError(f"{config.name} ({config.provider}) needs the environment variable "
                            f"{config.api_key_env}; set it before a live run")
    return value


def masked(message: str, secret: str | None) -> str:
    """A message safe to raise: the credential replaced, should a server or SDK have echoed it."""
    return message.replace(secret, "***") if secret else message
