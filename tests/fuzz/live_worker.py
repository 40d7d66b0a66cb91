"""The live-exchange fuzz harness's child: reads one request per line on stdin (`{"provider": NAME, "path": FILE}`),
makes one call through that provider whose reply is FILE's bytes, and answers one line on stdout: `{"outcome":
"result"}` (a Reply), `{"outcome": "refused", "line": ...}` (a CallFailure: what a live run prints as its outage
line) or `{"outcome": "crash", "error": ...}`.

The bytes come through the transport every provider's calls go through (evalkit.live.providers.jsonhttp
`Connections.exchange`, replaced here by one exchange over a socket that hands out FILE's bytes), so what is
fuzzed is the whole way in: HTTP/1.1 framing (evalkit.live.providers.http1), the transport's refusals, the client
library's reading of the body and the provider's mapping of it. It runs under a memory limit set by the parent
(tests/fuzz/test_live_exchange.py), which also bounds each call's time."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

CAP = 2**20
"""`max_reply_bytes` of every provider here: 1 MiB, so a reply that grows past it is refused quickly."""
MODELS = {"ollama": "m", "openai": "m", "azure": "m", "anthropic": "m", "gemini": "m",
          "bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0"}
SETTINGS: dict[str, dict[str, Any]] = {"azure": {"deployment": "d", "api_version": "2024-10-21"},
                                       "anthropic": {"options": {"max_tokens": 64}}, "bedrock": {"region": "us-east-1"}}


class _Scripted:
    """A connected socket whose peer has sent `data` and then closed the connection."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)

    def recv(self, size: int) -> bytes:
        piece, self._data = bytes(self._data[:size]), self._data[size:]
        return piece

    def settimeout(self, seconds: float) -> None:
        pass


def main() -> None:
    os.environ.update({"EVALKIT_FUZZ_KEY": "fuzz-key", "AWS_ACCESS_KEY_ID": "AKIAFUZZKEYID0000001",
                       "AWS_SECRET_ACCESS_KEY": "fuzz-secret", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                       "AWS_CONFIG_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"})
    from evalkit.core.config import ModelConfig
    from evalkit.live.providers import Message, Request, make_provider
    from evalkit.live.providers.base import CallFailure
    from evalkit.live.providers.http1 import Exchange
    from evalkit.live.providers.jsonhttp import Connections

    reply = {"data": b""}

    def exchange(self: Connections, head: bytes, body: bytes) -> Any:
        return Exchange(_Scripted(reply["data"]), CAP).reply(time.monotonic() + 10)

    Connections.exchange = exchange  # type: ignore[method-assign]
    providers = {}
    for name, model in MODELS.items():
        settings = SETTINGS.get(name, {})
        config = ModelConfig(name=model, provider=name, base_url="http://127.0.0.1:9", timeout_s=10,
                             max_reply_bytes=CAP, api_key_env=None if name == "bedrock" else "EVALKIT_FUZZ_KEY",
                             **settings)
        providers[name] = (make_provider(config), Request(model=model, options=settings.get("options", {}),
                                                           messages=(Message(role="user", content="hi"),)))
    print(json.dumps({"outcome": "ready"}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        provider, request = providers[ask["provider"]]
        reply["data"] = Path(ask["path"]).read_bytes()
        try:
            provider.complete(request)
            answer = {"outcome": "result"}
        except CallFailure as failure:
            answer = {"outcome": "refused", "line": str(failure)}
        except BaseException as error:  # noqa: BLE001  (every other end is what the harness looks for)
            answer = {"outcome": "crash", "error": f"{type(error).__name__}: {error}"[:2000],
                      "traceback": traceback.format_exc()[-4000:]}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
