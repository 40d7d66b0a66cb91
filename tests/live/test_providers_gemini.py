"""GeminiProvider specifics, against a fake Gemini API server (tests/fakes/).

The contract every provider meets (reply mapping, faults, credentials) is in test_provider_contract.py;
here: the generateContent wire format (path, key header, system instruction, roles, generation
config and thinking level), options that are not Gemini's, finish and block reasons, and the
environment the SDK would otherwise read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeGemini, FakeReply, RawReply

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.gemini import API_VERSION, NO_KEY, GeminiProvider

KEY_ENV = "EVALKIT_TEST_GEMINI_KEY"
FAKE_KEY = "fake-gemini-key-not-a-secret"
MODEL = "gemini-3.8-flash"
SCHEMA: dict[str, Any] = {"title": "Triage", "type": "object", "properties": {"label": {"type": "string"}},
                          "required": ["label"]}
MESSAGES = (
    Message(role="system", content="You triage GitHub issues."),
    Message(role="user", content="Example issue"),
    Message(role="assistant", content='{"label": "bug"}'),
    Message(role="user", content="`tracker sync` crashes."),
)


@pytest.fixture(autouse=True)
def clean_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
                 "GOOGLE_GENAI_API_VERSION", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_HTTP_CLIENT",
                 "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with FakeGemini(lambda body: '{"label": "bug"}') as fake:
        yield fake


def config_for(url: str | None, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": MODEL, "provider": "gemini", "base_url": url, "api_key_env": KEY_ENV,
                            "timeout_s": 10.0}
    return ModelConfig(**(data | changes))


def request(**changes: Any) -> Request:
    data: dict[str, Any] = {"model": MODEL, "messages": MESSAGES, "response_schema": SCHEMA,
                            "options": {"temperature": 0, "seed": 7, "thinking_level": "low"}}
    return Request(**(data | changes))


def only_call(server: FakeGemini) -> tuple[str, dict[str, str], dict[str, Any]]:
    calls = server.chat_requests
    assert len(calls) == 1, f"expected one call, got {len(server.requests)} requests"
    return calls[0].path, calls[0].headers, calls[0].body


def thinking_level(generation_config: dict[str, Any]) -> Any:
    """The SDK writes the thinking config's fields as named in Python; the API reads either spelling."""
    thinking = generation_config["thinkingConfig"]
    return thinking.get("thinkingLevel", thinking.get("thinking_level"))


def test_wire_format_of_a_structured_call(server: FakeGemini) -> None:
    GeminiProvider(config_for(server.base_url)).complete(request())

    path, headers, body = only_call(server)
    assert path == f"/{API_VERSION}/models/{MODEL}:generateContent"
    assert headers["x-goog-api-key"] == FAKE_KEY
    assert FAKE_KEY not in path  # the key travels in a header, never in the URL
    assert body["systemInstruction"]["parts"] == [{"text": "You triage GitHub issues."}]
    assert [(c["role"], c["parts"]) for c in body["contents"]] == [
        ("user", [{"text": "Example issue"}]),
        ("model", [{"text": '{"label": "bug"}'}]),
        ("user", [{"text": "`tracker sync` crashes."}]),
    ]
    generation = body["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"] == SCHEMA
    assert (generation["temperature"], generation["seed"]) == (0, 7)
    assert thinking_level(generation) == "LOW"


def test_generation_options_under_their_gemini_names(server: FakeGemini) -> None:
    options = {"temperature": 0.4, "top_p": 0.9, "top_k": 40, "max_output_tokens": 256, "stop_sequences": ["END"],
               "thinking_budget": 128}
    GeminiProvider(config_for(server.base_url)).complete(request(options=options))

    generation = only_call(server)[2]["generationConfig"]
    assert (generation["temperature"], generation["topP"], generation["topK"]) == (0.4, 0.9, 40)
    assert (generation["maxOutputTokens"], generation["stopSequences"]) == (256, ["END"])
    thinking = generation["thinkingConfig"]
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 128


def test_free_text_call_without_system_message(server: FakeGemini) -> None:
    GeminiProvider(config_for(server.base_url)).complete(
        request(messages=(Message(role="user", content="hello"),), response_schema=None, options={}))

    body = only_call(server)[2]
    assert "systemInstruction" not in body
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hello"}]}]
    generation = body.get("generationConfig", {})
    assert "responseMimeType" not in generation and "responseJsonSchema" not in generation


def test_system_messages_are_joined_into_one_instruction(server: FakeGemini) -> None:
    messages = (Message(role="system", content="First rule."), Message(role="system", content="Second rule."),
                Message(role="user", content="hello"))
    GeminiProvider(config_for(server.base_url)).complete(request(messages=messages))
    assert only_call(server)[2]["systemInstruction"]["parts"] == [{"text": "First rule.\n\nSecond rule."}]


@pytest.mark.parametrize("options", [{"temperature": 0, "think": False}, {"max_tokens": 10}],
                         ids=["ollama-think", "openai-max-tokens"])
