"""Run reports as the gate reads them (`RunReport`): what one run produced. Read from evalkit's own reports or any
pytest-json-report file that carries an `eval` block, so a team can gate an existing pytest eval suite. The file's
format (its models and published schema) is evalkit.records.report; this reader sits beside it, in records, because
it reads through those models (a reader in core could not import them).

Every outcome pytest and its common plugins write is read: the six of pytest itself, `rerun`
(pytest-rerunfailures: the test's last attempt decides, read from its phases) and `subtests passed` /
`subtests failed` ... (pytest's subtests). The run's own record is read too: pytest's `exitcode`, the
`collectors` (collection errors) and the `summary`; what they show wrong becomes the report's `problems`.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import Any, Literal

import msgspec

from evalkit.core.errors import InputError
from evalkit.core.failure import failure_message
from evalkit.core.files import decode, read_bytes, read_text, read_text_sha256
from evalkit.core.parsing import check_json, check_json_aside, parse_json
from evalkit.core.reducer import parse_reducer
from evalkit.records.report import (
    FORMATS,
    Execution,
    JudgedCheck,
    Repeats,
    Sequential,
    Text,
    check_repeats,
    read_execution,
)
from evalkit.records.values import Json

__all__ = ["CaseHead", "CaseTexts", "Counts", "RunReport", "case_heads", "json_list", "json_object",
           "report_from_mapping", "load_report", "parse_report", "read_reports"]

OUTCOMES = frozenset({"passed", "failed", "skipped", "xfailed", "xpassed", "error"})
# One shared string per outcome: a million-test report then holds 6 outcome strings, not a million.
_CANONICAL = {o: o for o in OUTCOMES}
PASSING = frozenset({"passed", "xpassed"})
"""Outcomes that count as passing: a non-strict XPASS passed (pytest exits 0); a strict one is `failed`."""
FAILING = frozenset({"failed", "error"})
_PLUGIN_OUTCOMES = ("rerun", "subtests <outcome>")
# pytest's exit codes (pytest.ExitCode) and what each says about the run.
_EXIT_CODES = {2: "pytest was interrupted (exit code 2: collection errors or an interrupt)",
               3: "pytest had an internal error (exit code 3)", 4: "pytest was misused (exit code 4: usage error)"}


@dataclass(frozen=True)
class Counts:
    """One repeated test's samples: how many of `runs` passed, the case it belongs to (if the entry says), and the
    reducer its outcome followed (evalkit.core.reducer)."""

    passed: int
    runs: int
    case: str | None = None
    reduce: str = "all"
    not_passed: tuple[int, ...] = ()
    """The samples that did not pass, when the report lists them (`runs - passed` of them); empty otherwise."""


@dataclass(frozen=True)
class RunReport:
    """The parts of a run report the gate reads: the eval key, each test's outcome, the cases (with their grades
    in program suites), metrics, slices, execution, and the dataset and candidate blocks of program suites."""

    eval: Mapping[str, Json]
    """The eval key, with the settings its fingerprints cover: JSON as the report holds it (a hand-made report's
    `eval` block names what it likes, so it is not read as evalkit.core.key.EvalKey)."""
    outcomes: Mapping[str, str]
    """nodeid -> pytest outcome, in report order."""
    cases: Sequence[Mapping[str, Json]] = ()
    provenance: Mapping[str, Json] = field(default_factory=dict)
    """Where the run came from (commit, recording, isolation ...), as JSON."""
    metrics: Mapping[str, float | None] = field(default_factory=dict)
    """Run-level metrics: each one's mean over the cases that measured it; None when none could."""
    slices: Mapping[str, Json] = field(default_factory=dict)
    """Per cut (`language(input) where kind=rag`): per value, cases, pass_rate, failures, unsafe."""
    execution: Execution = field(default_factory=Execution)
    """Call statistics, cost, latency, money and live sections (evalkit's own reports; empty for other tools')."""
    dataset: Mapping[str, Json] = field(default_factory=dict)
    """Manifest datasets: name, version, split, synthetic, purpose (absent for single-file datasets)."""
    candidate: Mapping[str, Json] = field(default_factory=dict)
    """Candidate-program suites: the option, its change, the program and its SHA-256."""
    problems: tuple[str, ...] = ()
    """What the run's own record shows wrong: collection errors, an interrupted run, an exit code that
    contradicts the tests. A candidate with problems cannot pass."""
    messages: Mapping[str, str] = field(default_factory=dict)
    """nodeid -> the first line of why the test did not pass (evalkit.core.failure); only tests that did not
    pass and whose entry says why, so a large report of passing tests holds no messages at all."""
    repeats: Mapping[str, Counts] = field(default_factory=dict)
    """nodeid -> how many of its samples passed, for tests sampled several times (`"repeats": {"passed": k,
    "runs": n}` beside the outcome, which is `passed` only when all n passed); empty for single runs."""
    critical: tuple[str, ...] = ()
    """The checks the suite's `checks.yaml` marks critical (`critical_checks`): the gate treats them as the
    policy's `critical:` entries."""
    classification: Mapping[str, Json] = field(default_factory=dict)
    """Per classification check: its labels, confusion matrix (expected -> predicted -> cases) and case count."""
    texts: Mapping[str, Json] = field(default_factory=dict)
    """The texts the run measured (`prompt`, `program`): version, path, SHA-256 and the text, for a reviewer's diff
    (evalkit.records.report.Text); absent from reports written before they were kept."""
    sequential: Sequential | None = None
    """A run that sampled in rounds (`run.repeats=auto`): its settings and each case's samples; None otherwise."""
    judges: Mapping[str, JudgedCheck] = field(default_factory=dict)
    """Per judged declared check: the judge's repeats, each reply's verdicts, self-agreement and flips."""
    trajectories: Mapping[str, Json] = field(default_factory=dict)
    """An agent suite's trajectories as report.json holds them, by `task/<case>` (evalkit.records.trajectory's
    form, read only by the pages that show them); empty for every other suite."""
    media: Mapping[str, Json] = field(default_factory=dict)
    """Per case with images (dataset.images): each image's field, description and thumbnail (a `data:` URI, or
    None with why); report.html shows the thumbnails. Empty for runs without images."""

    @property
    def judge_flips(self) -> dict[str, str]:
        """Test id -> its check, for every test whose judge both passed and failed one reply (`judge_flips`)."""
        return {flip.test: check for check, block in self.judges.items() for flip in block.flips}

    @property
    def passed(self) -> int:
        """Tests that passed (a non-strict XPASS included)."""
        return sum(1 for o in self.outcomes.values() if o in PASSING)

    @property
    def unscored(self) -> tuple[str, ...]:
        """Cases the run could not measure (a call failed or was denied by the budget, a declared check could not
        run on it)."""
        return tuple(str(c.get("id")) for c in self.cases if isinstance(c, Mapping) and c.get("status") == "unscored")

    @property
    def denied(self) -> dict[str, str]:
        """case id -> why evalkit made no reply for it (`budget_denied: budget.max_usd=... would be exceeded`), for
        the unscored cases whose entry carries evalkit's `denied` mark (evalkit.run.eval_block.DENIED); empty for
        a complete run and for reports other tools wrote, whose errored samples are no such case."""
        return {head.id: head.denied for head in case_heads(self.cases)
                if head.status == "unscored" and isinstance(head.denied, str)}

    @property
    def could_not_run(self) -> dict[str, dict[str, str]]:
        """check -> case id -> why that declared check could not run on the case (a case field it reads is missing
        there, its pattern ran past its time budget), as the unscored cases' entries say; empty when every check
        ran."""
        out: dict[str, dict[str, str]] = {}
        for head in case_heads(self.cases):
            if head.status == "unscored" and isinstance(head.could_not_run, dict):
                for check, why in head.could_not_run.items():
                    out.setdefault(str(check), {})[head.id] = str(why)
        return out


