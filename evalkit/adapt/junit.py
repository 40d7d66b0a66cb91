"""JUnit XML from any test runner (pytest --junitxml, Maven surefire, jest-junit, ...) read into a neutral run.

A file holds `<testsuites>` or one `<testsuite>`; a folder (surefire's `target/surefire-reports/`) is read as
every `*.xml` file in it holding one. Each `<testcase>` is a test `<classname>::<name>` (pytest's classname is
its module path with dots, its name the function with parameters). Its outcome, as in README "How pytest outcomes
count": no child element passed, `<failure>` failed, `<error>` error, `<skipped>` skipped (pytest writes an xfail
as a skip of type `pytest.xfail`: it counts as a skip, as xfailed does). Surefire's reruns: `<flakyFailure>` /
`<flakyError>` beside no failure is a test that passed on a rerun (passed: the last attempt decides, as with
pytest-rerunfailures); `<rerunFailure>` beside `<failure>` failed. A `status` of disabled or notrun (tst,
GoogleTest's DISABLED_ tests) with no child element is skipped, never passed. Suites nest under either root.

One classname and name written several times is either attempts of one test (gotestsum --rerun-fails,
pytest-rerunfailures: one test, passed if an attempt passed) or distinct tests that share a title (jest's
`describe` blocks: kept apart by file or position, and said); `_reruns` says how the file tells them apart.
Declared totals (`tests=`, `failures=`, `errors=`) that contradict the cases are said in the decision.

JUnit carries no dataset, model, prompt or scorer: the eval key holds only the suite names (the task is the one
suite's name, else the `<testsuites name>`, else `junit`; the suite names are a component), and the decision says
so.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey
from evalkit.core.errors import InputError
from evalkit.core.failure import first_line
from evalkit.core.files import read_bytes
from evalkit.core.fingerprint import fingerprint, sha256

__all__ = ["SOURCE", "read_junit"]

_UNRECORDED_DATASET = "none (JUnit XML records no dataset)"
_MAX_FILES = 10_000


def read_junit(path: Path) -> NeutralRun:
    """Read a JUnit XML file, or a folder of them, into a neutral run; refusals are one line naming the file."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".xml" and p.is_file())
        if not files:
            raise InputError(f"{path}: the folder holds no .xml files; point at a JUnit XML file or at the "
                             "runner's report folder (surefire: target/surefire-reports)")
        if len(files) > _MAX_FILES:
            raise InputError(f"{path}: the folder holds {len(files)} .xml files, more than {_MAX_FILES}")
    else:
        files = [path]
    suites: list[tuple[ET.Element, list[ET.Element]]] = []
    shas: dict[str, str] = {}
    root_names: list[str] = []
    notes: list[str] = []
    for file in files:
        data = read_bytes(file, "JUnit XML")
        shas[file.name] = sha256(data)
        root = _parse(data, str(file))
        if root.tag not in ("testsuites", "testsuite"):
            raise InputError(f"{file}: {_OTHER_FORMATS.get(root.tag, 'not JUnit XML')}: the root element is "
                             f"<{root.tag}>, not <testsuites> or <testsuite>; evalkit reads JUnit XML"
                             f"{_CONVERT.get(root.tag, '')}")
        if root.tag == "testsuites" and root.get("name"):
            root_names.append(str(root.get("name")))
        # suites nest (Ant, Bazel, scalatest, tst): every <testsuite> at any depth, under either root, holds
        # its own <testcase> children
        file_suites = [suite for suite in root.iter("testsuite")]
        suites += [(suite, suite.findall("testcase")) for suite in file_suites]
        if root.tag == "testsuites" and not file_suites:
            suites.append((root, root.findall("testcase")))  # cases straight under <testsuites>
        notes += _declared_totals(root, str(file) if len(files) > 1 else "")
    return _run(path, suites, root_names, shas, notes)


# Result formats of other .NET and Java runners that are not JUnit XML, by their root element: the refusal names
# the format, so the user converts it rather than wonders whether the file is broken
_OTHER_FORMATS = {"test-run": "NUnit 3 XML", "test-results": "NUnit 2 XML", "assemblies": "xUnit.net v2 XML",
                  "assembly": "xUnit.net v1 XML", "TestRun": "MSTest TRX"}
