"""`decision.json`: the gate's decision with its findings, the baseline it was made against and its evidence.

One model, `DecisionFile`, is what every command writes (evalkit.render.bundle, from the gate's
`Decision.record()`) and what `history`, `policy-diff` and the run's own pages read back (`read_decision`). Its
fields are in the order the file has always held them, so the file is written as it was before the model existed;
the JSON Schema in docs/reference/schemas.md is generated from here.

The evidence is typed (`Evidence`: the policy's identity, both reports' identities, evalkit's version, and for
`evalkit adapt` the files it read). The gate's figures (metric changes, the paired bootstrap, repeats, the
detectable drops, each finding's figures) are JSON whose shape the gate module that computes them documents; the
model types them as JSON values, never as `Any`.

Versioned by `format`. The files written before the field existed (version 0) hold the same fields without it;
`read_decision` reads them as version 1, which is their migration: nothing else changed between the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, ValidationError, model_serializer

from evalkit.records.values import Json

__all__ = ["FORMAT", "DecisionFile", "Evidence", "FindingEntry", "PolicyIdentity", "ReportIdentity",
           "decision_schema", "read_decision"]

FORMAT: Final = "evalkit-decision/1"


class _Record(BaseModel):
    """A part of decision.json. Fields named in `_OMITTED_WHEN_NONE` are left out of the file while they are None:
    they were added to the format later, or belong to one command's files only, and a file that has none of them
    is written as before."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
    _OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self._OMITTED_WHEN_NONE:
            if data.get(name, 0) is None:
                del data[name]
        return data


class FindingEntry(_Record):
    """One rule's finding (evalkit.gate.findings.Finding)."""

    _OMITTED_WHEN_NONE = ("subject",)

    rule: str
    """The rule that produced it (evalkit.gate.rules)."""
    effect: Literal["block", "review", "warn"]
    message: str
    tests: list[str] = []
    figures: dict[str, Json] = {}
    """The numbers and names the rule decided on."""
    subject: str | None = None
    """What within the rule the finding is about (a metric's name, a case id); absent when the rule finds one
    thing only."""


class PolicyIdentity(_Record):
    """The policy a decision was made under: enough to find it again and to check it is the same rules."""

    name: str
    """Its own `name`, else the option or file it came from."""
    version: str | None
    """The version its authors give it, when they do."""
    source: str
    """Where it was read from: a file, `conf/policy/<name>.yaml`, or the built-in strict default."""
    overrides: list[str]
    """Command-line `policy.*` overrides applied on top of the source."""
    chosen_by: str
    """Why this policy was the one used (`--policy`, the suite's policy, the strict default ...)."""
    sha256: str
    """SHA-256 of the validated policy as canonical JSON (evalkit.core.policy.policy_sha256)."""


class ReportIdentity(_Record):
    """A compared run report: where it was read or written, the SHA-256 of its bytes, its eval key."""

    path: str
    sha256: str
    eval: dict[str, Json]
    """The report's eval key, its entries sorted by name."""


class Evidence(_Record):
    """What a decision was made from. Computed at the command's edge (evalkit.cli.evidence); `decide()` never sees
    it. A reader can check every part: `sha256sum` of each report, and the policy's hash."""

    _OMITTED_WHEN_NONE = ("sources",)

    policy: PolicyIdentity
    baseline: ReportIdentity
    candidate: ReportIdentity
    evalkit_version: str
    sources: dict[str, dict[str, Json]] | None = None
    """`evalkit adapt`: the other tool's files each side was read from (path, tool, the file's SHA-256, its format
    version); absent for the other commands."""


class DecisionFile(_Record):
    """A decision as `decision.json` holds it. Fields beyond these (a newer evalkit's) are kept unread."""

    model_config = ConfigDict(extra="ignore")
    _OMITTED_WHEN_NONE = ("baseline", "repeats", "detectable", "evidence")

    baseline: str | None = None
    """The baseline the decision was made against, as it was named to the command (a shipped baseline's name or a
    report's path); absent where a decision is printed on its own."""
    format: Literal["evalkit-decision/1"] = FORMAT
    decision: Literal["go", "review", "block", "incomparable"]
    reasons: list[str] = []
    """The blocking findings' messages (for incomparable: why the runs cannot be compared)."""
    changed: dict[str, tuple[Json, Json]] = {}
    """Key components that differ: name -> [baseline's, candidate's]."""
    pass_rate: float | None = None
    regressed: list[str] = []
    fixed: list[str] = []
    critical_failures: list[str] = []
    missing_critical: list[str] = []
    tests: int = 0
    passed: int = 0
    review_reasons: list[str] = []
    metrics: dict[str, dict[str, Json]] = {}
    """Per metric: before, after, delta, status, and the interval where there is one (evalkit.gate.compare)."""
    statistics: dict[str, Json] | None = None
    """The paired bootstrap of task success, when the policy asks for one."""
    failures: list[dict[str, Json]] = []
    """Graded suites: candidate cases failing task, quality or safety, with both sides' reasons."""
    warnings: list[str] = []
    outcomes: dict[str, int] = {}
    ran_pass_rate: float | None = None
    new_failing: list[str] = []
    messages: dict[str, str] = {}
    findings: list[FindingEntry] = []
    repeats: dict[str, Json] | None = None
    """When both sides sampled each test several times (evalkit.gate.repeats); absent otherwise."""
    detectable: dict[str, Json] | None = None
    """The smallest drops the comparison could have detected (evalkit.gate.headline): `suite`, the headline
    metric's, and with repeats `tests`, each repeated test's; absent for runs that were not compared."""
    evidence: Evidence | None = None
    """What the decision was made from; absent where a decision is printed on its own."""

    def data(self, scrub: Callable[[Any], Any] | None = None) -> dict[str, Any]:
        """The file's JSON data, masked by `scrub` (a live run's redaction) when given."""
        data = self.model_dump(mode="json")
        return scrub(data) if scrub is not None else data


def read_decision(data: object, where: str) -> DecisionFile:
    """The decision in parsed `decision.json` data, of any version; ValueError naming `where` when it is none."""
    if isinstance(data, dict) and "format" not in data:
        data = {**data, "format": FORMAT}  # version 0: the same fields, before they carried a format
    try:
        return DecisionFile.model_validate(data)
    except ValidationError as error:
        raise ValueError(f"{where}: not a decision of format {FORMAT} ({_first(error)})") from None


def _first(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(map(str, first['loc'])) or 'the file'}: {first['msg']}"


def decision_schema() -> dict[str, Any]:
    """The JSON Schema of `decision.json` (docs/reference/schemas.md)."""
    return DecisionFile.model_json_schema()
