"""evalkit.live.providers.sdkwire: the vendors' client libraries sending through evalkit's own transport.

What every provider does with it (deadlines, the reply cap, redirects, encodings, TLS) is under contract in
test_provider_contract.py and test_live_faults.py; here: what the transport itself adds for a client library. It
sends only to the configured server, takes proxies from the environment as urllib reads them (as the Ollama
provider's transport, not as httpx would), never reads ~/.netrc, and passes the client's own headers through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fakes import FakeOpenAI
from helpers.serving import serving

from evalkit.core.config import ModelConfig
from evalkit.live.providers import Message, Request, make_provider
from evalkit.live.providers.base import CallFailure
from evalkit.live.providers.jsonhttp import Bounds
from evalkit.live.providers.sdkwire import httpx_client, httpx_module

KEY_ENV = "EVALKIT_TEST_SDKWIRE_KEY"
REQUEST = Request(model="m", messages=(Message(role="user", content="say ok"),))
BOUNDS = Bounds("m", "http://127.0.0.1:9/v1", 5.0, 2**20)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(KEY_ENV, "sdkwire-key-not-a-secret")


def test_the_httpx_a_client_library_is_built_on_is_the_one_its_client_class_names() -> None:
    import openai

    assert httpx_module(openai.DefaultHttpxClient) is httpx2
    assert httpx_module() is httpx2  # where the library does not say: httpx2 where installed


def test_a_request_for_another_server_is_not_sent() -> None:
    with FakeOpenAI(lambda body: "ok") as server:
        client = httpx_client(httpx2, server.base_url, BOUNDS)
        with pytest.raises(CallFailure, match=r"the client asked for http://elsewhere\.invalid/v1/x, not ") as raised:
            client.post("http://elsewhere.invalid/v1/x", content=b"{}")
        for other in (server.url.replace("http:", "https:"), f"http://localhost:{server.port}"):
            with pytest.raises(CallFailure, match="evalkit sends a call only to model.base_url"):
                client.post(other + "/v1/chat/completions", content=b"{}")
        assert server.requests == []
    assert raised.value.retryable is False


def test_a_botocore_request_for_another_server_is_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    import ssl

    from botocore.awsrequest import AWSPreparedRequest

    from evalkit.live.providers.sdkwire import send_with

    handlers: list[Any] = []

    class Events:
        def register(self, name: str, handler: Any, unique_id: str) -> None:
            handlers.append(handler)

    class Meta:
        endpoint_url = "http://127.0.0.1:9"
        events = Events()

        class service_model:  # noqa: N801 (botocore's attribute)
            class service_id:  # noqa: N801
                @staticmethod
                def hyphenize() -> str:
                    return "bedrock-runtime"

    class Client:
        meta = Meta()

    send_with(Client(), BOUNDS, ssl.create_default_context())
    request = AWSPreparedRequest("POST", "http://elsewhere.invalid/model/x/converse", {}, b"{}", False)
    with pytest.raises(CallFailure, match="evalkit sends a call only to model.base_url"):
        handlers[0](request=request)


def test_the_client_s_headers_go_through_with_the_host_and_no_compression() -> None:
    with FakeOpenAI(lambda body: "ok") as server:
        provider = make_provider(ModelConfig(name="m", provider="openai", base_url=server.base_url,
                                             api_key_env=KEY_ENV))
        assert provider.complete(REQUEST).text == "ok"
        sent, port = server.chat_requests[0].headers, server.port
    assert sent["authorization"] == "Bearer sdkwire-key-not-a-secret"
    assert sent["host"] == f"127.0.0.1:{port}"
    assert sent["accept-encoding"] == "identity"
    assert sent["user-agent"].startswith("OpenAI/Python")
    assert sent["content-type"] == "application/json"
    assert "x-stainless-retry-count" in sent  # the library's own headers, as it sent them


def test_netrc_is_never_read(tmp_path: Path) -> None:
    """httpx adds an Authorization header from ~/.netrc for a request without one; evalkit's client does not."""
    (tmp_path / ".netrc").write_text("default login someone password netrc-password-leaked\n", encoding="utf-8")
    (tmp_path / ".netrc").chmod(0o600)
    with FakeOpenAI(lambda body: "ok") as server:
        client = httpx_client(httpx2, server.base_url, BOUNDS)
        assert client.trust_env is False
        client.post(server.base_url + "/chat/completions",
                    content=json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode())
        assert "authorization" not in server.requests[0].headers


class _Proxy(BaseHTTPRequestHandler):
    """A plain HTTP proxy that answers every request itself with a chat completion, keeping what it was sent."""

    seen: list[tuple[str, str | None]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append((self.path, self.headers.get("Proxy-Authorization")))
        reply = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "via proxy"}, "finish_reason": "stop"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[str]:
    _Proxy.seen = []
    with serving(_Proxy) as address:
        yield address


def test_the_environment_s_proxy_is_used_with_its_credentials(proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", f"http://user:p%40ss@{proxy}")
    provider = make_provider(ModelConfig(name="m", provider="openai", base_url="http://llm.invalid:8000/v1"))
    assert provider.complete(REQUEST).text == "via proxy"
    assert _Proxy.seen == [("http://llm.invalid:8000/v1/chat/completions", "Basic dXNlcjpwQHNz")]  # user:p@ss


def test_no_proxy_is_honoured(proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", f"http://{proxy}")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    with FakeOpenAI(lambda body: "direct") as server:
        provider = make_provider(ModelConfig(name="m", provider="openai", base_url=server.base_url))
        assert provider.complete(REQUEST).text == "direct"
    assert _Proxy.seen == []


def test_a_credential_that_could_split_the_request_is_refused_unsent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sdkwire-key\r\nX-Injected: 1")
    with FakeOpenAI(lambda body: "ok") as server:
        provider = make_provider(ModelConfig(name="m", provider="openai", base_url=server.base_url,
                                             api_key_env=KEY_ENV))
        with pytest.raises(CallFailure, match="(?i)the value of the authorization header holds a line break") as raised:
            provider.complete(REQUEST)
        assert server.requests == []
    assert raised.value.retryable is False and "X-Injected" not in str(raised.value)