def report_from_mapping(data: Any, where: str) -> RunReport:
    """Check that `data` is a run report and extract it; every refusal names `where` and the fix."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: not a run report (expected a JSON object)")
    _check_format(data.get("format"), where)
    _check_key(data.get("eval"), where)
    tests = data.get("tests")
    if not isinstance(tests, list):
        raise InputError(f"{where}: not a run report: no 'tests' list (was it written by pytest-json-report?)")
    _check_ran(tests, data, where)
    # Fast path for valid reports of pytest's own outcomes (one pass, C-speed); the careful loop reads the
    # plugins' outcomes and words the error.
    try:
        outcomes = {test["nodeid"]: _CANONICAL[test["outcome"]] for test in tests}
    except (TypeError, KeyError):
        outcomes = {}
    if len(outcomes) != len(tests) or not all(isinstance(nodeid, str) for nodeid in outcomes):
        outcomes = _read_tests(tests, where)
    _check_ids(outcomes, where)
    # outcomes holds the tests in report order, one each (duplicates are refused above): pair them, no lookups
    messages = {nodeid: line for test, (nodeid, outcome) in zip(tests, outcomes.items(), strict=True)
                if outcome not in PASSING and (line := failure_message(test)) is not None}
    # one C-speed scan: reports without repeats (most) pay nothing more
    repeats = _repeats(tests, outcomes, where) if any("repeats" in test for test in tests) else {}
    return _assemble(data, outcomes, messages, repeats, where)


def _check_format(value: Any, where: str) -> None:
    """A report naming no format is a hand-made pytest-json-report file; one naming a format must be one of ours."""
    if value is not None and value not in FORMATS:
        raise InputError(f"{where}: run report format {str(value)[:60]!r} is not one this evalkit reads "
                         f"({', '.join(FORMATS)}); gate it with the evalkit that wrote it, or upgrade evalkit")


def _check_key(key: Any, where: str) -> None:
    if not isinstance(key, dict):
        raise InputError(f"{where}: not a run report: no 'eval' block with the eval key "
                         "(produce it with `evalkit run`, or add it in pytest_json_modifyreport)")


def _check_ran(tests: list[Any], data: Mapping[str, Any], where: str) -> None:
    if not tests and (data.get("exitcode") in (None, 0, 5) and not _collection_errors(data.get("collectors"))):
        raise InputError(f"{where}: the run has no tests, so there is nothing to gate; "
                         "check that the suite collected its tests"
                         + (" (pytest exit code 5: no tests collected)" if data.get("exitcode") == 5 else ""))


def _assemble(data: Mapping[str, Any], outcomes: dict[str, str], messages: dict[str, str],
              repeats: dict[str, Counts], where: str) -> RunReport:
    """The report from its tests, read, and the rest of its record, checked."""
    cases = _cases(data.get("cases"), where)
    provenance = data.get("provenance") or {}
    if not isinstance(provenance, dict):
        raise InputError(f"{where}: 'provenance' is {type(provenance).__name__}; it must be an object "
                         "(or absent): regenerate the report with `evalkit run`")
    for name in ("slices", "execution", "dataset", "candidate", "texts", "trajectories", "media"):
        if data.get(name) is not None and not isinstance(data[name], dict):
            raise InputError(f"{where}: '{name}' is {type(data[name]).__name__}; it must be an object (or absent)")
    return RunReport(data["eval"], outcomes, cases, provenance, _metrics(data.get("metrics"), where),
                     _mapping(data.get("slices")), _execution(data.get("execution"), where),
                     _mapping(data.get("dataset")),
                     _mapping(data.get("candidate")), problems=_problems(data, outcomes, where), messages=messages,
                     repeats=repeats, critical=_critical(data.get("critical_checks"), where),
                     classification=_mapping(data.get("classification")), texts=_texts(data.get("texts"), where),
                     sequential=_sequential(data.get("sequential"), where), judges=_judges(data.get("judges"), where),
                     trajectories=_mapping(data.get("trajectories")),
                     media=_mapping(data.get("media")))


def _execution(value: Any, where: str) -> Execution:
    """The report's execution section, checked against its model (evalkit.records.report.Execution)."""
    try:
        return read_execution(value)
    except ValueError as error:
        raise InputError(f"{where}: {error}; regenerate the report with `evalkit run`") from None


