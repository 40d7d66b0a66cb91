"""The run report's format, as one typed model: what evalkit adds to a pytest-json-report file.

A run report is pytest-json-report's file (its tests, summary, exit code and collectors, which pytest-json-report
defines) with evalkit's eval block beside them: the eval key, provenance, the cases, pass rates, metrics and the
optional sections below. evalkit.run.eval_block writes it; evalkit.records.report_reader reads it, on its fast path
through the same definitions (`Repeats`) and on its careful path through `check_repeats`, so the two readers cannot
drift apart on what a valid block is. The JSON Schema published in docs/reference/schemas.md is generated from here.

The format is versioned by its `format` field. Version 1 is the first that carried one; a pytest-json-report file
that names no format is read as a hand-made report of an existing pytest suite (an `eval` block added in
`pytest_json_modifyreport`), never refused for lacking evalkit's sections. A report naming a format this evalkit
does not know (written by a newer one) is refused, naming the versions it reads.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

__all__ = ["FORMAT", "FORMATS", "CaseEntry", "CaseRepeats", "Classification", "Cost", "Denied", "Execution",
           "JudgeFlip", "JudgedCheck", "Latency", "Live", "MetricSummary", "Pace", "Repeats", "RunReportFormat",
           "SelfAgreementBlock", "Sequential", "Spread", "TestEntry", "Text", "check_repeats", "read_execution",
           "run_report_schema"]

FORMAT: Final = "evalkit-run-report/1"
FORMATS: Final = (FORMAT,)
"""Every run report format this evalkit reads."""


class Repeats(msgspec.Struct):
    """A repeated test's samples: `passed` of `runs` passed; `not_passed` names the samples that did not; `reduce`
    names the reducer the test's outcome followed (evalkit.core.reducer; `all` in reports from before reducers)."""

    passed: int
    runs: int
    not_passed: list[int] = []
    reduce: str = "all"

    def __post_init__(self) -> None:
        if self.runs < 1 or not 0 <= self.passed <= self.runs:
            raise ValueError(f"{self.passed} of {self.runs} samples: need 0 <= passed <= runs and runs >= 1")


class TestEntry(msgspec.Struct):
    """One test as pytest-json-report writes it (its stages and line kept as they are), with the case it ran over
    and, for a repeated test, its samples' counts."""

    __test__ = False  # a model, not a pytest test class

    nodeid: str
    outcome: str
    case: str | None = None
    repeats: Repeats | None = None


class MetricSummary(msgspec.Struct, forbid_unknown_fields=True):
    """A run-level metric: the mean over the cases that measured it (None when none could), and how many did."""

    mean: float | None
    count: int
    unmeasured: int


class CaseRepeats(msgspec.Struct, forbid_unknown_fields=True):
    """In how many of the run's samples the case passed."""

    passed: int
    runs: int


class CaseEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One case of the run: its checks' outcomes, its calls' statuses, what went wrong, its input and output (cut
    to 2,000 characters each), its metrics, and for program suites the program's run and the grade."""

    id: str
    status: Literal["scored", "unscored"]
    checks: dict[str, str]
    calls: dict[str, str]
    problems: list[str]
    passed: bool
    metrics: dict[str, float | None]
    input: Any = None
    output: str | None = None
    """The task reply (sample 0's with repeats), cut to 2,000 characters."""
    outputs: list[str | None] = []
    """With repeats: every sample's task reply in sample order (sample 0 first, as `output`), each cut like it."""
    judge_replies: dict[str, str | None] = {}
    repeats: CaseRepeats | None = None
    group: Any = None
    program: dict[str, object] | None = None
    grade: dict[str, object] | None = None


class Classification(msgspec.Struct, forbid_unknown_fields=True):
    """A classification check's labels and confusion matrix (expected -> predicted -> cases)."""

    labels: list[str]
    confusion: dict[str, dict[str, int]]
    cases: int
    pairs: dict[str, tuple[str, str | None]] = {}
    """case id -> [expected label, predicted label or null]: what the gate pairs with the baseline's cases for the
    metrics' intervals (absent in reports written before)."""


class SelfAgreementBlock(msgspec.Struct, forbid_unknown_fields=True):
    """A judged check's agreement with itself over replies it judged K > 1 times (evalkit.judging.agreement)."""

    repeats: int
    replies: int
    """Replies whose K answers each held a verdict."""
    agreeing: int
    """Replies whose K verdicts were the same level."""
    agreement: float | None
    fleiss_kappa: float | None
    """Fleiss' kappa over the levels the judge gave; null where every verdict was one level."""
    levels: list[str]
    unread: int = 0
    """Replies left out: an answer among their K held no verdict."""


