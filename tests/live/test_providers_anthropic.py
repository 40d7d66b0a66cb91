"""AnthropicProvider specifics, against a fake Messages API (tests/fakes/, replies shaped as Anthropic's documented
examples).

The contract every provider meets (reply mapping, faults, credentials) is in test_provider_contract.py; here: the
Messages wire format (top-level system, the forced tool that carries a schema, options under the API's names, no
seed), the required max_tokens, the cache counts in usage, 529 `overloaded_error`, and environment the SDK would
otherwise read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeAnthropic, FakeError, FakeReply, RawReply

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.live.contract import StopKind, contract_problems, stop_kind
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.anthropic import AnthropicProvider
from evalkit.live.providers.base import CallFailure

KEY_ENV = "EVALKIT_TEST_ANTHROPIC_KEY"
KEY = "sk-ant-test-not-a-secret-0042"
MODEL = "claude-sonnet-5"
SCHEMA: dict[str, Any] = {"title": "Triage", "type": "object", "properties": {"label": {"type": "string"}},
                          "required": ["label"], "additionalProperties": False}
MESSAGES = (Message(role="system", content="You triage GitHub issues."),
            Message(role="system", content="Answer briefly."),
            Message(role="user", content="`tracker sync` crashes."))


@pytest.fixture(autouse=True)
def clean_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(lambda body: '{"label": "bug"}') as fake:
        yield fake


def config_for(url: str | None, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": MODEL, "provider": "anthropic", "base_url": url, "api_key_env": KEY_ENV,
                            "timeout_s": 10.0, "options": {"max_tokens": 256}}
    return ModelConfig(**(data | changes))


def request(**changes: Any) -> Request:
    data: dict[str, Any] = {"model": MODEL, "messages": MESSAGES, "response_schema": SCHEMA,
                            "options": {"max_tokens": 256, "temperature": 0.3, "top_p": 0.9, "top_k": 20,
                                        "stop_sequences": ["\n\nHuman:"], "seed": 7}}
    return Request(**(data | changes))


def only_body(server: FakeAnthropic) -> dict[str, Any]:
    calls = server.chat_requests
    assert len(calls) == 1, f"expected one call, got {len(server.requests)} requests"
    body: dict[str, Any] = calls[0].body
    return body


def test_wire_format_of_a_structured_call(server: FakeAnthropic) -> None:
    reply = AnthropicProvider(config_for(server.url)).complete(request())

    call = server.chat_requests[0]
    body = only_body(server)
    assert call.path == "/v1/messages" and call.headers["anthropic-version"]
    assert body["model"] == MODEL and body["max_tokens"] == 256
    assert body["system"] == "You triage GitHub issues.\n\nAnswer briefly."
    assert body["messages"] == [{"role": "user", "content": "`tracker sync` crashes."}]
    assert body["tools"] == [{"name": "Triage", "description": "Record the answer, following the schema.",
                              "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "tool", "name": "Triage"}
    assert (body["temperature"], body["top_p"], body["top_k"], body["stop_sequences"]) == (0.3, 0.9, 20, ["\n\nHuman:"])
    assert "seed" not in body, "the Messages API takes no seed"
    assert body.get("stream") in (None, False)
    # the forced tool's input is the reply, as JSON; the API's stop reason for it is tool_use
    assert json.loads(reply.text or "") == {"label": "bug"}
    assert reply.stop_reason == "tool_use" and stop_kind(reply.stop_reason) is StopKind.OTHER
    assert contract_problems(reply) == []


def test_free_text_has_no_tools_and_joins_the_text_blocks() -> None:
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": MODEL, "stop_reason": "end_turn",
               "stop_sequence": None, "content": [{"type": "text", "text": "Hi! "}, {"type": "text", "text": "Done."}],
               "usage": {"input_tokens": 12, "output_tokens": 4}}
    with FakeAnthropic(lambda body: RawReply(200, json.dumps(message).encode())) as fake:
        reply = AnthropicProvider(config_for(fake.url)).complete(request(response_schema=None))
        body = only_body(fake)
    assert "tools" not in body and "tool_choice" not in body
    assert (reply.text, reply.stop_reason) == ("Hi! Done.", "end_turn")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 4)
    assert reply.usage.cache_read_tokens is None


def test_usage_keeps_the_cache_reads_and_writes() -> None:
    """Usage as in Anthropic's prompt-caching example: cached input is counted apart from input_tokens."""
    message = {"id": "msg_02", "type": "message", "role": "assistant", "model": MODEL, "stop_reason": "end_turn",
               "stop_sequence": None, "content": [{"type": "text", "text": "ok"}],
               "usage": {"input_tokens": 21, "output_tokens": 393, "cache_creation_input_tokens": 188086,
                         "cache_read_input_tokens": 0}}
    with FakeAnthropic(lambda body: RawReply(200, json.dumps(message).encode())) as fake:
        reply = AnthropicProvider(config_for(fake.url)).complete(request(response_schema=None))
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (21, 393)
    assert (reply.usage.cache_write_tokens, reply.usage.cache_read_tokens) == (188086, 0)


