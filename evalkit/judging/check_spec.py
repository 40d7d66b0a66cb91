"""The format of a suite's `checks.yaml`: its entries (one check each: a name, one kind, how to read the reply) and
their validation, every mistake one line naming the file and the entry. What each kind decides is
evalkit.judging.checks'.

Two refusals need more than the file: a check that names a case field no case of the run's dataset has, and a
`where:` that matches no case (`ChecksFile.check_cases`). Either would make a check that can never run: every test
of it failing or absent, on the baseline as on the candidate, so the gate would see no change.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalkit.core.dataset import Case
from evalkit.core.errors import InputError, describe_validation
from evalkit.core.parsing import parse_yaml
from evalkit.core.patterns import PatternError, compile_pattern
from evalkit.core.reducer import ALL, Reducer, parse_reducer
from evalkit.judging.conversation_judges import CONVERSATION_FIELD, cannot_judge
from evalkit.judging.pairwise_check import NEW_FIRST, OLD_FIRST, PairwiseSpec
from evalkit.judging.ready_judges import (
    CONVERSATION_KINDS,
    JUDGES,
    AnswerRelevancySpec,
    ConversationGoalSpec,
    FaithfulnessSpec,
    GEvalSpec,
    KnowledgeRetentionSpec,
    RefusalHoldsSpec,
    RoleAdherenceSpec,
    Spec,
    TrajectoryGoalSpec,
    needed_field,
)
from evalkit.judging.trajectory import TrajectoryCheck, trajectory_check

__all__ = ["JUDGED", "KINDS", "STEP_JUDGED", "TRAJECTORY", "CaseRef", "CheckSpec", "ChecksFile", "LengthSpec",
           "NumberSpec", "case_ref", "parse_checks"]

TRAJECTORY = ("tool-called", "tool-not-called", "tool-sequence", "tool-args", "steps", "no-tool-errors")
"""The kinds that read an agent case's trajectory (evalkit.judging.trajectory), not its reply."""
KINDS = ("equals", "one-of", "contains", "regex", "is-json", "json-schema", "number", "length", "classification",
         "python", "llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise", "trajectory-goal",
         *CONVERSATION_KINDS, *TRAJECTORY)
"""The check kinds, as a `checks.yaml` entry names them (exactly one per entry)."""
JUDGED = ("llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise", "trajectory-goal",
          *CONVERSATION_KINDS)