class JudgeFlip(msgspec.Struct, forbid_unknown_fields=True):
    """A case whose judged check both passed and failed one reply over the judge's own repeats."""

    case: str
    test: str
    """The check's test id (`checks.yaml::faithful[refund]`)."""
    samples: list[int]
    """The samples (`run.repeats`) whose reply the judge flipped on."""
    verdicts: dict[str, list[str | None]]
    """Sample -> the verdict of each repeat, as the judge wrote it."""


class JudgedCheck(msgspec.Struct, forbid_unknown_fields=True):
    """A judged declared check (llm-rubric, faithfulness, answer-relevancy, g-eval, pairwise): how often the judge
    judged each reply, every reply's verdicts, its self-agreement and its flips."""

    kind: str
    repeats: int
    """`judge.repeats`: how many times the judge judged each reply."""
    self_agreement: SelfAgreementBlock | None
    """Null with one repeat: the judge was not asked twice."""
    flips: list[JudgeFlip]
    verdicts: dict[str, dict[str, list[str | None]]]
    """Case id -> sample -> the verdict of each repeat (`score 4`, `pass`, `win`; null: an answer without one)."""
    passed: dict[str, dict[str, list[bool]]] = {}
    """Case id -> sample -> whether each repeat's verdict passed the reply (what `evalkit calibrate` sets against
    pass/fail labels)."""


class Text(msgspec.Struct, forbid_unknown_fields=True):
    """A text the run measured (its prompt, a candidate program): its version and file, the SHA-256 of the whole
    text, the text itself up to 20,000 characters and how many were cut."""

    version: str | None
    path: str
    sha256: str
    text: str
    cut: int = 0


class Sequential(msgspec.Struct, forbid_unknown_fields=True):
    """A run that sampled in rounds (`run.repeats=auto`, evalkit.run.rounds): its settings, how many samples each
    case took and where each repeated test stood when sampling stopped. The gate decides such a run with the
    sequential test (evalkit.gate.sequential_rule), whatever baseline it is gated against."""

    max_repeats: int
    batch: int
    """Samples per round: sample i of a case was taken in round i // batch."""
    delta: float
    futility: float
    alpha: float
    """The policy's `repeats.alpha` the rounds stopped at (a gate under another alpha decides at its own)."""
    baseline: str | None
    """The baseline report whose recorded samples the rounds compared against; None: there was none, and every
    case took `run.pool_repeats` samples (the pool for later runs)."""
    rounds: int
    samples: dict[str, int]
    """Case id -> the samples it took."""
    verdicts: dict[str, str] = {}
    """Repeated test -> `regressed`, `no_worse`, `open` (sampled up to max_repeats) or `new` (not in the
    baseline), against that baseline when sampling stopped."""


# The execution section (evalkit.run.execute writes it; a program suite's runner writes `programs`, `budget` and its
# model calls' own section as `calls`). Every field is optional: reports written before a section existed, and
# hand-made or adapted ones, read as they always did; a field a reader finds absent is None, never 0, so nothing
# unmeasured reads as measured. The writer still writes plain dicts; omit_defaults makes a section read here and
# written again (msgspec.to_builtins) hold the keys it was read with.


