"""Declarative checks: the assertions a suite lists in its `checks.yaml`, judged against one reply and one case.

Pure: a check reads the reply text and the case's fields and returns a Verdict (passed, and a one-line message
saying what was expected and what came). Turning each check into a pytest test is evalkit.run.declared's job.

A reply that a check needs as JSON and that does not parse fails that check with the parse error; it never
raises, so a model's malformed reply is data that fails its case, never an error of the test run.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError, describe_validation
from evalkit.core.parsing import parse_yaml
from evalkit.core.reducer import ALL, Reducer, parse_reducer
from evalkit.judging.llm_rubric import rubric_request, rubric_verdict
from evalkit.judging.pairwise_check import NEW_FIRST, OLD_FIRST, PairwiseSpec, pair_metrics, pair_requests, pair_verdict
from evalkit.judging.ready_judges import (
    JUDGES,
    AnswerRelevancySpec,
    FaithfulnessSpec,
    GEvalSpec,
    judge_request,
    needed_field,
    score_verdict,
)
from evalkit.live.providers.base import Request

__all__ = ["JUDGED", "KINDS", "CheckSpec", "ChecksFile", "Verdict", "judge", "judge_pair", "parse_checks",
           "planned_judge_calls", "read_field", "shown"]

KINDS = ("equals", "one-of", "contains", "regex", "is-json", "json-schema", "number", "length", "classification",
         "python", "llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise")
"""The check kinds, as a `checks.yaml` entry names them (exactly one per entry)."""
JUDGED = ("llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise")
"""The kinds the suite's pinned judge decides: the check reads the judge's answer about the reply."""
SHOWN_CHARS = 80
"""A value in a failure message is cut after this many characters: the message stays one readable line."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


@dataclass(frozen=True)
class Verdict:
    """One check's result on one case: passed or not, and, when not, one line of expected against came."""

    passed: bool
    message: str = ""
    predicted: str | None = None
    """classification checks: the label the reply gave (None when the reply gave none), for the metrics."""
    metrics: Mapping[str, float] = field(default_factory=dict)
    """Numbers the check measured on the case, kept as the metrics `<check>.<name>`: a ready-made judge's
    `score`, a pairwise check's `win`, `tie`, `loss` and `disagree`."""


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


class _Unreadable(Exception):
    """The reply has no value where the check looks: the check fails with this message."""


def judge(spec: CheckSpec, reply: str, case: Case, load: Callable[[str], Any] | None = None) -> Verdict:
    """Judge one reply of one case by one check (for llm-rubric: the judge's answer about the reply). `load`
    imports a `python:` check's function (by default importlib; the pytest side passes one that looks in the
    suite's folder)."""
    try:
        value = _value(spec, reply)
        return _KIND_JUDGES[spec.kind](spec, value, case, load or _import)
    except _Unreadable as problem:
        return Verdict(False, str(problem))


def _value(spec: CheckSpec, reply: str) -> Any:
    if not spec.needs_json:
        return reply
    try:
        data = json.loads(reply)
    except json.JSONDecodeError as error:
        raise _Unreadable(f"expected a JSON reply, came unparseable JSON ({error.msg}: line {error.lineno} "
                          f"column {error.colno}): {_cut(_line(reply))}") from None
    return data if spec.field is None else read_field(data, spec.field)


def read_field(data: Any, path: str) -> Any:
    """The value at a dotted path (`a.b.0`) in parsed JSON; a missing step fails the check naming it."""
    value = data
    walked: list[str] = []
    for step in path.split("."):
        walked.append(step)
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            raise _Unreadable(f"expected field {'.'.join(walked)!r} in the reply, came none "
                              f"(the reply's value there: {shown(value)})")
    return value


