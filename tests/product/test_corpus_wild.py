"""The shared corpus (../shared/corpus/, or EVALKIT_CORPUS): files other people's tools wrote, read as those tools
show them, wild/ and the holdout alike.

Each file is counted by a reader written from the format alone (tests/helpers/corpus.py: xml.etree over the JUnit
elements, the zip and JSON of an Inspect log, DeepEval's metricsData, promptfoo's componentResults), never by
evalkit's reader, and evalkit must read the same tests with the same outcomes. Gated against itself a file decides
GO, or what its manifest row (tests/helpers/corpus_manifest.tsv) justifies; a copy with one passing test made to fail,
written to this test's temporary folder, blocks on exactly that test; in an Inspect log with epochs, one epoch
of a test that passed them all made to fail is never GO (REVIEW naming it, too_small_to_tell, or BLOCK where the
sizes can tell the drop). A file evalkit refuses is refused in one
line holding the words its row names. Under CI=true a missing corpus fails; elsewhere the tests skip, saying where
to get it.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli
from helpers.corpus import (
    READERS,
    WHERE_TO_GET,
    Expected,
    corpus_files,
    corpus_root,
    deepeval_metrics,
    in_ci,
    inspect_members,
    inspect_samples,
    junit_cases,
    manifest,
    mismatch,
    parse_xml,
    sha256_of,
)

from evalkit.adapt.framework import gate_runs
from evalkit.adapt.neutral import NeutralRun
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT
from evalkit.gate.decision import Verdict

CORPUS = corpus_root()
EXPECTED = manifest()


def _missing() -> None:
    message = f"no shared corpus at {CORPUS}: {WHERE_TO_GET}"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _params() -> list[Any]:
    if not CORPUS.is_dir():
        return [pytest.param(None, id="corpus-missing")]
    return [pytest.param(EXPECTED.get(path) or path, id=path) for path in corpus_files(CORPUS)]


def test_the_manifest_lists_every_file_of_the_corpus_and_no_other() -> None:
    if not CORPUS.is_dir():
        _missing()
    files = corpus_files(CORPUS)
    assert sorted(EXPECTED) == files
    by_tool = Counter(path.split("/")[1] for path in files if path.startswith("wild/"))
    assert by_tool == {"junit": 140, "inspect": 87, "deepeval": 14, "lm_eval": 14, "promptfoo": 15}
    assert len([p for p in files if p.startswith("holdout-2026-12-03/")]) == 163
    sources = (CORPUS / "wild/SOURCES.md").read_text(encoding="utf-8")
    for path in files:  # every file says where it came from
        if path.startswith("wild/"):
            assert f"`{path.removeprefix('wild/')}`" in sources, path
    assert [p for p in files if (CORPUS / p).stat().st_size > 1_000_000], "files over 1 MB are read like the rest"
    assert [p for p in files if p.endswith(".jsonl")], ".jsonl samples are read like the rest"


@pytest.mark.parametrize("row", _params())
def test_every_file_reads_as_its_tool_wrote_it(row: Expected | str | None, tmp_path: Path) -> None:
    if row is None:
        _missing()
    assert isinstance(row, Expected), f"{row}: in the corpus but not in tests/helpers/corpus_manifest.tsv"
    path = CORPUS / row.path
    assert sha256_of(path) == row.sha256, f"{row.path} changed in the corpus; check its row again"
    read = READERS[row.tool]
    if row.expect == "refused":
        with pytest.raises(InputError) as refusal:
            read(path)
        assert row.words in str(refusal.value), (str(refusal.value), row.why)
        assert "\n" not in str(refusal.value)
        return
    run = read(path)
    assert mismatch(path, row.tool, run) is None, mismatch(path, row.tool, run)
    itself = gate_runs(STRICT_DEFAULT, run, run).decision
    assert itself.decision is Verdict(row.expect), (row.path, itself.reasons, row.why)
    assert not itself.regressed
    if row.tool == "inspect":
        _one_sample_of_a_repeated_test_failing_is_never_go(path, run, tmp_path / "one-sample")
    flip = FLIPPERS[row.tool](path, run, tmp_path)
    if flip is None:  # nothing passes, or every test is repeated (a flip of one run is a statistical question)
        assert not any(t.outcome == "passed" and t.repeats is None for t in run.tests) or row.tool == "junit", row.path
        return
    nodeid, baseline, candidate = flip
    flipped = gate_runs(STRICT_DEFAULT, baseline, candidate).decision
    assert flipped.decision is Verdict.BLOCK, (row.path, flipped.reasons)
    assert nodeid in flipped.regressed


# ---------------------------------------------------------------------------------------------------- flippers
# Each writes two copies of the file into the test's folder: one test made to pass (the baseline) and made to fail
# (the candidate), everything else as the tool wrote it; None where no test of a title of its own passes.

Flip = tuple[str, NeutralRun, NeutralRun] | None


def _write(folder: Path, name: str, data: str | bytes, read: Callable[[Path], NeutralRun]) -> NeutralRun:
    folder.mkdir()
    (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return read(folder / name)


def _flip_junit(path: Path, run: NeutralRun, tmp: Path) -> Flip:
    elements = Counter(nodeid for nodeid, _ in junit_cases(path))
    target = next((t for t in run.tests if elements[t.nodeid] == 1 and t.outcome == "passed"), None)
    if target is None:
        return None
    classname, _, name = target.nodeid.rpartition("::")
    copies = []
    for fail in (False, True):
        root = parse_xml(path)
        for suite in root.iter():
            for case in suite.findall("testcase"):
                if case.get("name") == name and (case.get("classname") or suite.get("name") or "") == classname:
                    if fail:
                        ET.SubElement(case, "failure", message="flipped by the test")
        copies.append(_write(tmp / f"copy{fail}", path.name, ET.tostring(root, encoding="unicode"), READERS["junit"]))
    return target.nodeid, copies[0], copies[1]


def _one_sample_of_a_repeated_test_failing_is_never_go(path: Path, run: NeutralRun, tmp: Path) -> None:
    """A test with epochs that passed every one, its last epoch made to fail: REVIEW naming it (too small to tell)
    or BLOCK where the sizes let that drop be told, never GO."""
    target = next((t for t in run.tests if t.repeats is not None and t.outcome == "passed"), None)
    if target is None:
        return
    assert target.repeats is not None
    tmp.mkdir()
    flip = _flip_inspect(path, run, tmp, target=target, epoch=target.repeats[1])
    assert flip is not None
    _, baseline, candidate = flip
    decision = gate_runs(STRICT_DEFAULT, baseline, candidate).decision
    named = {name for f in decision.findings if f.rule in ("regression", "too_small_to_tell") for name in f.tests}
    assert decision.decision in (Verdict.REVIEW, Verdict.BLOCK) and target.nodeid in named, (path, decision.reasons)


def _flip_inspect(path: Path, run: NeutralRun, tmp: Path, target: Any = None, epoch: int | None = None) -> Flip:
    """With `epoch`, only that epoch of `target`'s sample is made to fail (the baseline keeps it as written)."""
    target = target or next((t for t in run.tests if t.repeats is None and t.outcome == "passed"), None)
    if target is None:
        return None
    members = inspect_members(path)
    scorer = target.nodeid.split("::", 1)[1].rsplit("[", 1)[0]
    copies = []
    for full in (True, False):
        copy = json.loads(json.dumps(members))
        for sample in inspect_samples(copy):
            if str(sample["id"]) == target.case and (epoch is None or (not full and sample.get("epoch") == epoch)):
                for name, score in sample["scores"].items():
                    if name.removesuffix("()") == scorer:
                        score["value"] = "C" if full else "I"
                    elif isinstance(score["value"], dict) and scorer.startswith(name.removesuffix("()") + "."):
                        score["value"][scorer.split(".", 1)[1]] = "C" if full else "I"
        if "log.json" in copy:
            data: str | bytes = json.dumps(copy["log.json"])
        else:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for name, value in copy.items():
                    archive.writestr(name, json.dumps(value))
            data = buffer.getvalue()
        copies.append(_write(tmp / f"copy{full}", path.name, data, READERS["inspect"]))
    return target.nodeid, copies[0], copies[1]


