"""Declarative checks: the assertions a suite lists in its `checks.yaml`, judged against one reply and one case
(the file's format, `CheckSpec`, is evalkit.judging.check_spec's; re-exported here).

Pure: a check reads the reply text and the case's fields and returns a Verdict (passed, and a one-line message
saying what was expected and what came). Turning each check into a pytest test is evalkit.run.declared's job.

A reply that a check needs as JSON and that does not parse fails that check with the parse error; it never
raises, so a model's malformed reply is data that fails its case, never an error of the test run.

A check that cannot judge a case at all (a case field it reads is missing from this case, its pattern ran past its
time budget on this reply, its schema refers to nothing) neither passes nor fails it: its Verdict says it could not
run, and why, and the case is reported unscored (evalkit.run.declared), never a pass or a plain failure.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.core.patterns import budget_s, compile_pattern
from evalkit.judging.check_kind import CheckKind, Verdict
from evalkit.judging.check_spec import (
    CaseRef,
    ChecksFile,
    CheckSpec,
    JsonSchema,
    LengthSpec,
    NumberSpec,
    PythonTarget,
    Regex,
    case_ref,
    parse_checks,
)
from evalkit.judging.conversation_judges import conversation_request
from evalkit.judging.llm_rubric import rubric_request, rubric_verdict
from evalkit.judging.pairwise_check import PairwiseSpec, pair_metrics, pair_requests, pair_verdict
from evalkit.judging.ready_judges import (
    AnswerRelevancySpec,
    ConversationGoalSpec,
    ConversationSpec,
    FaithfulnessSpec,
    GEvalSpec,
    KnowledgeRetentionSpec,
    RefusalHoldsSpec,
    RoleAdherenceSpec,
    TrajectoryGoalSpec,
    judge_request,
    score_verdict,
)
from evalkit.judging.trajectory import evaluate
from evalkit.records.call import Request
from evalkit.records.trajectory import Trajectory

__all__ = ["CheckSpec", "ChecksFile", "Verdict", "judge", "judge_pair", "judge_trajectory", "parse_checks",
           "planned_judge_calls", "planned_trajectory_judge", "read_field", "shown"]

SHOWN_CHARS = 80
"""A value in a failure message is cut after this many characters: the message stays one readable line."""


class _Unreadable(Exception):
    """The reply has no value where the check looks: the check fails with this message."""


class _CouldNotRun(Exception):
    """The check cannot judge this case (a case field it reads is missing, its pattern ran past its budget)."""


def judge(spec: CheckSpec, reply: str, case: Case, load: Callable[[str], Any] | None = None) -> Verdict:
    """Judge one reply of one case by one check (for llm-rubric: the judge's answer about the reply). `load`
    imports a `python:` check's function (by default importlib; the pytest side passes one that looks in the
    suite's folder)."""
    try:
        value = _value(spec, reply)
        return spec.check_kind.verdict(spec, value, case, load or _import)
    except _Unreadable as problem:
        return Verdict(False, str(problem))
    except _CouldNotRun as problem:
        return Verdict.could_not_run(spec, str(problem))


def judge_trajectory(spec: CheckSpec, trajectory: Mapping[str, Any] | None) -> Verdict:
    """Judge one agent case's trajectory (as the run input holds it) by a trajectory kind of check; a case without
    one (a suite without tools) fails, saying so: a trajectory check that cannot see one never passes."""
    if trajectory is None:
        return Verdict(False, f"no trajectory: a {spec.kind} check reads an agent's steps, and this suite runs no "
                              "agent (no tools.py, agent.tools unset)")
    verdict = evaluate(spec.trajectory_check, Trajectory.model_validate(trajectory))
    return Verdict(verdict.passed, verdict.reason)


def _value(spec: CheckSpec, reply: str) -> Any:
    if not spec.needs_json:
        return reply
    try:
        data = json.loads(reply)
    except json.JSONDecodeError as error:
        raise _Unreadable(f"expected a JSON reply, came unparseable JSON ({error.msg}: line {error.lineno} "
                          f"column {error.colno}): {_cut(_line(reply))}") from None
    except (ValueError, RecursionError) as error:  # a number of more digits, or nesting deeper, than Python reads
        raise _Unreadable(f"expected a JSON reply, came JSON Python cannot read ({_cut(_line(str(error)))}): "
                          f"{_cut(_line(reply))}") from None
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
            raise _CouldNotRun(f"expected a value from case field {value.case!r}, but case {case.id} has none")
        return case.fields[value.case]
    return value


def _fold(value: Any, spec: CheckSpec) -> Any:
    return value.casefold() if spec.ignore_case and isinstance(value, str) else value


def _equals(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    expected = _resolve(_case_ref(spec.options), case)
    return _verdict(_fold(value, spec) == _fold(expected, spec), f"expected {shown(expected)}, came {shown(value)}")


def _case_ref(value: Any) -> Any:
    """`equals: {case: FIELD}` names a case field (pydantic keeps `equals` as written, any type)."""
    return case_ref(value) or value


def _one_of(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    allowed = _resolve(spec.options, case)
    allowed = list(allowed) if isinstance(allowed, list | tuple) else [allowed]
    folded = [_fold(a, spec) for a in allowed]
    return _verdict(_fold(value, spec) in folded, f"expected one of {shown(allowed)}, came {shown(value)}")


def _contains(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    wanted = _resolve(spec.options, case)
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
    pattern: str = spec.options
    matched = False
    if isinstance(value, str):
        budget = budget_s(value)
        try:  # a pattern that backtracks without end on this reply is stopped at its budget, never a hang
            matched = _compiled(pattern).search(value, timeout=budget) is not None
        except TimeoutError:
            raise _CouldNotRun(f"regex /{_cut(pattern)}/ ran past its time budget of {budget:.3g} s on a reply of "
                               f"{len(value):,} characters (evalkit.core.patterns)") from None
    return _verdict(matched, f"expected a match of /{pattern}/, came {shown(value)}")


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return compile_pattern(pattern)


def _is_json(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    return Verdict(True)  # reaching here means the reply parsed


def _json_schema(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    from jsonschema.validators import validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    schema = spec.options
    # references resolve within the schema only (checks.yaml refuses any other): an empty registry retrieves
    # nothing, so no URL is fetched and no file read, whatever the schema says
    validator = validator_for(schema)(schema, registry=Registry())
    try:
        error = next(iter(validator.iter_errors(value)), None)
    except Unresolvable as unresolved:
        raise _CouldNotRun(f"json-schema: {_line(str(unresolved))[:SHOWN_CHARS]}") from None
    if error is None:
        return Verdict(True)
    where = "/".join(str(p) for p in error.absolute_path) or "the reply"
    return Verdict(False, f"expected {where} to satisfy the schema's {error.validator!r}, came: {_line(error.message)}")


def _number(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    rule: NumberSpec = spec.options
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
    rule: LengthSpec = spec.options
    if not isinstance(value, str | list | dict):
        return Verdict(False, f"expected a text or list, came {shown(value)}")
    size = len(value)
    unit = "characters" if isinstance(value, str) else "items"
    low = rule.min if rule.min is not None else 0
    high = "" if rule.max is None else str(rule.max)
    ok = (rule.min is None or size >= rule.min) and (rule.max is None or size <= rule.max)
    return _verdict(ok, f"expected {low} to {high or 'any number of'} {unit}, came {size}")


def _classification(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    expected = _resolve(CaseRef(case=spec.options), case)
    predicted = None if value is None else str(value)
    ok = predicted is not None and _fold(predicted, spec) == _fold(str(expected), spec)
    return Verdict(ok, "" if ok else f"expected label {shown(str(expected))}, came {shown(value)}", predicted)


def _python(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    target: str = spec.options
    function = load(target)
    try:
        result = function(value, case)
    except AssertionError as error:
        return Verdict(False, _line(str(error)) or f"{target} failed its assertion")
    if result is None or result is True:
        return Verdict(True)
    if result is False:
        return Verdict(False, f"expected {target} to accept the reply, came {shown(value)}")
    return Verdict(False, _line(str(result)))


def _llm_rubric(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    passed, message = rubric_verdict(value)  # `value` is the judge's answer for this check and case
    return Verdict(passed, message)


def _ready_judge(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    missing = spec.missing_field(case)
    if missing is not None:
        return Verdict.could_not_run(spec, missing)
    scored = score_verdict(spec.kind, value, spec.options.pass_at)  # `value` is the judge's answer
    # an answer without a score fails the check, and leaves the score unmeasured on this case (counted as such)
    return Verdict(scored.passed, scored.message,
                   metrics={"score": None if scored.score is None else float(scored.score)})


def judge_pair(spec: CheckSpec, case: Case, new_first: str | None, old_first: str | None) -> Verdict:
    """Judge a pairwise check from the judge's answers with the new reply first and second (None and None: the
    replies were the same, so no judge was asked)."""
    assert isinstance(spec.options, PairwiseSpec)
    missing = spec.missing_field(case)
    if missing is not None:
        return Verdict.could_not_run(spec, missing)
    passed, message, verdict = pair_verdict(spec.options, new_first, old_first)
    # answers that are not a verdict fail the check, and leave its outcomes unmeasured on this case
    return Verdict(passed, message, metrics=pair_metrics(verdict) if verdict is not None
                   else dict.fromkeys(spec.metric_names))


def planned_judge_calls(spec: CheckSpec, case: Case, reply: str, judge: ModelConfig,
                        baseline_reply: str | None) -> dict[str, Request]:
    """The judge calls a judged check makes for one case's reply, by judge metric; none for a case it does not
    apply to, a case lacking the field it reads, a pairwise check with nothing to compare against, or a reply
    the same as the one compared against."""
    if spec.call != "judge" or spec.judges_trajectory or not spec.applies_to(case) \
            or spec.missing_field(case) is not None:
        return {}
    if isinstance(spec.options, str):  # llm-rubric: the criterion in words
        return {spec.name: rubric_request(spec.options, case, reply, judge)}
    if isinstance(spec.options, PairwiseSpec):
        against = spec.options.against
        other = baseline_reply if isinstance(against, str) else _as_text(case.fields[against.case])
        return {} if other is None else pair_requests(spec.name, spec.options, case, reply, other, judge)
    return {spec.name: judge_request(spec.kind, spec.options, case, reply, judge)}


def planned_trajectory_judge(spec: CheckSpec, case: Case, trajectory: Trajectory, judge: ModelConfig,
                             task: Request | None = None) -> dict[str, Request]:
    """The judge call a trajectory-goal check makes for one agent case's trajectory, or a conversation check for
    one conversation's transcript (`judge/<check>/<case>`; `task`: the request build_task made, whose system prompt
    a conversation judge is shown); none for another kind, a case it does not apply to, a case lacking a field the
    judge reads, or a conversation without an assistant turn."""
    if not spec.judges_trajectory or not spec.applies_to(case) or spec.missing_field(case) is not None:
        return {}
    if isinstance(spec.options, ConversationSpec):
        request = conversation_request(spec.kind, spec.options, case, trajectory, judge, task)
        return {} if request is None else {spec.name: request}
    return {spec.name: judge_request(spec.kind, spec.options, case, "", judge, trajectory)}


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


def _elsewhere(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    raise AssertionError(f"a {spec.kind} check does not read one reply: judge_pair, judge_trajectory")


def _ref(options: Any) -> Iterable[tuple[str, str]]:
    """`{case: FIELD}` in place of the value (equals, one-of, contains)."""
    ref = case_ref(options)
    return () if ref is None else (("", ref.case),)


def _expected_ref(options: NumberSpec) -> Iterable[tuple[str, str]]:
    return (("expected", options.expected.case),) if isinstance(options.expected, CaseRef) else ()


def _judged_field(key: str) -> Callable[[Any], Iterable[tuple[str, str]]]:
    """The case field a ready judge's `key` names; none where the key is optional and unset (a conversation
    judge's `{}`)."""
    return lambda options: () if getattr(options, key) is None else ((key, getattr(options, key)),)


def _pair_fields(options: PairwiseSpec) -> Iterable[tuple[str, str]]:
    if not isinstance(options.against, str):
        yield "against", options.against.case
    if options.question is not None:
        yield "question", options.question


# evalkit's own check kinds, registered in its pyproject.toml under `evalkit.check_kinds` exactly as another
# package registers its own (evalkit.judging.check_kind); their names are written there and here, nowhere else.

EQUALS = CheckKind("equals", Any, _equals, "the value equals it (`{case: FIELD}`: the case's value)", case_fields=_ref)
ONE_OF = CheckKind("one-of", tuple[Any, ...] | CaseRef, _one_of, "the value is one of them", case_fields=_ref)
CONTAINS = CheckKind("contains", str | tuple[str, ...] | CaseRef, _contains,
                     "the text contains them (`match: any`: one of them)", case_fields=_ref)
REGEX = CheckKind("regex", Regex, _regex, "the pattern is found, within its time budget")
IS_JSON = CheckKind("is-json", bool, _is_json, "the reply parses as JSON", json=True, false_is_absent=True)
JSON_SCHEMA = CheckKind("json-schema", JsonSchema, _json_schema, "the value satisfies the JSON Schema", json=True)
NUMBER = CheckKind("number", NumberSpec, _number, "the value is a number within `expected ± tolerance` or "
                   "`[min, max]`", case_fields=_expected_ref)
LENGTH = CheckKind("length", LengthSpec, _length, "characters of a text, items of a list, within `[min, max]`")
CLASSIFICATION = CheckKind("classification", str, _classification,
                           "the value equals the case's label (and feeds the classification metrics)",
                           case_fields=lambda options: (("", options),))
PYTHON = CheckKind("python", PythonTarget, _python,
                   "`function(reply, case)` of the suite's folder returns None or True")
LLM_RUBRIC = CheckKind("llm-rubric", Annotated[str, Field(min_length=1)], _llm_rubric,
                       "the suite's pinned judge finds the criterion met", reads="judge")
FAITHFULNESS = CheckKind("faithfulness", FaithfulnessSpec, _ready_judge,
                         "the judge scores (1-5) the reply kept to the case's context at least `pass_at`",
                         reads="judge", metric_names=("score",), case_fields=_judged_field("context"))
ANSWER_RELEVANCY = CheckKind("answer-relevancy", AnswerRelevancySpec, _ready_judge,
                             "the judge scores (1-5) the reply answers the case's question at least `pass_at`",
                             reads="judge", metric_names=("score",), case_fields=_judged_field("question"))
G_EVAL = CheckKind("g-eval", GEvalSpec, _ready_judge,
                   "the judge, following the steps, scores (1-5) the criteria at least `pass_at`",
                   reads="judge", metric_names=("score",))
TRAJECTORY_GOAL = CheckKind("trajectory-goal", TrajectoryGoalSpec, _ready_judge,
                            "the judge, shown the agent's trajectory, scores (1-5) it reached the case's goal at "
                            "least `pass_at`", reads="judge", shown="trajectory", metric_names=("score",),
                            case_fields=_judged_field("goal"))
# the conversation judges (evalkit.judging.conversation_judges): one call per conversation case, planned after its
# last turn from the recorded turns; a dataset without conversations refuses them (ChecksFile.check_cases)
KNOWLEDGE_RETENTION = CheckKind("knowledge-retention", KnowledgeRetentionSpec, _ready_judge,
                                "the judge, shown the whole conversation, scores (1-5) the assistant kept and used "
                                "what the user told it at least `pass_at`", reads="judge", shown="conversation",
                                metric_names=("score",), case_fields=_judged_field("fact"))
ROLE_ADHERENCE = CheckKind("role-adherence", RoleAdherenceSpec, _ready_judge,
                           "the judge, shown the whole conversation, scores (1-5) the assistant kept its role every "
                           "turn at least `pass_at`", reads="judge", shown="conversation", metric_names=("score",),
                           case_fields=_judged_field("role"))
CONVERSATION_GOAL = CheckKind("conversation-goal", ConversationGoalSpec, _ready_judge,
                              "the judge, shown the whole conversation, scores (1-5) it reached the user's goal at "
                              "least `pass_at`", reads="judge", shown="conversation", metric_names=("score",),
                              case_fields=_judged_field("goal"))
REFUSAL_HOLDS = CheckKind("refusal-holds", RefusalHoldsSpec, _ready_judge,
                          "the judge, shown the whole conversation, scores (1-5) a refusal held at every later "
                          "attempt at least `pass_at`", reads="judge", shown="conversation", metric_names=("score",),
                          case_fields=_judged_field("forbidden"))
PAIRWISE = CheckKind("pairwise", PairwiseSpec, _elsewhere,
                     "the judge, asked in both orders, does not prefer the other reply (`require: win`: prefers "
                     "this one)", reads="judge", metric_names=("win", "tie", "loss", "disagree"),
                     case_fields=_pair_fields)


def _tool(value: str | dict[str, Any]) -> dict[str, Any]:
    return {"tool": value} if isinstance(value, str) else value


def _tools(value: tuple[str, ...] | dict[str, Any]) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"tools": list(value)}


# a trajectory kind's options become evalkit.judging.trajectory's entry for it (`tool-called: NAME` is
# `{tool: NAME}`); CheckSpec.trajectory_check validates that entry when the file is read
TOOL_CALLED = CheckKind("tool-called", Annotated[str | dict[str, Any], AfterValidator(_tool)], _elsewhere,
                        "the tool is called (`{tool, arguments}`: with arguments matching that subset)",
                        reads="trajectory")
TOOL_NOT_CALLED = CheckKind("tool-not-called", Annotated[str | dict[str, Any], AfterValidator(_tool)], _elsewhere,
                            "the tool is never called (`{tool, arguments}`: never so)", reads="trajectory")
TOOL_SEQUENCE = CheckKind("tool-sequence", Annotated[tuple[str, ...] | dict[str, Any], AfterValidator(_tools)],
                          _elsewhere, "the tools are called in this order (`mode: exact | in-order | any-order`)",
                          reads="trajectory")
TOOL_ARGS = CheckKind("tool-args", dict[str, Any], _elsewhere,
                      "every call of the tool has such arguments (`subset:` or `schema:`), and it is called",
                      reads="trajectory")
STEPS = CheckKind("steps", Annotated[int, Field(ge=0), AfterValidator(lambda n: {"max_model_calls": n})],
                  _elsewhere, "at most this many model calls", reads="trajectory")
NO_TOOL_ERRORS = CheckKind("no-tool-errors", Annotated[bool, AfterValidator(lambda _: {})], _elsewhere,
                           "no tool result is an error", reads="trajectory")
