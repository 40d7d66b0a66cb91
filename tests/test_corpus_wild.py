"""The wild corpus (tests/corpus/wild/, SOURCES.md): files other people's tools wrote, read as those tools show them.

Each file is counted by a reader written here from the format alone (xml.etree over the JUnit elements; the zip
and JSON of an Inspect log), never by evalkit's reader, and evalkit must read the same tests with the same
outcomes. Each file gated against itself decides GO, as the strict default policy says of a run that changed
nothing; a copy with one outcome flipped blocks on exactly that test. Files the formats' own tools would reject,
or that evalkit refuses on purpose, are listed with the reason their refusal must name.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalkit.adapt.deepeval import read_deepeval
from evalkit.adapt.framework import gate_runs
from evalkit.adapt.inspect import read_inspect_log
from evalkit.adapt.junit import read_junit
from evalkit.adapt.lm_eval import read_lm_eval
from evalkit.adapt.neutral import NeutralRun
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT
from evalkit.gate.decision import Verdict

WILD = Path(__file__).resolve().parent / "corpus/wild"
JUNIT = sorted((WILD / "junit").rglob("*.xml"))
INSPECT = sorted(p for p in (WILD / "inspect").rglob("*") if p.suffix in (".eval", ".json"))
LM_EVAL = sorted((WILD / "lm_eval").rglob("*.json"))
DEEPEVAL = sorted((WILD / "deepeval").rglob("*.json"))

REFUSED = {
    # JUnit files that are no report, or that the tools that wrote them could not have finished
    "empty__java-junit.xml": "holds no <testcase>",
    "empty__jest-junit-empty-testsuite.xml": "holds no <testcase>",
    "empty__jest-junit.xml": "holds no <testcase>",
    "empty__phpunit-empty.xml": "holds no <testcase>",
    "no-cases.xml": "holds no <testcase>",
    "no-cases-but-tests.xml": "holds no <testcase>",
    "cunit__testEmpty.xml": "holds no <testcase>",
    "015-report.xml": "holds no <testcase>",  # go-junit-report on packages without tests
    "034-report.xml": "holds no <testcase>",
    "111-report.xml": "holds no <testcase>",
    "no-attributes.xml": "has no name attribute",
    "non-junit.xml": "the root element is <suites>",
    "pytest__corrupt-xml.xml": "not well-formed XML",
    "corrupt-junit__e2e-tests__corrupt__target__sf-reports__TEST-test.CorruptTest.xml": "not well-formed XML",
    "junit-web-test__expected.xml": "not well-formed XML",  # a raw `&` in an attribute
    "junit-web-test__expectedRetries.xml": "not well-formed XML",
    # Inspect logs of runs that did not finish, or written by an inspect_ai newer than the format read
    "analysis__test_logs__2025-05-12T20-28-13-04-00_no-samples.json": "cancelled run",
    "analysis__test_logs__2025-05-12T20-28-13-04-00_popularity.json": "cancelled run",
    "log__test_eval_log__log_message_deduplication.eval": "format version 3 is newer",
    "log__test_eval_log__log_tool_call_error.json": "has no scores and no error",
    "scorer__logs__2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval": "has no scores and no error",
}
"""File name -> what its one-line refusal must say."""

PRODUCERS = {"bazel", "catch2", "container-structure", "cunit", "go-junit-report", "gotestsum", "jest", "junit4", "marathon", "mocha",
             "nette-tester", "nextest", "perl", "phpunit", "pulsar", "pytest", "scalatest", "surefire", "swift",
             "tst", "unittest", "xunit"}


def test_the_corpus_is_as_large_and_as_varied_as_promised() -> None:
    files = JUNIT + INSPECT + LM_EVAL + DEEPEVAL
    assert len(files) >= 150
    names = " ".join(str(p.relative_to(WILD)).lower() for p in JUNIT)
    assert {producer for producer in PRODUCERS if producer in names} == PRODUCERS
    sources = (WILD / "SOURCES.md").read_text(encoding="utf-8")
    for path in files:  # every file says where it came from
        assert f"`{path.relative_to(WILD).as_posix()}`" in sources, path
    assert not [p for p in files if p.stat().st_size > 1_000_000]


# ---------------------------------------------------------------------------------------------------- JUnit

def _junit_cases(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    """(id, outcome, attributes) of every <testcase> in document order, by the JUnit elements alone."""
    root = ET.parse(path).getroot()
    cases = []
    for suite in root.iter():
        for case in suite.findall("testcase") if suite.tag in ("testsuite", "testsuites") else []:
            if suite is root and root.tag == "testsuites" and root.find("testsuite") is not None:
                continue
            classname = case.get("classname") or suite.get("name") or ""
            name = case.get("name") or ""
            tags = {child.tag for child in case}
            status = {(case.get("status") or "").lower(), (case.get("result") or "").lower()}
            outcome = ("error" if "error" in tags else "failed" if "failure" in tags else
                       "skipped" if "skipped" in tags or status & {"disabled", "notrun", "suppressed", "skipped"}
                       else "passed")
            cases.append((f"{classname}::{name}" if classname else name, outcome, dict(case.attrib)))
    return cases


def _base_id(nodeid: str) -> str:
    return re.sub(r" \((#\d+|file: .+)\)$", "", nodeid)


def _junit_ids(path: Path) -> list[str]:
    return [pytest.param(p, id=p.name) for p in JUNIT]  # type: ignore[misc]


@pytest.mark.parametrize("path", _junit_ids(WILD))
def test_junit_files_read_as_their_elements_say(path: Path) -> None:
    if path.name in REFUSED:
        with pytest.raises(InputError, match=re.escape(REFUSED[path.name])) as refusal:
            read_junit(path)
        assert "\n" not in str(refusal.value)
        return
    cases = _junit_cases(path)
    run = read_junit(path)
    by_id: dict[str, list[str]] = {}
    for nodeid, outcome, _ in cases:
        by_id.setdefault(nodeid, []).append(outcome)
    read: dict[str, list[str]] = {}
    shared = {nodeid for nodeid, outcomes in by_id.items() if len(outcomes) > 1}
    for test in run.tests:
        base = _base_id(test.nodeid)  # a runner's own title may end in `(#24)` too
        read.setdefault(base if base in shared else test.nodeid, []).append(test.outcome)
    assert set(read) == set(by_id)
    for nodeid, outcomes in by_id.items():
        if len(outcomes) == 1:
            assert read[nodeid] == outcomes, nodeid
        elif len(read[nodeid]) == 1:  # attempts of one test: it passed if one attempt passed
            expected = "passed" if "passed" in outcomes else outcomes[-1]
            assert read[nodeid] == [expected], nodeid
        else:  # distinct tests sharing a title: every one kept, in order, and the decision says so
            assert read[nodeid] == outcomes, nodeid
            assert any(repr(nodeid[:120]) in note for note in run.notes)
    _gates_itself_and_blocks_a_flip(run, _junit_flip(path, run, Counter(nodeid for nodeid, _, _ in cases)), path)


def _junit_flip(path: Path, run: NeutralRun, elements: Counter[str]) -> tuple[str, NeutralRun, NeutralRun] | None:
    """(test id, baseline, candidate): one test of a title of its own made to pass in the baseline and fail in
    the candidate, in copies of the file written back as XML; None where every title is shared."""
    target = next((t for t in run.tests if elements[t.nodeid] == 1 and t.outcome != "error"), None)
    if target is None:
        return None
    classname, _, name = target.nodeid.rpartition("::")
    tree = ET.parse(path)
    outs = []
    for fail in (False, True):
        root = ET.parse(path).getroot() if fail else tree.getroot()
        for suite in root.iter():
            for case in suite.findall("testcase"):
                if case.get("name") == name and (case.get("classname") or suite.get("name") or "") == classname:
                    for child in [c for c in case if c.tag in ("failure", "error", "skipped")]:
                        case.remove(child)
                    case.attrib.pop("status", None)
                    case.attrib.pop("result", None)
                    if fail:
                        ET.SubElement(case, "failure", message="flipped by the test")
        outs.append(ET.tostring(root, encoding="unicode"))
    return target.nodeid, *(_read_text(text, path.name, read_junit) for text in outs)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------- Inspect

def _inspect_members(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if not zipfile.is_zipfile(io.BytesIO(data)):
        return {"log.json": json.loads(data)}
    import zstandard

    members = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".json") or info.filename.startswith("samples/"):
                continue
            if info.compress_type == 93:  # zstandard, which zipfile reads only from Python 3.14
                start = info.header_offset
                skip = 30 + int.from_bytes(data[start + 26:start + 28], "little") + int.from_bytes(
                    data[start + 28:start + 30], "little")
                raw = zstandard.ZstdDecompressor().decompress(data[start + skip:start + skip + info.compress_size],
                                                              max_output_size=info.file_size)
            else:
                raw = archive.read(info.filename)
            members[info.filename] = json.loads(raw)
    return members


def _inspect_samples(members: dict[str, Any]) -> list[dict[str, Any]]:
    if "log.json" in members:
        return list(members["log.json"]["samples"])
    if "summaries.json" in members:
        return list(members["summaries.json"])
    return [s for name in sorted(n for n in members if n.startswith("_journal/summaries/"))
            for s in members[name]]


def _full_credit(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().upper() in ("C", "YES", "TRUE", "Y", "CORRECT") or (
            value.replace(".", "", 1).isdigit() and float(value) >= 1)
    return value is not None and float(value) >= 1


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in INSPECT])
def test_inspect_logs_read_as_their_samples_say(path: Path) -> None:
    if path.name in REFUSED:
        with pytest.raises(InputError, match=re.escape(REFUSED[path.name])):
            read_inspect_log(path)
        return
    members = _inspect_members(path)
    expected: dict[tuple[str, str], list[bool]] = {}
    for sample in _inspect_samples(members):
        for scorer, score in (sample.get("scores") or {}).items():
            values = score["value"] if isinstance(score["value"], dict) else {None: score["value"]}
            for key, value in values.items():
                name = scorer.removesuffix("()") + (f".{key}" if key is not None else "")
                expected.setdefault((str(sample["id"]), name), []).append(_full_credit(value))
    run = read_inspect_log(path)
    read = {(t.case, t.nodeid.split("::", 1)[1].rsplit("[", 1)[0]): t for t in run.tests}
    assert set(read) == set(expected)
    for pair, passes in expected.items():
        assert (read[pair].outcome == "passed") == all(passes), pair
        assert read[pair].repeats == (None if len(passes) == 1 else (sum(passes), len(passes)))
    target = next((t for t in run.tests if t.repeats is None), None)
    if target is None:  # every sample ran several epochs: a flip of one is a statistical question, not a rule
        _gates_itself_and_blocks_a_flip(run, None, path)
        return
    flipped = []
    for full in (True, False):
        copy = json.loads(json.dumps(members))
        for sample in _inspect_samples(copy):
            if str(sample["id"]) == target.case:
                score = next(s for name, s in sample["scores"].items()
                             if name.removesuffix("()") == target.nodeid.split("::", 1)[1].rsplit("[", 1)[0])
                score["value"] = "C" if full else "I"
        flipped.append(_write_log(copy, path))
    _gates_itself_and_blocks_a_flip(run, (target.nodeid, *flipped), path)


def _write_log(members: dict[str, Any], path: Path) -> NeutralRun:
    if "log.json" in members:
        return _read_text(json.dumps(members["log.json"]), path.name, read_inspect_log)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            archive.writestr(name, json.dumps(value))
    return _read_text(buffer.getvalue(), path.name, read_inspect_log)


# ---------------------------------------------------------------------------------------------------- lm-eval

@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in LM_EVAL])
def test_lm_eval_v0_results_are_refused_naming_the_version(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data) == {"results", "versions"}  # the v0 harness's whole file: no configs, no samples
    with pytest.raises(InputError, match="lm-eval before 0.4") as refusal:
        read_lm_eval(path)
    assert "\n" not in str(refusal.value)


# ---------------------------------------------------------------------------------------------------- DeepEval

def _deepeval_metrics(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Every metricsData entry of a test case: its own, its trace's, and each span's of every kind."""
    trace = case.get("trace") or {}
    spans = [span for field, value in trace.items() if field.endswith("Spans") for span in value or []]
    return [*(case.get("metricsData") or []), *(trace.get("metricsData") or []),
            *(metric for span in spans for metric in span.get("metricsData") or [])]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in DEEPEVAL])