def _flip_deepeval(path: Path, run: NeutralRun, tmp: Path) -> Flip:
    target = next((t for t in run.tests if t.outcome == "passed"), None)
    if target is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    copies = []
    for success in (True, False):
        copy = json.loads(json.dumps(data))
        test_run = copy["testRunData"] if set(copy) == {"testRunData"} else copy
        for case in [*test_run["testCases"], *(test_run.get("conversationalTestCases") or [])]:
            for _, metric in deepeval_metrics(case):  # a span without a name is named by its kind: any span
                if target.nodeid.endswith(f"{metric['name']}[{case['name']}]"):
                    metric["success"] = success
        copies.append(_write(tmp / f"copy{success}", path.name, json.dumps(copy), READERS["deepeval"]))
    return target.nodeid, copies[0], copies[1]


def _flip_promptfoo(path: Path, run: NeutralRun, tmp: Path) -> Flip:
    # a row's first passing assertion made to fail (its component result, and the row with it); the flipped test
    # is the one test whose outcome the candidate changes, which must be exactly one
    data = json.loads(path.read_text(encoding="utf-8"))
    before = {t.nodeid: t for t in run.tests}
    for index, row in enumerate(data["results"]["results"][:5]):
        components = (row.get("gradingResult") or {}).get("componentResults") or []
        passing = next((c for c in components if c.get("pass") is True), None)
        if passing is None and (components or row.get("success") is not True):
            continue
        copy = json.loads(json.dumps(data))
        flipped = copy["results"]["results"][index]
        if passing is not None:  # else a row without assertions, passing on its success alone
            component = flipped["gradingResult"]["componentResults"][components.index(passing)]
            component.update({"pass": False, "score": 0, "reason": "flipped by the test"})
        flipped.update({"success": False, "score": 0, "failureReason": 1})
        flipped["gradingResult"]["pass"] = False
        candidate = _write(tmp / f"copy{index}", path.name, json.dumps(copy), READERS["promptfoo"])
        changed = [t for t in candidate.tests if t.outcome != before[t.nodeid].outcome]
        assert len(changed) <= 1, [t.nodeid for t in changed]
        if changed and changed[0].repeats is None:
            return changed[0].nodeid, run, candidate
    return None