_CONVERT = {"test-run": " (NUnit writes it with its junit transform; trx2junit converts TRX)",
            "test-results": " (convert it with NUnit's junit transform)",
            "assemblies": " (xUnit.net writes it with --junit, or convert with trx2junit)",
            "assembly": " (convert it to JUnit XML first)", "TestRun": " (convert it with trx2junit)"}
# what may come before the root element: space, comments and processing instructions; a document type
# declaration can stand only there
_TRUNCATED = frozenset({"no element found", "unclosed token", "unclosed CDATA section"})
_PROLOG = re.compile(r"(?:\s+|<!--.*?-->|<\?.*?\?>)*", re.DOTALL)


def _parse(data: bytes, where: str) -> ET.Element:
    # A document type declaration is how XML bombs expand and how an ATTLIST default invents attributes; no
    # test runner writes one. Looked for after decoding, so UTF-16 or UTF-32 cannot hide it, and only the
    # encodings test runners write are read (UTF-7 could spell `<!` as `+ADwAIQ-`). Only the prolog is searched:
    # `<!DOCTYPE html>` in a captured page inside <system-out> is text, and one anywhere else is not well-formed.
    text = _decode(data, where)
    start = _PROLOG.match(text)
    if text.startswith("<!", start.end() if start else 0):
        raise InputError(f"{where}: the XML has a document type declaration (<!DOCTYPE>, <!ENTITY>, <!ATTLIST>), "
                         "which no test runner writes; refused")
    try:
        return ET.fromstring(text)
    except ET.ParseError as error:
        line, column = error.position
        reason = str(error).split(":")[0]
        # expat names these where the text stops early; a file that fails at its first character is no XML,
        # and anything else is a character no XML writer leaves unescaped
        hint = ("is the file truncated?" if reason in _TRUNCATED else "the file is not XML" if (line, column) == (1, 0)
                else "a raw '<' or '&' an XML writer would have escaped: written by hand, not by a JUnit XML writer?")
        raise InputError(f"{where}: not well-formed XML (line {line}, column {column}: {reason}); {hint}") from None


_ENCODINGS = {"utf-8": "utf-8", "utf8": "utf-8", "us-ascii": "ascii", "ascii": "ascii", "iso-8859-1": "latin-1",
              "latin-1": "latin-1", "latin1": "latin-1", "utf-16": "utf-16", "utf-16le": "utf-16-le",
              "utf-16be": "utf-16-be", "windows-1252": "cp1252", "cp1252": "cp1252"}
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _decode(data: bytes, where: str) -> str:
    """The file as text, in the encoding its byte-order mark or XML declaration names, else UTF-8; the XML
    declaration is then dropped (ElementTree refuses a str that still declares an encoding)."""
    codec = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if codec is None:
        declared = re.match(rb"<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]{1,40})[\"']", data[:200])
        name = declared.group(1).decode("ascii").lower() if declared else "utf-8"
        codec = _ENCODINGS.get(name)
        if codec is None:
            raise InputError(f"{where}: the XML is declared as {name!r}, an encoding no test runner writes; "
                             "save it as UTF-8")
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as error:
        raise InputError(f"{where}: the XML is not {codec} text (byte {error.start}: {error.reason})") from None
    return re.sub(r"^\ufeff?\s*<\?xml[^>]*\?>", "", text, count=1)


def _declared_totals(root: ET.Element, where: str) -> list[str]:
    """Where a suite's `tests`/`failures`/`errors`/`skipped` attributes contradict the cases it holds: said in
    the decision (runners count differently, so it is a warning; a truncated file does not parse at all)."""
    notes = []
    for suite in [root] * (root.tag == "testsuites") + list(root.iter("testsuite")):
        cases = list(suite.iter("testcase"))
        if not cases:
            continue
        # a case holding both <error> and <failure> (pytest: a failed call and an error in teardown) is read as
        # an error; a runner may count it under either total
        both = sum(case.find("error") is not None and case.find("failure") is not None for case in cases)
        failures = sum(_outcome(case)[0] == "failed" for case in cases)
        errors = sum(_outcome(case)[0] == "error" for case in cases)
        held = {"tests": (len(cases), len(cases)), "failures": (failures, failures + both),
                "errors": (errors - both, errors)}
        for field, (fewest, most) in held.items():
            declared = suite.get(field)
            if declared is not None and declared.strip().isdigit() and not fewest <= int(declared) <= most:
                count = most if int(declared) > most else fewest
                name = suite.get("name") or f"<{suite.tag}>"
                notes.append(f"{where + ': ' if where else ''}suite {name[:80]!r} declares {field}={declared} but "
                             f"holds {count}; the cases it holds are what is gated")
    return notes[:5]


