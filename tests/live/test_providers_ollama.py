"""OllamaProvider against a fake Ollama server on the loopback interface (tests/fakes/).

What the official client puts on the wire is asserted from the server's side, so these tests
cover evalkit's mapping and the client's serialization together.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fakes import FakeError, FakeOllama, FakeReply

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.live.providers import Message, Reply, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.ollama import OllamaProvider

KEY_ENV = "EVALKIT_TEST_OLLAMA_TOKEN"
FAKE_KEY = "fake-token-not-a-secret-0123"

SCHEMA: dict[str, Any] = {
    "title": "Triage",
    "type": "object",
    "properties": {
        "label": {"enum": ["bug", "feature"], "title": "Label", "type": "string"},
        "summary": {"minLength": 1, "title": "Summary", "type": "string"},
    },
    "required": ["label", "summary"],
}
MESSAGES = (
    Message(role="system", content="You triage GitHub issues."),
    Message(role="user", content="`tracker sync` crashes with KeyError: 'due'."),
)


@pytest.fixture(autouse=True)
def clean_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client reads OLLAMA_API_KEY / OLLAMA_HOST and httpx reads proxy settings: keep them out."""
    for name in ("OLLAMA_API_KEY", "OLLAMA_HOST", KEY_ENV, "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Any:
    with FakeOllama(lambda body: '{"label": "bug", "summary": "tracker sync crashes on missing due"}') as fake:
        yield fake


def config_for(url: str, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": "gemma4:e2b", "provider": "ollama", "base_url": url, "timeout_s": 10.0}
    return ModelConfig(**(data | changes))


def request(**changes: Any) -> Request:
    data: dict[str, Any] = {"model": "gemma4:e2b", "messages": MESSAGES, "response_schema": SCHEMA,
                            "options": {"temperature": 0, "seed": 7, "think": False}}
    return Request(**(data | changes))


def only_body(server: FakeOllama) -> dict[str, Any]:
    chats = server.chat_requests
    assert len(chats) == 1, f"expected one /api/chat request, got {len(server.requests)} requests"
    body: dict[str, Any] = chats[0].body
    return body


def test_the_server_listens_on_loopback_only(server: FakeOllama) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert server.port > 0


def test_request_carries_model_messages_schema_and_options(server: FakeOllama) -> None:
    OllamaProvider(config_for(server.url)).complete(request())

    body = only_body(server)
    assert body["model"] == "gemma4:e2b"
    assert body["stream"] is False
    assert body["messages"] == [
        {"role": "system", "content": "You triage GitHub issues."},
        {"role": "user", "content": "`tracker sync` crashes with KeyError: 'due'."},
    ]
    assert body["format"] == SCHEMA  # the JSON schema itself, not "json"
    assert body["options"] == {"temperature": 0, "seed": 7}
    assert body["think"] is False  # a request flag beside the options, not one of them


@pytest.mark.parametrize("think", [True, "high"])
def test_think_is_sent_as_given(server: FakeOllama, think: bool | str) -> None:
    OllamaProvider(config_for(server.url)).complete(request(options={"temperature": 0.2, "think": think}))

    body = only_body(server)
    assert body["think"] == think
    assert body["options"] == {"temperature": 0.2}


def test_no_options_no_schema_no_think_are_left_out(server: FakeOllama) -> None:
    OllamaProvider(config_for(server.url)).complete(request(response_schema=None, options={}))

    body = only_body(server)
    assert body["model"] == "gemma4:e2b"
    assert len(body["messages"]) == 2
    for absent in ("format", "options", "think"):
        assert absent not in body, f"{absent} sent although the request has none: {body}"


def test_the_request_is_not_changed_by_the_call(server: FakeOllama) -> None:
    """`think` is split off a copy: the request (and so its fingerprint) stays as built."""
    sent = request()
    before = sent.model_dump(mode="json")
    OllamaProvider(config_for(server.url)).complete(sent)
    assert sent.model_dump(mode="json") == before
    assert sent.options["think"] is False


def test_reply_text_stop_reason_and_usage_are_mapped() -> None:
    content = '{"label": "bug", "summary": "sync crashes"}'
    with FakeOllama(lambda body: FakeReply(content, stop_reason="length", input_tokens=321,
                                           output_tokens=17)) as fake:
        reply = OllamaProvider(config_for(fake.url)).complete(request())

    assert isinstance(reply, Reply)
    assert reply.text == content
    assert reply.stop_reason == "length"
    assert reply.usage.input_tokens == 321
    assert reply.usage.output_tokens == 17
    assert reply.latency_ms is not None and reply.latency_ms >= 0
    # total_duration (1,500,000 ns from the fake) is the server's own time, capped by the time in flight
    assert reply.service_ms == min(1.5, reply.latency_ms)


def test_default_reply_maps_stop_and_counted_tokens(server: FakeOllama) -> None:
    reply = OllamaProvider(config_for(server.url)).complete(request())

    assert reply.text == '{"label": "bug", "summary": "tracker sync crashes on missing due"}'
    assert reply.stop_reason == "stop"
    # the fake server counts words: 4 + 6 in the messages, 9 in the reply
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (10, 9)


def test_reply_content_comes_from_the_request(server: FakeOllama) -> None:
    with FakeOllama(lambda body: body["messages"][-1]["content"].upper()) as fake:
        reply = OllamaProvider(config_for(fake.url)).complete(request())
    assert reply.text == "`TRACKER SYNC` CRASHES WITH KEYERROR: 'DUE'."


def test_missing_credential_is_refused_before_any_request(server: FakeOllama) -> None:
    with pytest.raises(ProviderError) as raised:
        OllamaProvider(config_for(server.url, api_key_env=KEY_ENV))
    assert KEY_ENV in str(raised.value)
    assert "gemma4:e2b" in str(raised.value)
    assert server.requests == []


def test_missing_credential_is_refused_by_make_provider(server: FakeOllama) -> None:
    with pytest.raises(ProviderError, match=KEY_ENV):
        make_provider(config_for(server.url, api_key_env=KEY_ENV))
    assert server.requests == []


def test_empty_credential_counts_as_missing(server: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "")
    with pytest.raises(ProviderError, match=KEY_ENV):
        OllamaProvider(config_for(server.url, api_key_env=KEY_ENV))
    assert server.requests == []


def test_credential_is_sent_as_bearer_token(server: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    provider = make_provider(config_for(server.url, api_key_env=KEY_ENV))
    assert server.requests == []  # constructing a provider does not touch the network
    provider.complete(request())

    assert server.chat_requests[0].headers.get("authorization") == f"Bearer {FAKE_KEY}"


def test_no_credential_no_authorization_header(server: FakeOllama) -> None:
    OllamaProvider(config_for(server.url)).complete(request())
    assert "authorization" not in server.chat_requests[0].headers


def test_no_credential_configured_means_ollama_api_key_is_not_sent(server: FakeOllama,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The client would add OLLAMA_API_KEY by itself; the config, not the environment, names credentials."""
    monkeypatch.setenv("OLLAMA_API_KEY", "key-from-the-environment")
    OllamaProvider(config_for(server.url)).complete(request())
    assert "authorization" not in server.chat_requests[0].headers


def test_each_thread_gets_its_own_connection(server: FakeOllama) -> None:
    """An http.client connection carries one request at a time: threads never share one."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    provider = OllamaProvider(config_for(server.url))
    together = threading.Barrier(4)

    def client_of_this_thread(_: int) -> int:
        together.wait(timeout=5)  # four threads at once
        return id(provider._http._connection())

    with ThreadPoolExecutor(max_workers=4) as pool:
        clients = set(pool.map(client_of_this_thread, range(4)))
    assert len(clients) == 4
    assert provider._http._connection() is provider._http._connection()


def test_base_url_wins_over_ollama_host(server: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # discard port: a request there would fail
    OllamaProvider(config_for(server.url)).complete(request())
    assert len(server.chat_requests) == 1


def test_make_provider_builds_an_ollama_provider(server: FakeOllama) -> None:
    provider = make_provider(config_for(server.url))
    assert isinstance(provider, OllamaProvider)
    assert server.requests == []


def test_server_error_is_raised_to_the_caller() -> None:
    """execute() turns this into a `failed` call; the provider must not swallow it as a reply."""

    def refuse(body: dict[str, Any]) -> str:
        raise FakeError(404, f"model '{body['model']}' not found")

    with FakeOllama(refuse) as fake:
        with pytest.raises(CallFailure) as raised:
            OllamaProvider(config_for(fake.url)).complete(request())
    assert raised.value.status == 404
    assert raised.value.retryable is False
    assert "model 'gemma4:e2b' not found" in str(raised.value)


def test_timeout_is_applied() -> None:
    def slow(body: dict[str, Any]) -> str:
        time.sleep(1.5)
        return "too late"

    with FakeOllama(slow) as fake:
        started = time.perf_counter()
        with pytest.raises(CallFailure, match="no reply within 0.2 s") as raised:
            OllamaProvider(config_for(fake.url, timeout_s=0.2)).complete(request())
        assert time.perf_counter() - started < 1.2
    assert raised.value.retryable is True