def _judges(value: Any, where: str) -> dict[str, JudgedCheck]:
    """The report's judges block, checked against its model (evalkit.records.report.JudgedCheck)."""
    if value is None:
        return {}
    try:
        return msgspec.convert(value, dict[str, JudgedCheck])
    except msgspec.ValidationError as error:
        raise InputError(f"{where}: 'judges' is not the block of a run's judged checks ({error}); regenerate the "
                         "report with `evalkit run`") from None


def _sequential(value: Any, where: str) -> Sequential | None:
    """The report's sequential block, checked against its model (evalkit.records.report.Sequential)."""
    if value is None:
        return None
    try:
        return msgspec.convert(value, Sequential)
    except msgspec.ValidationError as error:
        raise InputError(f"{where}: 'sequential' is not the block of a run sampled in rounds ({error}); regenerate "
                         "the report with `evalkit run`") from None


def _texts(value: Any, where: str) -> Mapping[str, Json]:
    """The report's texts, each checked against its model, so a page never meets a text that is not one."""
    if value is None:
        return {}
    try:
        checked = msgspec.convert(value, dict[str, Text])
    except msgspec.ValidationError as error:
        raise InputError(f"{where}: 'texts' is not a map of measured texts ({error})") from None
    return {name: msgspec.to_builtins(text) for name, text in checked.items()}


