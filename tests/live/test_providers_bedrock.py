"""BedrockProvider specifics, against a fake Converse endpoint (tests/fakes/, replies shaped as the Converse API
reference's examples) that boto3 reaches through `endpoint_url` with dummy credentials: the Converse wire format
(system blocks, inferenceConfig under its names, the model's own fields apart, the forced tool), a request signed
with SigV4 exactly as AWS verifies it (session token included), credentials only from boto3's chain, and usage with
the cache counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import FakeBedrock, FakeError, RawReply, sigv4_problem

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ProviderError
from evalkit.live.contract import StopKind, stop_kind
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.bedrock import BedrockProvider

KEY_ID, SECRET, TOKEN = "AKIAFAKEKEYID0000042", "fake/secret+not/a+secret/0042", "FwoGZXIvYXdzEFAKE-session-token"
REGION = "eu-west-3"
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
SCHEMA: dict[str, Any] = {"title": "Triage", "type": "object", "properties": {"label": {"type": "string"}},
                          "required": ["label"]}
MESSAGES = (Message(role="system", content="You triage GitHub issues."),
            Message(role="user", content="`tracker sync` crashes."))


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3's chain sees only these variables: never this machine's files, profile or instance role."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_BEARER_TOKEN_BEDROCK", "HTTP_PROXY", "HTTPS_PROXY",
                 "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def server() -> Iterator[FakeBedrock]:
    with FakeBedrock(lambda body: '{"label": "bug"}') as fake:
        yield fake


def config_for(url: str, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": MODEL, "provider": "bedrock", "base_url": url, "region": REGION, "timeout_s": 10.0}
    return ModelConfig(**(data | changes))


def request(**changes: Any) -> Request:
    data: dict[str, Any] = {"model": MODEL, "messages": MESSAGES, "response_schema": SCHEMA,
                            "options": {"maxTokens": 256, "temperature": 0.2, "topP": 0.9, "stopSequences": ["###"],
                                        "top_k": 40, "seed": 7}}
    return Request(**(data | changes))


def test_wire_format_and_signature_of_a_structured_call(server: FakeBedrock) -> None:
    reply = make_provider(config_for(server.url)).complete(request())

    call = server.chat_requests[0]
    assert call.path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    assert sigv4_problem(call.method, call.path, call.headers, call.raw, access_key=KEY_ID, secret_key=SECRET,
                         region=REGION) is None
    assert call.headers["x-amz-security-token"] == TOKEN
    body = call.body
    assert body["system"] == [{"text": "You triage GitHub issues."}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "`tracker sync` crashes."}]}]
    assert body["inferenceConfig"] == {"maxTokens": 256, "temperature": 0.2, "topP": 0.9, "stopSequences": ["###"]}
    assert body["additionalModelRequestFields"] == {"top_k": 40}, "the model's own fields, and no seed"
    assert body["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "Triage", "description": "Record the answer, following the schema.",
                                "inputSchema": {"json": SCHEMA}}}],
        "toolChoice": {"tool": {"name": "Triage"}}}
    assert json.loads(reply.text or "") == {"label": "bug"}
    assert reply.stop_reason == "tool_use"


def test_a_request_signed_with_another_secret_does_not_verify(server: FakeBedrock) -> None:
    """The signature check can fail: it is not satisfied by any well-formed header."""
    make_provider(config_for(server.url)).complete(request())
    call = server.chat_requests[0]
    assert sigv4_problem(call.method, call.path, call.headers, call.raw, access_key=KEY_ID,
                         secret_key=SECRET + "x", region=REGION) == "the signature does not match the request"
    tampered = call.raw.replace(b"crashes", b"crashed")
    assert sigv4_problem(call.method, call.path, call.headers, tampered, access_key=KEY_ID, secret_key=SECRET,
                         region=REGION) == "the signature does not match the request"


def test_free_text_usage_with_cache_counts() -> None:
    """The Converse reference's response example, with the prompt-cache counts."""
    response = {"output": {"message": {"role": "assistant", "content": [{"text": "Hello! "}, {"text": "Done."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 30, "outputTokens": 628, "totalTokens": 658, "cacheReadInputTokens": 512,
                          "cacheWriteInputTokens": 0},
                "metrics": {"latencyMs": 1275}}
    with FakeBedrock(lambda body: RawReply(200, json.dumps(response).encode())) as fake:
        reply = make_provider(config_for(fake.url)).complete(request(response_schema=None))
        assert "toolConfig" not in fake.chat_requests[0].body
    assert (reply.text, reply.stop_reason) == ("Hello! Done.", "end_turn")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 628)
    assert (reply.usage.cache_read_tokens, reply.usage.cache_write_tokens) == (512, 0)
    # the service's own latency, never more than the time in flight this side measured
    assert reply.latency_ms is not None and reply.service_ms == min(1275.0, reply.latency_ms)


@pytest.mark.parametrize(("reason", "kind"), [("end_turn", StopKind.FINISHED), ("max_tokens", StopKind.TRUNCATED),
                                              ("guardrail_intervened", StopKind.FILTERED),
                                              ("content_filtered", StopKind.FILTERED)])
def test_stop_reasons_map_into_the_reply_contract(reason: str, kind: StopKind) -> None:
    response = {"output": {"message": {"role": "assistant", "content": [{"text": "x"}]}}, "stopReason": reason,
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}
    with FakeBedrock(lambda body: RawReply(200, json.dumps(response).encode())) as fake:
        reply = make_provider(config_for(fake.url)).complete(request(response_schema=None))
    assert stop_kind(reply.stop_reason) is kind


def test_throttling_is_a_retryable_429_and_credentials_never_show() -> None:
    def throttle(body: dict[str, Any]) -> str:
        raise FakeError(429, f"Too many requests for {KEY_ID} ({SECRET})", headers={"Retry-After": "4"})

    with FakeBedrock(throttle) as fake:
        with pytest.raises(CallFailure) as raised:
            make_provider(config_for(fake.url)).complete(request())
        assert len(fake.chat_requests) == 1, "botocore retried by itself"
    failure = raised.value
    assert (failure.retryable, failure.status, failure.retry_after) == (True, 429, 4.0)
    assert "(ThrottlingException)" in str(failure)
    assert KEY_ID not in str(failure) and SECRET not in str(failure)


@pytest.mark.parametrize("unset", ["AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"])
def test_missing_credentials_are_refused_before_any_call(server: FakeBedrock, unset: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(unset)
    with pytest.raises(ProviderError, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        make_provider(config_for(server.url))
    assert server.requests == []


def test_no_region_is_refused_and_api_key_env_is_not_a_bedrock_setting(server: FakeBedrock) -> None:
    with pytest.raises(ProviderError, match=r"no AWS region; set model.region \(or AWS_REGION\)"):
        make_provider(config_for(server.url, region=None))
    with pytest.raises(ProviderError, match="remove api_key_env"):
        make_provider(config_for(server.url, api_key_env="AWS_SECRET_ACCESS_KEY"))


def test_botocore_does_not_retry_and_describes_itself(server: FakeBedrock) -> None:
    provider = BedrockProvider(config_for(server.url))
    assert provider._client.meta.config.retries["total_max_attempts"] == 1
    assert provider.describe() == {"provider": "bedrock", "structured_output": "tool_use"}
