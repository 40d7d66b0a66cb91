"""The format of a suite's `checks.yaml`: its entries (one check each: a name, one kind, how to read the reply) and
their validation, every mistake one line naming the file and the entry. What each kind decides is
evalkit.judging.checks'.

The kinds are not listed here: an entry's keys beside the common ones (`name`, `critical`, `field` ...) are looked
up among the registered check kinds (evalkit.judging.check_kind), evalkit's own and any installed package's alike,
and the value under the kind's key is validated by that kind's `options` type.

Three refusals need more than the file: a check that names a case field no case of the run's dataset has, a
`where:` that matches no case, and a kind whose judge is shown a conversation on a dataset without conversations
(`ChecksFile.check_cases`). Each would make a check that can never run: every test of it failing or absent, on the
baseline as on the candidate, so the gate would see no change.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from evalkit.core.dataset import Case
from evalkit.core.errors import ConfigError, InputError, describe_validation
from evalkit.core.parsing import parse_yaml
from evalkit.core.patterns import PatternError, compile_pattern
from evalkit.core.reducer import ALL, Reducer, parse_reducer
from evalkit.judging.check_kind import CheckKind, check_kind, kind_names
from evalkit.judging.conversation_judges import CONVERSATION_FIELD, cannot_judge
from evalkit.judging.pairwise_check import NEW_FIRST, OLD_FIRST, PairwiseSpec
from evalkit.judging.ready_judges import (
    AnswerRelevancySpec,
    ConversationSpec,
    FaithfulnessSpec,
    GEvalSpec,
    TrajectoryGoalSpec,
    needed_field,
)
from evalkit.judging.trajectory import TrajectoryCheck, trajectory_check

__all__ = ["CaseRef", "CheckSpec", "ChecksFile", "JsonSchema", "LengthSpec", "NumberSpec", "PythonTarget", "Regex",
           "case_ref", "parse_checks"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_FUNCTION = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
"""`module:function`: a module of the suite's folder by its dotted name (no leading dots) and a function in it."""
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
SHOWN_FIELDS = 12
"""A refusal naming the fields the cases have lists at most this many."""


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


def _compiles(value: str) -> str:
    try:  # as it will run: with a time budget per reply (evalkit.core.patterns)
        compile_pattern(value)
    except PatternError as error:
        raise ValueError(f"regex {value!r} does not compile: {error}") from None
    return value


def _function(value: str) -> str:
    if not _FUNCTION.fullmatch(value):
        raise ValueError(f"python takes 'module:function', a module of the suite's folder by its dotted name "
                         f"(no leading dots: nothing is imported relative to evalkit), got {value!r}")
    return value


def _schema(value: dict[str, Any]) -> dict[str, Any]:
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(value).check_schema(value)
    except SchemaError as error:
        raise ValueError(f"json-schema is not a valid JSON Schema: {error.message}") from None
    outside = next((ref for ref in _references(value) if not ref.startswith("#")), None)
    if outside is not None:
        raise ValueError(f"json-schema: reference {outside!r} points outside the schema; a check's schema "
                         "may refer only within itself ('#/$defs/NAME'): evalkit fetches no URL and reads no "
                         "file while it checks replies")
    return value


Regex = Annotated[str, AfterValidator(_compiles)]
"""A pattern that compiles as it will run (the `regex` module, with a time budget per reply)."""
PythonTarget = Annotated[str, AfterValidator(_function)]
"""`module:function` of the suite's folder, no leading dots."""
JsonSchema = Annotated[dict[str, Any], AfterValidator(_schema)]
"""A valid JSON Schema whose references stay within itself."""

_COMMON = ("name", "critical", "field", "ignore_case", "match", "where", "turn", "reduce")
"""The keys every entry may have beside its kind's (the fields of CheckSpec a file writes)."""


