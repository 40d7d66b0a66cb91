"""OpenAIProvider specifics, against a fake OpenAI-compatible server (tests/fakes/).

The contract every provider meets (reply mapping, faults, credentials) is in test_provider_contract.py;
here: the exact chat completions wire format, options beyond the API's own parameters, the
placeholder key for local servers, environment the SDK would otherwise read, and 200s that are
not chat completions.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeOpenAI, FakeReply, RawReply
from pydantic import ValidationError

from evalkit.core.config import ModelConfig
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.dialects import PROMPT_DIALECT, schema_name
from evalkit.live.providers.openai import DEFAULT_BASE_URL, NO_KEY, OpenAIProvider

KEY_ENV = "EVALKIT_TEST_OPENAI_KEY"
SCHEMA: dict[str, Any] = {"title": "Triage", "type": "object", "properties": {"label": {"type": "string"}},
                          "required": ["label"], "additionalProperties": False}
MESSAGES = (
    Message(role="system", content="You triage GitHub issues."),
    Message(role="user", content="Example issue"),
    Message(role="assistant", content='{"label": "bug"}'),
    Message(role="user", content="`tracker sync` crashes."),
)


@pytest.fixture(autouse=True)
def clean_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS",
                 "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", KEY_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(lambda body: '{"label": "bug"}') as fake:
        yield fake


def config_for(url: str | None, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": "qwen3-8b", "provider": "openai", "base_url": url, "timeout_s": 10.0}
    return ModelConfig(**(data | changes))


def request(**changes: Any) -> Request:
    data: dict[str, Any] = {"model": "qwen3-8b", "messages": MESSAGES, "response_schema": SCHEMA,
                            "options": {"temperature": 0, "seed": 7}}
    return Request(**(data | changes))


def only_body(server: FakeOpenAI) -> dict[str, Any]:
    calls = server.chat_requests
    assert len(calls) == 1, f"expected one call, got {len(server.requests)} requests"
    body: dict[str, Any] = calls[0].body
    return body


def test_wire_format_of_a_structured_call(server: FakeOpenAI) -> None:
    OpenAIProvider(config_for(server.base_url)).complete(request())

    body = only_body(server)
    assert server.chat_requests[0].path == "/v1/chat/completions"
    assert body["model"] == "qwen3-8b"
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in MESSAGES]
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "Triage", "schema": SCHEMA, "strict": True}}
    assert (body["temperature"], body["seed"]) == (0, 7)
    assert body.get("stream") in (None, False)


def test_the_json_object_dialect_sends_the_schema_beside_the_type(server: FakeOpenAI) -> None:
    """llama-cpp-python's server takes only `{type: json_object, schema}`; it answers HTTP 500 to json_schema."""
    OpenAIProvider(config_for(server.base_url, structured_output="json_object")).complete(request())

    body = only_body(server)
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in MESSAGES]


def test_the_prompt_dialect_asks_in_a_last_system_message_and_sends_no_format(server: FakeOpenAI) -> None:
    OpenAIProvider(config_for(server.base_url, structured_output="prompt")).complete(request())

    body = only_body(server)
    assert "response_format" not in body
    *sent, last = body["messages"]
    assert sent == [{"role": m.role, "content": m.content} for m in MESSAGES]
    assert last["role"] == "system" and last["content"] == PROMPT_DIALECT + json.dumps(SCHEMA, sort_keys=True)


@pytest.mark.parametrize("dialect", ["json_object", "prompt"])
def test_no_schema_sends_nothing_in_any_dialect(server: FakeOpenAI, dialect: str) -> None:
    OpenAIProvider(config_for(server.base_url, structured_output=dialect)).complete(request(response_schema=None))
    body = only_body(server)
    assert "response_format" not in body and len(body["messages"]) == len(MESSAGES)


def test_the_dialect_is_described_for_the_recording(server: FakeOpenAI) -> None:
    assert OpenAIProvider(config_for(server.base_url)).describe() == {"provider": "openai",
                                                                     "structured_output": "json_schema"}


@pytest.mark.parametrize(("provider", "dialect"), [("ollama", "json_schema"), ("gemini", "prompt"),
                                                   ("llamacpp", "json_schema"), ("anthropic", "json_schema"),
                                                   ("bedrock", "prompt"), ("openai", "xml")])
def test_a_dialect_the_provider_cannot_send_is_refused_when_the_config_is_made(provider: str, dialect: str) -> None:
    with pytest.raises(ValidationError, match=f"structured_output '{dialect}' is not something the {provider} provider"):
        ModelConfig(name="m", provider=provider, structured_output=dialect)


def test_api_parameters_and_server_specific_options_go_into_the_body(server: FakeOpenAI) -> None:
    """Named parameters by the SDK, the rest (vLLM's top_k, repetition_penalty ...) as extra body fields."""
    options = {"temperature": 0.3, "top_p": 0.9, "max_tokens": 64, "stop": ["\n\n"], "seed": 1,
               "top_k": 20, "repetition_penalty": 1.05, "chat_template_kwargs": {"enable_thinking": False}}
    OpenAIProvider(config_for(server.base_url)).complete(request(options=options))

    body = only_body(server)
    for name, value in options.items():
        assert body[name] == value, name