def test_deepeval_runs_read_every_metric_of_cases_and_spans(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    expected = Counter(("error" if metric.get("error") else "passed" if metric["success"] else "failed")
                       for case in data["testCases"] for metric in _deepeval_metrics(case))
    run = read_deepeval(path)
    assert Counter(test.outcome for test in run.tests) == expected
    assert len({test.nodeid for test in run.tests}) == sum(expected.values())
    target = next(test for test in run.tests if test.outcome == "passed")
    copies = []
    for success in (True, False):
        copy = json.loads(json.dumps(data))
        for case in copy["testCases"]:
            metrics = [(case.get("metricsData") or [], "")]
            trace = case.get("trace") or {}
            metrics.append((trace.get("metricsData") or [], "trace/"))
            metrics += [(span.get("metricsData") or [], f"{span.get('name')}/") for field, value in trace.items()
                        if field.endswith("Spans") for span in value or []]
            for entries, prefix in metrics:
                for metric in entries:
                    if target.nodeid.endswith(f"::{prefix}{metric['name']}[{case['name']}]"):
                        metric["success"] = success
        copies.append(_read_text(json.dumps(copy), path.name, read_deepeval))
    _gates_itself_and_blocks_a_flip(run, (target.nodeid, *copies), path)


# ---------------------------------------------------------------------------------------------------- shared

_SCRATCH: list[Path] = []


@pytest.fixture(autouse=True)
def _scratch(tmp_path: Path) -> None:
    """Where the flipped copies are written: this test's own folder."""
    _SCRATCH[:] = [tmp_path]


def _read_text(text: str | bytes, name: str, reader: Any) -> NeutralRun:
    folder = _SCRATCH[0] / f"copy{len(list(_SCRATCH[0].iterdir()))}"
    folder.mkdir()
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return reader(path)  # type: ignore[no-any-return]


def _gates_itself_and_blocks_a_flip(run: NeutralRun, flip: tuple[str, NeutralRun, NeutralRun] | None,
                                    path: Path) -> None:
    itself = gate_runs(STRICT_DEFAULT, run, run).decision
    if any(test.repeats for test in run.tests):  # the policy reviews what too few repeats cannot tell
        assert itself.decision in (Verdict.GO, Verdict.REVIEW) and not itself.regressed, path.name
        assert all(r.startswith(("unreliable_baseline", "insufficient_data")) for r in itself.review_reasons)
    else:
        assert itself.decision is Verdict.GO, (path.name, itself.reasons)
    if flip is None:
        return
    nodeid, baseline, candidate = flip
    flipped = gate_runs(STRICT_DEFAULT, baseline, candidate).decision
    assert flipped.decision is Verdict.BLOCK, (path.name, flipped.reasons)
    assert flipped.regressed == (nodeid,)
