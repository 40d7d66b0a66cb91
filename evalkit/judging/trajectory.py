"""Trajectory checks: pure verdicts over what an agent did, and the checks file that names them.

A checks file (YAML) lists checks, each with an `id` and a `kind`:

    checks:
      - {id: looks-up-first, kind: tool-sequence, tools: [search, fetch], mode: in-order}
      - {id: never-deletes, kind: tool-not-called, tool: delete_file}
      - {id: searches-docs, kind: tool-called, tool: search, arguments: {scope: docs}}
      - {id: search-args, kind: tool-args, tool: search, schema: {type: object, required: [q]}}
      - {id: few-calls, kind: steps, max_model_calls: 4}
      - {id: tools-succeed, kind: no-tool-errors}

`evaluate(check, trajectory)` gives a `TrajectoryVerdict`: passed, and one line naming the step that decided it
(steps are numbered from 1). Argument matchers are JSON subsets: an object matches when each key given is present
and matches, a list when it has the same length and each item matches, anything else when it is equal (`true` is
not `1`). A JSON Schema is validated with `jsonschema`; a `$ref` must point inside the schema (`#/...`), so a
check never reads a file or the network. Pure apart from `load_trajectory_checks`, which reads the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError, model_validator

from evalkit.core.errors import InputError, brief
from evalkit.core.files import read_text_sha256
from evalkit.core.parsing import parse_yaml
from evalkit.records.trajectory import ToolCall, Trajectory

__all__ = ["CheckKind", "NoToolErrors", "SequenceMode", "StepsAtMost", "ToolArgs", "ToolCalled", "ToolNotCalled",
           "ToolSequence", "TrajectoryCheck", "TrajectoryChecks", "TrajectoryVerdict", "evaluate", "json_subset",
           "load_trajectory_checks", "parse_trajectory_checks", "trajectory_check"]

MAX_CHECKS = 1000
"""The most checks one file may hold (each becomes one test per case)."""


class CheckKind(StrEnum):
    TOOL_CALLED = "tool-called"
    TOOL_NOT_CALLED = "tool-not-called"
    TOOL_SEQUENCE = "tool-sequence"
    TOOL_ARGS = "tool-args"
    STEPS = "steps"
    NO_TOOL_ERRORS = "no-tool-errors"


class SequenceMode(StrEnum):
    EXACT = "exact"
    """The tool calls are exactly these tools, in this order."""
    IN_ORDER = "in-order"
    """These tools are called in this order; other calls may come between them."""
    ANY_ORDER = "any-order"
    """Each of these tools is called (as often as it is listed), in any order."""


class _Check(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=200, pattern=r"^[^\[\]\s]+$")
    """The check's name: the test id is `otel::<id>[<case>]` (no spaces or brackets)."""


class ToolCalled(_Check):
    """The tool is called at least once (with arguments matching `arguments`, when given)."""

    kind: Literal[CheckKind.TOOL_CALLED]
    tool: str
    arguments: JsonValue = None
    """A JSON subset the arguments of at least one call must match; none: any arguments."""


class ToolNotCalled(_Check):
    """The tool is never called (with arguments matching `arguments`, when given)."""

    kind: Literal[CheckKind.TOOL_NOT_CALLED]
    tool: str
    arguments: JsonValue = None
    """A JSON subset: only calls whose arguments match it are forbidden; none: every call of the tool."""


class ToolSequence(_Check):
    """The tool calls follow `tools` in the `mode` given."""

    kind: Literal[CheckKind.TOOL_SEQUENCE]
    tools: tuple[str, ...] = Field(min_length=1)
    mode: SequenceMode = SequenceMode.IN_ORDER


class ToolArgs(_Check):
    """Every call of the tool has arguments matching `subset`, or valid under `schema` (one of the two); the
    tool must be called at least once."""

    kind: Literal[CheckKind.TOOL_ARGS]
    tool: str
    subset: JsonValue = None
    schema_: dict[str, JsonValue] | None = Field(default=None, alias="schema")

    @model_validator(mode="after")
    def _one_matcher(self) -> ToolArgs:
        if (self.subset is None) == (self.schema_ is None):
            raise ValueError("give one of 'subset' (a JSON subset) or 'schema' (a JSON Schema)")
        if self.schema_ is not None:
            _check_schema(self.schema_)
        return self


