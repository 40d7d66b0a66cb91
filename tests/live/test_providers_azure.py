"""AzureOpenAIProvider specifics, against a fake Azure OpenAI endpoint (tests/fakes/): the deployment path, the
`api-version` query parameter, a key (`api-key`) or a Microsoft Entra ID token (`Authorization: Bearer`), and the
settings Azure needs. Request and reply mapping are OpenAI's (test_providers_openai.py, test_provider_contract.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeAzureOpenAI, FakeError
from pydantic import ValidationError

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.azure import AzureOpenAIProvider
from evalkit.live.providers.base import CallFailure

KEY_ENV, KEY = "EVALKIT_TEST_AZURE_KEY", "azure-key-not-a-secret-0042"
TOKEN_ENV, TOKEN = "EVALKIT_TEST_AZURE_TOKEN", "eyJ0eXAiOiJKV1QifQ.entra-token-not-a-secret"
REQUEST = Request(model="gpt-4o", messages=(Message(role="user", content="Hello"),),
                  options={"temperature": 0, "seed": 7})


@pytest.fixture(autouse=True)
def clean_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)


@pytest.fixture
def server() -> Iterator[FakeAzureOpenAI]:
    with FakeAzureOpenAI(lambda body: "hello back") as fake:
        yield fake


def config_for(url: str, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": "gpt-4o", "provider": "azure", "base_url": url, "api_key_env": KEY_ENV,
                            "deployment": "triage-prod", "api_version": "2024-10-21", "timeout_s": 10.0}
    return ModelConfig(**(data | changes))


def test_calls_go_to_the_deployment_with_the_api_version_and_the_key(server: FakeAzureOpenAI) -> None:
    reply = make_provider(config_for(server.url)).complete(REQUEST)
    call = server.chat_requests[0]
    assert call.path == "/openai/deployments/triage-prod/chat/completions?api-version=2024-10-21"
    assert call.headers["api-key"] == KEY and "authorization" not in call.headers
    assert call.body["model"] == "gpt-4o" and call.body["seed"] == 7
    assert (reply.text, reply.stop_reason) == ("hello back", "stop")


def test_an_entra_id_token_is_sent_as_a_bearer_token_instead_of_a_key(server: FakeAzureOpenAI) -> None:
    make_provider(config_for(server.url, api_key_env=None, token_env=TOKEN_ENV)).complete(REQUEST)
    headers = server.chat_requests[0].headers
    assert headers["authorization"] == f"Bearer {TOKEN}" and "api-key" not in headers


def test_a_token_echoed_by_the_server_is_never_shown() -> None:
    def echo(body: dict[str, Any]) -> str:
        raise FakeError(401, f"token {TOKEN} has expired")

    with FakeAzureOpenAI(echo) as fake:
        with pytest.raises(CallFailure) as raised:
            make_provider(config_for(fake.url, api_key_env=None, token_env=TOKEN_ENV)).complete(REQUEST)
    assert TOKEN not in str(raised.value) and "has expired" in str(raised.value)


@pytest.mark.parametrize(("changes", "message"), [
    ({"deployment": None}, "Azure OpenAI needs deployment"),
    ({"api_version": None, "base_url": None}, "Azure OpenAI needs base_url, api_version"),
    ({"token_env": TOKEN_ENV}, "takes a key \\(api_key_env\\) or a Microsoft Entra ID token \\(token_env\\)"),
    ({"api_key_env": None}, "takes a key \\(api_key_env\\) or a Microsoft Entra ID token \\(token_env\\)"),
])
def test_what_azure_needs_is_refused_before_any_call(server: FakeAzureOpenAI, changes: dict[str, Any],
                                                     message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        make_provider(config_for(server.url, **changes))
    assert server.requests == []


def test_a_missing_api_version_is_what_azure_refuses() -> None:
    """The fake refuses a call without `api-version`, as Azure does: the provider always sends the configured one."""
    with FakeAzureOpenAI(lambda body: "x") as fake:
        provider = AzureOpenAIProvider(config_for(fake.url, api_version="2025-04-01-preview"))
        provider.complete(REQUEST)
        assert fake.chat_requests[0].path.endswith("?api-version=2025-04-01-preview")


def test_azure_settings_belong_to_azure_only() -> None:
    with pytest.raises(ValidationError, match="deployment, api_version: not a setting of the openai provider"):
        ModelConfig(name="gpt-4o", provider="openai", deployment="d", api_version="2024-10-21")


def test_the_recording_names_the_provider_and_dialect(server: FakeAzureOpenAI) -> None:
    assert AzureOpenAIProvider(config_for(server.url)).describe() == {"provider": "azure",
                                                                     "structured_output": "json_schema"}