@pytest.mark.parametrize("option", ["stream", "model", "messages", "response_format"])
def test_options_cannot_replace_what_the_request_sets(server: FakeOpenAI, option: str) -> None:
    with pytest.raises(CallFailure, match=f"option\\(s\\) {option} are set from the request") as raised:
        OpenAIProvider(config_for(server.base_url)).complete(request(options={option: True}))
    assert raised.value.retryable is False
    assert server.requests == []


def test_free_text_call_has_no_response_format_and_no_options(server: FakeOpenAI) -> None:
    OpenAIProvider(config_for(server.base_url)).complete(request(response_schema=None, options={}))
    body = only_body(server)
    assert set(body) <= {"model", "messages", "stream"}, body


@pytest.mark.parametrize(("schema", "name"), [
    ({"title": "Triage"}, "Triage"),
    ({"title": "Issue triage (v2)!"}, "Issue_triage_v2"),
    ({"title": "x" * 80}, "x" * 64),
    ({"type": "object"}, "response"),
    ({"title": "!!!"}, "response"),
])
def test_schema_name_follows_the_api_rule(schema: dict[str, Any], name: str) -> None:
    assert schema_name(schema) == name


def test_no_credential_sends_a_placeholder_not_the_environment_key(server: FakeOpenAI,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    OpenAIProvider(config_for(server.base_url)).complete(request())
    assert server.chat_requests[0].headers["authorization"] == f"Bearer {NO_KEY}"


def test_base_url_wins_over_openai_base_url(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: a request there would fail
    OpenAIProvider(config_for(server.base_url)).complete(request())
    assert len(server.chat_requests) == 1


def test_no_base_url_means_the_openai_api_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    provider = OpenAIProvider(config_for(None))
    assert str(provider._client.base_url).rstrip("/") == DEFAULT_BASE_URL


def test_the_client_does_not_retry_by_itself(server: FakeOpenAI) -> None:
    provider = OpenAIProvider(config_for(server.base_url))
    assert provider._client.max_retries == 0


def test_make_provider_builds_an_openai_provider(server: FakeOpenAI) -> None:
    assert isinstance(make_provider(config_for(server.base_url)), OpenAIProvider)
    assert server.requests == []


@pytest.mark.parametrize("raw", [
    RawReply(200, b"<html>upstream says hello</html>", content_type="text/html"),
    RawReply(200, json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()),
], ids=["html", "no-choices"])
def test_a_200_that_is_not_a_chat_completion_is_a_retryable_failure(raw: RawReply) -> None:
    with FakeOpenAI(lambda body: raw) as fake:
        with pytest.raises(CallFailure) as raised:
            OpenAIProvider(config_for(fake.base_url)).complete(request())
    assert (raised.value.retryable, raised.value.status) == (True, 200)
    assert "qwen3-8b: the server answered 200" in str(raised.value)


def test_a_reply_without_content_has_no_text() -> None:
    """A refusal (or a tool call) comes back with `content: null`: no text, and the stop reason as sent."""
    completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "qwen3-8b",
                  "choices": [{"index": 0, "finish_reason": "content_filter",
                               "message": {"role": "assistant", "content": None, "refusal": "I can't help."}}],
                  "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}
    with FakeOpenAI(lambda body: RawReply(200, json.dumps(completion).encode())) as fake:
        reply = OpenAIProvider(config_for(fake.base_url)).complete(request())
    assert (reply.text, reply.stop_reason) == (None, "content_filter")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (9, 3)


def test_a_reply_without_usage_has_no_token_counts() -> None:
    completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "qwen3-8b",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "fine"}}]}
    with FakeOpenAI(lambda body: RawReply(200, json.dumps(completion).encode())) as fake:
        reply = OpenAIProvider(config_for(fake.base_url)).complete(request())
    assert reply.text == "fine"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (None, None)


def test_the_stop_reason_is_passed_on_as_the_server_spells_it() -> None:
    with FakeOpenAI(lambda body: FakeReply('{"label": "bug"}', stop_reason="length")) as fake:
        reply = OpenAIProvider(config_for(fake.base_url)).complete(request())
    assert reply.stop_reason == "length"


def test_llama_cpp_server_timings_become_the_service_time() -> None:
    """llama.cpp's server adds `timings` to each completion: its own time on the call, queue excluded."""
    completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "qwen3-8b",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
                  "timings": {"prompt_n": 3, "prompt_ms": 12.25, "predicted_n": 1, "predicted_ms": 30.0}}

    def answer(body: dict[str, Any]) -> RawReply:
        time.sleep(0.06)  # in flight longer than the server's own 42.25 ms, as a queued call would be
        return RawReply(200, json.dumps(completion).encode())

    with FakeOpenAI(answer) as fake:
        reply = OpenAIProvider(config_for(fake.base_url)).complete(request(response_schema=None))
    assert reply.service_ms == 42.2 or reply.service_ms == 42.3  # one decimal, as latency
    assert reply.latency_ms is not None and reply.latency_ms >= 60


def test_a_server_without_timings_gives_no_service_time(server: FakeOpenAI) -> None:
    reply = OpenAIProvider(config_for(server.base_url)).complete(request())
    assert reply.service_ms is None and reply.latency_ms is not None