class Cost(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """`execution.cost`: calls and tokens of the model under test (task calls), of the judge and of a simulated
    user apart, from the provider's usage where it reported some and estimated (characters / 4) where not."""

    model_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    estimated_calls: dict[str, int] | None = None
    """Token kind (`input_tokens`, `output_tokens`) -> the model's calls whose count was estimated."""
    judge_calls: int | None = None
    judge_input_tokens: int | None = None
    judge_output_tokens: int | None = None
    simulator_calls: int | None = None
    """Present only where a simulated user (evalkit.run.conversation) made calls."""
    simulator_input_tokens: int | None = None
    simulator_output_tokens: int | None = None


class Spread(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """Mean and 95th percentile of some calls' milliseconds."""

    calls: int | None = None
    mean_ms: int | float | None = None
    p95_ms: int | float | None = None
    """One call's own figure (the percentile is taken, not interpolated): an integer where the replies' were."""


class Pace(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A live wave's wall time per call and the mean number of calls in flight (Little's law)."""

    calls: int | None = None
    seconds: float | None = None
    concurrency: int | None = None
    ms_per_call: float | None = None
    in_flight_mean: float | None = None


class Latency(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """`execution.latency`: per-call times in flight where known (`recorded_calls` of them from a recording), and
    where measured the server's own time, the wait for a concurrency slot and the pace."""

    measured_calls: int | None = None
    mean_ms: int | float | None = None
    p95_ms: int | float | None = None
    recorded_calls: int | None = None
    service: Spread | None = None
    wait: Spread | None = None
    pace: Pace | None = None


class Denied(msgspec.Struct, kw_only=True, frozen=True):
    """The calls the budget denied before they were sent, and the first one's reason."""

    calls: int
    first: str


class Live(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """`execution.live`: how a live run's calls went (absent in a replay): sent, retried, wall and CPU seconds, the
    budget spent (evalkit.live.budget's summary) and the calls it denied."""

    sent: int | None = None
    retried: int | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None
    budget: dict[str, object] = {}
    """evalkit.live.budget.Budget.summary(): calls, tokens, cost, usd, unknown_usage_calls, kept_reservations."""
    denied: Denied | None = None


class Execution(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A run report's `execution` section: call statistics, cost, latency, money, live figures and budget."""

    calls: dict[str, object] = {}
    """Call status (`replayed`, `recorded`, `budget_denied` ...) -> calls; in a candidate-program run, the
    execution section of the model calls its programs made through evalkit's endpoint."""
    cost: Cost | None = None
    latency: Latency | None = None
    money: dict[str, object] | None = None
    """The cost in money (evalkit.core.money.money_section): per call, case, side and run, with each side's price."""
    live: Live | None = None
    agent: dict[str, object] | None = None
    """An agent suite's loop in figures (evalkit.run.execute.agent_section)."""
    programs: dict[str, int] | None = None
    """A candidate-program run: program status -> cases."""
    budget: dict[str, object] | None = None
    """A candidate-program run: its unit budget's summary (evalkit.live.budget)."""


def read_execution(section: object) -> Execution:
    """A report's execution section (a JSON object, or absent) as its model; ValueError, worded, when it is not."""
    try:
        return msgspec.convert(section if section is not None else {}, Execution)
    except msgspec.ValidationError as error:
        raise ValueError(str(error).replace("`$", "`execution")) from None


class RunReportFormat(msgspec.Struct, kw_only=True):
    """A run report as evalkit writes it: pytest-json-report's fields (kept as they are) and the eval block."""

    format: Literal["evalkit-run-report/1"]
    eval: dict[str, object]
    """The eval key, with the settings its fingerprints cover."""
    provenance: dict[str, object]
    tests: list[TestEntry]
    cases: list[CaseEntry]
    pass_rate: float | None
    metrics: dict[str, MetricSummary]
    critical_checks: list[str] = []
    classification: dict[str, Classification] = {}
    judges: dict[str, JudgedCheck] = {}
    """Per judged declared check: the judge's repeats, verdicts, self-agreement and flips."""
    slices: dict[str, dict[str, object]] = {}
    execution: Execution = msgspec.field(default_factory=Execution)
    """Call statistics, latency, cost and budget sections."""
    dataset: dict[str, object] = {}
    candidate: dict[str, object] = {}
    texts: dict[str, Text] = {}
    """The texts the run measured, by what they are (`prompt`, `program`), for the diff a reviewer reads."""
    media: dict[str, list[dict[str, object]]] = {}
    """Per case with images (dataset.images): each image's field, media type, SHA-256, size, path relative to the
    dataset, and thumbnail (a `data:` URI, or null with `why`)."""
    sequential: Sequential | None = None
    """Present when the run sampled in rounds (`run.repeats=auto`)."""
    exitcode: int | None = None
    summary: dict[str, object] = {}


def check_repeats(block: Any) -> Repeats:
    """A test's `repeats` block read through the model; ValueError (msgspec's, worded) when it is not one."""
    try:
        return msgspec.convert(block, Repeats)
    except msgspec.ValidationError as error:
        raise ValueError(str(error)) from None


def run_report_schema() -> dict[str, Any]:
    """The JSON Schema of the run report (docs/reference/schemas.md)."""
    return msgspec.json.schema(RunReportFormat, schema_hook=_any_json)


def _any_json(kind: type) -> dict[str, Any]:
    """`object`, where a section keeps JSON it does not model field by field: any JSON value."""
    if kind is object:
        return {"description": "any JSON value"}
    raise NotImplementedError(kind)
