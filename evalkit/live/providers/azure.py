"""Azure OpenAI chat completions through the official `openai` client's `AzureOpenAI` (extra `openai`).

Calls go to `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version={api_version}`: the endpoint is
the config's `base_url` (transport), the deployment and the API version are part of the eval key (they choose
the model and the API's behaviour). The credential is a key (`api_key_env`, sent as `api-key`) or a Microsoft
Entra ID token (`token_env`, sent as `Authorization: Bearer`), both read from the environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.core.provider_specs import ProviderSpec
from evalkit.live.providers.credentials import api_key, env_secret
from evalkit.live.providers.openai import DIALECTS, STOP_REASONS, TOOL_CHOICES, TOOL_STOP_REASONS, OpenAIProvider

if TYPE_CHECKING:
    import openai

__all__ = ["AzureOpenAIProvider", "create", "SPEC"]


class AzureOpenAIProvider(OpenAIProvider):
    """OpenAIProvider with Azure's client: the same request, reply and failure mapping, another address and
    credential."""

    _media = ("image",)

    def __init__(self, config: ModelConfig) -> None:
        missing = [name for name, value in (("base_url", config.base_url), ("deployment", config.deployment),
                                            ("api_version", config.api_version)) if not value]
        if missing:
            raise ProviderError(f"model '{config.name}': Azure OpenAI needs {', '.join(missing)} "
                                "(the resource endpoint, the deployment and the api-version); set them in the "
                                "model config")
        if bool(config.api_key_env) == bool(config.token_env):
            raise ProviderError(f"model '{config.name}': Azure OpenAI takes a key (api_key_env) or a Microsoft "
                                "Entra ID token (token_env): name exactly one of the two environment variables")
        super().__init__(config)

    def _make_client(self, config: ModelConfig) -> openai.OpenAI:
        assert config.deployment is not None and config.api_version is not None  # checked in __init__
        key = api_key(config)
        token = env_secret(config.name, config.provider, config.token_env)
        self._secret = key or token  # for masking: the one credential this provider holds
        client: openai.OpenAI = self._openai.AzureOpenAI(
            azure_endpoint=self._base_url, azure_deployment=config.deployment, api_version=config.api_version,
            api_key=key, azure_ad_token=token, timeout=config.timeout_s, max_retries=0,
            http_client=self._http_client(config))
        return client


def create(config: ModelConfig) -> AzureOpenAIProvider:
    return AzureOpenAIProvider(config)


SPEC = ProviderSpec(name="azure", factory=create, dialects=DIALECTS, stop_reasons=STOP_REASONS, extra="openai",
                    requirements=("openai",), settings=("deployment", "api_version", "token_env"),
                    tool_stop_reasons=TOOL_STOP_REASONS, tool_choices=TOOL_CHOICES, media=AzureOpenAIProvider._media)
