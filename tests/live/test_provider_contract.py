"""The provider contract, once, for every provider: each against its fake server on the loopback interface.

A provider maps a Request onto its server's wire format (through the official client; Ollama's over HTTP itself), maps the
reply back to text, stop reason and usage, and turns every failure into a CallFailure the runner
can act on: timeouts, dropped connections, 429 (with its Retry-After) and 5xx retryable, other
4xx not. It never retries by itself, never sends or shows a credential it was not given, and
refuses a missing credential before any request. What each server saw is asserted on its side.
"""

from __future__ import annotations

import base64
import gzip
import json
import shlex
import socket
import ssl
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from fakes import (
    PROTOCOLS,
    FakeAnthropic,
    FakeAzureOpenAI,
    FakeBedrock,
    FakeCall,
    FakeError,
    FakeGemini,
    FakeOllama,
    FakeOpenAI,
    FakeReply,
    FakeServer,
    Fault,
    Faults,
    RawReply,
    RecordedRequest,
    sigv4_problem,
)

from evalkit.core.config import ModelConfig
from evalkit.core.errors import InputError, ProviderError
from evalkit.core.key import EvalKey
from evalkit.core.provider_specs import ProviderSpec, provider_spec, provider_specs
from evalkit.live.contract import contract_problems
from evalkit.live.providers import Message, Provider, Reply, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.records.call import AudioPart, ImagePart, NamedTool, TextPart, Tool, ToolCall
from evalkit.run.recording import (
    Entry,
    Hit,
    Miss,
    Provenance,
    Recording,
    load_recording,
    lookup,
    request_fingerprint,
    save_recording,
)

KEY_ENV = "EVALKIT_TEST_PROVIDER_KEY"
FAKE_KEY = "fake-key-not-a-secret-4711"
AWS_KEY_ID = "AKIAFAKEKEYID0000001"
"""Bedrock signs with an access key id and its secret (FAKE_KEY, in AWS_SECRET_ACCESS_KEY)."""
REGION = "us-east-1"
CLIENT_TIMEOUT_S = 1.5  # generous: a loaded CI machine must not turn a 500 into a timeout
"""The timeout fault holds a call for HANG_S; the client must give up after this."""
HANG_S = 4.0

SCHEMA: dict[str, Any] = {
    "title": "Triage",
    "type": "object",
    "properties": {
        "label": {"enum": ["bug", "feature"], "type": "string"},
        "summary": {"minLength": 1, "type": "string"},
    },
    "required": ["label", "summary"],
    "additionalProperties": False,
}
SYSTEM = "You triage GitHub issues."
USER = "`tracker sync` crashes with KeyError: 'due'."
CONTENT = '{"label": "bug", "summary": "tracker sync crashes on a missing due date"}'


def _messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in body["messages"]]


def _anthropic_messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    return ([("system", body["system"])] if "system" in body else []) + _messages(body)


def _bedrock_messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    system = [("system", block["text"]) for block in body.get("system", [])]
    return system + [(m["role"], block["text"]) for m in body["messages"] for block in m["content"]]


def _bedrock_option(body: dict[str, Any], name: str) -> Any:
    native = {"temperature": "temperature", "max_tokens": "maxTokens"}.get(name, name)
    return body.get("inferenceConfig", {}).get(native, body.get("additionalModelRequestFields", {}).get(name))


def _forced_tool_schema(body: dict[str, Any]) -> Any:
    tools = body.get("tools") or []
    chosen = (body.get("tool_choice") or {}).get("name")
    return next((t["input_schema"] for t in tools if t["name"] == chosen), None)


def _bedrock_tool_schema(body: dict[str, Any]) -> Any:
    config = body.get("toolConfig") or {}
    chosen = (config.get("toolChoice") or {}).get("tool", {}).get("name")
    return next((t["toolSpec"]["inputSchema"]["json"] for t in config.get("tools", [])
                 if t["toolSpec"]["name"] == chosen), None)


def _aws_signature(request: RecordedRequest) -> str | None:
    """The secret the request was signed with, when the signature checks out with FAKE_KEY."""
    problem = sigv4_problem(request.method, request.path, request.headers, request.raw, access_key=AWS_KEY_ID,
                            secret_key=FAKE_KEY, region=REGION)
    return FAKE_KEY if problem is None else problem


def _gemini_messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    system = [("system", part["text"]) for part in body.get("systemInstruction", {}).get("parts", [])]
    return system + [("assistant" if c["role"] == "model" else c["role"], part["text"])
                     for c in body["contents"] for part in c["parts"]]


@dataclass(frozen=True)
class Contract:
    """One provider under the contract: its fake server, and where things sit in its wire format."""

    provider: str
    fake: Callable[..., FakeServer]
    model: str
    messages: Callable[[dict[str, Any]], list[tuple[str, str]]]
    schema: Callable[[dict[str, Any]], Any]
    option: Callable[[dict[str, Any], str], Any]
    credential: Callable[[RecordedRequest], str | None]
    """The credential as the server received it (from the lower-cased headers, or the secret a signature proves)."""
    length_stop: tuple[str, str]
    """The protocol's "ran out of tokens" stop reason, and what the provider maps it to."""
    normal_stop: str = "stop"
    """The stop reason of a structured reply that ended normally."""
    settings: tuple[tuple[str, Any], ...] = ()
    """Model settings the provider needs beyond name, base_url and api_key_env."""
    options: tuple[tuple[str, Any], ...] = ()
    """Options every request needs (Anthropic's max_tokens)."""
    key_env: str = KEY_ENV
    """Where the credential lives (named by api_key_env, or read by the provider from its own chain)."""

    def __str__(self) -> str:
        return self.provider


def _bearer(request: RecordedRequest) -> str | None:
    value = request.headers.get("authorization")
    return value.removeprefix("Bearer ") if value else None


def _anthropic_key(request: RecordedRequest) -> str | None:
    """`x-api-key` in the API reference; anthropic 2.x sends the key as a bearer token."""
    return request.headers.get("x-api-key") or _bearer(request)