"""The kinds the suite's pinned judge decides: the check reads the judge's answer about the reply (trajectory-goal:
about the agent's trajectory; the conversation kinds: about the whole transcript)."""
STEP_JUDGED = ("trajectory-goal", *CONVERSATION_KINDS)
"""The judged kinds planned from a case's trajectory once its loop or conversation has ended, not from its reply."""
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
    trajectory_goal: TrajectoryGoalSpec | None = Field(None, alias="trajectory-goal")
    """`{goal: FIELD}`: the judge scores (1-5) whether an agent's trajectory (its tool calls, their results and its
    final answer) reached the goal the case states (evalkit.judging.ready_judges)."""
    knowledge_retention: KnowledgeRetentionSpec | None = Field(None, alias="knowledge-retention")
    """`{fact: FIELD}` or `{}`: the judge scores (1-5) whether a conversation's assistant keeps and uses what the
    user told it in earlier turns (evalkit.judging.conversation_judges)."""
    role_adherence: RoleAdherenceSpec | None = Field(None, alias="role-adherence")
    """`{role: FIELD}` or `{}`: the judge scores (1-5) whether the assistant keeps the role its system prompt gives
    it, every turn."""
    conversation_goal: ConversationGoalSpec | None = Field(None, alias="conversation-goal")
    """`{goal: FIELD}` or `{}` (the simulated user's goal): the judge scores (1-5) whether the conversation reached
    the user's goal."""
    refusal_holds: RefusalHoldsSpec | None = Field(None, alias="refusal-holds")
    """`{forbidden: FIELD}` or `{}`: the judge scores (1-5) whether a refusal the assistant gave once holds at every
    later attempt."""
    pairwise: PairwiseSpec | None = None
    """`{against: baseline | {case: FIELD}, criterion: "..."}`: the judge compares the reply with the baseline's
    (or a case field's) in both orders (evalkit.judging.pairwise_check)."""
    python: str | None = None
    """`module:function`, imported from the suite's folder; called as `function(reply, case)` (reply: the text,
    or the value at `field`). It passes by returning None or True; it fails by returning False or a message, or
    raising AssertionError."""
    tool_called: str | dict[str, Any] | None = Field(None, alias="tool-called")
    """An agent's trajectory: the tool (`tool-called: NAME`) is called, or `{tool: NAME, arguments: {...}}` with
    arguments matching that JSON subset at least once."""
    tool_not_called: str | dict[str, Any] | None = Field(None, alias="tool-not-called")
    """The tool is never called (`{tool, arguments}`: never with arguments matching that subset)."""
    tool_sequence: tuple[str, ...] | dict[str, Any] | None = Field(None, alias="tool-sequence")
    """`[A, B]` or `{tools: [A, B], mode: exact | in-order | any-order}` (in-order by default: other calls may
    come between)."""
    tool_args: dict[str, Any] | None = Field(None, alias="tool-args")
    """`{tool: NAME, subset: {...}}` or `{tool: NAME, schema: {...}}`: every call of the tool has such arguments
    (and it is called)."""
    steps: int | None = Field(None, ge=0)
    """At most this many model calls (the agent's steps)."""
    no_tool_errors: bool | None = Field(None, alias="no-tool-errors")
    """`true`: no tool result is an error (an unknown tool, arguments that fail its schema, a tool that raised or
    timed out)."""
    turn: int | Literal["every", "last"] | None = None
    """A conversation case (evalkit.run.conversation): which assistant turn a reply check reads, N (from 1),
    `every` turn (the first failing one is named) or the `last`; None: the case's outcome, its last turn."""
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
            try:  # as it will run: with a time budget per reply (evalkit.core.patterns)
                compile_pattern(value)
            except PatternError as error:
                raise ValueError(f"regex {value!r} does not compile: {error}") from None
        return value

    @field_validator("reduce", mode="before")
    @classmethod
    def _reducer(cls, value: Any) -> Reducer:
        return parse_reducer(value)

    @field_validator("python")
    @classmethod
    def _function(cls, value: str | None) -> str | None:
        if value is not None and not _FUNCTION.fullmatch(value):
            raise ValueError(f"python takes 'module:function', a module of the suite's folder by its dotted name "
                             f"(no leading dots: nothing is imported relative to evalkit), got {value!r}")
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
            outside = next((ref for ref in _references(value) if not ref.startswith("#")), None)
            if outside is not None:
                raise ValueError(f"json-schema: reference {outside!r} points outside the schema; a check's schema "
                                 "may refer only within itself ('#/$defs/NAME'): evalkit fetches no URL and reads no "
                                 "file while it checks replies")
        return value

    @field_validator("turn")
    @classmethod
    def _turn(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"turn counts a conversation's assistant turns from 1, got {value}")
        return value

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
        """What the check reads: the task's reply, for a judged kind the judge's answer, for a trajectory kind the
        agent's trajectory."""
        return "judge" if self.kind in JUDGED else "trajectory" if self.kind in TRAJECTORY else "task"

    @property
    def trajectory_check(self) -> TrajectoryCheck:
        """A trajectory kind as evalkit.judging.trajectory evaluates it."""
        kind = self.kind
        value = getattr(self, kind.replace("-", "_"))
        if kind in ("tool-called", "tool-not-called") and isinstance(value, str):
            value = {"tool": value}
        elif kind == "tool-sequence" and not isinstance(value, dict):
            value = {"tools": list(value)}
        elif kind == "steps":
            value = {"max_model_calls": value}
        elif kind == "no-tool-errors":
            value = {}
        try:
            return trajectory_check({"id": self.name, "kind": kind, **value}, "checks.yaml")
        except InputError as error:  # said by the file's validation, which names the file and the entry
            raise ValueError(str(error).removeprefix("checks.yaml: ")) from None

    @property
    def judge_metrics(self) -> tuple[str, ...]:
        """The judge metrics of the calls a judged check reads (`judge/<metric>/<case>`): its name, or for
        pairwise its name with `/new-first` and `/old-first`; none for the other kinds."""
        if self.kind == "pairwise":
            return (f"{self.name}/{NEW_FIRST}", f"{self.name}/{OLD_FIRST}")
        return (self.name,) if self.call == "judge" else ()

    def case_fields(self) -> Iterator[tuple[str, str]]:
        """The case fields the check reads, each with the key that names it: (`where`, FIELD),
        (`equals`, FIELD) for `equals: {case: FIELD}`, (`faithfulness.context`, FIELD) ..."""
        yield from (("where", name) for name in self.where)
        for key, value in (("equals", self.equals), ("one-of", self.one_of), ("contains", self.contains)):
            ref = case_ref(value)
            if ref is not None:
                yield key, ref.case
        if self.number is not None and isinstance(self.number.expected, CaseRef):
            yield "number.expected", self.number.expected.case
        if self.classification is not None:
            yield "classification", self.classification
        if self.faithfulness is not None:
            yield "faithfulness.context", self.faithfulness.context
        if self.answer_relevancy is not None:
            yield "answer-relevancy.question", self.answer_relevancy.question
        if self.trajectory_goal is not None:
            yield "trajectory-goal.goal", self.trajectory_goal.goal
        if self.kind in CONVERSATION_KINDS and (wanted := needed_field(self._ready())) is not None:
            key = {"knowledge-retention": "fact", "role-adherence": "role", "conversation-goal": "goal",
                   "refusal-holds": "forbidden"}[self.kind]
            yield f"{self.kind}.{key}", wanted
        if self.pairwise is not None:
            if not isinstance(self.pairwise.against, str):
                yield "pairwise.against", self.pairwise.against.case
            if self.pairwise.question is not None:
                yield "pairwise.question", self.pairwise.question

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics the check measures on each case (`<check>.<name>`): a ready-made judge's `score`, a pairwise
        check's outcomes; none for the other kinds."""
        if self.kind in JUDGES:
            return ("score",)
        if self.kind == "pairwise":
            return ("win", "tie", "loss", "disagree")
        return ()

    def missing_field(self, case: Case) -> str | None:
        """Why a judged check cannot judge this case (its spec names a case field the case lacks); None when it
        can. The planner asks no judge then, and the check could not run on the case, saying this."""
        wanted = None
        if self.kind in CONVERSATION_KINDS:
            spec = self._ready()
            assert isinstance(spec, KnowledgeRetentionSpec | RoleAdherenceSpec | ConversationGoalSpec
                              | RefusalHoldsSpec)
            return cannot_judge(spec, case)
        if self.kind in JUDGES:
            wanted = needed_field(self._ready())
        elif self.pairwise is not None and not isinstance(self.pairwise.against, str):
            wanted = self.pairwise.against.case
        if wanted is not None and wanted not in case.fields:
            return f"expected case field {wanted!r} for the judge, but case {case.id} has none"
        return None

    def _ready(self) -> Spec:
        spec: Spec | None = (self.faithfulness or self.answer_relevancy or self.g_eval or self.trajectory_goal
                             or self.knowledge_retention or self.role_adherence or self.conversation_goal
                             or self.refusal_holds)
        assert spec is not None
        return spec

    @property
    def judges_steps(self) -> bool:
        """Whether the check's judge is planned from the case's trajectory (its steps, a conversation's turns)."""
        return self.kind in STEP_JUDGED

    @property
    def needs_json(self) -> bool:
        """Whether the reply must parse as JSON for this check to judge it."""
        return self.field is not None or self.kind in ("is-json", "json-schema")

    def applies_to(self, case: Case) -> bool:
        return all(case.get(name) == value for name, value in self.where.items())


def _given(kind: str, value: Any) -> bool:
    """Whether an entry names this kind (`is-json: false`, `no-tool-errors: false` name none)."""
    return value is not None and not (kind == "is-json" and value is False)


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
            if spec.kind in CONVERSATION_KINDS and CONVERSATION_FIELD not in have:
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