def _critical(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: 'critical_checks' must be a list of check names (or absent)")
    return tuple(value)


def _repeats(tests: list[Any], outcomes: Mapping[str, str], where: str) -> dict[str, Counts]:
    """Each repeated test's pass count; a count that is not k of n, or that contradicts the outcome, is refused."""
    out = {}
    for index, (test, (nodeid, outcome)) in enumerate(zip(tests, outcomes.items(), strict=True)):
        block = test.get("repeats")
        if block is None:
            continue
        try:  # read on the fast path already (a Repeats), else checked here against the same definition
            counts = block if isinstance(block, Repeats) else check_repeats(block)
        except ValueError as error:
            raise InputError(f"{where}: tests[{index}] ({nodeid}): 'repeats' is {str(block)[:200]}; it must be "
                             f'{{"passed": k, "runs": n}} with 0 <= k <= n and n >= 1 ({error})') from None
        passed, runs = counts.passed, counts.runs
        try:
            reducer = parse_reducer(counts.reduce)
        except ValueError as error:
            raise InputError(f"{where}: tests[{index}] ({nodeid}): 'repeats.reduce' {counts.reduce!r} is not a "
                             f"reducer ({error})") from None
        reduced = reducer.passes(passed, runs)
        # an error is no verdict: no reducer outvotes it, but every sample passing leaves none to show
        if (outcome in PASSING and not reduced) or (outcome == "failed" and reduced) or \
                (outcome == "error" and passed == runs):
            raise InputError(f"{where}: tests[{index}] ({nodeid}): outcome {outcome!r} contradicts {passed} of "
                             f"{runs} samples passing under reduce {reducer.name}; a repeated test is 'passed' "
                             "exactly when its reducer passes the counts ('all': every sample passed)")
        case = test.get("case")
        listed = tuple(counts.not_passed)
        if listed and (len(listed) != runs - passed or len(set(listed)) != len(listed)
                       or not all(0 <= sample < runs for sample in listed)):
            raise InputError(f"{where}: tests[{index}] ({nodeid}): 'repeats.not_passed' {str(listed)[:200]} must "
                             f"name the {runs - passed} distinct samples (0 to {runs - 1}) that did not pass")
        out[nodeid] = Counts(passed, runs, case if isinstance(case, str) else None, reducer.name, listed)
    return out


MAX_TEST_ID_CHARS = 4096
"""The longest test id a run report may hold: far above any pytest node id with parameters, far below what would
flood a terminal, a pull-request comment or a JUnit file."""


def _check_ids(outcomes: Mapping[str, str], where: str) -> None:
    longest = max(outcomes, key=len, default="")
    if len(longest) > MAX_TEST_ID_CHARS:
        raise InputError(f"{where}: the test id {longest[:80]!r}... has {len(longest):,} characters; a test id may "
                         f"have at most {MAX_TEST_ID_CHARS:,}")


_GRADE_FLAGS = ("task_pass", "quality_pass", "safety_pass", "review_pending")


def _cases(value: Any, where: str) -> Sequence[Mapping[str, Json]]:
    """The report's cases: a list of objects, each with a string id; a grade is an object whose verdicts are
    true, false or null. Anything else is refused here, naming the case, so the gate never meets it."""
    if value is None:
        return ()
    if isinstance(value, CaseTexts):  # checked as they were read (_read_fast)
        return value
    if not isinstance(value, list):
        raise InputError(f"{where}: 'cases' is {type(value).__name__}; it must be a list of case objects")
    for index, case in enumerate(value):
        _check_case(index, case, where)
    return tuple(value)


def _check_case(index: int, case: Any, where: str) -> None:
    if not isinstance(case, dict) or not isinstance(case.get("id"), str):
        raise InputError(f"{where}: cases[{index}] must be an object with a string 'id'")
    grade = case.get("grade")
    if grade is None:
        return
    if not isinstance(grade, dict):
        raise InputError(f"{where}: case {case['id'][:100]!r}: 'grade' must be an object")
    for flag in _GRADE_FLAGS:
        if grade.get(flag) is not None and not isinstance(grade[flag], bool):
            raise InputError(f"{where}: case {case['id'][:100]!r}: grade '{flag}' must be true, false or null")
    if grade.get("status") == "scored" and "task_pass" not in grade:  # the gate pairs scored cases by it
        raise InputError(f"{where}: case {case['id'][:100]!r}: a scored grade needs 'task_pass' (true or false); "
                         "mark a case that could not be scored status 'unscored' with a reason")


class CaseTexts(Sequence[Mapping[str, Json]]):
    """A report's cases kept as their JSON text, each read into a fresh dict when it is reached.

    A case read into Python objects takes about four times its text (a dict per block, an object per value):
    250,000 cases of a million-test report would take over 500 MB on each side of the gate. The text is
    checked before (evalkit.core.parsing.check_json), so reading it again cannot fail; a case is read anew
    each time, so nothing here is shared or changed by a caller."""

    def __init__(self, texts: list[bytes]) -> None:
        self._texts = texts

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, index: int) -> Mapping[str, Json]:  # type: ignore[override]
        return _CASE.decode(self._texts[index])  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Mapping[str, Json]]:
        return map(_CASE.decode, self._texts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


_CASE = msgspec.json.Decoder()


class CaseHead(msgspec.Struct, frozen=True, gc=False):
    """The few fields of a case that pair it across reports: id, whether it passed, its group, its status, its
    samples' counts (`repeats`: passed and runs) and the declared checks that could not run on it
    (`could_not_run`: check -> why) and why evalkit made no reply for it (`denied`), each as the report gives it
    (None when absent)."""

    id: str
    # `object`: JSON as the report holds it (msgspec reads any value into these; the readers narrow them)
    passed: object = None
    group: object = None
    status: object = None
    repeats: object = None
    could_not_run: object = None
    denied: object = None


_HEAD = msgspec.json.Decoder(CaseHead)


def case_heads(cases: Sequence[Mapping[str, Json]]) -> list[CaseHead]:
    """Each case's head, reading from a CaseTexts only those fields (its other fields, the replies and inputs
    that make a case long, are skipped unread)."""
    if isinstance(cases, CaseTexts):
        return [_HEAD.decode(text) for text in cases._texts]
    return [CaseHead(str(c.get("id")), c.get("passed"), c.get("group"), c.get("status"), c.get("repeats"),
                     c.get("could_not_run"), c.get("denied")) for c in cases]


def json_object(value: Json) -> Mapping[str, Json]:
    """`value` when it is a JSON object, else an empty one: how the readers of a report's JSON blocks (slices,
    classification ...) narrow a value they read as an object, here in one place rather than casts at each."""
    return value if isinstance(value, dict) else {}


def json_list(value: Json) -> Sequence[Json]:
    """`value` when it is a JSON array, else an empty one (json_object's counterpart for arrays)."""
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Mapping[str, Json]:
    """A block of the report as JSON (its readers narrow the values: json_object, json_list); {} when absent."""
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


def _read_tests(tests: list[Any], where: str) -> dict[str, str]:
    """Each test's outcome, plugins' outcomes read by what they mean; the first bad entry is named."""
    outcomes: dict[str, str] = {}
    for index, test in enumerate(tests):
        try:
            nodeid, outcome = test["nodeid"], test["outcome"]
        except (TypeError, KeyError):
            raise InputError(f"{where}: tests[{index}] needs 'nodeid' and 'outcome'") from None
        if not isinstance(nodeid, str):
            raise InputError(f"{where}: tests[{index}] has a nodeid that is not a string ({nodeid!r})")
        read = _plugin_outcome(test, outcome) if isinstance(outcome, str) else None
        if read is None:
            raise InputError(f"{where}: tests[{index}] ({nodeid}) has outcome {outcome!r}; expected one of "
                             f"{', '.join(sorted(OUTCOMES))}, or a plugin's {', '.join(_PLUGIN_OUTCOMES)}")
        if nodeid in outcomes:
            raise InputError(f"{where}: duplicate test id {nodeid!r}; each test may appear once")
        outcomes[nodeid] = read
    return outcomes


def _plugin_outcome(test: Mapping[str, Any], outcome: str) -> str | None:
    """What an outcome means, or None when it is not one pytest or a common plugin writes."""
    if outcome in _CANONICAL:
        return _CANONICAL[outcome]
    if outcome == "rerun":  # pytest-rerunfailures: the last attempt's phases say how the test ended
        return _from_phases(test)
    prefix, _, rest = outcome.partition(" ")
    if prefix == "subtests" and rest in _CANONICAL:
        # pytest's subtests name the test by its subtests' outcome; a failed phase still fails the test
        # (the subtests' record can be lossy: the run's exit code is checked against it in _problems)
        phased = _from_phases(test)
        return phased if phased in FAILING else _CANONICAL[rest]
    return None


def _from_phases(test: Mapping[str, Any]) -> str:
    """A test's outcome from its setup / call / teardown phases: a failed setup or teardown is an error."""
    phases = {name: test.get(name) for name in ("setup", "call", "teardown")}
    outcome = {name: phase.get("outcome") for name, phase in phases.items() if isinstance(phase, Mapping)}
    if "failed" in (outcome.get("setup"), outcome.get("teardown")):
        return "error"
    call = outcome.get("call")
    if call == "failed":
        return "failed"
    if call == "passed" or (call is None and outcome.get("setup") == "passed"):
        return "passed" if call == "passed" else "error"
    if call == "skipped" or outcome.get("setup") == "skipped":
        return "skipped"
    return "error"  # no phase says how it ended: it did not pass


def _collection_errors(collectors: Any) -> list[str]:
    """Node ids (with the first line of the error) of the collectors that failed: modules that did not import."""
    if not isinstance(collectors, list):
        return []
    out = []
    for collector in collectors:
        if isinstance(collector, Mapping) and collector.get("outcome") not in (None, "passed"):
            lines = [line for line in str(collector.get("longrepr") or "").splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("E ")]
            detail = (errors or lines or [""])[-1].removeprefix("E ").strip()[:200]
            out.append(f"{collector.get('nodeid') or '(root)'}" + (f" ({detail})" if detail else ""))
    return out


def _problems(data: Mapping[str, Any], outcomes: Mapping[str, str], where: str) -> tuple[str, ...]:
    """Why pytest's own record of the run says it cannot pass, each in one sentence; empty when it can."""
    problems = []
    broken = _collection_errors(data.get("collectors"))
    if broken:
        problems.append(f"collection error in {len(broken)} module(s), whose tests did not run: "
                        f"{'; '.join(broken[:3])}{'; ...' if len(broken) > 3 else ''}")
    summary = data.get("summary")
    if isinstance(summary, Mapping):
        collected, total = summary.get("collected"), summary.get("total")
        deselected = summary.get("deselected") or 0
        if (isinstance(collected, int) and isinstance(total, int) and isinstance(deselected, int)
                and total < collected - deselected):
            problems.append(f"interrupted run: {total} of {collected - deselected} collected tests ran "
                            "(stopped by -x/--maxfail or an interrupt); the rest have no outcome")
        if isinstance(total, int) and total != len(outcomes) and not broken:
            problems.append(f"the report's summary counts {total} tests but lists {len(outcomes)}")
    code = data.get("exitcode")
    if code is None:  # not recorded (an authored report): nothing to check it against
        return tuple(problems)
    failing = sum(1 for o in outcomes.values() if o in FAILING)
    if not isinstance(code, int) or isinstance(code, bool):
        raise InputError(f"{where}: 'exitcode' is {code!r}; pytest's exit code is an integer")
    if code == 0 and failing:
        problems.append(f"pytest exited 0 (all passed) but the report records {failing} failing test(s)")
    elif code == 1 and not failing and not broken:
        problems.append("pytest exited 1 (tests failed) but no test in the report failed: the report lost a "
                        "failure (a failing subtest recorded as passed?)")
    elif code in _EXIT_CODES and not (code == 2 and broken):
        problems.append(_EXIT_CODES[code])
    elif code == 5 and outcomes:
        problems.append(f"pytest exited 5 (no tests collected) but the report lists {len(outcomes)} tests")
    elif code not in (0, 1, 2, 5) and code not in _EXIT_CODES:
        problems.append(f"pytest exited {code}, which is none of its own exit codes")
    return tuple(problems)


def parse_report(text: str, where: str) -> RunReport:
    """Parse report text; malformed or truncated JSON is an input error naming the position.

    The text is checked as strictly as every input (evalkit.core.parsing.check_json: keys given twice, numbers
    JSON does not have, nesting), then read by msgspec against the part of a report the gate reads, which
    skips unread what it does not (durations, line numbers, the stages of passing tests) and never builds the
    whole tree: a full report of a million tests is read in a fraction of the memory json's own objects take.
    A report that part does not describe (a plugin's outcome, a field of another type, a test id given twice)
    is read by the careful path, report_from_mapping, which words the error; both read a valid report alike
    (tests/records/test_report_reader.py)."""
    report = _read_fast(text, where) if check_json(text, where, "report") else None
    return report if report is not None else report_from_mapping(parse_json(text, where, "report"), where)


def read_reports(paths: Sequence[Path]) -> list[tuple[RunReport, str]]:
    """Each report file read, with the SHA-256 of its bytes, one file at a time, dropped before the next is read,
    so two large reports never meet two copies of a file: up to _ASIDE_MAX_BYTES read once and checked strictly in
    a child process meanwhile (evalkit.core.parsing.check_json_aside); larger ones all checked first (keeping only
    their hashes), then read again.
    A file msgspec cannot read (or whose nesting the check cannot bound) is read by the careful path."""
    # large files are all checked before any is read, so no report read stands beside another file's text
    checked = [None if _small(path) else _check_lean(path) for path in paths]
    return [_read_aside(path) if lean is None else _read_lean(path, *lean) for path, lean in zip(paths, checked,
                                                                                                 strict=True)]


class _Test(msgspec.Struct, gc=False):
    """One test as the gate reads it: pytest's own outcomes; each stage kept as its raw text, read only for
    a test that did not pass (why it failed); nothing else of the entry is built."""

    nodeid: str
    outcome: Literal["passed", "failed", "skipped", "xfailed", "xpassed", "error"]
    setup: msgspec.Raw = msgspec.Raw()
    call: msgspec.Raw = msgspec.Raw()
    teardown: msgspec.Raw = msgspec.Raw()
    repeats: Repeats | None = None
    case: Any = None


_ASIDE_MAX_BYTES = 160 * 1024 * 1024
"""Reports up to this size are checked in a child process while they are read (one more copy of the file, as text,
lives in the child meanwhile); larger ones are checked first, then read, holding one copy at a time."""


def _small(path: Path) -> bool:
    try:
        return os.stat(path).st_size <= _ASIDE_MAX_BYTES
    except OSError:
        return True  # read_bytes words the refusal


def _read_aside(path: Path) -> tuple[RunReport, str]:
    """A report read once, as bytes: a child process decodes and checks them (check_json_aside) while msgspec reads
    them here."""
    data = read_bytes(path, "report")
    sha = hashlib.sha256(data).hexdigest()
    checked = check_json_aside(data, str(path), "report")
    try:
        report = _read_fast(data, str(path))
    except BaseException:
        checked()  # a strict refusal comes first, as the check would have run first
        raise
    if not checked():
        report = None
    if report is None:
        report = report_from_mapping(parse_json(decode(data, path, "report"), str(path), "report"), str(path))
    return report, sha


def _check_lean(path: Path) -> tuple[str, bool | RunReport]:
    """A large report's hash and check_json's answer, its text dropped; where the check cannot bound the nesting
    (another thread runs), the report read by the careful path from that text."""
    text, sha = read_text_sha256(path, "report")
    if check_json(text, str(path), "report"):
        return sha, True
    return sha, report_from_mapping(parse_json(text, str(path), "report"), str(path))


def _read_lean(path: Path, sha: str, checked: bool | RunReport) -> tuple[RunReport, str]:
    """A large report, checked already, read again as bytes by msgspec; refused if its bytes changed between the
    two reads (its hash would not name what was read)."""
    if isinstance(checked, RunReport):
        return checked, sha
    data = read_bytes(path, "report")
    if hashlib.sha256(data).hexdigest() != sha:
        raise InputError(f"{path}: the report changed while it was read; gate it again once it is written")
    report = _read_fast(data, str(path))
    if report is None:
        report = report_from_mapping(parse_json(decode(data, path, "report"), str(path), "report"), str(path))
    return report, sha


class _Outcome(msgspec.Struct, gc=False):
    """One test as the gate reads every test: its id, pytest's outcome, and its repeated samples; the rest of the
    entry (stages, line numbers) is skipped unread."""

    nodeid: str
    outcome: Literal["passed", "failed", "skipped", "xfailed", "xpassed", "error"]
    repeats: Repeats | None = None
    case: Any = None


class _Report(msgspec.Struct):
    """A run report's blocks the gate reads (absent ones are None, as report_from_mapping reads them); the tests
    kept as one raw text, read in one call; each case kept as its raw text, read one at a time."""

    tests: msgspec.Raw
    format: Any = None
    eval: Any = None
    exitcode: Any = None
    collectors: Any = None
    summary: Any = None
    cases: list[msgspec.Raw] | None = None
    provenance: Any = None
    metrics: Any = None
    slices: Any = None
    execution: Any = None
    dataset: Any = None
    candidate: Any = None
    critical_checks: Any = None
    classification: Any = None
    texts: Any = None
    sequential: Any = None
    judges: Any = None
    trajectories: Any = None
    media: Any = None


_REPORT, _TEST = msgspec.json.Decoder(_Report), msgspec.json.Decoder(_Test)
_OUTCOMES, _RAWS = msgspec.json.Decoder(list[_Outcome]), msgspec.json.Decoder(list[msgspec.Raw])
_REPEATS = attrgetter("repeats")
_NOT_PASSING = frozenset({"failed", "skipped", "xfailed", "error"})
"""pytest's outcomes (those _Outcome reads) but PASSING."""


def _read_fast(text: str | bytes, where: str) -> RunReport | None:
    """The report, read by msgspec from text check_json has passed; None when the careful path must read it.

    Every test's id and outcome are read in one call, skipping the rest of each entry, so a million tests never
    stand as a million objects with their stages; the stages are read only for the tests that did not pass (why
    they failed), each from its raw text (a reference into `text`)."""
    try:
        report = _REPORT.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):  # not the part it describes: the careful path
        return None
    except RecursionError:  # a block nested past msgspec's depth: the careful path refuses it in one line
        return None
    data = {name: getattr(report, name) for name in report.__struct_fields__ if name not in ("tests", "format")}
    _check_format(report.format, where)
    if report.cases is not None:  # each case's own bytes, so that the report's text is not kept
        data["cases"] = CaseTexts([bytes(case) for case in report.cases])
    tests_text = report.tests
    del report
    _check_key(data["eval"], where)
    try:
        tests = _OUTCOMES.decode(tests_text)
    except (msgspec.ValidationError, msgspec.DecodeError):  # a test the careful path reads (a plugin's outcome)
        return None                                          # or refuses
    _check_ran(tests, data, where)
    outcomes: dict[str, str] = {test.nodeid: test.outcome for test in tests}
    if len(outcomes) != len(tests):
        return None  # a test id given twice: the careful path names it
    _check_ids(outcomes, where)
    messages: dict[str, str] = {}
    # compress and map make these passes over a million tests without a bytecode loop
    failing = list(compress(count(), map(_NOT_PASSING.__contains__, outcomes.values())))
    if failing:
        raws = _RAWS.decode(tests_text)
        for index in failing:
            if (line := failure_message(_stages(_TEST.decode(raws[index])))) is not None:
                messages[tests[index].nodeid] = line
        del raws
    given = list(map(is_not, map(_REPEATS, tests), repeat(None)))
    first = given.index(True) if True in given else len(tests)
    # from the first repeated test on, every test (paired below)
    repeated: list[dict[str, Any]] = [{"repeats": test.repeats, "case": test.case} for test in tests[first:]]
    del tests, tests_text, given
    if repeated:
        repeated = [{}] * (len(outcomes) - len(repeated)) + repeated
    repeats = _repeats(repeated, outcomes, where) if repeated else {}
    try:  # each case read once here, in the careful path's order of checks, so reading it later cannot fail
        for index, case in enumerate(data.get("cases") or ()):
            _check_case(index, case, where)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return _assemble(data, outcomes, messages, repeats, where)


def _stages(test: _Test) -> dict[str, Any]:
    """A test's stages as report_from_mapping reads them (only those the entry has)."""
    return {name: msgspec.json.decode(raw) for name in ("setup", "call", "teardown") if len(raw := getattr(test, name))}


def load_report(path: Path) -> RunReport:
    return parse_report(read_text(path, "report"), str(path))