CONTRACTS = [
    Contract("ollama", FakeOllama, "gemma4:e2b", _messages,
             schema=lambda body: body.get("format"),
             option=lambda body, name: body.get("options", {}).get(name),
             credential=_bearer, length_stop=("length", "length")),
    Contract("openai", FakeOpenAI, "qwen3-8b", _messages,
             schema=lambda body: body.get("response_format", {}).get("json_schema", {}).get("schema"),
             option=lambda body, name: body.get(name),
             credential=_bearer, length_stop=("length", "length")),
    Contract("gemini", FakeGemini, "gemini-3.8-flash", _gemini_messages,
             schema=lambda body: body.get("generationConfig", {}).get("responseJsonSchema"),
             option=lambda body, name: body.get("generationConfig", {}).get(name),
             credential=lambda request: request.headers.get("x-goog-api-key"),
             length_stop=("MAX_TOKENS", "max_tokens")),
    Contract("azure", FakeAzureOpenAI, "gpt-4o", _messages,
             schema=lambda body: body.get("response_format", {}).get("json_schema", {}).get("schema"),
             option=lambda body, name: body.get(name),
             credential=lambda request: request.headers.get("api-key"), length_stop=("length", "length"),
             settings=(("deployment", "triage-prod"), ("api_version", "2024-10-21"))),
    Contract("anthropic", FakeAnthropic, "claude-sonnet-5", _anthropic_messages, schema=_forced_tool_schema,
             option=lambda body, name: body.get(name), credential=_anthropic_key,
             length_stop=("max_tokens", "max_tokens"), normal_stop="tool_use", options=(("max_tokens", 512),)),
    Contract("bedrock", FakeBedrock, "anthropic.claude-3-5-haiku-20241022-v1:0", _bedrock_messages,
             schema=_bedrock_tool_schema, option=_bedrock_option, credential=_aws_signature,
             length_stop=("max_tokens", "max_tokens"), normal_stop="tool_use", settings=(("region", REGION),),
             key_env="AWS_SECRET_ACCESS_KEY"),
]


@pytest.fixture(params=CONTRACTS, ids=str)
def contract(request: pytest.FixtureRequest) -> Contract:
    found: Contract = request.param
    return found


