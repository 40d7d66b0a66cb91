"""The shared corpus of other tools' result files: where it is, what evalkit must make of each file, and a reader
of each format written here from the format alone (never evalkit's), so evalkit's counts are checked against it.

The files are not the project's: they live beside it in `../shared/corpus/` (README.md there), which every
development machine and CI have; `EVALKIT_CORPUS` points elsewhere. The expectations are the project's own data:
tests/helpers/corpus_manifest.tsv holds one row per file, keyed by its path in the corpus and its SHA-256, saying whether
evalkit reads it (and whether it gates itself GO or, for a run with errored tests, BLOCK) or refuses it, with the
words the one-line refusal must hold and why the refusal is justified.

Used by tests/product/test_corpus_wild.py, tests/product/test_corpus_holdout.py and benchmarks/adapt_accuracy.py.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import os
import re
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.adapt.deepeval import read_deepeval
from evalkit.adapt.inspect import read_inspect_log
from evalkit.adapt.junit import read_junit
from evalkit.adapt.lm_eval import read_lm_eval
from evalkit.adapt.neutral import NeutralRun
from evalkit.adapt.promptfoo import read_promptfoo

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MANIFEST = PROJECT_ROOT / "tests/helpers/corpus_manifest.tsv"
FOLDERS = ("wild", "holdout-2026-12-03")
"""The corpus folders whose every file the manifest lists (edited-*/ holds hand-edited copies, not sources)."""
READERS: dict[str, Callable[[Path], NeutralRun]] = {
    "junit": read_junit, "inspect": read_inspect_log, "deepeval": read_deepeval, "promptfoo": read_promptfoo,
    "lm_eval": read_lm_eval}
"""evalkit's reader of each tool, by the corpus's top folder."""
WHERE_TO_GET = ("the shared corpus of other tools' result files: clone it beside the project as ../shared/corpus "
                "(see its README.md), or set EVALKIT_CORPUS to where it is")


def corpus_root() -> Path:
    """EVALKIT_CORPUS if set, else `<project>/../shared/corpus`."""
    configured = os.environ.get("EVALKIT_CORPUS")
    return Path(configured) if configured else PROJECT_ROOT.parent / "shared/corpus"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@dataclass(frozen=True)
class Expected:
    """One manifest row: what evalkit must make of one corpus file."""

    path: str
    """The file's path in the corpus (`wild/junit/dorny/...`)."""
    sha256: str
    expect: str
    """`go`: read, and gated against itself GO (REVIEW only where too few repeats can tell); `block`: read, and
    gated against itself BLOCK (errored tests: an incomplete run blocks); `refused`: one InputError line."""
    words: str
    """For `refused`: what the refusal must say."""
    why: str

    @property
    def tool(self) -> str:
        return self.path.split("/")[1]


def manifest() -> dict[str, Expected]:
    with MANIFEST.open(encoding="utf-8", newline="") as handle:
        rows = [Expected(**row) for row in csv.DictReader(
            (line for line in handle if not line.startswith("#")), delimiter="\t")]
    return {row.path: row for row in rows}


def corpus_files(root: Path) -> list[str]:
    """Every data file of the corpus folders, as its path in the corpus (their Markdown and TSV are its records)."""
    return sorted(path.relative_to(root).as_posix() for folder in FOLDERS for path in (root / folder).rglob("*")
                  if path.is_file() and path.suffix not in (".md", ".tsv"))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------------- truth

@dataclass(frozen=True)
class Truth:
    """What a file holds by its own tool's fields, in the unit evalkit documents for that tool."""

    outcomes: Counter[str]
    """passed / failed / error / skipped, one per test; for repeated tests one per run (see `runs`)."""
    runs: bool = False
    """Whether `outcomes` counts runs (promptfoo's repeats, Inspect's epochs) rather than tests."""


def read_counts(run: NeutralRun, runs: bool) -> Counter[str]:
    """evalkit's reading in the truth's unit: tests, or (`runs`) every run of a repeated test."""
    if not runs:
        return Counter(test.outcome for test in run.tests)
    counts: Counter[str] = Counter()
    for test in run.tests:
        passed, total = test.repeats or ((1, 1) if test.outcome == "passed" else (0, 1))
        counts["passed"] += passed
        if total > passed:
            counts[test.outcome if test.outcome != "passed" else "failed"] += total - passed
    return counts


