"""JUnit XML from any test runner (pytest --junitxml, Maven surefire, jest-junit, ...) read into a neutral run.

A file holds `<testsuites>` or one `<testsuite>`; a folder (surefire's `target/surefire-reports/`) is read as
every `*.xml` file in it holding one. Each `<testcase>` is a test `<classname>::<name>` (pytest's classname is
its module path with dots, its name the function with parameters). Its outcome, as in README "How pytest outcomes
count": no child element passed, `<failure>` failed, `<error>` error, `<skipped>` skipped (pytest writes an xfail
as a skip of type `pytest.xfail`: it counts as a skip, as xfailed does). Surefire's reruns: `<flakyFailure>` /
`<flakyError>` beside no failure is a test that passed on a rerun (passed: the last attempt decides, as with
pytest-rerunfailures); `<rerunFailure>` beside `<failure>` failed.

JUnit carries no dataset, model, prompt or scorer: the eval key holds only the suite names (the task is the one
suite's name, else the `<testsuites name>`, else `junit`; the suite names are a component), and the decision says
so.
"""

from __future__ import annotations

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
    suites: list[ET.Element] = []
    shas: dict[str, str] = {}
    root_names: list[str] = []
    for file in files:
        data = read_bytes(file, "JUnit XML")
        shas[file.name] = sha256(data)
        root = _parse(data, str(file))
        if root.tag == "testsuites":
            suites += [suite for suite in root.iter("testsuite")]
            if root.get("name"):
                root_names.append(str(root.get("name")))
        elif root.tag == "testsuite":
            suites.append(root)
        else:
            raise InputError(f"{file}: not JUnit XML: the root element is <{root.tag}>, not <testsuites> or "
                             "<testsuite>")
    return _run(path, suites, root_names, shas)


def _parse(data: bytes, where: str) -> ET.Element:
    # entity declarations are how XML bombs expand; no test runner writes them
    if b"<!ENTITY" in data:
        raise InputError(f"{where}: the XML declares entities (<!ENTITY>), which no test runner writes; refused")
    try:
        return ET.fromstring(data)
    except ET.ParseError as error:
        line, column = error.position
        raise InputError(f"{where}: not well-formed XML (line {line}, column {column}: "
                         f"{str(error).split(':')[0]}); is the file truncated?") from None


def _run(path: Path, suites: list[ET.Element], root_names: list[str], shas: dict[str, str]) -> NeutralRun:
    where = str(path)
    names = sorted({suite.get("name") or "" for suite in suites} - {""})
    tests: list[AdaptedTest] = []
    seen: set[str] = set()
    for suite in suites:
        for case in suite.findall("testcase"):
            nodeid = _nodeid(case, suite, where)
            if nodeid in seen:
                raise InputError(f"{where}: duplicate test id {nodeid!r} (two <testcase> with this classname and "
                                 "name); each test may appear once")
            seen.add(nodeid)
            outcome, message = _outcome(case)
            tests.append(AdaptedTest(nodeid, outcome, nodeid, message=message))  # type: ignore[arg-type]
    if not tests:
        raise InputError(f"{where}: the JUnit XML holds no <testcase>, so there is nothing to gate; check that "
                         "the runner collected its tests")
    # one suite names the run (pytest's `<testsuites name="pytest tests">` is the same for every run)
    task = names[0] if len(names) == 1 else (root_names[0] if len(set(root_names)) == 1 else "junit")
    producer = _producer(suites)
    return NeutralRun(
        source="junit",
        tool=producer,
        key=SourceKey(task=task, dataset=_UNRECORDED_DATASET, dataset_sha="unrecorded",
                      dataset_sha_from="unrecorded", scorer="test outcomes (JUnit XML)",
                      components={"suites": _suites_text(names)}),
        tests=tuple(tests),
        notes=("JUnit XML records no model, prompt or scorer: the eval key holds only the suite names, so runs "
               "of another model or prompt are told apart only by their tests",),
        provenance={"source_sha256": next(iter(shas.values())) if len(shas) == 1 else fingerprint(shas),
                    "source_files": len(shas), "suites": names},
    )


def _nodeid(case: ET.Element, suite: ET.Element, where: str) -> str:
    name = case.get("name")
    if not name:
        raise InputError(f"{where}: a <testcase> in suite {suite.get('name')!r} has no name attribute")
    classname = case.get("classname") or suite.get("name") or ""
    nodeid = f"{classname}::{name}" if classname else name
    if not nodeid.isprintable():
        raise InputError(f"{where}: test id {nodeid[:80]!r} holds a line break or control character")
    return nodeid


def _outcome(case: ET.Element) -> tuple[str, str | None]:
    """A testcase's outcome and why it did not pass (the element's message, else its text's first line)."""
    for tag, outcome in (("error", "error"), ("failure", "failed"), ("skipped", "skipped")):
        child = case.find(tag)
        if child is not None:
            return outcome, _message(child)
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