class StepsAtMost(_Check):
    """At most `max_model_calls` model calls."""

    kind: Literal[CheckKind.STEPS]
    max_model_calls: int = Field(ge=0)


class NoToolErrors(_Check):
    """No tool result is an error."""

    kind: Literal[CheckKind.NO_TOOL_ERRORS]


TrajectoryCheck = Annotated[ToolCalled | ToolNotCalled | ToolSequence | ToolArgs | StepsAtMost | NoToolErrors,
                            Field(discriminator="kind")]
"""One trajectory check, told apart by its `kind`."""

_BY_KIND: dict[str, type[_Check]] = {CheckKind.TOOL_CALLED: ToolCalled, CheckKind.TOOL_NOT_CALLED: ToolNotCalled,
                                     CheckKind.TOOL_SEQUENCE: ToolSequence, CheckKind.TOOL_ARGS: ToolArgs,
                                     CheckKind.STEPS: StepsAtMost, CheckKind.NO_TOOL_ERRORS: NoToolErrors}
_ONE: TypeAdapter[TrajectoryCheck] = TypeAdapter(TrajectoryCheck)


@dataclass(frozen=True)
class TrajectoryChecks:
    """The checks of one file, and the file's SHA-256 (part of the contract of runs gated with them)."""

    checks: tuple[TrajectoryCheck, ...]
    sha256: str
    where: str


@dataclass(frozen=True)
class TrajectoryVerdict:
    """What one check found in one trajectory: passed or not, and one line naming the step that decided it."""

    passed: bool
    reason: str


# -- reading the checks file -------------------------------------------------------------------------------------

def load_trajectory_checks(path: Path) -> TrajectoryChecks:
    """Read a checks file; every refusal is one line naming the file (and the check)."""
    text, sha = read_text_sha256(path, "trajectory checks")
    return TrajectoryChecks(parse_trajectory_checks(text, str(path)), sha, str(path))


def parse_trajectory_checks(text: str, where: str) -> tuple[TrajectoryCheck, ...]:
    """The checks of a checks file's text (`where` names the file in refusals)."""
    data = parse_yaml(text, where, "trajectory checks file")
    if not isinstance(data, dict) or set(data) != {"checks"} or not isinstance(data["checks"], list):
        raise InputError(f"{where}: expected a mapping with one key, 'checks', holding a list of checks "
                         f"(each with an id and a kind: {', '.join(CheckKind)})")
    entries = data["checks"]
    if not entries or len(entries) > MAX_CHECKS:
        raise InputError(f"{where}: 'checks' holds {len(entries)} checks; give 1 to {MAX_CHECKS}")
    checks: list[TrajectoryCheck] = []
    seen: set[str] = set()
    for n, entry in enumerate(entries, 1):
        check = _one_check(entry, f"{where}: check {n}")
        if check.id in seen:
            raise InputError(f"{where}: check id {check.id!r} appears twice; each check needs its own id")
        seen.add(check.id)
        checks.append(check)
    return tuple(checks)


def trajectory_check(entry: Any, where: str) -> TrajectoryCheck:
    """One check from its entry (`{id, kind, ...}`): what a `checks.yaml` trajectory kind becomes; a mistake is
    an InputError naming `where` and the check."""
    return _one_check(entry, where)


def _one_check(entry: Any, where: str) -> TrajectoryCheck:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a mapping with an id and a kind, got {brief(entry)}")
    name = entry.get("id")
    if isinstance(name, str):
        where = f"{where.rsplit(': check ', 1)[0]}: check {name!r}"
    kind = entry.get("kind")
    model = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InputError(f"{where}: kind {brief(kind)} is not a trajectory check; known kinds: "
                         f"{', '.join(CheckKind)}")
    try:
        return _ONE.validate_python(entry)
    except ValidationError as error:
        raise InputError(f"{where} ({kind}): {_problems(error, model)}") from None