def _run(path: Path, suites: list[tuple[ET.Element, list[ET.Element]]], root_names: list[str],
         shas: dict[str, str], notes: list[str]) -> NeutralRun:
    where = str(path)
    names = sorted({suite.get("name") or "" for suite, _ in suites} - {""})
    tests: list[AdaptedTest] = []
    groups: dict[str, list[ET.Element]] = {}  # in document order, across suites (jest repeats a suite's name)
    counted_each: set[int] = set()  # cases whose suite's `tests=` counts every <testcase> it holds as a test
    for suite, cases in suites:
        if (suite.get("tests") or "").strip() == str(len(list(suite.iter("testcase")))):
            counted_each.update(id(case) for case in cases)
        for case in cases:
            groups.setdefault(_nodeid(case, suite, where), []).append(case)
    for nodeid, group in groups.items():
        if len(group) == 1:
            outcome, message = _outcome(group[0])
            tests.append(AdaptedTest(nodeid, outcome, nodeid, message=message))  # type: ignore[arg-type]
        elif _reruns(group, counted_each):
            tests.append(_rerun_test(nodeid, group))
            if {(case.get("file"), case.get("line")) for case in group} == {(None, None)}:
                notes.append(f"{len(group)} entries of {nodeid[:120]!r} are read as attempts of one test (all but "
                             "the last did not pass, and the file records no place to tell tests apart)")
        else:
            tests += _same_titled(nodeid, group, notes)
    if not tests:
        raise InputError(f"{where}: the JUnit XML holds no <testcase>, so there is nothing to gate; check that "
                         "the runner collected its tests")
    ids = {test.nodeid for test in tests}
    if len(ids) != len(tests):  # a title that is itself another's disambiguation (`t (#2)` written by the runner)
        twice = next(t.nodeid for t in tests if sum(u.nodeid == t.nodeid for u in tests) > 1)
        raise InputError(f"{where}: duplicate test id {twice[:120]!r} after telling same-titled tests apart; "
                         "gate reports whose tests can be told apart")
    # one suite names the run (pytest's `<testsuites name="pytest tests">` is the same for every run)
    task = names[0] if len(names) == 1 else (root_names[0] if len(set(root_names)) == 1 else "junit")
    producer = _producer([suite for suite, _ in suites])
    return NeutralRun(
        source="junit",
        tool=producer,
        key=SourceKey(task=task, dataset=_UNRECORDED_DATASET, dataset_sha="unrecorded",
                      dataset_sha_from="unrecorded", scorer="test outcomes (JUnit XML)",
                      components={"suites": _suites_text(names)}),
        tests=tuple(tests),
        notes=("JUnit XML records no model, prompt or scorer: the eval key holds only the suite names, so runs "
               "of another model or prompt are told apart only by their tests", *notes),
        provenance={"source_sha256": next(iter(shas.values())) if len(shas) == 1 else fingerprint(shas),
                    "source_files": len(shas), "suites": names},
    )


def _reruns(group: list[ET.Element], counted_each: set[int]) -> bool:
    """Whether repeated `<testcase>`s of one classname and name are attempts of one test (gotestsum
    --rerun-fails, pytest-rerunfailures, mocha retries) rather than distinct tests that share a title.

    The file says so where it records where each test lives: the same `file` and `line` is one test run again,
    another is another test (jest's same-titled tests in different `describe` blocks). Where it records no
    place, a suite whose `tests=` counts every entry says the runner counted them as tests (mocha's two
    same-titled `it`s; gotestsum counts a rerun test once); else a runner reruns only what did not pass:
    attempts that all failed but the last are reruns, and an earlier attempt that passed means distinct tests."""
    places = {(case.get("file"), case.get("line")) for case in group}
    if places != {(None, None)}:
        return len(places) == 1
    if all(id(case) in counted_each for case in group):
        return False
    return all(_outcome(case)[0] in ("failed", "error") for case in group[:-1])