@pytest.fixture(autouse=True)
def clean_client_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Environment the SDKs read (keys, hosts, proxies, backends) stays out of these tests."""
    for name in ("OLLAMA_API_KEY", "OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID",
                 "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                 "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GENAI_API_VERSION",
                 "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_HTTP_CLIENT", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy", KEY_ENV, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                 "ANTHROPIC_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT",
                 "OPENAI_API_VERSION", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_BEARER_TOKEN_BEDROCK", "AWS_CA_BUNDLE", "SSL_CERT_FILE",
                 "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    # boto3's chain: only the environment, never this machine's files or an instance role
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def reply_content(body: dict[str, Any]) -> str:
    return CONTENT


@pytest.fixture
def server(contract: Contract) -> Iterator[FakeServer]:
    with contract.fake(reply_content) as fake:
        yield fake


def config_for(contract: Contract, server: FakeServer, **changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": contract.model, "provider": contract.provider, "base_url": server.base_url,
                            "api_key_env": KEY_ENV if contract.key_env == KEY_ENV else None, "timeout_s": 10.0,
                            "options": dict(contract.options), **dict(contract.settings)}
    return ModelConfig(**(data | changes))


def provider_for(contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch,
                 **changes: Any) -> Provider:
    monkeypatch.setenv(contract.key_env, FAKE_KEY)
    return make_provider(config_for(contract, server, **changes))


def request_for(contract: Contract, **changes: Any) -> Request:
    data: dict[str, Any] = {"model": contract.model, "response_schema": SCHEMA,
                            "messages": (Message(role="system", content=SYSTEM), Message(role="user", content=USER)),
                            "options": {"temperature": 0.2, "seed": 7, **dict(contract.options)}}
    return Request(**(data | changes))


def only_call(server: FakeServer) -> dict[str, Any]:
    calls = server.chat_requests
    assert len(calls) == 1, f"expected exactly one call, got {len(calls)} ({len(server.requests)} requests)"
    body: dict[str, Any] = calls[0].body
    return body


# -- a successful call --------------------------------------------------------------------------------


IN_PROCESS = {"llamacpp": "test_providers_llamacpp.py"}
"""Providers with no server to fake: the parts of this contract that apply (reply, stop reasons, usage, schema,
options, concurrent calls, a missing runtime) run against a real small model in their own module."""


def test_every_provider_is_under_contract() -> None:
    assert sorted([c.provider for c in CONTRACTS] + list(IN_PROCESS)) == sorted(provider_specs())
    assert all((Path(__file__).parent / module).is_file() for module in IN_PROCESS.values())


def test_reply_maps_text_stop_reason_and_usage(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    native, mapped = contract.length_stop
    with contract.fake(lambda body: FakeReply(CONTENT, stop_reason=native, input_tokens=321,
                                              output_tokens=17)) as fake:
        reply = provider_for(contract, fake, monkeypatch).complete(request_for(contract))

    assert isinstance(reply, Reply)
    assert reply.text == CONTENT
    assert reply.stop_reason == mapped
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (321, 17)
    assert reply.latency_ms is not None and reply.latency_ms >= 0


def test_normal_stop_is_stop(contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = provider_for(contract, server, monkeypatch).complete(request_for(contract))
    assert reply.stop_reason == contract.normal_stop
    # the fake server counts words: 4 + 6 in the messages, 11 in the reply
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (10, 11)


def test_request_carries_messages_schema_and_options(contract: Contract, server: FakeServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    provider_for(contract, server, monkeypatch).complete(request_for(contract))

    body = only_call(server)
    assert contract.messages(body) == [("system", SYSTEM), ("user", USER)]
    assert contract.schema(body) == SCHEMA
    assert contract.option(body, "temperature") == 0.2
    # an API without seeds is not sent one (repeated samples still differ by it in their requests)
    assert contract.option(body, "seed") == (7 if provider_spec(contract.provider).honours_seed else None)


def test_no_schema_sends_no_schema(contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = provider_for(contract, server, monkeypatch).complete(request_for(contract, response_schema=None))
    assert contract.schema(only_call(server)) is None
    assert reply.text == CONTENT


def test_the_request_is_not_changed_by_the_call(contract: Contract, server: FakeServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sent = request_for(contract)
    before = sent.model_dump(mode="json")
    provider_for(contract, server, monkeypatch).complete(sent)
    assert sent.model_dump(mode="json") == before


def test_concurrent_calls_share_one_provider(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    """One provider, many threads: every reply belongs to its own request."""

    def echo(body: dict[str, Any]) -> str:
        return f"echo {contract.messages(body)[-1][1]}"

    with contract.fake(echo, latency_ms=20) as fake:
        provider = provider_for(contract, fake, monkeypatch)
        questions = [f"question {i}" for i in range(24)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            replies = list(pool.map(
                lambda q: provider.complete(request_for(contract, messages=(Message(role="user", content=q),))),
                questions))
        assert len(fake.chat_requests) == len(questions)
    assert [r.text for r in replies] == [f"echo {q}" for q in questions]


# -- failures -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    retryable: bool
    status: int | None
    says: str
    retry_after: float | None = None


FAULTS = {
    Fault.RATE_LIMIT: Expected(True, 429, "HTTP 429: rate limit exceeded", retry_after=2.0),
    Fault.SERVER_ERROR: Expected(True, 500, "HTTP 500: internal error"),
    Fault.TIMEOUT: Expected(True, None, f"no reply within {CLIENT_TIMEOUT_S} s"),
    Fault.RESET: Expected(True, None, "failed"),
    Fault.MALFORMED: Expected(True, 200, "answered 200 with a body that is not"),
}


@pytest.mark.parametrize("fault", list(FAULTS), ids=str)
def test_each_fault_is_one_classified_call_failure(contract: Contract, fault: Fault,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    expected = FAULTS[fault]
    faults = Faults.always(fault, retry_after_s=2, hang_s=HANG_S)
    with contract.fake(reply_content, faults=faults) as fake:
        provider = provider_for(contract, fake, monkeypatch, timeout_s=CLIENT_TIMEOUT_S)
        started = time.perf_counter()
        with pytest.raises(CallFailure) as raised:
            provider.complete(request_for(contract))
        elapsed = time.perf_counter() - started
        calls = len(fake.chat_requests)

    failure = raised.value
    assert (failure.retryable, failure.status, failure.retry_after) == \
        (expected.retryable, expected.status, expected.retry_after), str(failure)
    assert calls == 1, f"the provider retried by itself ({calls} calls)"
    assert elapsed < HANG_S, f"the call took {elapsed:.2f}s: the client timeout was not applied"
    assert str(failure).startswith(f"{contract.model}: ")
    assert expected.says in str(failure)


def test_a_slow_reply_within_the_timeout_is_a_reply(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    with contract.fake(reply_content, faults=Faults.always(Fault.SLOW, slow_ms=150)) as fake:
        reply = provider_for(contract, fake, monkeypatch, timeout_s=2.0).complete(request_for(contract))
    assert reply.text == CONTENT
    assert reply.latency_ms is not None and reply.latency_ms >= 150


def test_429_without_retry_after_has_none(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    with contract.fake(reply_content, faults=Faults.always(Fault.RATE_LIMIT, retry_after_s=None)) as fake:
        with pytest.raises(CallFailure) as raised:
            provider_for(contract, fake, monkeypatch).complete(request_for(contract))
    assert (raised.value.retryable, raised.value.status, raised.value.retry_after) == (True, 429, None)


def test_retry_after_as_an_http_date(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    def limited(body: dict[str, Any]) -> str:
        raise FakeError(429, "slow down", headers={"Retry-After": when})

    with contract.fake(limited) as fake:
        with pytest.raises(CallFailure) as raised:
            provider_for(contract, fake, monkeypatch).complete(request_for(contract))
    assert raised.value.retry_after is not None and 25 <= raised.value.retry_after <= 30


@pytest.mark.parametrize("status", [502, 503])
def test_other_5xx_are_retryable_with_their_retry_after(contract: Contract, status: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(body: dict[str, Any]) -> str:
        raise FakeError(status, "the model is loading", headers={"Retry-After": "7"})

    with contract.fake(unavailable) as fake:
        with pytest.raises(CallFailure) as raised:
            provider_for(contract, fake, monkeypatch).complete(request_for(contract))
        assert len(fake.chat_requests) == 1
    assert (raised.value.retryable, raised.value.status, raised.value.retry_after) == (True, status, 7.0)
    assert "the model is loading" in str(raised.value)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retryable(contract: Contract, status: int, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(body: dict[str, Any]) -> str:
        raise FakeError(status, "schema is not supported by this model", headers={"Retry-After": "5"})

    with contract.fake(refuse) as fake:
        with pytest.raises(CallFailure) as raised:
            provider_for(contract, fake, monkeypatch).complete(request_for(contract))
        assert len(fake.chat_requests) == 1
    failure = raised.value
    assert (failure.retryable, failure.status, failure.retry_after) == (False, status, None)
    assert "schema is not supported by this model" in str(failure)


def test_connection_refused_is_retryable(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class Closed:
        base_url = f"http://127.0.0.1:{port}" + PROTOCOLS[contract.provider].base_path

    provider = provider_for(contract, Closed(), monkeypatch)  # type: ignore[arg-type]
    with pytest.raises(CallFailure) as raised:
        provider.complete(request_for(contract))
    assert (raised.value.retryable, raised.value.status) == (True, None)


@pytest.mark.parametrize(("status", "header", "expected"), [
    (429, "12", (True, 12.0)),
    (429, "0.5", (True, 0.5)),
    (429, "-3", (True, 0.0)),
    (429, "soon", (True, None)),
    (429, "1e999", (True, None)),
    (429, None, (True, None)),
    (408, "2", (True, 2.0)),
    (500, None, (True, None)),
    (599, "1", (True, 1.0)),
    (400, "5", (False, None)),
    (409, None, (False, None)),
    (304, None, (False, None)),
])
def test_status_classification_is_one_rule(status: int, header: str | None,
                                           expected: tuple[bool, float | None]) -> None:
    failure = CallFailure.for_status(status, "m: HTTP", retry_after=header)
    assert (failure.retryable, failure.retry_after) == expected
    assert failure.status == status


def test_a_past_retry_after_date_means_now() -> None:
    failure = CallFailure.for_status(429, "m", retry_after="Wed, 21 Oct 2015 07:28:00 GMT")
    assert failure.retry_after == 0.0


# -- credentials --------------------------------------------------------------------------------------


def test_credential_is_sent_and_never_shown(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    def echo_the_key(body: dict[str, Any]) -> str:  # servers do quote bad keys back
        raise FakeError(401, f"API key {FAKE_KEY} is not valid")

    with contract.fake(echo_the_key) as fake:
        provider = provider_for(contract, fake, monkeypatch)
        assert fake.requests == []  # constructing a provider does not touch the network
        with pytest.raises(CallFailure) as raised:
            provider.complete(request_for(contract))
        received = fake.chat_requests[0]

    assert contract.credential(received) == FAKE_KEY
    assert FAKE_KEY not in str(raised.value)
    assert raised.value.retryable is False and raised.value.status == 401


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_missing_credential_is_refused_before_any_request(contract: Contract, server: FakeServer, value: str | None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if value is not None:
        monkeypatch.setenv(contract.key_env, value)
    with pytest.raises(ProviderError) as raised:
        make_provider(config_for(contract, server))
    assert contract.key_env in str(raised.value)
    assert contract.model in str(raised.value)
    assert server.requests == []


SDKS = {"openai": "openai", "azure": "openai", "gemini": "google.genai", "anthropic": "anthropic", "bedrock": "boto3"}
"""The client library each provider imports; Ollama's speaks HTTP with the standard library (and msgspec)."""


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c.provider in SDKS], ids=str, indirect=True)
def test_a_missing_sdk_says_how_to_install_it(contract: Contract, server: FakeServer,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = SDKS[contract.provider]
    monkeypatch.setitem(sys.modules, sdk, None)  # `import` now raises ImportError
    monkeypatch.setenv(contract.key_env, FAKE_KEY)
    with pytest.raises(ProviderError) as refused:
        make_provider(config_for(contract, server))
    # the hint installs the extra's own requirements (as pyproject.toml lists them) into this interpreter;
    # `pip install 'evalkit[x]'` would fetch an unrelated project of that name from the package index
    extra = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"][provider_spec(contract.provider).extra]
    message = str(refused.value)
    assert f"Install with: {shlex.quote(sys.executable)} -m pip install " in message
    assert all(shlex.quote(requirement).replace(" ", "") in message.replace(" ", "") or requirement.split("<")[0].split(">")[0] in message
               for requirement in extra)
    assert "evalkit[" not in message


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c.provider not in SDKS], ids=str, indirect=True)
def test_a_provider_without_a_client_library_calls_without_one(contract: Contract, server: FakeServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for library in ("ollama", "httpx", "httpcore"):
        monkeypatch.setitem(sys.modules, library, None)  # `import` now raises ImportError
    assert provider_spec(contract.provider).extra is None
    assert provider_for(contract, server, monkeypatch).complete(request_for(contract)).text == CONTENT


# -- the transport every provider's calls go through (evalkit.live.providers.jsonhttp, sdkwire; issue 35) ---------


def _protocol_reply(contract: Contract, body: dict[str, Any]) -> bytes:
    """A well-formed reply of the contract's protocol to `body`, as its fake server sends it."""
    return json.dumps(PROTOCOLS[contract.provider].reply("", body, FakeReply(CONTENT), 0)).encode()


def test_the_reply_is_asked_for_unencoded_and_an_encoded_one_is_refused_unread(
        contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    """No compression: a small compressed body can inflate far past the reply cap, so none is asked for, and one
    that comes anyway is not inflated."""
    with contract.fake(lambda body: RawReply(200, gzip.compress(_protocol_reply(contract, body)),
                                             headers={"Content-Encoding": "gzip"})) as fake:
        with pytest.raises(CallFailure) as raised:
            provider_for(contract, fake, monkeypatch).complete(request_for(contract))
        sent = fake.chat_requests[0].headers
    assert sent.get("accept-encoding") == "identity"
    assert (raised.value.retryable, raised.value.status) == (True, 200), str(raised.value)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ssl.SSLContext]:
    """A certificate made here for 127.0.0.1 (openssl) and a server context that presents it."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return cert, context


def test_https_is_verified_against_what_the_client_trusts(contract: Contract, certificate: tuple[Path, ssl.SSLContext],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A certificate nobody trusts is refused, for good (trying again cannot help); trusted the way the provider's
    own client is told to trust one (SSL_CERT_FILE; Bedrock: AWS_CA_BUNDLE), the call goes through."""
    cert, context = certificate
    with contract.fake(reply_content, tls=context) as fake:
        with pytest.raises(CallFailure, match="CERTIFICATE_VERIFY_FAILED") as raised:
            provider_for(contract, fake, monkeypatch).complete(request_for(contract))
        assert raised.value.retryable is False
        monkeypatch.setenv("AWS_CA_BUNDLE" if contract.provider == "bedrock" else "SSL_CERT_FILE", str(cert))
        reply = provider_for(contract, fake, monkeypatch).complete(request_for(contract))
    assert reply.text == CONTENT


# -- tool calling (issue 37): every provider's wire format, round-tripped against its fake server ------------------

LOOKUP = Tool(name="lookup_order", description="Find an order by its number.",
              parameters={"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"],
                          "additionalProperties": False})