FLIPPERS: dict[str, Callable[[Path, NeutralRun, Path], Flip]] = {
    "junit": _flip_junit, "inspect": _flip_inspect, "deepeval": _flip_deepeval, "promptfoo": _flip_promptfoo}


# ---------------------------------------------------------------------------------------------------- end to end

def test_a_few_files_gate_end_to_end_through_the_command(tmp_path: Path) -> None:
    """The command, in a subprocess, on real files: GO against itself, and a refusal as one line with exit 3."""
    if not CORPUS.is_dir():
        _missing()
    chosen = [row for row in EXPECTED.values() if row.path.startswith("wild/") and row.expect == "go"]
    for tool, source in (("junit", "junit"), ("inspect", "inspect"), ("deepeval", "deepeval")):
        row = next(r for r in chosen if r.tool == tool)
        result = evalkit_cli("evalkit.cli.main", "adapt", source, str(CORPUS / row.path), str(CORPUS / row.path),
                            "--out", str(tmp_path / tool))
        assert result.returncode == 0, (row.path, result.stdout, result.stderr)
    nunit = EXPECTED["wild/junit/dorny/dorny+test-reporter____tests____fixtures__dotnet-nunit.xml"]
    result = evalkit_cli("evalkit.cli.main", "adapt", "junit", str(CORPUS / nunit.path), str(CORPUS / nunit.path),
                        "--out", str(tmp_path / "nunit"))
    assert result.returncode == 3 and re.search(r"NUnit 3 XML", result.stderr), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
