"""The format of a suite's `checks.yaml`: its entries (one check each: a name, one kind, how to read the reply) and
their validation, every mistake one line naming the file and the entry. What each kind decides is
evalkit.judging.checks'.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalkit.core.dataset import Case
from evalkit.core.errors import InputError, describe_validation
from evalkit.core.parsing import parse_yaml
from evalkit.core.reducer import ALL, Reducer, parse_reducer
from evalkit.judging.pairwise_check import NEW_FIRST, OLD_FIRST, PairwiseSpec
from evalkit.judging.ready_judges import JUDGES, AnswerRelevancySpec, FaithfulnessSpec, GEvalSpec, needed_field

__all__ = ["JUDGED", "KINDS", "CaseRef", "CheckSpec", "ChecksFile", "LengthSpec", "NumberSpec", "parse_checks"]

KINDS = ("equals", "one-of", "contains", "regex", "is-json", "json-schema", "number", "length", "classification",
         "python", "llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise")
"""The check kinds, as a `checks.yaml` entry names them (exactly one per entry)."""
JUDGED = ("llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise")
"""The kinds the suite's pinned judge decides: the check reads the judge's answer about the reply."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


class CaseRef(BaseModel):
    """A value taken from the case instead of written in the file: `{case: expected_label}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case: str = Field(min_length=1)
    """The case field holding the expected value."""


class NumberSpec(BaseModel):
    """A number within `tolerance` of `expected`, or within `[min, max]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    expected: float | CaseRef | None = None
    tolerance: float = Field(0.0, ge=0)
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _something(self) -> NumberSpec:
        if self.expected is None and self.min is None and self.max is None:
            raise ValueError("a number check needs 'expected' (with an optional 'tolerance'), 'min' or 'max'")
        return self


class LengthSpec(BaseModel):
    """Length limits: characters of a text, items of a list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _something(self) -> LengthSpec:
        if self.min is None and self.max is None:
            raise ValueError("a length check needs 'min', 'max' or both")
        return self


class CheckSpec(BaseModel):
    """One entry of `checks.yaml`: a name (the pytest test's name), one kind, and how to read the reply."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str
    """The check's test name: `checks.yaml::NAME[case-id]`; the policy's `critical:` prefixes match it."""
    critical: bool = False
    """A failure of this check on any case blocks, as if the policy listed it under `critical:`."""
    field: str | None = None
    """Where in the reply the value is: a path into the reply read as JSON (`label`, `items.0.name`); None: the
    whole reply text."""
    ignore_case: bool = False
    """equals, one-of, contains, classification: compare texts without regard to case."""
    match: Literal["all", "any"] = "all"
    """contains: whether every listed text must occur, or at least one."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Run the check only on the cases whose fields equal these values (`{kind: billing}`)."""

    equals: Any = None
    one_of: tuple[Any, ...] | CaseRef | None = Field(None, alias="one-of")
    contains: str | tuple[str, ...] | CaseRef | None = None
    regex: str | None = None
    is_json: bool | None = Field(None, alias="is-json")
    json_schema: dict[str, Any] | None = Field(None, alias="json-schema")
    number: NumberSpec | None = None
    length: LengthSpec | None = None
    classification: str | None = None
    """The case field holding the expected label; the reply's value (at `field`) must equal it."""
    llm_rubric: str | None = Field(None, alias="llm-rubric", min_length=1)
    """A criterion in plain words that the suite's pinned judge decides for each reply (evalkit.judging.llm_rubric);
    the check reads the judge's answer (`judge/<name>/<case>`), not the reply."""
    faithfulness: FaithfulnessSpec | None = None
    """`{context: FIELD}`: the judge scores (1-5) whether the reply keeps to the case's context
    (evalkit.judging.ready_judges)."""
    answer_relevancy: AnswerRelevancySpec | None = Field(None, alias="answer-relevancy")
    """`{question: FIELD}`: the judge scores (1-5) whether the reply answers the case's question."""
    g_eval: GEvalSpec | None = Field(None, alias="g-eval")
    """`{criteria: "...", steps: [...], pass_at: 4}`: the judge follows the steps and scores the criteria (1-5)."""
    pairwise: PairwiseSpec | None = None
    """`{against: baseline | {case: FIELD}, criterion: "..."}`: the judge compares the reply with the baseline's
    (or a case field's) in both orders (evalkit.judging.pairwise_check)."""
    python: str | None = None
    """`module:function`, imported from the suite's folder; called as `function(reply, case)` (reply: the text,
    or the value at `field`). It passes by returning None or True; it fails by returning False or a message, or
    raising AssertionError."""
    reduce: Reducer = ALL
    """With `run.repeats=N`: how the N samples' outcomes become the test's (evalkit.core.reducer): `all` (the
    default), `majority`, `{mean: T}` or `{at_least: K}`."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(f"a check's name is a Python identifier of at most 100 characters (it names a test), "
                             f"got {value!r}")
        return value

    @field_validator("regex")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"regex {value!r} does not compile: {error}") from None
        return value

    @field_validator("reduce", mode="before")
    @classmethod
    def _reducer(cls, value: Any) -> Reducer:
        return parse_reducer(value)

    @field_validator("python")
    @classmethod
    def _function(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[\w.]+:\w+", value):
            raise ValueError(f"python takes 'module:function', got {value!r}")
        return value

    @field_validator("json_schema")
    @classmethod
    def _schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from jsonschema.exceptions import SchemaError
            from jsonschema.validators import validator_for

            try:
                validator_for(value).check_schema(value)
            except SchemaError as error:
                raise ValueError(f"json-schema is not a valid JSON Schema: {error.message}") from None
        return value

    @model_validator(mode="after")
    def _judge_reads_the_reply(self) -> CheckSpec:
        if self.call == "judge" and self.field is not None:
            raise ValueError(f"{self.name!r}: a {self.kind} check shows the judge the whole reply; it takes no 'field'")
        return self

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [kind for kind in KINDS if _given(kind, data.get(kind))]
            if len(given) != 1:
                raise ValueError(f"each check names exactly one kind of {', '.join(KINDS)}; "
                                 f"{data.get('name', 'this check')!r} names {', '.join(given) or 'none'}")
        return data

    @property
    def kind(self) -> str:
        return next(kind for kind in KINDS if _given(kind, getattr(self, kind.replace("-", "_"))))

    @property
    def call(self) -> str:
        """The call whose text the check reads: the task's reply, or for a judged kind the judge's answer."""
        return "judge" if self.kind in JUDGED else "task"

    @property
    def judge_metrics(self) -> tuple[str, ...]:
        """The judge metrics of the calls a judged check reads (`judge/<metric>/<case>`): its name, or for
        pairwise its name with `/new-first` and `/old-first`; none for the other kinds."""
        if self.kind == "pairwise":
            return (f"{self.name}/{NEW_FIRST}", f"{self.name}/{OLD_FIRST}")
        return (self.name,) if self.call == "judge" else ()

    def missing_field(self, case: Case) -> str | None:
        """Why a judged check cannot judge this case (its spec names a case field the case lacks); None when it
        can. The planner asks no judge then, and the check fails with this."""
        wanted = None
        if self.kind in JUDGES:
            wanted = needed_field(self._ready())
        elif self.pairwise is not None and not isinstance(self.pairwise.against, str):
            wanted = self.pairwise.against.case
        if wanted is not None and wanted not in case.fields:
            return f"expected case field {wanted!r} for the judge, but case {case.id} has none"
        return None

    def _ready(self) -> FaithfulnessSpec | AnswerRelevancySpec | GEvalSpec:
        spec = self.faithfulness or self.answer_relevancy or self.g_eval
        assert spec is not None
        return spec

    @property
    def needs_json(self) -> bool:
        """Whether the reply must parse as JSON for this check to judge it."""
        return self.field is not None or self.kind in ("is-json", "json-schema")

    def applies_to(self, case: Case) -> bool:
        return all(case.get(name) == value for name, value in self.where.items())


def _given(kind: str, value: Any) -> bool:
    """Whether an entry names this kind (`is-json: false` names none)."""
    return value is not None and not (kind == "is-json" and value is False)


class ChecksFile(BaseModel):
    """A suite's `checks.yaml`: its declared checks, in the order they run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    checks: tuple[CheckSpec, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> ChecksFile:
        names = [c.name for c in self.checks]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"check name(s) {', '.join(twice)} appear more than once; each names one test")
        return self

    @property
    def critical(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if c.critical)


def parse_checks(text: str, where: str) -> ChecksFile:
    """A `checks.yaml` read and validated: every mistake is one InputError naming the file and the entry."""
    data = parse_yaml(text, where, "checks file")
    try:
        return ChecksFile.model_validate(data)
    except ValidationError as error:
        raise InputError(describe_validation(error, ChecksFile, where)) from None
