"""One live call through one provider, as a child process: what the fault-injection tests run under an address-space
and a wall-clock limit (tests/helpers/bounded.py), so that a hang or a blowup fails the test instead of the machine.

    python -m tests.helpers.one_call '{"provider": "openai", "url": "http://127.0.0.1:PORT", "timeout_s": 2}'

It builds the provider as a run would (evalkit.live.providers.make_provider, from a ModelConfig), sends one request
and prints one JSON line: `{"outcome": "reply", "text": ...}` or `{"outcome": "failure", "retryable", "status",
"message"}` (a CallFailure, the provider contract's only failure), with `elapsed_s`, the call's own time. Anything
else that escapes the call (a bug, an OverflowError, a MemoryError) is the outcome `crash`."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

KEY_ENV = "EVALKIT_TEST_FAULT_KEY"
FAKE_KEY = "fault-key-not-a-secret-5150"
PROVIDERS: dict[str, dict[str, Any]] = {
    "ollama": {"name": "gemma4:e2b", "base_path": ""},
    "openai": {"name": "qwen3-8b", "base_path": "/v1"},
    "azure": {"name": "gpt-4o", "base_path": "", "deployment": "triage-prod", "api_version": "2024-10-21"},
    "anthropic": {"name": "claude-sonnet-5", "base_path": "", "options": {"max_tokens": 64}},
    "gemini": {"name": "gemini-3.8-flash", "base_path": ""},
    "bedrock": {"name": "anthropic.claude-3-5-haiku-20241022-v1:0", "base_path": "", "region": "us-east-1",
                "key_env": "AWS_SECRET_ACCESS_KEY"},
}
"""What each provider needs beyond its URL: the model, the path its base URL adds, its own settings."""


def child_env() -> dict[str, str]:
    """The child's environment: the test key where each provider looks for it, and nothing a client would read to
    go elsewhere (proxies, other hosts, machine credentials)."""
    keep = {"PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "TMPDIR", "SYSTEMROOT", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update({KEY_ENV: FAKE_KEY, "AWS_ACCESS_KEY_ID": "AKIAFAULTKEYID000001", "AWS_SECRET_ACCESS_KEY": FAKE_KEY,
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials", "AWS_CONFIG_FILE": "/nonexistent/config",
                "AWS_EC2_METADATA_DISABLED": "true", "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    from evalkit.core.config import ModelConfig
    from evalkit.live.providers import Message, Request, make_provider
    from evalkit.live.providers.base import CallFailure

    known = PROVIDERS[spec["provider"]]
    settings = {k: v for k, v in known.items() if k in ("deployment", "api_version", "region")}
    key_env = known.get("key_env", KEY_ENV)
    config = ModelConfig(name=known["name"], provider=spec["provider"], base_url=spec["url"] + known["base_path"],
                         api_key_env=KEY_ENV if key_env == KEY_ENV else None, timeout_s=spec["timeout_s"],
                         options=known.get("options", {}), **settings, **spec.get("settings", {}))
    provider = make_provider(config)
    request = Request(model=known["name"], messages=(Message(role="user", content="say ok"),),
                      options=known.get("options", {}))
    started = time.monotonic()
    try:
        reply = provider.complete(request)
        answer: dict[str, Any] = {"outcome": "reply", "text": reply.text}
    except CallFailure as failure:
        answer = {"outcome": "failure", "retryable": failure.retryable, "status": failure.status,
                  "message": str(failure)}
    except BaseException as error:  # noqa: BLE001  (what the fault tests look for)
        answer = {"outcome": "crash", "error": f"{type(error).__name__}: {error}"[:2000]}
    answer["elapsed_s"] = round(time.monotonic() - started, 3)
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