def test_options_gemini_does_not_have_are_refused_before_any_request(server: FakeGemini,
                                                                     options: dict[str, Any]) -> None:
    with pytest.raises(CallFailure, match="unknown Gemini option") as raised:
        GeminiProvider(config_for(server.base_url)).complete(request(options=options))
    assert raised.value.retryable is False
    assert next(iter(set(options) - {"temperature"})) in str(raised.value)
    assert server.requests == []


def test_a_mistyped_option_names_the_option_meant_and_the_list(server: FakeGemini) -> None:
    with pytest.raises(CallFailure, match=r"unknown key 'options.temprature' \(did you mean 'temperature'\?; "
                                          r"allowed: .*top_p"):
        GeminiProvider(config_for(server.base_url)).complete(request(options={"temprature": 0}))
    assert server.requests == []


@pytest.mark.parametrize("options", [{"temperature": "hot"}, {"thinking_budget": "lots"}])
def test_an_option_of_the_wrong_type_is_refused_before_any_request(server: FakeGemini,
                                                                   options: dict[str, Any]) -> None:
    """(An unknown thinking_level word is sent as it is: the SDK lets new levels through, the API judges.)"""
    with pytest.raises(CallFailure, match="invalid Gemini option") as raised:
        GeminiProvider(config_for(server.base_url)).complete(request(options=options))
    assert raised.value.retryable is False
    assert next(iter(options)) in str(raised.value)
    assert server.requests == []


@pytest.mark.parametrize(("native", "mapped"), [("STOP", "stop"), ("MAX_TOKENS", "max_tokens"),
                                                ("SAFETY", "safety"), ("RECITATION", "recitation")])
def test_finish_reasons_are_lower_case(native: str, mapped: str) -> None:
    with FakeGemini(lambda body: FakeReply('{"label": "bug"}', stop_reason=native)) as fake:
        reply = GeminiProvider(config_for(fake.base_url)).complete(request())
    assert reply.stop_reason == mapped


def test_a_blocked_prompt_has_no_text_and_says_why() -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"},
               "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12}}
    with FakeGemini(lambda body: RawReply(200, json.dumps(blocked).encode())) as fake:
        reply = GeminiProvider(config_for(fake.base_url)).complete(request())
    assert (reply.text, reply.stop_reason) == (None, "blocked: safety")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, None)


def test_the_environment_does_not_choose_key_backend_or_version(server: FakeGemini,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "key-from-the-environment")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "v1alpha")
    GeminiProvider(config_for(server.base_url)).complete(request())

    path, headers, _ = only_call(server)
    assert path.startswith(f"/{API_VERSION}/models/")
    assert headers["x-goog-api-key"] == FAKE_KEY


def test_no_key_and_no_base_url_is_refused() -> None:
    with pytest.raises(ProviderError, match="needs a key; set api_key_env"):
        GeminiProvider(config_for(None, api_key_env=None))


def test_a_gateway_without_key_gets_a_placeholder(server: FakeGemini) -> None:
    GeminiProvider(config_for(server.base_url, api_key_env=None)).complete(request())
    assert only_call(server)[1]["x-goog-api-key"] == NO_KEY


def test_the_client_does_not_retry_by_itself(server: FakeGemini) -> None:
    """The SDK retries 408/429/5xx when asked to; the provider asks for one attempt."""
    provider = GeminiProvider(config_for(server.base_url))
    options = provider._client._api_client._http_options
    assert options.retry_options is not None and options.retry_options.attempts == 1


def test_timeout_is_sent_in_milliseconds(server: FakeGemini) -> None:
    provider = GeminiProvider(config_for(server.base_url, timeout_s=2.5))
    assert provider._client._api_client._http_options.timeout == 2500


def test_make_provider_builds_a_gemini_provider(server: FakeGemini) -> None:
    assert isinstance(make_provider(config_for(server.base_url)), GeminiProvider)
    assert server.requests == []


def test_an_error_body_that_is_not_json_still_maps_by_status() -> None:
    with FakeGemini(lambda body: RawReply(503, b"<html>Service Unavailable</html>", content_type="text/html",
                                          headers={"Retry-After": "3"})) as fake:
        with pytest.raises(CallFailure) as raised:
            GeminiProvider(config_for(fake.base_url)).complete(request())
    assert (raised.value.retryable, raised.value.status, raised.value.retry_after) == (True, 503, 3.0)


def test_thinking_tokens_count_as_output_because_they_are_billed_as_output() -> None:
    from google.genai import types

    from evalkit.live.providers.gemini import _reply

    response = types.GenerateContentResponse(
        candidates=[types.Candidate(content=types.Content(role="model", parts=[types.Part(text="{}")]),
                                    finish_reason=types.FinishReason.STOP)],
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=5, thoughts_token_count=7))
    reply = _reply(response, 1.0, Request(model="gemini-3.8-flash", messages=(Message(role="user", content="hi"),)))
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (10, 12)
    assert reply.stop_reason == "stop" and reply.text == "{}"
