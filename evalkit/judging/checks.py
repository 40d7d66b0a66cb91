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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.core.patterns import budget_s, compile_pattern
from evalkit.judging.check_spec import JUDGED, KINDS, CaseRef, ChecksFile, CheckSpec, case_ref, parse_checks
from evalkit.judging.conversation_judges import conversation_request
from evalkit.judging.llm_rubric import rubric_request, rubric_verdict
from evalkit.judging.pairwise_check import pair_metrics, pair_requests, pair_verdict
from evalkit.judging.ready_judges import CONVERSATION_KINDS, ConversationSpec, judge_request, score_verdict
from evalkit.judging.trajectory import evaluate
from evalkit.records.call import Request
from evalkit.records.trajectory import Trajectory

__all__ = ["JUDGED", "KINDS", "CheckSpec", "ChecksFile", "Verdict", "judge", "judge_pair", "judge_trajectory",
           "parse_checks", "planned_judge_calls", "planned_trajectory_judge", "read_field", "shown"]

SHOWN_CHARS = 80
"""A value in a failure message is cut after this many characters: the message stays one readable line."""


@dataclass(frozen=True)
class Verdict:
    """One check's result on one case: passed or not, and, when not, one line of expected against came."""

    passed: bool
    message: str = ""
    predicted: str | None = None
    """classification checks: the label the reply gave (None when the reply gave none), for the metrics."""
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    """Numbers the check measured on the case, kept as the metrics `<check>.<name>`: a ready-made judge's
    `score`, a pairwise check's `win`, `tie`, `loss` and `disagree`; None where it could not measure one."""
    ran: bool = True
    """False when the check could not judge the case at all: `message` says why, it neither passed nor failed."""

    @classmethod
    def could_not_run(cls, spec: CheckSpec, why: str) -> Verdict:
        """The verdict of a check that could not judge the case: why, and each of its metrics unmeasured."""
        return cls(False, why, metrics=dict.fromkeys(spec.metric_names), ran=False)


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
        return _KIND_JUDGES[spec.kind](spec, value, case, load or _import)
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
    expected = _resolve(_case_ref(spec.equals), case)
    return _verdict(_fold(value, spec) == _fold(expected, spec), f"expected {shown(expected)}, came {shown(value)}")


def _case_ref(value: Any) -> Any:
    """`equals: {case: FIELD}` names a case field (pydantic keeps `equals` as written, any type)."""
    return case_ref(value) or value


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
    matched = False
    if isinstance(value, str):
        budget = budget_s(value)
        try:  # a pattern that backtracks without end on this reply is stopped at its budget, never a hang
            matched = _compiled(spec.regex).search(value, timeout=budget) is not None
        except TimeoutError:
            raise _CouldNotRun(f"regex /{_cut(spec.regex)}/ ran past its time budget of {budget:.3g} s on a reply of "
                               f"{len(value):,} characters (evalkit.core.patterns)") from None
    return _verdict(matched, f"expected a match of /{spec.regex}/, came {shown(value)}")


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return compile_pattern(pattern)


def _is_json(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    return Verdict(True)  # reaching here means the reply parsed


def _json_schema(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    from jsonschema.validators import validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    schema = spec.json_schema
    assert schema is not None
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
        return Verdict.could_not_run(spec, missing)
    scored = score_verdict(spec.kind, value, spec._ready().pass_at)  # `value` is the judge's answer
    # an answer without a score fails the check, and leaves the score unmeasured on this case (counted as such)
    return Verdict(scored.passed, scored.message,
                   metrics={"score": None if scored.score is None else float(scored.score)})


def _pairwise(spec: CheckSpec, value: Any, case: Case, load: Callable[[str], Any]) -> Verdict:
    raise AssertionError("a pairwise check reads two answers: judge_pair")


def judge_pair(spec: CheckSpec, case: Case, new_first: str | None, old_first: str | None) -> Verdict:
    """Judge a pairwise check from the judge's answers with the new reply first and second (None and None: the
    replies were the same, so no judge was asked)."""
    assert spec.pairwise is not None
    missing = spec.missing_field(case)
    if missing is not None:
        return Verdict.could_not_run(spec, missing)
    passed, message, verdict = pair_verdict(spec.pairwise, new_first, old_first)
    # answers that are not a verdict fail the check, and leave its outcomes unmeasured on this case
    return Verdict(passed, message, metrics=pair_metrics(verdict) if verdict is not None
                   else dict.fromkeys(spec.metric_names))


def planned_judge_calls(spec: CheckSpec, case: Case, reply: str, judge: ModelConfig,
                        baseline_reply: str | None) -> dict[str, Request]:
    """The judge calls a judged check makes for one case's reply, by judge metric; none for a case it does not
    apply to, a case lacking the field it reads, a pairwise check with nothing to compare against, or a reply
    the same as the one compared against."""
    if spec.call != "judge" or spec.judges_steps or not spec.applies_to(case) \
            or spec.missing_field(case) is not None:
        return {}
    if spec.llm_rubric is not None:
        return {spec.name: rubric_request(spec.llm_rubric, case, reply, judge)}
    if spec.pairwise is not None:
        against = spec.pairwise.against
        other = baseline_reply if isinstance(against, str) else _as_text(case.fields[against.case])
        return {} if other is None else pair_requests(spec.name, spec.pairwise, case, reply, other, judge)
    return {spec.name: judge_request(spec.kind, spec._ready(), case, reply, judge)}


def planned_trajectory_judge(spec: CheckSpec, case: Case, trajectory: Trajectory, judge: ModelConfig,
                             task: Request | None = None) -> dict[str, Request]:
    """The judge call a trajectory-goal check makes for one agent case's trajectory, or a conversation check for
    one conversation's transcript (`judge/<check>/<case>`; `task`: the request build_task made, whose system prompt
    a conversation judge is shown); none for another kind, a case it does not apply to, a case lacking a field the
    judge reads, or a conversation without an assistant turn."""
    if not spec.judges_steps or not spec.applies_to(case) or spec.missing_field(case) is not None:
        return {}
    if spec.trajectory_goal is not None:
        return {spec.name: judge_request(spec.kind, spec.trajectory_goal, case, "", judge, trajectory)}
    ready = spec._ready()
    assert spec.kind in CONVERSATION_KINDS and isinstance(ready, ConversationSpec)
    request = conversation_request(spec.kind, ready, case, trajectory, judge, task)
    return {} if request is None else {spec.name: request}


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
    "g-eval": _ready_judge, "trajectory-goal": _ready_judge, "pairwise": _pairwise,
    **dict.fromkeys(CONVERSATION_KINDS, _ready_judge),
}