class CheckSpec(BaseModel):
    """One entry of `checks.yaml`: a name (the pytest test's name), one kind, and how to read the reply.

    The file writes the kind as a key (`regex: PATTERN`); read, the entry holds the kind's name in `kind` and the
    value under its key, validated by the kind's `options` type, in `options`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    turn: int | Literal["every", "last"] | None = None
    """A conversation case (evalkit.run.conversation): which assistant turn a reply check reads, N (from 1),
    `every` turn (the first failing one is named) or the `last`; None: the case's outcome, its last turn. Every
    kind that reads the reply takes it, a plugin's too; a judged or trajectory kind takes none."""
    reduce: Reducer = ALL
    """With `run.repeats=N`: how the N samples' outcomes become the test's (evalkit.core.reducer): `all` (the
    default), `majority`, `{mean: T}` or `{at_least: K}`."""
    kind: str
    """The registered check kind the entry names (its key in the file)."""
    options: Any = None
    """The value under the kind's key, as the kind's `options` type validated it."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(f"a check's name is a Python identifier of at most 100 characters (it names a test), "
                             f"got {value!r}")
        return value

    @field_validator("turn")
    @classmethod
    def _turn(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"turn counts a conversation's assistant turns from 1, got {value}")
        return value

    @field_validator("reduce", mode="before")
    @classmethod
    def _reducer(cls, value: Any) -> Reducer:
        return parse_reducer(value)

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        """`{name, KIND: VALUE, ...}` as written -> `{name, kind: KIND, options: VALUE validated, ...}`."""
        if not isinstance(data, dict):
            return data
        known = kind_names()
        clash = sorted(set(known) & set(_COMMON))
        if clash:  # the key would mean two things in every file: refuse the install, not the file
            raise ConfigError(f"check kind(s) {', '.join(clash)} are registered under a name every checks.yaml entry "
                              "already uses for itself; uninstall the package that registers them")
        given = [key for key in data if key in known and _given(check_kind(key), data[key])]
        absent = [key for key in data if key in known and key not in given]  # `is-json: false`: names none
        if len(given) != 1 or "kind" in data or "options" in data:
            unknown = [str(key) for key in data if key not in known and key not in _COMMON]
            close = [m for key in unknown for m in difflib.get_close_matches(key, known, n=1)]
            hint = f" (did you mean {', '.join(repr(m) for m in close)}?)" if close and not given else ""
            raise ValueError(f"each check names exactly one kind of {', '.join(known)}; "
                             f"{data.get('name', 'this check')!r} names {', '.join(given) or 'none'}{hint}")
        kind = check_kind(given[0])
        rest = {key: value for key, value in data.items() if key not in (*given, *absent)}
        return {**rest, "kind": kind.name, "options": _validated(kind, data[kind.name])}

    @model_validator(mode="after")
    def _judge_reads_the_reply(self) -> CheckSpec:
        if self.turn is not None and self.call != "task":
            raise ValueError(f"{self.name!r}: `turn` chooses the reply a reply check reads; a {self.kind} check "
                             "takes none")
        if self.call == "judge" and self.field is not None:
            raise ValueError(f"{self.name!r}: a {self.kind} check shows the judge the whole reply; it takes no 'field'")
        if self.call == "trajectory":
            if self.field is not None:
                raise ValueError(f"{self.name!r}: a {self.kind} check reads the agent's trajectory; it takes no "
                                 "'field'")
            self.trajectory_check  # noqa: B018 - validated with the file, not per case
        return self

    @property
    def check_kind(self) -> CheckKind:
        """The registered kind the entry names."""
        return check_kind(self.kind)

    @property
    def call(self) -> str:
        """What the check reads: the task's reply, for a judged kind the judge's answer, for a trajectory kind the
        agent's trajectory."""
        reads = self.check_kind.reads
        return "task" if reads == "reply" else reads

    @property
    def judges_trajectory(self) -> bool:
        """Whether the judge is shown what the case's recorded trajectory holds, not its reply: an agent's steps
        (`trajectory-goal`) or a conversation's turns (the conversation judges). Its call is planned once the
        agent's loop or the conversation has ended (evalkit.judging.checks.planned_trajectory_judge)."""
        return self.call == "judge" and self.check_kind.shown != "reply"

    @property
    def trajectory_check(self) -> TrajectoryCheck:
        """A trajectory kind as evalkit.judging.trajectory evaluates it (its options model shaped the value as
        that module's entry: `{tool: NAME}`, `{tools: [...]}`, `{max_model_calls: N}` ...)."""
        try:
            return trajectory_check({"id": self.name, "kind": self.kind, **self.options}, "checks.yaml")
        except InputError as error:  # said by the file's validation, which names the file and the entry
            raise ValueError(str(error).removeprefix("checks.yaml: ")) from None

    @property
    def judge_metrics(self) -> tuple[str, ...]:
        """The judge metrics of the calls a judged check reads (`judge/<metric>/<case>`): its name, or for
        pairwise its name with `/new-first` and `/old-first`; none for the other kinds."""
        if isinstance(self.options, PairwiseSpec):
            return (f"{self.name}/{NEW_FIRST}", f"{self.name}/{OLD_FIRST}")
        return (self.name,) if self.call == "judge" else ()

    def case_fields(self) -> Iterator[tuple[str, str]]:
        """The case fields the check reads, each with the key that names it: (`where`, FIELD),
        (`equals`, FIELD) for `equals: {case: FIELD}`, (`faithfulness.context`, FIELD) ..."""
        yield from (("where", name) for name in self.where)
        for key, name in self.check_kind.case_fields(self.options):
            yield (f"{self.kind}.{key}" if key else self.kind), name

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics the check measures on each case (`<check>.<name>`): a ready-made judge's `score`, a pairwise
        check's outcomes; none for the other kinds."""
        return self.check_kind.metric_names

    def missing_field(self, case: Case) -> str | None:
        """Why a judged check cannot judge this case (its spec names a case field the case lacks); None when it
        can. The planner asks no judge then, and the check could not run on the case, saying this."""
        wanted = None
        if isinstance(self.options, ConversationSpec):
            return cannot_judge(self.options, case)  # also: a scripted conversation has no goal of its own
        if isinstance(self.options, FaithfulnessSpec | AnswerRelevancySpec | GEvalSpec | TrajectoryGoalSpec):
            wanted = needed_field(self.options)
        elif isinstance(self.options, PairwiseSpec) and not isinstance(self.options.against, str):
            wanted = self.options.against.case
        if wanted is not None and wanted not in case.fields:
            return f"expected case field {wanted!r} for the judge, but case {case.id} has none"
        return None

    @property
    def needs_json(self) -> bool:
        """Whether the reply must parse as JSON for this check to judge it."""
        return self.field is not None or self.check_kind.json

    def applies_to(self, case: Case) -> bool:
        return all(case.get(name) == value for name, value in self.where.items())