def _problems(error: ValidationError, model: type[_Check]) -> str:
    allowed = ", ".join(sorted((field.alias or name) for name, field in model.model_fields.items()))
    problems = []
    for item in error.errors():
        loc = [str(part) for part in item["loc"]][1:]  # the first part is the union's tag
        key = ".".join(loc) or "(the check)"
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown key {key!r} (allowed: {allowed})")
        elif item["type"] == "missing":
            problems.append(f"missing key {key!r}")
        elif item["type"] == "value_error":  # our own validators' words, already naming the key
            problems.append(str(item["msg"]).removeprefix("Value error, "))
        else:
            problems.append(f"{key!r}: {item['msg']} (got {brief(item.get('input'))})")
    return "; ".join(problems)


def _check_schema(schema: Mapping[str, Any]) -> None:
    """Refuse a schema that is not valid JSON Schema, or whose `$ref`s leave it (a file, a URL)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    stack: list[Any] = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key in ("$ref", "$dynamicRef"):
                ref = value.get(key)
                if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
                    raise ValueError(f"{key} {brief(ref)} points outside the schema; only local references "
                                     "('#/...') are read, so a check never reads a file or the network")
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as error:
        raise ValueError(f"'schema' is not a valid JSON Schema: {error.message}") from None


# -- the checks --------------------------------------------------------------------------------------------------

def json_subset(expected: Any, actual: Any) -> bool:
    """Whether `actual` matches the JSON subset `expected` (see the module's docstring)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(key in actual and json_subset(value, actual[key])
                                                for key, value in expected.items())
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(json_subset(e, a) for e, a in zip(expected, actual, strict=True)))
    # bool is an int in Python; in JSON `true` and `1` differ
    return type(expected) is type(actual) and expected == actual or (
        isinstance(expected, int | float) and not isinstance(expected, bool)
        and isinstance(actual, int | float) and not isinstance(actual, bool) and expected == actual)


def evaluate(check: TrajectoryCheck, trajectory: Trajectory) -> TrajectoryVerdict:
    """The verdict of one check on one trajectory."""
    if isinstance(check, ToolCalled):
        return _tool_called(check, trajectory)
    if isinstance(check, ToolNotCalled):
        return _tool_not_called(check, trajectory)
    if isinstance(check, ToolSequence):
        return _tool_sequence(check, trajectory)
    if isinstance(check, ToolArgs):
        return _tool_args(check, trajectory)
    if isinstance(check, StepsAtMost):
        return _steps(check, trajectory)
    return _no_tool_errors(trajectory)


def _calls_of(tool: str, trajectory: Trajectory) -> list[tuple[int, ToolCall]]:
    return [(n, call) for n, call in trajectory.tool_calls() if call.tool == tool]


def _tool_called(check: ToolCalled, trajectory: Trajectory) -> TrajectoryVerdict:
    calls = _calls_of(check.tool, trajectory)
    if not calls:
        return TrajectoryVerdict(False, f"{check.tool!r} was never called (tools called: {_names(trajectory)})")
    if check.arguments is None:
        return TrajectoryVerdict(True, f"step {calls[0][0]}: {check.tool!r} called")
    for n, call in calls:
        if json_subset(check.arguments, call.arguments):
            return TrajectoryVerdict(True, f"step {n}: {check.tool!r} called with matching arguments")
    n, call = calls[0]
    return TrajectoryVerdict(False, f"{check.tool!r} called {len(calls)} time(s), never with arguments matching "
                                    f"{brief(check.arguments)} (step {n}: {brief(call.arguments)})")


def _tool_not_called(check: ToolNotCalled, trajectory: Trajectory) -> TrajectoryVerdict:
    for n, call in _calls_of(check.tool, trajectory):
        if check.arguments is None or json_subset(check.arguments, call.arguments):
            return TrajectoryVerdict(False, f"step {n}: {check.tool!r} called ({call.id}) with "
                                            f"{brief(call.arguments)}")
    return TrajectoryVerdict(True, f"{check.tool!r} never called" + (
        "" if check.arguments is None else f" with arguments matching {brief(check.arguments)}"))