def shown(value: Any) -> str:
    """A value as a failure message shows it: JSON-like, on one line, cut to SHOWN_CHARS characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = json.dumps(text, ensure_ascii=False) if isinstance(value, str) else text  # quoted, newlines escaped
    return _cut(text)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def _resolve(value: Any, case: Case) -> Any:
    if isinstance(value, CaseRef):
        if value.case not in case.fields:
            raise _Unreadable(f"expected a value from case field {value.case!r}, but case {case.id} has none")
        return case.fields[value.case]
    return value


def _fold(value: Any, spec: CheckSpec) -> Any:
    return value.casefold() if spec.ignore_case and isinstance(value, str) else value


def _equals(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    expected = _resolve(_case_ref(spec.equals), case)
    return _verdict(_fold(value, spec) == _fold(expected, spec), f"expected {shown(expected)}, came {shown(value)}")


def _case_ref(value: Any) -> Any:
    """`equals: {case: FIELD}` names a case field (pydantic keeps `equals` as written, any type)."""
    if isinstance(value, dict) and set(value) == {"case"} and isinstance(value["case"], str):
        return CaseRef(case=value["case"])
    return value


def _one_of(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    allowed = _resolve(spec.one_of, case)
    allowed = list(allowed) if isinstance(allowed, list | tuple) else [allowed]
    folded = [_fold(a, spec) for a in allowed]
    return _verdict(_fold(value, spec) in folded, f"expected one of {shown(allowed)}, came {shown(value)}")


def _contains(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    wanted = _resolve(spec.contains, case)
    parts = [wanted] if isinstance(wanted, str) else [str(w) for w in wanted]
    if not isinstance(value, str):
        return Verdict(False, f"expected a text containing {shown(parts)}, came {shown(value)}")
    text = _fold(value, spec)
    found = [p for p in parts if _fold(p, spec) in text]
    if spec.match == "all":
        missing = [p for p in parts if p not in found]
        return _verdict(not missing, f"expected a text containing {shown(missing)}, came {shown(value)}")
    return _verdict(bool(found), f"expected a text containing any of {shown(parts)}, came {shown(value)}")


def _regex(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    assert spec.regex is not None
    matched = isinstance(value, str) and re.search(spec.regex, value) is not None
    return _verdict(matched, f"expected a match of /{spec.regex}/, came {shown(value)}")


def _is_json(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    return Verdict(True)  # reaching here means the reply parsed


def _json_schema(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    from jsonschema.validators import validator_for

    schema = spec.json_schema
    assert schema is not None
    error = next(iter(validator_for(schema)(schema).iter_errors(value)), None)
    if error is None:
        return Verdict(True)
    where = "/".join(str(p) for p in error.absolute_path) or "the reply"
    return Verdict(False, f"expected {where} to satisfy the schema's {error.validator!r}, came: {_line(error.message)}")


def _number(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    rule = spec.number
    assert rule is not None
    number = _as_number(value)
    if number is None:
        return Verdict(False, f"expected a number, came {shown(value)}")
    if rule.expected is not None:
        expected = _as_number(_resolve(rule.expected, case))
        if expected is None:
            return Verdict(False, f"expected a number in case {case.id}'s field, came {shown(rule.expected)}")
        if abs(number - expected) > rule.tolerance:
            return Verdict(False, f"expected {expected:g} ± {rule.tolerance:g}, came {number:g}")
    if rule.min is not None and number < rule.min or rule.max is not None and number > rule.max:
        return Verdict(False, f"expected a number in [{_bound(rule.min)}, {_bound(rule.max)}], came {number:g}")
    return Verdict(True)


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _bound(value: float | None) -> str:
    return "-inf" if value is None else f"{value:g}"


def _length(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    rule = spec.length
    assert rule is not None
    if not isinstance(value, str | list | dict):
        return Verdict(False, f"expected a text or list, came {shown(value)}")
    size = len(value)
    unit = "characters" if isinstance(value, str) else "items"
    low = rule.min if rule.min is not None else 0
    high = "" if rule.max is None else str(rule.max)
    ok = (rule.min is None or size >= rule.min) and (rule.max is None or size <= rule.max)
    return _verdict(ok, f"expected {low} to {high or 'any number of'} {unit}, came {size}")


def _classification(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    assert spec.classification is not None
    expected = _resolve(CaseRef(case=spec.classification), case)
    predicted = None if value is None else str(value)
    ok = predicted is not None and _fold(predicted, spec) == _fold(str(expected), spec)
    return Verdict(ok, "" if ok else f"expected label {shown(str(expected))}, came {shown(value)}", predicted)


def _python(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    assert spec.python is not None
    function = load(spec.python)
    try:
        result = function(value, case)
    except AssertionError as error:
        return Verdict(False, _line(str(error)) or f"{spec.python} failed its assertion")
    if result is None or result is True:
        return Verdict(True)
    if result is False:
        return Verdict(False, f"expected {spec.python} to accept the reply, came {shown(value)}")
    return Verdict(False, _line(str(result)))


def _llm_rubric(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    passed, message = rubric_verdict(value)  # `value` is the judge's answer for this check and case
    return Verdict(passed, message)


def _ready_judge(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    missing = spec.missing_field(case)
    if missing is not None:
        return Verdict(False, missing)
    scored = score_verdict(spec.kind, value, spec._ready().pass_at)  # `value` is the judge's answer
    return Verdict(scored.passed, scored.message,
                   metrics={} if scored.score is None else {"score": float(scored.score)})


def _pairwise(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    raise AssertionError("a pairwise check reads two answers: judge_pair")


def judge_pair(spec: CheckSpec, case: Case, new_first: str | None, old_first: str | None) -> Verdict:
    """Judge a pairwise check from the judge's answers with the new reply first and second (None and None: the
    replies were the same, so no judge was asked)."""
    assert spec.pairwise is not None
    missing = spec.missing_field(case)
    if missing is not None:
        return Verdict(False, missing)
    passed, message, verdict = pair_verdict(spec.pairwise, new_first, old_first)
    return Verdict(passed, message, metrics=pair_metrics(verdict) if verdict is not None else {})


def planned_judge_calls(spec: CheckSpec, case: Case, reply: str, judge: ModelConfig,
                        baseline_reply: str | None) -> dict[str, Request]:
    """The judge calls a judged check makes for one case's reply, by judge metric; none for a case it does not
    apply to, a case lacking the field it reads, a pairwise check with nothing to compare against, or a reply
    the same as the one compared against."""
    if spec.call != "judge" or not spec.applies_to(case) or spec.missing_field(case) is not None:
        return {}
    if spec.llm_rubric is not None:
        return {spec.name: rubric_request(spec.llm_rubric, case, reply, judge)}
    if spec.pairwise is not None:
        against = spec.pairwise.against
        other = baseline_reply if isinstance(against, str) else _as_text(case.fields[against.case])
        return {} if other is None else pair_requests(spec.name, spec.pairwise, case, reply, other, judge)
    return {spec.name: judge_request(spec.kind, spec._ready(), case, reply, judge)}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _import(target: str) -> Any:
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name, None)
    if not callable(function):
        raise InputError(f"python check {target}: {module} defines no function {name}")
    return function


def _verdict(passed: bool, message: str) -> Verdict:
    return Verdict(True) if passed else Verdict(False, message)


def _line(text: str) -> str:
    """A message on one line: a failure's first line is what every report shows."""
    return " ".join(text.split())


_KIND_JUDGES: Mapping[str, Callable[[CheckSpec, Any, Case, Callable[[str], Any]], Verdict]] = {
    "equals": _equals, "one-of": _one_of, "contains": _contains, "regex": _regex, "is-json": _is_json,
    "json-schema": _json_schema, "number": _number, "length": _length, "classification": _classification,
    "python": _python, "llm-rubric": _llm_rubric, "faithfulness": _ready_judge, "answer-relevancy": _ready_judge,
    "g-eval": _ready_judge, "pairwise": _pairwise,
}
