"""Slices: one run's results cut by a case field or a derived key (e.g. the language of the question).

Pure: cases and results go in, a pass rate, the failing cases and the unsafe cases per slice come out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalkit.core.dataset import Case
from evalkit.core.errors import InputError

__all__ = ["MISSING", "Language", "Slice", "language_of", "language_of_field", "slice_cases"]

Language = Literal["bn", "en", "mixed"]

MISSING = "(missing)"
"""The slice of cases that lack the field sliced by (they stay in a denominator; nothing is dropped)."""

# Any character of the Unicode Bengali block (letters, vowel signs, digits, the taka sign): one makes a
# text Bangla or mixed.
_BANGLA = re.compile(r"[\u0980-\u09ff]")
_LATIN = re.compile(r"[A-Za-z]")


def language_of(text: str) -> Language:
    """`bn` (Bengali-block characters and no Latin letters), `mixed` (both) or `en` (no Bengali-block
    character at all, which includes text with no letters)."""
    bangla, latin = bool(_BANGLA.search(text)), bool(_LATIN.search(text))
    return "mixed" if bangla and latin else "bn" if bangla else "en"


def language_of_field(field: str) -> Callable[[Case], str]:
    """A `by` for `slice_cases`: the language of a text field, e.g. `language_of_field("input")`."""

    def language(case: Case) -> str:
        value = case.get(field)
        if not isinstance(value, str):
            raise InputError(f"case {case.id!r}: field {field!r} is {type(value).__name__}, not text, "
                             "so it has no language")
        return language_of(value)

    return language


class Slice(BaseModel):
    """The cases that share one value of the key sliced by, and how they did."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: int = Field(ge=1)
    """How many cases fall in this slice."""
    pass_rate: float = Field(ge=0.0, le=1.0)
    """Passed cases / cases (unrounded; rounding is for renderers)."""
    failures: tuple[str, ...]
    """Ids of the cases that did not pass, sorted."""
    unsafe: tuple[str, ...]
    """Ids of cases expected to abstain (`expect == "abstain"`) whose abstention check did not pass, sorted:
    they answered where they should not have (or could not show that they abstained)."""


def slice_cases(cases: Iterable[Case], results: Mapping[str, Mapping[str, Any]], by: str | Callable[[Case], str],
                *, abstention_check: str = "abstention") -> dict[str, Slice]:
    """Pass rate, failures and unsafe cases per value of `by`, sorted by slice name.

    `cases`: the cases to slice (evalkit.core.dataset.Case; pass a subset to slice only those).
    `results`: case id -> `{"passed": bool, "checks": {check name: bool or pytest outcome}}`, as in a run
    report's `cases` (other keys are ignored). A check passed when it is True or "passed"; any other outcome
    ("failed", "error", "skipped", ...) did not. Every case must have a result; extra results are ignored.
    `by`: a case field name (str, int, float or bool values; a case without the field goes to MISSING), or a
    callable deriving the slice name from a case.
    `abstention_check`: the check that passes when the case abstained (a missing check counts as not passed).
    """
    key = _field_key(by) if isinstance(by, str) else by
    groups: dict[str, list[str]] = {}
    expected_abstain: set[str] = set()
    seen = False
    for case in cases:
        seen = True
        name = key(case)
        if not isinstance(name, str):
            raise InputError(f"case {case.id!r}: the slice key is {type(name).__name__}, not a string")
        groups.setdefault(name, []).append(case.id)
        if case.get("expect") == "abstain":
            expected_abstain.add(case.id)
    if isinstance(by, str) and seen and set(groups) == {MISSING}:
        raise InputError(f"no case has the field {by!r} to slice by")
    slices = {}
    for name, ids in sorted(groups.items()):
        passed = {i: _passed(results, i) for i in ids}
        slices[name] = Slice(
            cases=len(ids),
            pass_rate=sum(passed.values()) / len(ids),
            failures=tuple(sorted(i for i in ids if not passed[i])),
            unsafe=tuple(sorted(i for i in ids if i in expected_abstain
                                and not _check_passed(results[i], abstention_check))),
        )
    return slices


def _field_key(field: str) -> Callable[[Case], str]:
    def value_of(case: Case) -> str:
        if field not in case.fields:
            return MISSING
        value = case.fields[field]
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | int | float):
            return str(value)
        raise InputError(f"case {case.id!r}: field {field!r} is a {type(value).__name__}; slice by a callable "
                         "that derives a key from it")

    return value_of


def _passed(results: Mapping[str, Mapping[str, Any]], case_id: str) -> bool:
    result = results.get(case_id)
    if result is None:
        raise InputError(f"results have no entry for case {case_id!r}; every sliced case needs one "
                         "(a case that was not run is a result with passed: false)")
    passed = result.get("passed")
    if not isinstance(passed, bool):
        raise InputError(f"result of case {case_id!r}: 'passed' must be true or false, got {passed!r}")
    return passed


def _check_passed(result: Mapping[str, Any], check: str) -> bool:
    checks = result.get("checks")
    outcome = checks.get(check) if isinstance(checks, Mapping) else None
    return outcome is True or outcome == "passed"