def parse_xml(path: Path) -> ET.Element:
    """The XML root; a file whose declared encoding expat does not know (`UTF-16 LE`) is decoded by its BOM."""
    data = path.read_bytes()
    try:
        return ET.fromstring(data)
    except ET.ParseError:
        for bom, codec in ((codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
                           (codecs.BOM_UTF8, "utf-8-sig")):
            if data.startswith(bom):
                return ET.fromstring(re.sub(r"^\s*<\?xml[^>]*\?>", "", data.decode(codec), count=1))
        raise


def junit_cases(path: Path) -> list[tuple[str, str]]:
    """(classname::name, outcome) of every <testcase> in document order, by the JUnit elements alone."""
    root = parse_xml(path)
    cases = []
    for suite in root.iter():
        if suite.tag not in ("testsuite", "testsuites"):
            continue
        if suite is root and root.tag == "testsuites" and root.find(".//testsuite") is not None:
            continue
        for case in suite.findall("testcase"):
            classname = case.get("classname") or suite.get("name") or ""
            name = case.get("name") or ""
            tags = {child.tag for child in case}
            status = {(case.get("status") or "").lower(), (case.get("result") or "").lower()}
            outcome = ("error" if "error" in tags else "failed" if "failure" in tags else
                       "skipped" if "skipped" in tags or status & {"disabled", "notrun", "suppressed", "skipped",
                                                                   "ignored"}
                       else "passed")
            cases.append((f"{classname}::{name}" if classname else name, outcome))
    return cases


def inspect_members(path: Path) -> dict[str, Any]:
    """The JSON members of an Inspect log (`log.json` for a .json log), samples left out of a .eval."""
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


def inspect_samples(members: dict[str, Any]) -> list[dict[str, Any]]:
    if "log.json" in members:
        return list(members["log.json"]["samples"])
    if "summaries.json" in members:
        return list(members["summaries.json"])
    return [s for name in sorted(n for n in members if n.startswith("_journal/summaries/")) for s in members[name]]


def full_credit(value: Any) -> bool:
    """Inspect's value_to_float reading of a score: `C`, yes, true, or a number of at least 1 pass."""
    if isinstance(value, str):
        return value.strip().upper() in ("C", "YES", "TRUE", "Y", "CORRECT") or (
            value.replace(".", "", 1).isdigit() and float(value) >= 1)
    return value is not None and float(value) >= 1


def inspect_scores(path: Path) -> dict[tuple[str, str], list[bool | None]]:
    """(sample id, scorer[.key]) -> full credit per epoch; None where the sample errored (for each scorer)."""
    members = inspect_members(path)
    header = members.get("log.json") or members.get("header.json") or members.get("_journal/start.json") or {}
    scorers = [s.get("name") for s in (header.get("eval") or {}).get("scorers") or []] or [
        s.get("name") for s in (header.get("results") or {}).get("scores") or []]
    expected: dict[tuple[str, str], list[bool | None]] = {}
    for sample in inspect_samples(members):
        if sample.get("error"):
            for scorer in scorers:
                expected.setdefault((str(sample["id"]), str(scorer).removesuffix("()")), []).append(None)
        for scorer, score in (sample.get("scores") or {}).items():
            values = score["value"] if isinstance(score["value"], dict) else {None: score["value"]}
            for key, value in values.items():
                name = scorer.removesuffix("()") + (f".{key}" if key is not None else "")
                expected.setdefault((str(sample["id"]), name), []).append(full_credit(value))
    return expected


def deepeval_run(path: Path) -> dict[str, Any]:
    """The test run object (`.latest_test_run.json` holds it under `testRunData`)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["testRunData"] if set(data) == {"testRunData"} else data  # type: ignore[no-any-return]


def deepeval_metrics(case: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(prefix, metricsData entry) of a test case: its own, its trace's, and each span's of every kind."""
    trace = case.get("trace") or {}
    spans = [span for field, value in trace.items() if field.endswith("Spans") for span in value or []]
    return [*(("", m) for m in case.get("metricsData") or []), *(("trace/", m) for m in trace.get("metricsData") or []),
            *((f"{span.get('name')}/", m) for span in spans for m in span.get("metricsData") or [])]


def promptfoo_components(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A row's component results (its assertions' scores); a row without assertions is scored by its success."""
    grading = row.get("gradingResult") or {}
    return list(grading.get("componentResults") or []) or [{"pass": row.get("success") is True}]


def truth(path: Path, tool: str) -> Truth:
    """The outcomes a file holds by its own tool's fields."""
    if tool == "junit":
        return Truth(Counter(outcome for _, outcome in junit_cases(path)))
    if tool == "inspect":
        scores = inspect_scores(path)
        if any(len(passes) > 1 for passes in scores.values()):  # epochs: every run counted
            return Truth(Counter("passed" if ok else "failed" for passes in scores.values() for ok in passes), True)
        return Truth(Counter("error" if None in p else "passed" if all(p) else "failed" for p in scores.values()))
    if tool == "deepeval":
        data = deepeval_run(path)
        return Truth(Counter(("error" if metric.get("error") else "passed" if metric["success"] else "failed")
                             for case in [*data["testCases"], *(data.get("conversationalTestCases") or [])]
                             for _, metric in deepeval_metrics(case)))
    if tool == "promptfoo":
        rows = json.loads(path.read_text(encoding="utf-8"))["results"]["results"]
        counts: Counter[str] = Counter()
        for row in rows:
            errored = row.get("failureReason") == 2 or (row.get("error") and not row.get("gradingResult"))
            for component in promptfoo_components(row):
                counts["error" if errored else "passed" if component.get("pass") else "failed"] += 1
        return Truth(counts, True)
    raise ValueError(f"no reader of {tool} files that evalkit reads")


def _base_id(nodeid: str) -> str:
    return re.sub(r" \((#\d+|file: .+)\)$", "", nodeid)


def junit_mismatch(path: Path, run: NeutralRun) -> str | None:
    """Where evalkit's tests differ from the <testcase>s, id by id; None when they agree. Entries sharing a
    title are either attempts of one test (one test: passed if an attempt passed, else the last decides) or
    distinct tests kept in order, and the decision then says so."""
    by_id: dict[str, list[str]] = {}
    for nodeid, outcome in junit_cases(path):
        by_id.setdefault(nodeid, []).append(outcome)
    shared = {nodeid for nodeid, outcomes in by_id.items() if len(outcomes) > 1}
    read: dict[str, list[str]] = {}
    for test in run.tests:
        base = _base_id(test.nodeid)  # a runner's own title may end in `(#24)` too
        read.setdefault(base if base in shared else test.nodeid, []).append(test.outcome)
    if set(read) != set(by_id):
        return f"tests {sorted(set(read) ^ set(by_id))[:3]} are in only one of evalkit's reading and the file"
    for nodeid, outcomes in by_id.items():
        if len(outcomes) == 1 or len(read[nodeid]) > 1:
            if read[nodeid] != outcomes:
                return f"{nodeid!r}: evalkit {read[nodeid]}, the file {outcomes}"
            if len(outcomes) > 1 and not any(repr(nodeid[:120]) in note for note in run.notes):
                return f"{nodeid!r}: same-titled tests kept apart without saying so"
        else:
            expected = "passed" if "passed" in outcomes else outcomes[-1]
            if read[nodeid] != [expected]:
                return f"{nodeid!r}: evalkit {read[nodeid]} for attempts {outcomes}"
    return None


def mismatch(path: Path, tool: str, run: NeutralRun) -> str | None:
    """How evalkit's reading of a file differs from what the file holds; None when it is read right."""
    if tool == "junit":
        return junit_mismatch(path, run)
    expected = truth(path, tool)
    read = read_counts(run, expected.runs)
    return None if read == expected.outcomes else f"evalkit read {dict(read)}, the file holds {dict(expected.outcomes)}"