def _rerun_test(nodeid: str, group: list[ET.Element]) -> AdaptedTest:
    """Attempts of one test: it passed when an attempt passed (flaky, as the rerunning tool reports it), else
    the last attempt decides."""
    outcomes = [_outcome(case) for case in group]
    failures = sum(outcome in ("failed", "error") for outcome, _ in outcomes)
    if any(outcome == "passed" for outcome, _ in outcomes):
        return AdaptedTest(nodeid, "passed", nodeid)
    outcome, message = outcomes[-1]
    message = f"{message or outcome} ({failures} of {len(group)} attempts did not pass)"
    return AdaptedTest(nodeid, outcome, nodeid, message=message)  # type: ignore[arg-type]


def _same_titled(nodeid: str, group: list[ET.Element], notes: list[str]) -> list[AdaptedTest]:
    """Distinct tests sharing a classname and name: kept apart by their file where it differs, else by their
    position among the same-titled (` (#2)`, ` (#3)`: stable while the runner keeps its order), and said so."""
    files = [case.get("file") for case in group]
    by_file = None not in files and len(set(files)) == len(files)
    tests = []
    for position, case in enumerate(group, start=1):
        suffix = f" (file: {case.get('file')})" if by_file else ("" if position == 1 else f" (#{position})")
        outcome, message = _outcome(case)
        tests.append(AdaptedTest(nodeid + suffix, outcome, nodeid + suffix, message=message))  # type: ignore[arg-type]
    how = "their file" if by_file else "their position (#2), (#3), ..."
    notes.append(f"{len(group)} distinct tests share the id {nodeid[:120]!r}; they are kept apart by {how}")
    return tests


def _nodeid(case: ET.Element, suite: ET.Element, where: str) -> str:
    name = case.get("name")
    if name is None:  # an empty title is one (jest writes `it("")` so): only a missing one is refused
        raise InputError(f"{where}: a <testcase> in suite {suite.get('name')!r} has no name attribute")
    classname = case.get("classname") or suite.get("name") or ""
    nodeid = f"{classname}::{name}" if classname else name
    # other unprintable characters (a no-break space in jest's titles) are text a runner shows as it is
    if any(unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp") for char in nodeid):
        raise InputError(f"{where}: test id {nodeid[:80]!r} holds a line break or control character")
    return nodeid


# tst writes status="disabled", GoogleTest status="notrun" result="suppressed" (DISABLED_ tests), others
# status="skipped"/"ignored": a test that did not run, with no child element to say so
_NOT_RUN_STATUS = frozenset({"disabled", "notrun", "skipped", "ignored", "not_run", "suppressed"})


def _outcome(case: ET.Element) -> tuple[str, str | None]:
    """A testcase's outcome and why it did not pass (the element's message, else its text's first line)."""
    for tag, outcome in (("error", "error"), ("failure", "failed"), ("skipped", "skipped")):
        child = case.find(tag)
        if child is not None:
            return outcome, _message(child)
    for attribute in ("status", "result"):
        value = (case.get(attribute) or "").strip().lower()
        if value in _NOT_RUN_STATUS:
            return "skipped", f"not run ({attribute}={value!r})"
    return "passed", None  # flakyFailure / flakyError alone: it passed on a rerun


def _message(element: ET.Element) -> str | None:
    for text in (element.get("message"), element.text):
        line = first_line(text) if text else None
        if line:
            return line
    return element.get("type")


def _producer(suites: Iterable[ET.Element]) -> str:
    """Who wrote the file, as far as JUnit XML says (it has no standard field for it)."""
    for suite in suites:
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        if any(str(key).startswith("surefire") for key in properties):
            version = properties.get("surefire.version")
            return f"JUnit XML (Maven surefire{' ' + str(version) if version else ''})"
        if suite.get("name") == "pytest":
            return "JUnit XML (pytest)"
    return "JUnit XML"


def _suites_text(names: list[str]) -> str:
    text = ",".join(names)
    return text if len(text) <= 200 else f"{len(names)} suites sha:{fingerprint(names)[:12]}"


SOURCE = Source(
    name="junit",
    summary="gate two JUnit XML reports (a file, or a folder such as target/surefire-reports)",
    description="Each <testcase> becomes a test <classname>::<name>: failure -> failed, error -> error, "
                "skipped -> skipped, none -> passed. JUnit records no dataset, model or scorer: the key holds "
                "the suite names only.",
    read=read_junit,
)