def _given(kind: CheckKind, value: Any) -> bool:
    """Whether an entry names this kind (`is-json: false` names none)."""
    return value is not None and not (kind.false_is_absent and value is False)


_ADAPTERS: dict[int, tuple[CheckKind, TypeAdapter[Any]]] = {}
"""Each kind's validator of its options, built once (keyed by the kind value, held so its id stays its own)."""


def _validated(kind: CheckKind, value: Any) -> Any:
    """The value under the kind's key, validated by the kind's options type; its problems are located under the
    kind's key (`checks.0.number.expectd`), an unknown key with the model's own keys and the closest of them."""
    held = _ADAPTERS.get(id(kind))
    if held is None or held[0] is not kind:
        held = _ADAPTERS[id(kind)] = (kind, TypeAdapter(kind.options))
    try:
        return held[1].validate_python(value)
    except ValidationError as error:
        raise ValidationError.from_exception_data("CheckSpec", [
            _located(kind, item) for item in error.errors()]) from None


def _located(kind: CheckKind, item: Any) -> Any:
    loc = (kind.name, *item["loc"])
    if item["type"] == "extra_forbidden" and len(item["loc"]) == 1 and isinstance(kind.options, type) \
            and issubclass(kind.options, BaseModel):
        keys = sorted((f.alias or name) for name, f in kind.options.model_fields.items())
        close = difflib.get_close_matches(str(item["loc"][0]), keys, n=1)
        hint = f"did you mean '{close[0]}'?; " if close else ""
        return {"type": PydanticCustomError("unknown_key", f"unknown key ({hint}allowed: {', '.join(keys)})"),
                "loc": loc, "input": item["input"]}
    return {"type": item["type"], "loc": loc, "input": item["input"], **({"ctx": item["ctx"]} if "ctx" in item
                                                                         else {})}