@pytest.mark.parametrize(("reason", "kind"), [("end_turn", StopKind.FINISHED), ("stop_sequence", StopKind.FINISHED),
                                              ("max_tokens", StopKind.TRUNCATED), ("refusal", StopKind.FILTERED)])
def test_stop_reasons_map_into_the_reply_contract(reason: str, kind: StopKind) -> None:
    with FakeAnthropic(lambda body: FakeReply("plain words", stop_reason=reason)) as fake:
        reply = AnthropicProvider(config_for(fake.url)).complete(request(response_schema=None))
    assert reply.stop_reason == reason and stop_kind(reply.stop_reason) is kind


def test_529_overloaded_is_retryable_and_named() -> None:
    def overloaded(body: dict[str, Any]) -> str:
        raise FakeError(529, "Overloaded", headers={"retry-after": "3"})

    with FakeAnthropic(overloaded) as fake:
        with pytest.raises(CallFailure) as raised:
            AnthropicProvider(config_for(fake.url)).complete(request())
        assert len(fake.chat_requests) == 1, "the client retried by itself"
    assert (raised.value.retryable, raised.value.status, raised.value.retry_after) == (True, 529, 3.0)
    assert str(raised.value) == f"{MODEL}: HTTP 529: Overloaded (overloaded_error)"


def test_a_config_without_max_tokens_is_refused_before_any_call(server: FakeAnthropic) -> None:
    with pytest.raises(ProviderError, match=r"the Messages API requires max_tokens; set model.options.max_tokens"):
        make_provider(config_for(server.url, options={"temperature": 0}))
    assert server.requests == []


@pytest.mark.parametrize("option", ["system", "tools", "tool_choice", "messages", "stream"])
def test_options_cannot_replace_what_the_request_sets(server: FakeAnthropic, option: str) -> None:
    with pytest.raises(CallFailure, match=f"option\\(s\\) {option} are set from the request") as raised:
        AnthropicProvider(config_for(server.url)).complete(request(options={"max_tokens": 9, option: True}))
    assert raised.value.retryable is False and server.requests == []


def test_the_environment_does_not_choose_the_server_or_the_key(server: FakeAnthropic,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # discard port: a request there would fail
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
    provider = AnthropicProvider(config_for(server.url))
    provider.complete(request())
    headers = server.chat_requests[0].headers
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert "sk-ant-from-the-environment" not in json.dumps(headers)
    assert provider._client.max_retries == 0


def test_no_key_is_refused(server: FakeAnthropic) -> None:
    with pytest.raises(ProviderError, match="the Messages API needs a key; set api_key_env"):
        make_provider(config_for(server.url, api_key_env=None))


def test_the_recording_says_how_the_schema_was_sent(server: FakeAnthropic) -> None:
    assert AnthropicProvider(config_for(server.url)).describe() == {"provider": "anthropic",
                                                                   "structured_output": "tool_use"}