CARRIER = Tool(name="carrier_status", parameters={"type": "object", "properties": {"carrier": {"type": "string"}}})
"""A tool without a description (an optional field on every wire format: left out, never sent empty)."""
ASKED = "Where is order A-17?"
CONVERSATION = (
    Message(role="system", content="You look orders up."),
    Message(role="user", content=(TextPart(text="Where is "), TextPart(text="order A-17?"))),
    Message(role="assistant", content="Looking it up.", tool_calls=(
        ToolCall(id="call_a", tool="lookup_order", arguments={"order": "A-17"}),
        ToolCall(id="call_b", tool="carrier_status", arguments={"carrier": "DHL"}))),
    Message(role="tool", tool_call_id="call_a", content='{"status": "shipped"}'),
    Message(role="tool", tool_call_id="call_b", content="carrier API timed out", error=True),
)
"""A conversation one step into an agent's loop: content parts, an assistant turn with text and two calls, a result
and a failed tool's result."""


@dataclass(frozen=True)
class ToolWire:
    """Where a provider's wire format puts tools, and what it can say."""

    read: Callable[[dict[str, Any]], list[tuple[Any, ...]]]
    """The conversation as the server received it, neutral: (system|user, text), (assistant, text, ((tool,
    arguments), ...)), (tool, the call's id or the tool's name, text, failed)."""
    tools: Callable[[dict[str, Any]], list[tuple[str, str | None, Any]]]
    """The offered tools: (name, description or None, JSON schema)."""
    choice: Callable[[dict[str, Any]], Any]
    """The tool choice as sent, neutral: auto, none, required, ("named", name), or None when absent."""
    ids: bool
    """The wire format carries call ids (else results name their tool)."""
    errors: bool
    """It can mark a tool result as failed."""
    text_arguments: bool = False
    """Arguments travel as JSON text (a malformed call can go back as it came)."""
    sends_choice: bool = True
    """It has a tool choice field (Ollama's API has none: `auto` is what it does, and nothing is sent)."""