def _tool_sequence(check: ToolSequence, trajectory: Trajectory) -> TrajectoryVerdict:
    calls = trajectory.tool_calls()
    names = [call.tool for _, call in calls]
    want = list(check.tools)
    if check.mode is SequenceMode.EXACT:
        for i, (expected, actual) in enumerate(zip(want, names, strict=False)):
            if expected != actual:
                return TrajectoryVerdict(False, f"step {calls[i][0]}: tool call {i + 1} is {actual!r}, expected "
                                                f"{expected!r} (called: {_names(trajectory)})")
        if len(names) != len(want):
            where = f"step {calls[len(want)][0]}: extra call {names[len(want)]!r}" if len(names) > len(want) \
                else f"missing {want[len(names)]!r} after {len(names)} call(s)"
            return TrajectoryVerdict(False, f"{where}; expected exactly {want}, called: {_names(trajectory)}")
        return TrajectoryVerdict(True, f"tool calls are exactly {want}")
    if check.mode is SequenceMode.IN_ORDER:
        found: list[int] = []
        for expected in want:
            start = found[-1] + 1 if found else 0
            nxt = next((i for i in range(start, len(names)) if names[i] == expected), None)
            if nxt is None:
                after = f" after step {calls[found[-1]][0]} ({names[found[-1]]!r})" if found else ""
                return TrajectoryVerdict(False, f"{expected!r} is never called{after}; expected in order {want}, "
                                                f"called: {_names(trajectory)}")
            found.append(nxt)
        return TrajectoryVerdict(True, f"{want} called in order at steps {[calls[i][0] for i in found]}")
    missing = Counter(want) - Counter(names)
    if missing:
        name, times = sorted(missing.items())[0]
        return TrajectoryVerdict(False, f"{name!r} called {Counter(names)[name]} time(s), expected "
                                        f"{Counter(want)[name]} (called: {_names(trajectory)})")
    return TrajectoryVerdict(True, f"each of {sorted(set(want))} called")


def _tool_args(check: ToolArgs, trajectory: Trajectory) -> TrajectoryVerdict:
    calls = _calls_of(check.tool, trajectory)
    if not calls:
        return TrajectoryVerdict(False, f"{check.tool!r} was never called, so its arguments cannot be checked "
                                        f"(tools called: {_names(trajectory)})")
    for n, call in calls:
        problem = _args_problem(check, call.arguments)
        if problem is not None:
            return TrajectoryVerdict(False, f"step {n}: {check.tool!r} ({call.id}): {problem}")
    return TrajectoryVerdict(True, f"{len(calls)} call(s) of {check.tool!r} have matching arguments")


def _args_problem(check: ToolArgs, arguments: Any) -> str | None:
    if check.schema_ is None:
        return None if json_subset(check.subset, arguments) else \
            f"arguments {brief(arguments)} do not match {brief(check.subset)}"
    from jsonschema.validators import validator_for

    validator = validator_for(check.schema_)(check.schema_)
    error = next(iter(validator.iter_errors(arguments)), None)
    if error is None:
        return None
    at = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    return f"arguments fail the schema at {at}: {brief(error.message, 160)}"


def _steps(check: StepsAtMost, trajectory: Trajectory) -> TrajectoryVerdict:
    calls = trajectory.model_calls()
    if len(calls) > check.max_model_calls:
        n, _ = calls[check.max_model_calls]
        return TrajectoryVerdict(False, f"step {n}: model call {check.max_model_calls + 1} of {len(calls)}; at most "
                                        f"{check.max_model_calls} allowed")
    return TrajectoryVerdict(True, f"{len(calls)} model call(s), at most {check.max_model_calls} allowed")


def _no_tool_errors(trajectory: Trajectory) -> TrajectoryVerdict:
    tools = {call.id: call.tool for _, call in trajectory.tool_calls()}
    for n, result in trajectory.tool_results():
        if result.error:
            why = f": {brief(result.error_message, 160, )}" if result.error_message else ""
            return TrajectoryVerdict(False, f"step {n}: tool {tools.get(result.call_id, '?')!r} "
                                            f"({result.call_id}) failed{why}")
    return TrajectoryVerdict(True, f"{len(trajectory.tool_results())} tool result(s), none an error")


def _names(trajectory: Trajectory) -> str:
    names: Sequence[str] = [call.tool for _, call in trajectory.tool_calls()]
    return "[" + ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") + "]" if names else "none"