class ChecksFile(BaseModel):
    """A suite's `checks.yaml`: its declared checks, in the order they run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    checks: tuple[CheckSpec, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> ChecksFile:
        twice = sorted(name for name, seen in Counter(c.name for c in self.checks).items() if seen > 1)
        if twice:
            raise ValueError(f"check name(s) {', '.join(twice)} appear more than once; each names one test")
        return self

    @property
    def critical(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if c.critical)

    def check_cases(self, cases: Sequence[Case], where: str) -> None:
        """Refuse, in one line naming `where`, a check that names a case field no case has (the fields the cases
        have are listed), or whose `where:` matches no case (the values its field takes are listed)."""
        have = set().union(*(case.fields for case in cases))
        for spec in self.checks:
            if spec.check_kind.shown == "conversation" and CONVERSATION_FIELD not in have:
                raise InputError(f"{where}: check {spec.name}: a {spec.kind} check judges a conversation's transcript, "
                                 f"and no case of the dataset is a conversation (a '{CONVERSATION_FIELD}' field); "
                                 "drop the check, or run it on a dataset of conversations")
            for key, name in spec.case_fields():
                if name not in have:
                    raise InputError(f"{where}: check {spec.name}: {key} names case field {name!r}, which no case "
                                     f"of the dataset has (its cases have: {_listed(sorted(have))})")
            if spec.where and not any(spec.applies_to(case) for case in cases):
                shown = ", ".join(f"{name}={value!r}" for name, value in spec.where.items())
                taken = {name: sorted({repr(case.get(name)) for case in cases}) for name in spec.where}
                raise InputError(f"{where}: check {spec.name}: where {shown} matches no case of the dataset, so the "
                                 "check would never run ("
                                 + "; ".join(f"{name} takes {_listed(values)}" for name, values in taken.items())
                                 + ")")


def case_ref(value: Any) -> CaseRef | None:
    """The case field a value names (`{case: FIELD}`, which `equals:` keeps as written, any value being allowed
    there), or None for a value written in the file."""
    if isinstance(value, CaseRef):
        return value
    if isinstance(value, dict) and set(value) == {"case"} and isinstance(value["case"], str) and value["case"]:
        return CaseRef(case=value["case"])
    return None


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:SHOWN_FIELDS]) + (f", ... {len(names) - SHOWN_FIELDS} more"
                                              if len(names) > SHOWN_FIELDS else "") if names else "no fields"


def _references(schema: Any) -> Iterator[str]:
    """Every reference a JSON Schema makes (`$ref`, `$dynamicRef`, `$recursiveRef`), walked without recursion."""
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            yield from (value[key] for key in _REFERENCES if isinstance(value.get(key), str))
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def parse_checks(text: str, where: str) -> ChecksFile:
    """A `checks.yaml` read and validated: every mistake is one InputError naming the file and the entry."""
    data = parse_yaml(text, where, "checks file")
    try:
        return ChecksFile.model_validate(data)
    except ValidationError as error:
        raise InputError(describe_validation(error, ChecksFile, where)) from None