def _openai_read(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    read: list[tuple[Any, ...]] = []
    for m in body["messages"]:
        if m["role"] == "tool":
            read.append(("tool", m["tool_call_id"], m["content"], False))
        elif m["role"] == "assistant":
            read.append(("assistant", m["content"] or "", tuple(
                (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls", []))))
        else:
            read.append((m["role"], m["content"]))
    return read


def _openai_choice(body: dict[str, Any]) -> Any:
    choice = body.get("tool_choice")
    return ("named", choice["function"]["name"]) if isinstance(choice, dict) else choice


def _anthropic_read(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    read: list[tuple[Any, ...]] = [("system", body["system"])] if "system" in body else []
    for m in body["messages"]:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            read.append(("assistant", "".join(b["text"] for b in blocks if b["type"] == "text"),
                         tuple((b["name"], b["input"]) for b in blocks if b["type"] == "tool_use")))
            continue
        for b in blocks:
            read.append(("tool", b["tool_use_id"], b["content"], b.get("is_error", False))
                        if b["type"] == "tool_result" else ("user", b["text"]))
    return read


def _anthropic_choice(body: dict[str, Any]) -> Any:
    choice = body.get("tool_choice")
    if choice is None:
        return None
    return ("named", choice["name"]) if choice["type"] == "tool" else {"any": "required"}.get(choice["type"],
                                                                                              choice["type"])


def _bedrock_read(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    read: list[tuple[Any, ...]] = [("system", b["text"]) for b in body.get("system", [])]
    for m in body["messages"]:
        if m["role"] == "assistant":
            read.append(("assistant", "".join(b["text"] for b in m["content"] if "text" in b),
                         tuple((b["toolUse"]["name"], b["toolUse"]["input"]) for b in m["content"] if "toolUse" in b)))
            continue
        for b in m["content"]:
            if "toolResult" in b:
                result = b["toolResult"]
                read.append(("tool", result["toolUseId"], "".join(c["text"] for c in result["content"]),
                             result.get("status") == "error"))
            else:
                read.append(("user", b["text"]))
    return read


def _bedrock_choice(body: dict[str, Any]) -> Any:
    choice = (body.get("toolConfig") or {}).get("toolChoice")
    if choice is None:
        return None
    return ("named", choice["tool"]["name"]) if "tool" in choice else {"any": "required"}.get(*choice, *choice)


def _gemini_read(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    read: list[tuple[Any, ...]] = [("system", p["text"]) for p in body.get("systemInstruction", {}).get("parts", [])]
    for c in body["contents"]:
        if c["role"] == "model":
            read.append(("assistant", "".join(p.get("text", "") for p in c["parts"]),
                         tuple((p["functionCall"]["name"], p["functionCall"]["args"]) for p in c["parts"]
                               if "functionCall" in p)))
            continue
        for p in c["parts"]:
            if "functionResponse" in p:
                response = p["functionResponse"]["response"]
                read.append(("tool", p["functionResponse"]["name"], response.get("output", response.get("error")),
                             "error" in response))
            else:
                read.append(("user", p["text"]))
    return read


def _gemini_choice(body: dict[str, Any]) -> Any:
    config = (body.get("toolConfig") or {}).get("functionCallingConfig")
    if config is None:
        return None
    if config.get("allowedFunctionNames"):
        assert config["mode"] == "ANY"
        return ("named", *config["allowedFunctionNames"])
    return {"ANY": "required"}.get(config["mode"], config["mode"].lower())


def _ollama_read(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    read: list[tuple[Any, ...]] = []
    for m in body["messages"]:
        if m["role"] == "tool":
            read.append(("tool", m["tool_name"], m["content"], False))
        elif m["role"] == "assistant":
            read.append(("assistant", m["content"], tuple(
                (c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls", []))))
        else:
            read.append((m["role"], m["content"]))
    return read


def _function_tools(tools: list[dict[str, Any]]) -> list[tuple[str, str | None, Any]]:
    assert all(t["type"] == "function" for t in tools)
    return [(t["function"]["name"], t["function"].get("description"), t["function"]["parameters"]) for t in tools]


TOOL_WIRES = {
    "openai": ToolWire(_openai_read, lambda body: _function_tools(body.get("tools", [])), _openai_choice,
                       ids=True, errors=False, text_arguments=True),
    "ollama": ToolWire(_ollama_read, lambda body: _function_tools(body.get("tools", [])),
                       lambda body: body.get("tool_choice"), ids=False, errors=False, sends_choice=False),
    "anthropic": ToolWire(_anthropic_read, lambda body: [(t["name"], t.get("description"), t["input_schema"])
                                                         for t in body.get("tools", [])],
                          _anthropic_choice, ids=True, errors=True),
    "bedrock": ToolWire(_bedrock_read, lambda body: [
        (t["toolSpec"]["name"], t["toolSpec"].get("description"), t["toolSpec"]["inputSchema"]["json"])
        for t in (body.get("toolConfig") or {}).get("tools", [])], _bedrock_choice, ids=True, errors=True),
    # google-genai 3.6 writes the declaration's schema under its proto field name, parameters_json_schema; the API's
    # JSON (proto3 JSON) takes the field's original name as well as its lowerCamelCase one
    "gemini": ToolWire(_gemini_read, lambda body: [
        (d["name"], d.get("description"), d.get("parametersJsonSchema", d.get("parameters_json_schema")))
        for t in body.get("tools", []) for d in t["functionDeclarations"]], _gemini_choice, ids=False, errors=True),
}
TOOL_WIRES["azure"] = TOOL_WIRES["openai"]


def _sdk_types(provider: str) -> dict[str, Any]:
    """The request types of the provider's official SDK, where its client sends what it is given unchecked
    (botocore checks Converse's parameters against its service model itself, and google-genai builds the body
    from its own types): the body must validate against them."""
    from pydantic import TypeAdapter
    if provider in ("openai", "azure"):
        from openai.types import chat
        return {"messages": TypeAdapter(list[chat.ChatCompletionMessageParam]),
                "tools": TypeAdapter(list[chat.ChatCompletionToolUnionParam]),
                "tool_choice": TypeAdapter(chat.ChatCompletionToolChoiceOptionParam)}
    if provider == "anthropic":
        from anthropic import types
        return {"messages": TypeAdapter(list[types.MessageParam]), "tools": TypeAdapter(list[types.ToolParam]),
                "tool_choice": TypeAdapter(types.ToolChoiceParam)}
    return {}


def _conforms(provider: str, body: dict[str, Any]) -> None:
    for name, adapter in _sdk_types(provider).items():
        if name in body:
            # dumped, so that the SDK's Iterable fields (validated lazily) are read through
            adapter.dump_python(adapter.validate_python(body[name]), mode="json")


def tool_request(contract: Contract, **changes: Any) -> Request:
    return request_for(contract, **({"response_schema": None, "messages": CONVERSATION, "tools": (LOOKUP, CARRIER)}
                                    | changes))


def test_tools_and_a_conversation_with_calls_and_results_reach_the_server_in_its_shape(
        contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    provider_for(contract, server, monkeypatch).complete(tool_request(contract))

    body = only_call(server)  # the fake refuses what its API refuses: a result answering no call, a blank block ...
    wire = TOOL_WIRES[contract.provider]
    ref_a, ref_b = ("call_a", "call_b") if wire.ids else ("lookup_order", "carrier_status")
    assert wire.read(body) == [
        ("system", "You look orders up."), ("user", ASKED),
        ("assistant", "Looking it up.", (("lookup_order", {"order": "A-17"}), ("carrier_status", {"carrier": "DHL"}))),
        ("tool", ref_a, '{"status": "shipped"}', False),
        ("tool", ref_b, "carrier API timed out", wire.errors),
    ]
    assert wire.tools(body) == [("lookup_order", "Find an order by its number.", LOOKUP.parameters),
                                ("carrier_status", None, CARRIER.parameters)]
    assert wire.choice(body) is None  # the provider's default (auto) is not sent
    _conforms(contract.provider, body)


def test_a_plain_request_sends_nothing_of_tools(contract: Contract, server: FakeServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    provider_for(contract, server, monkeypatch).complete(request_for(contract, response_schema=None))
    body = only_call(server)
    assert TOOL_WIRES[contract.provider].tools(body) == []
    assert TOOL_WIRES[contract.provider].choice(body) is None
    assert "tool" not in json.dumps(body)


CHOICES: dict[str, Any] = {"auto": "auto", "none": "none", "required": "required",
                           "named": NamedTool(name="carrier_status")}


@pytest.mark.parametrize("kind", list(CHOICES))
def test_each_tool_choice_is_sent_or_refused_before_any_request(contract: Contract, kind: str, server: FakeServer,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    provider = provider_for(contract, server, monkeypatch)
    request = tool_request(contract, tool_choice=CHOICES[kind])
    if kind not in provider_spec(contract.provider).tool_choices:
        with pytest.raises(CallFailure) as refused:
            provider.complete(request)
        assert refused.value.retryable is False
        assert str(refused.value).startswith(f"{contract.model}: the {contract.provider} provider cannot send "
                                             f"tool_choice '{kind}'")
        assert server.requests == []
        return
    provider.complete(request)
    body = only_call(server)
    wire = TOOL_WIRES[contract.provider]
    assert wire.choice(body) == (("named", "carrier_status") if kind == "named" else kind if wire.sends_choice
                                 else None)
    _conforms(contract.provider, body)


def test_the_tool_choices_a_provider_claims_are_the_documented_ones() -> None:
    assert {name: provider_spec(name).tool_choices for name in provider_specs()} == {
        "openai": ("auto", "none", "required", "named"), "azure": ("auto", "none", "required", "named"),
        "anthropic": ("auto", "none", "required", "named"), "gemini": ("auto", "none", "required", "named"),
        "bedrock": ("auto", "required", "named"), "ollama": ("auto",), "llamacpp": ("auto", "none", "named")}


def calls_reply(body: dict[str, Any]) -> FakeReply:
    return FakeReply("Checking two things.", tool_calls=(
        FakeCall("lookup_order", {"order": "A-17"}), FakeCall("carrier_status", {"carrier": "DHL", "express": True})))


def test_the_models_tool_calls_come_back_as_tool_calls(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    request = tool_request(contract, messages=(Message(role="user", content=ASKED),))
    with contract.fake(calls_reply) as fake:
        provider = provider_for(contract, fake, monkeypatch)
        reply = provider.complete(request)
        again = provider.complete(request)

    assert [(c.tool, c.arguments) for c in reply.tool_calls] == [
        ("lookup_order", {"order": "A-17"}), ("carrier_status", {"carrier": "DHL", "express": True})]
    assert reply.text == "Checking two things."
    if TOOL_WIRES[contract.provider].ids:
        assert [c.id for c in reply.tool_calls] == ["call_fake0_0", "call_fake0_1"]  # the server's own
    else:  # made up, the same for the same request: a replay of the next step matches
        assert [c.id for c in reply.tool_calls] == [c.id for c in again.tool_calls] == ["call_0", "call_1"]
    assert contract_problems(reply) == []


# each of these applies to the providers whose wire format has the property, and only those are parametrized: under
# CI=true a skipped test fails
@pytest.mark.parametrize("contract", [c for c in CONTRACTS if not TOOL_WIRES[c.provider].ids], ids=str)
def test_made_up_ids_count_the_calls_the_conversation_already_holds(contract: Contract,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with contract.fake(calls_reply) as fake:
        reply = provider_for(contract, fake, monkeypatch).complete(tool_request(contract))
    assert [c.id for c in reply.tool_calls] == ["call_2", "call_3"]  # call_a and call_b came before


def test_a_server_given_id_is_kept(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    with contract.fake(lambda body: FakeReply("", tool_calls=(FakeCall("lookup_order", {"order": "B-2"},
                                                                       id="srv-7"),))) as fake:
        reply = provider_for(contract, fake, monkeypatch).complete(tool_request(contract))
    assert [(c.id, c.tool, c.arguments) for c in reply.tool_calls] == [("srv-7", "lookup_order", {"order": "B-2"})]
    assert not reply.text  # an assistant turn that only calls tools
    assert contract_problems(reply) == []


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if TOOL_WIRES[c.provider].text_arguments], ids=str)
def test_malformed_arguments_are_kept_as_text(contract: Contract, monkeypatch: pytest.MonkeyPatch) -> None:
    with contract.fake(lambda body: FakeReply("", tool_calls=(FakeCall("lookup_order", '{"order": "A-'),))) as fake:
        reply = provider_for(contract, fake, monkeypatch).complete(tool_request(contract))
    assert reply.tool_calls[0].arguments == '{"order": "A-'


def test_malformed_arguments_go_back_as_text_or_are_refused(contract: Contract, server: FakeServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    kept = (Message(role="user", content=ASKED),
            Message(role="assistant", content="", tool_calls=(ToolCall(id="c1", tool="lookup_order",
                                                                       arguments='{"order": "A-'),)),
            Message(role="tool", tool_call_id="c1", content="arguments are not JSON", error=True))
    provider = provider_for(contract, server, monkeypatch)
    if TOOL_WIRES[contract.provider].text_arguments:
        provider.complete(tool_request(contract, messages=kept))
        assert only_call(server)["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"order": "A-'
        return
    with pytest.raises(CallFailure, match=f"the {contract.provider} provider cannot send the arguments of tool call "
                                          "'c1': its wire format takes a JSON object") as refused:
        provider.complete(tool_request(contract, messages=kept))
    assert refused.value.retryable is False and server.requests == []


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if not TOOL_WIRES[c.provider].ids], ids=str)
def test_a_result_for_a_call_never_made_is_refused_where_results_go_by_name(contract: Contract, server: FakeServer,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    orphan = (Message(role="user", content=ASKED), Message(role="tool", tool_call_id="nobody", content="42"))
    with pytest.raises(CallFailure, match="the tool message for call 'nobody': no earlier assistant turn made a "
                                          "call with that id") as refused:
        provider_for(contract, server, monkeypatch).complete(tool_request(contract, messages=orphan))
    assert refused.value.retryable is False and server.requests == []


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c.provider in ("anthropic", "bedrock")], ids=str,
                         indirect=True)
def test_a_schema_beside_tools_is_refused_where_the_schema_is_a_forced_tool(contract: Contract, server: FakeServer,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CallFailure, match=f"the {contract.provider} provider cannot send response_schema with tools"):
        provider_for(contract, server, monkeypatch).complete(tool_request(contract, response_schema=SCHEMA))
    assert server.requests == []


def test_a_reply_with_tool_calls_records_and_replays_the_same(contract: Contract, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    request = tool_request(contract, tool_choice="auto")
    with contract.fake(calls_reply) as fake:
        live = provider_for(contract, fake, monkeypatch).complete(request)
    key = EvalKey(suite="s", dataset="d@1", dataset_sha="a", model=contract.model, prompt_version="v1",
                  prompt_sha="p")
    path = tmp_path / "recording.json"
    save_recording(Recording(key=key, provenance=Provenance(kind="recorded", note="test"), calls={
        "task/c1@1": Entry(request_sha=request_fingerprint(request), request=request, reply=live)}), path)

    found = lookup(load_recording(path, key), "task/c1@1", request)
    assert isinstance(found, Hit) and found.reply == live and found.reply.tool_calls == live.tool_calls
    changed = request.model_copy(update={"tools": (LOOKUP.model_copy(update={"description": "Find it."}), CARRIER)})
    stale = lookup(load_recording(path, key), "task/c1@1", changed)
    assert isinstance(stale, Miss) and stale.kind == "stale" and "tools[0].description" in stale.reason


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c.provider == "gemini"], ids=str, indirect=True)
def test_a_gemini_call_signature_comes_back_and_goes_out_with_its_call(contract: Contract,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini 3 signs its calls (`thoughtSignature`) and refuses a later turn whose call lacks the signature."""
    raw = b"\x00opaque-reasoning-state\xff"
    signed = base64.b64encode(raw).decode()
    with contract.fake(lambda body: FakeReply("", tool_calls=(FakeCall("lookup_order", {"order": "A-17"},
                                                                       signature=signed),))) as fake:
        provider = provider_for(contract, fake, monkeypatch)
        reply = provider.complete(tool_request(contract, messages=(Message(role="user", content=ASKED),)))
        assert [(c.tool, c.signature) for c in reply.tool_calls] == [("lookup_order", signed)]
        provider.complete(tool_request(contract, messages=(
            Message(role="user", content=ASKED), reply.as_message(),
            Message(role="tool", tool_call_id=reply.tool_calls[0].id, content="shipped"))))
        sent = fake.chat_requests[1].body["contents"][1]["parts"][0]
    # the client writes bytes in URL-safe base64, which the API's JSON reads as well as the standard alphabet
    assert sent["functionCall"]["name"] == "lookup_order"
    assert base64.urlsafe_b64decode(sent["thoughtSignature"]) == raw
    # another provider's call has none, and its dump is as before the field existed
    assert "signature" not in ToolCall(id="c", tool="t").model_dump(mode="json")


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c.provider == "gemini"], ids=str, indirect=True)
def test_a_signature_that_is_not_base64_is_refused(contract: Contract, server: FakeServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    edited = (Message(role="user", content=ASKED), Message(role="assistant", content="", tool_calls=(
        ToolCall(id="c1", tool="lookup_order", arguments={}, signature="not base64!"),)))
    with pytest.raises(CallFailure, match="cannot send the signature of tool call 'c1': it is not base64"):
        provider_for(contract, server, monkeypatch).complete(tool_request(contract, messages=edited))
    assert server.requests == []


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c.provider == "anthropic"], ids=str, indirect=True)
def test_anthropic_thinking_beside_earlier_calls_is_refused_not_sent_without_its_blocks(
        contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    thinking = {**dict(contract.options), "thinking": {"type": "enabled", "budget_tokens": 1024}}
    provider = provider_for(contract, server, monkeypatch)
    with pytest.raises(CallFailure, match="cannot send options.thinking in a conversation with tool calls"):
        provider.complete(tool_request(contract, options=thinking))
    assert server.requests == []
    provider.complete(tool_request(contract, options=thinking, messages=(Message(role="user", content=ASKED),)))
    assert only_call(server)["thinking"] == {"type": "enabled", "budget_tokens": 1024}  # a first step is fine


class _Echo:
    """A provider written before tools existed: it sends the last message's text and knows nothing of tools."""

    def __init__(self, config: ModelConfig) -> None:
        self.calls = 0

    def complete(self, request: Request) -> Reply:
        self.calls += 1
        return Reply(text=request.messages[-1].text, stop_reason="stop")

    def describe(self) -> dict[str, Any]:
        return {"provider": "echo"}


def test_a_provider_that_declares_no_tool_choices_is_kept_from_requests_with_tools(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import evalkit.live.providers as providers

    monkeypatch.setattr(providers, "provider_spec", lambda name: ProviderSpec(name="echo", factory=_Echo,
                                                                               stop_reasons={"stop": "finished"}))
    provider = make_provider(ModelConfig(name="echo-1", provider="openai"))
    plain = Request(model="echo-1", messages=(Message(role="user", content=ASKED),))
    assert provider.complete(plain).text == ASKED
    assert provider.describe() == {"provider": "echo"}  # type: ignore[attr-defined]
    for request in (plain.model_copy(update={"tools": (LOOKUP,)}), plain.model_copy(update={"tool_choice": "none"}),
                    Request(model="echo-1", messages=CONVERSATION)):
        with pytest.raises(CallFailure, match="echo-1: the echo provider cannot send tools, tool calls or tool "
                                              "results: its spec declares no tool_choices") as refused:
            provider.complete(request)
        assert refused.value.retryable is False
    assert provider.calls == 1  # type: ignore[attr-defined]


# -- images (issue 39 item 3): each provider's wire format, round-tripped through its fake server ----------------------

def tiny_png(red: int = 200) -> bytes:
    """A valid 2x2 RGB PNG, written by hand (zlib and CRCs), so the tests need no imaging library."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes([red, 10, 20]) * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _image_part(tmp_path: Path, data: bytes) -> ImagePart:
    import hashlib
    (tmp_path / "receipt.png").write_bytes(data)
    return ImagePart(media_type="image/png", sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                     path="receipt.png").located(tmp_path / "receipt.png")


def _sent_image(provider: str, body: dict[str, Any]) -> tuple[str, str, bytes]:
    """(the text before the image, its media type, its bytes) as the provider's server received them."""
    if provider in ("openai", "azure"):
        text, image = body["messages"][-1]["content"]
        assert text["type"] == "text" and image["type"] == "image_url"
        head, _, data = image["image_url"]["url"].partition(",")
        assert head.startswith("data:") and head.endswith(";base64")
        return text["text"], head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data)
    if provider == "anthropic":
        text, image = body["messages"][-1]["content"]
        assert image["type"] == "image" and image["source"]["type"] == "base64"
        return text["text"], image["source"]["media_type"], base64.b64decode(image["source"]["data"])
    if provider == "bedrock":
        text, image = body["messages"][-1]["content"]
        return text["text"], "image/" + image["image"]["format"], base64.b64decode(image["image"]["source"]["bytes"])
    if provider == "gemini":
        text, image = body["contents"][-1]["parts"]
        inline = image.get("inlineData", image.get("inline_data"))
        return text["text"], inline.get("mimeType", inline.get("mime_type")), base64.b64decode(inline["data"])
    assert provider == "ollama"
    message = body["messages"][-1]
    (image,) = message["images"]
    return message["content"], "image/png", base64.b64decode(image)


def test_an_image_part_reaches_each_server_in_its_wire_format_with_its_exact_bytes(
        contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = tiny_png()
    part = _image_part(tmp_path, data)
    request = request_for(contract, response_schema=None, messages=(
        Message(role="system", content=SYSTEM),
        Message(role="user", content=(TextPart(text="What is the total?"), part))))
    reply = provider_for(contract, server, monkeypatch).complete(request)

    assert reply.text == CONTENT
    assert _sent_image(contract.provider, only_call(server)) == ("What is the total?", "image/png", data)
    _conforms(contract.provider, only_call(server))
    # what a recording keeps of the request: the hash and the size, never the bytes
    dumped = json.dumps(request.model_dump(mode="json"))
    assert part.sha256 in dumped and base64.b64encode(data).decode() not in dumped


def test_an_image_changed_after_the_dataset_was_read_is_refused_not_sent(
        contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    part = _image_part(tmp_path, tiny_png())
    (tmp_path / "receipt.png").write_bytes(tiny_png(red=201))  # one pixel's worth of change
    request = request_for(contract, response_schema=None,
                          messages=(Message(role="user", content=(TextPart(text="Total?"), part)),))
    with pytest.raises(InputError, match="image receipt.png: the file changed since the dataset was read"):
        provider_for(contract, server, monkeypatch).complete(request)
    assert server.chat_requests == []


def test_a_provider_that_takes_no_images_refuses_a_request_with_one_before_sending(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import evalkit.live.providers as providers

    monkeypatch.setattr(providers, "provider_spec", lambda name: ProviderSpec(
        name="echo", factory=_Echo, stop_reasons={"stop": "finished"}, tool_choices=("auto",)))
    provider = make_provider(ModelConfig(name="echo-1", provider="openai"))
    part = _image_part(tmp_path, tiny_png())
    with pytest.raises(CallFailure, match="echo-1: the echo provider cannot send the image part 'receipt.png': "
                                          "it takes no image") as refused:
        provider.complete(Request(model="echo-1", messages=(Message(role="user", content=(part,)),)))
    assert refused.value.retryable is False
    assert provider.calls == 0  # type: ignore[attr-defined]


def test_the_providers_that_claim_images_and_audio_are_the_documented_ones() -> None:
    takes = {spec.name for spec in provider_specs().values() if "image" in spec.media}
    assert takes == {"openai", "azure", "anthropic", "gemini", "bedrock", "ollama"}
    assert {spec.name for spec in provider_specs().values() if "audio" in spec.media} == {"openai", "gemini"}
    assert provider_spec("llamacpp").media == ()


def tiny_wav() -> bytes:
    """A valid 8-bit mono WAV file of four samples."""
    import struct
    data = bytes([128, 140, 128, 116])
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _sent_audio(provider: str, body: dict[str, Any]) -> tuple[str, str, bytes]:
    """(the text before the audio, its format as the wire names it, its bytes) as the server received them."""
    if provider == "openai":
        text, audio = body["messages"][-1]["content"]
        assert text["type"] == "text" and audio["type"] == "input_audio"
        return text["text"], audio["input_audio"]["format"], base64.b64decode(audio["input_audio"]["data"])
    assert provider == "gemini"
    text, audio = body["contents"][-1]["parts"]
    inline = audio.get("inlineData", audio.get("inline_data"))
    return text["text"], inline.get("mimeType", inline.get("mime_type")), base64.b64decode(inline["data"])


def test_an_audio_part_reaches_the_servers_that_take_audio_and_is_refused_by_the_others(
        contract: Contract, server: FakeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import hashlib
    data = tiny_wav()
    (tmp_path / "note.wav").write_bytes(data)
    part = AudioPart(media_type="audio/wav", sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                     path="notes/note.wav").located(tmp_path / "note.wav")
    request = request_for(contract, response_schema=None, messages=(
        Message(role="user", content=(TextPart(text="What does the caller ask?"), part)),))
    provider = provider_for(contract, server, monkeypatch)
    if "audio" not in provider_spec(contract.provider).media:
        with pytest.raises(CallFailure, match=f"the {contract.provider} provider cannot send the audio part "
                                              "'notes/note.wav': it takes no audio"):
            provider.complete(request)
        assert server.chat_requests == []
        return
    assert provider.complete(request).text == CONTENT
    wire_format = "wav" if contract.provider == "openai" else "audio/wav"
    assert _sent_audio(contract.provider, only_call(server)) == ("What does the caller ask?", wire_format, data)
    _conforms(contract.provider, only_call(server))
