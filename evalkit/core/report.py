"""Run reports: what one run produced. Read from evalkit's own reports or any pytest-json-report
file that carries an `eval` block, so a team can gate an existing pytest eval suite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.core.errors import InputError
from evalkit.core.failure import failure_message
from evalkit.core.files import read_text

__all__ = ["RunReport", "report_from_mapping", "load_report", "parse_report"]

OUTCOMES = frozenset({"passed", "failed", "skipped", "xfailed", "xpassed", "error"})
# One shared string per outcome: a million-test report then holds 6 outcome strings, not a million.
_CANONICAL = {o: o for o in OUTCOMES}


@dataclass(frozen=True)
class RunReport:
    """The parts of a run report the gate reads: the eval key, each test's outcome, the cases (with their grades
    in program suites), metrics, slices, execution, and the dataset and candidate blocks of program suites."""

    eval: Mapping[str, Any]
    outcomes: Mapping[str, str]
    """nodeid -> pytest outcome, in report order."""
    cases: tuple[Mapping[str, Any], ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    """Run-level metrics: each one's mean over the cases that measured it; None when none could."""
    slices: Mapping[str, Any] = field(default_factory=dict)
    """Per cut (`language(input) where kind=rag`): per value, cases, pass_rate, failures, unsafe."""
    execution: Mapping[str, Any] = field(default_factory=dict)
    """Call statistics, cost and latency sections (evalkit's own reports)."""
    dataset: Mapping[str, Any] = field(default_factory=dict)
    """Manifest datasets: name, version, split, synthetic, purpose (absent for single-file datasets)."""
    candidate: Mapping[str, Any] = field(default_factory=dict)
    """Candidate-program suites: the option, its change, the program and its SHA-256."""
    messages: Mapping[str, str] = field(default_factory=dict)
    """nodeid -> the first line of why the test did not pass (evalkit.core.failure); only tests that did not
    pass and whose entry says why, so a large report of passing tests holds no messages at all."""

    @property
    def passed(self) -> int:
        return sum(1 for o in self.outcomes.values() if o == "passed")

    @property
    def unscored(self) -> tuple[str, ...]:
        """Cases the run could not measure (a call failed or was denied by the budget)."""
        return tuple(str(c.get("id")) for c in self.cases if isinstance(c, Mapping) and c.get("status") == "unscored")


def report_from_mapping(data: Any, where: str) -> RunReport:
    """Check that `data` is a run report and extract it; every refusal names `where` and the fix."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a run report (expected a JSON object)")
    key = data.get("eval")
    if not isinstance(key, dict):
        raise InputError(f"{where}: not a run report: no 'eval' block with the eval key "
                         "(produce it with `python -m evalkit`, or add it in pytest_json_modifyreport)")
    tests = data.get("tests")
    if not isinstance(tests, list):
        raise InputError(f"{where}: not a run report: no 'tests' list (was it written by pytest-json-report?)")
    if not tests:
        raise InputError(f"{where}: the run has no tests, so there is nothing to gate; "
                         "check that the suite collected its tests")
    # Fast path for valid reports (one pass, C-speed); the careful loop below words the error.
    try:
        outcomes = {test["nodeid"]: _CANONICAL[test["outcome"]] for test in tests}
    except (TypeError, KeyError):
        outcomes = {}
    if len(outcomes) != len(tests) or not all(isinstance(nodeid, str) for nodeid in outcomes):
        _refuse_tests(tests, where)
    messages = {test["nodeid"]: line for test in tests
                if test["outcome"] != "passed" and (line := failure_message(test)) is not None}
    cases = data.get("cases") or ()
    provenance = data.get("provenance") or {}
    return RunReport(key, outcomes, tuple(cases), provenance, _metrics(data.get("metrics"), where),
                     _mapping(data.get("slices")), _mapping(data.get("execution")), _mapping(data.get("dataset")),
                     _mapping(data.get("candidate")), messages)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _metrics(block: Any, where: str) -> dict[str, float | None]:
    """`{"name": {"mean": x, "count": n, ...}}` (evalkit's own) or `{"name": x}`; values finite or null."""
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise InputError(f"{where}: 'metrics' must be an object of metric names")
    out: dict[str, float | None] = {}
    for name, entry in block.items():
        value = entry.get("mean") if isinstance(entry, dict) else entry
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value)):
            raise InputError(f"{where}: metric {name!r} is {value!r}; a metric is a finite number, "
                             "or null when it could not be measured")
        out[str(name)] = None if value is None else float(value)
    return out


def _refuse_tests(tests: list[Any], where: str) -> None:
    """Find the first bad test entry and raise an error naming it."""
    outcomes: dict[str, str] = {}
    for index, test in enumerate(tests):
        try:
            nodeid, outcome = test["nodeid"], test["outcome"]
        except (TypeError, KeyError):
            raise InputError(f"{where}: tests[{index}] needs 'nodeid' and 'outcome'") from None
        if not isinstance(nodeid, str) or outcome not in OUTCOMES:
            raise InputError(f"{where}: tests[{index}] has an invalid nodeid or outcome {outcome!r} "
                             f"(outcomes: {', '.join(sorted(OUTCOMES))})")
        if nodeid in outcomes:
            raise InputError(f"{where}: duplicate test id {nodeid!r}; each test may appear once")
        outcomes[nodeid] = outcome
    raise AssertionError("unreachable: the fast path refused a valid tests list")


def parse_report(text: str, where: str) -> RunReport:
    """Parse report text; malformed or truncated JSON is an input error naming the position."""
    return report_from_mapping(_parse_json(text, where), where)


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{where}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
                         "is the file truncated?") from None


def load_report(path: Path) -> RunReport:
    text = read_text(path, "report")
    data = _parse_json(text, str(path))
    del text  # the raw text of a large report is as big as the parsed one: free it before extracting
    return report_from_mapping(data, str(path))

