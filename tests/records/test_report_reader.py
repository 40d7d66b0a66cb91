"""evalkit/records/report_reader.py's reader of large reports (msgspec after parsing.check_json) against the careful path
(parse_json + report_from_mapping): a valid report reads alike on both, and what either refuses is refused in
the careful path's words. The reports here are authored in this file unless they are the shipped baselines."""

from __future__ import annotations

import copy
import glob
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.errors import InputError
from evalkit.core.parsing import check_json, parse_json
from evalkit.records import report_reader as report_module
from evalkit.records.report_reader import CaseTexts, RunReport, parse_report, read_reports, report_from_mapping

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
KEY = {"key_version": 1, "suite": "s", "dataset": "d@1", "dataset_sha": "abc", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "m", "components": {}}


def stage(outcome: str = "passed", **more: Any) -> dict[str, Any]:
    return {"duration": 0.000123, "outcome": outcome, **more}


def full_report() -> dict[str, Any]:
    """A report in the full form `python -m evalkit` writes, with every outcome pytest writes."""
    failed = stage("failed", crash={"path": "t.py", "lineno": 3, "message": "AssertionError: bad label\nassert 0"},
                   longrepr="def test():\n>       assert 0\nE       AssertionError: bad label\n\nt.py:3: AssertionError")
    skipped = stage("skipped", longrepr="('t.py', 9, 'Skipped: no score')")
    tests = [
        {"nodeid": "t.py::test_a[c1]", "lineno": 1, "outcome": "passed", "keywords": ["c1", "t.py"],
         "setup": stage(), "call": stage(), "teardown": stage(), "case": "c1", "metadata": {"x": 1.5}},
        {"nodeid": "t.py::test_a[c2]", "lineno": 1, "outcome": "failed", "setup": stage(), "call": failed,
         "teardown": stage(), "case": "c2"},
        {"nodeid": "t.py::test_b[c1]", "lineno": 8, "outcome": "skipped", "setup": skipped, "teardown": stage()},
        {"nodeid": "t.py::test_b[c2]", "lineno": 8, "outcome": "error", "setup": failed, "teardown": stage()},
        {"nodeid": "t.py::test_c[c1]", "lineno": 12, "outcome": "xfailed", "setup": stage(),
         "call": stage("skipped", longrepr="reason: known"), "teardown": stage()},
        {"nodeid": "t.py::test_c[c2]", "lineno": 12, "outcome": "xpassed", "setup": stage(), "call": stage(),
         "teardown": stage(), "call_extra": None},
    ]
    cases = [{"id": "c1", "status": "scored", "checks": {"test_a": "passed"}, "output": "{\"label\": \"bug\"}",
              "passed": True, "metrics": {"m": 1.0}, "grade": {"task_pass": True, "quality_pass": None}},
             {"id": "c2", "status": "unscored", "checks": {"test_a": "failed"}, "passed": False, "metrics": {}}]
    return {"created": 1.5, "duration": 2.25, "exitcode": 1,
            "summary": {"passed": 1, "failed": 1, "skipped": 1, "error": 1, "xfailed": 1, "xpassed": 1,
                        "total": 6, "collected": 6},
            "tests": tests, "format": "evalkit-run-report/1", "eval": KEY,
            "provenance": {"policy": "triage", "mode": "replay"}, "cases": cases, "pass_rate": 0.333333,
            "metrics": {"pass_rate": {"mean": 0.333333, "count": 6, "unmeasured": 0}},
            "execution": {"calls": {"replayed": 2}}, "slices": {"lang": {"en": {"cases": 2}}}, "warnings": []}


def careful(text: str) -> RunReport:
    return report_from_mapping(parse_json(text, "r.json", "report"), "r.json")


def shipped() -> list[str]:
    return sorted(glob.glob(str(PROJECT_ROOT / "suites/*/runs/*.json")))


@pytest.mark.parametrize("path", shipped(), ids=lambda p: Path(p).parent.parent.name + "/" + Path(p).name)
def test_a_shipped_baseline_reads_alike_on_both_paths(path: str) -> None:
    text = Path(path).read_text(encoding="utf-8")
    fast = report_module._read_fast(text, path)
    assert fast is not None, "the shipped baselines are what the fast reader is for"
    assert isinstance(fast.cases, CaseTexts)
    assert fast == careful(text)
    assert fast.messages == careful(text).messages and fast.cases == careful(text).cases
    if "trajectories" in json.loads(text):  # an agent suite's steps, for the pages that show them
        assert fast.trajectories and fast.trajectories == json.loads(text)["trajectories"]


def variants() -> dict[str, dict[str, Any]]:
    base = full_report()
    out = {"full": base}
    out["no cases, no extras"] = {"eval": KEY, "tests": [{"nodeid": "t.py::a", "outcome": "passed"}]}
    repeated = copy.deepcopy(base)
    repeated["tests"][3]["repeats"] = {"passed": 1, "runs": 3}
    repeated["tests"][3]["case"] = "c2"
    repeated["tests"][5]["repeats"] = {"passed": 3, "runs": 3}
    out["repeats from the fourth test"] = repeated
    nulls = copy.deepcopy(base)
    nulls["tests"][0]["call"] = None
    nulls["tests"][1]["teardown"] = None
    nulls["tests"][0]["repeats"] = None
    nulls["provenance"] = None
    out["nulls where objects may be"] = nulls
    rounds = copy.deepcopy(repeated)  # a run sampled in rounds: the gate decides it by the sequential rule
    rounds["sequential"] = {"max_repeats": 20, "batch": 2, "delta": 0.6, "futility": 0.3, "alpha": 0.05,
                            "baseline": "runs/baseline.json", "rounds": 2, "samples": {"c2": 3},
                            "verdicts": {"t.py::test_b[c2]": "open"}}
    out["sampled in rounds"] = rounds
    return out


def test_the_fast_reader_keeps_every_block_the_careful_path_reads() -> None:
    """A block the careful path reads but the fast reader's struct lacks would be dropped unread (msgspec skips
    unknown fields): the sequential block once was, and `evalkit gate` decided such a run by the fixed-N rule."""
    source = Path(report_module.__file__).read_text(encoding="utf-8")
    read = set(re.findall(r'data\.get\("([a-z_]+)"\)|data\["([a-z_]+)"\]', source))
    blocks = {name for pair in read for name in pair if name}
    assert "sequential" in blocks and blocks <= set(report_module._Report.__struct_fields__)


@pytest.mark.parametrize("name", list(variants()))
def test_a_valid_report_reads_alike_on_both_paths(name: str) -> None:
    text = json.dumps(variants()[name], indent=1)
    fast = report_module._read_fast(text, "r.json")
    assert fast is not None
    assert fast == careful(text)
    assert parse_report(text, "r.json") == careful(text)


def test_the_full_report_is_read_for_what_the_gate_reads() -> None:
    read = parse_report(json.dumps(full_report()), "r.json")
    assert read.outcomes == {"t.py::test_a[c1]": "passed", "t.py::test_a[c2]": "failed", "t.py::test_b[c1]": "skipped",
                             "t.py::test_b[c2]": "error", "t.py::test_c[c1]": "xfailed", "t.py::test_c[c2]": "xpassed"}
    assert read.messages["t.py::test_a[c2]"] == "AssertionError: bad label"
    assert read.messages["t.py::test_b[c1]"] == "Skipped: no score"
    assert read.unscored == ("c2",) and read.problems == ()
    assert [case["id"] for case in read.cases] == ["c1", "c2"]


@pytest.mark.parametrize("change", [
    lambda r: r["tests"].__setitem__(0, {**r["tests"][0], "outcome": "rerun"}),  # a plugin's outcome
    lambda r: r["tests"].__setitem__(1, {**r["tests"][1], "outcome": "subtests passed"}),
    lambda r: r["tests"][0]["call"].__setitem__("outcome", "rerun"),  # a stage no pytest writes
    lambda r: r.__setitem__("cases", None),
    lambda r: r["tests"].append({"nodeid": "t.py::big", "outcome": "passed", "lineno": 10 ** 30}),
    lambda r: r["cases"][0].__setitem__("tokens", 10 ** 300),
    lambda r: r["tests"][1]["call"]["crash"].__setitem__("lineno", 10 ** 300),
], ids=["rerun", "subtests", "stage-outcome", "cases-null", "big-int", "big-int-in-case", "big-int-in-stage"])
def test_what_the_fast_reader_does_not_describe_reads_as_the_careful_path_reads_it(change: Any) -> None:
    data = full_report()
    change(data)
    text = json.dumps(data)
    assert parse_report(text, "r.json") == careful(text)


def _bad(change: Any) -> str:
    data = full_report()
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("text", [
    _bad(lambda r: r["tests"].append(dict(r["tests"][0]))),  # a test id given twice
    _bad(lambda r: r["tests"].append(5)),
    _bad(lambda r: r["tests"].append({"nodeid": "t.py::x", "outcome": "won"})),
    _bad(lambda r: r["tests"][2].__setitem__("repeats", {"passed": 4, "runs": 3})),
    _bad(lambda r: r["tests"][0].__setitem__("repeats", {"passed": 1, "runs": 3})),  # contradicts "passed"
    _bad(lambda r: r.__setitem__("cases", [{"grade": {}}])),
    _bad(lambda r: r.__setitem__("cases", [{"id": "a", "grade": {"task_pass": "yes"}}])),
    _bad(lambda r: r.__setitem__("cases", 5)),
    _bad(lambda r: r.__setitem__("eval", [])),
    _bad(lambda r: r.__setitem__("exitcode", "1")),
    _bad(lambda r: r.__setitem__("metrics", {"m": "high"})),
    _bad(lambda r: r.__setitem__("provenance", ["x"])),
    _bad(lambda r: r.__setitem__("trajectories", ["x"])),
    _bad(lambda r: r.__setitem__("tests", {})),
    _bad(lambda r: r.update(tests=[], exitcode=0, summary=None)),
    '{"eval": {}, "tests": [{"nodeid": "a", "outcome": "passed", "lineno": 1, "lineno": 2}]}',
    '{"eval": {}, "tests": [{"nodeid": "a", "outcome": "passed", "setup": {"duration": NaN}}]}',
    '{"eval": {}, "tests": [{"nodeid": "a", "outcome": "passed", "keywords": [1e999]}]}',
    '{"eval": {}, "tests": [{"nodeid": "a", "outcome": "passed", "metadata": ' + "[" * 150 + "]" * 150 + "}]}",
], ids=["duplicate-id", "test-number", "unknown-outcome", "repeats-out-of-range", "repeats-contradict", "case-no-id",
        "grade-flag", "cases-number", "eval-list", "exitcode-string", "metric-string", "provenance-list",
        "trajectories-list",
        "tests-object", "tests-empty", "duplicate-key-skipped-field", "nan-skipped-field", "overflow-skipped-field",
        "deep-skipped-field"])
def test_a_bad_report_is_refused_in_the_careful_paths_words(text: str) -> None:
    with pytest.raises(InputError) as careful_error:
        careful(text)
    with pytest.raises(InputError) as fast_error:
        parse_report(text, "r.json")
    assert str(fast_error.value) == str(careful_error.value)
    assert str(fast_error.value).startswith("r.json: ") and "\n" not in str(fast_error.value)


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', "[NaN]", '{"a": Infinity}', '{"a": 1e999}', "[" * 500 + "]" * 500,
                                  '{"a": [1' + "0" * 5000 + "]}", '{"a": ', ""])
def test_check_json_refuses_what_parse_json_refuses_in_its_words(text: str) -> None:
    _no_other_thread()
    with pytest.raises(InputError) as parsed:
        parse_json(text, "f")
    with pytest.raises(InputError) as checked:
        check_json(text, "f")
    assert str(checked.value) == str(parsed.value)


def test_check_json_passes_valid_json_and_keeps_nothing() -> None:
    _no_other_thread()
    assert check_json(json.dumps(full_report()), "f") is True


def _no_other_thread() -> None:
    """check_json checks only while no other thread runs; a thread some earlier test leaked would make it step
    aside (return False) and these tests fail for a reason that is not theirs: name the threads instead."""
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    assert not others, f"threads left running by earlier tests: {others}"


@pytest.fixture
def another_thread() -> Iterator[None]:
    """json's scanner bounds the nesting only while no other thread runs (evalkit.core.parsing)."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        yield
    finally:
        stop.set()
        other.join()


def test_with_another_thread_check_json_reads_nothing_and_the_careful_path_reads(another_thread: None) -> None:
    assert check_json('{"a": 1, "a": 2}', "f") is False  # not checked here: the caller parses
    text = json.dumps(full_report())
    assert parse_report(text, "r.json") == careful(text)
    with pytest.raises(InputError, match="appears twice"):
        parse_report('{"eval": {}, "tests": [{"nodeid": "a", "outcome": "passed", "x": 1, "x": 1}]}', "r.json")


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def test_read_reports_reads_each_file_as_parse_report_does_with_its_hash(tmp_path: Path) -> None:
    data = full_report()
    other = copy.deepcopy(data)
    other["tests"][1]["outcome"] = "passed"
    paths = [write(tmp_path / "b.json", data), write(tmp_path / "c.json", other)]
    read = read_reports(paths)
    for path, (report, sha) in zip(paths, read, strict=True):
        assert report == parse_report(path.read_text(encoding="utf-8"), str(path))
        assert sha == hashlib.sha256(path.read_bytes()).hexdigest()
    assert read[1][0].outcomes["t.py::test_a[c2]"] == "passed"


def test_a_large_report_is_checked_then_read_and_refused_if_it_changed_between(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_module, "_ASIDE_MAX_BYTES", 0)  # every report is large
    paths = [write(tmp_path / "a.json", full_report())]
    [(report, sha)] = read_reports(paths)
    assert report == parse_report(paths[0].read_text(encoding="utf-8"), str(paths[0]))
    assert sha == hashlib.sha256(paths[0].read_bytes()).hexdigest()
    changed = full_report()
    changed["tests"][1]["outcome"] = "passed"
    monkeypatch.setattr(report_module, "read_bytes", lambda p, what: json.dumps(changed).encode())
    with pytest.raises(InputError, match=r"a\.json: the report changed while it was read; gate it again"):
        read_reports(paths)


def test_read_reports_reads_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = full_report()
    report["provenance"] = {"note": "réécrit"}  # not ASCII: msgspec reads the bytes, the check their text
    paths = [write(tmp_path / "b.json", full_report()), tmp_path / "c.json"]
    paths[1].write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    reads: list[Path] = []
    real = report_module.read_bytes

    def counted(p: Path, what: str) -> bytes:
        reads.append(p)
        return real(p, what)

    monkeypatch.setattr(report_module, "read_bytes", counted)
    read = read_reports(paths)
    assert reads == paths
    for path, (got, _) in zip(paths, read, strict=True):
        assert got == parse_report(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.parametrize(("data", "message"), [
    (b"\xef\xbb\xbf{}", r"b\.json: the report starts with a byte-order mark \(BOM\)"),
    (b'{"eval": {}, "tests": [], "x": "\xff"}', r"b\.json: the report is not UTF-8 text"),
    (b'{"eval": {}, "eval": {}, "tests": []}', r"b\.json: key 'eval' appears twice in one JSON object"),
])
def test_read_reports_refuses_what_the_strict_check_refuses(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        read_reports([path])


def test_read_reports_refuses_a_bad_file_in_the_careful_paths_words(tmp_path: Path) -> None:
    bad = full_report()
    bad["tests"].append(dict(bad["tests"][0]))
    path = write(tmp_path / "b.json", bad)
    with pytest.raises(InputError, match=r"duplicate test id 't\.py::test_a\[c1\]'"):
        read_reports([path])


def test_read_reports_with_another_thread_still_refuses_keys_given_twice(tmp_path: Path, another_thread: None) -> None:
    path = tmp_path / "b.json"
    path.write_text('{"eval": {}, "tests": [{"nodeid": "a", "outcome": "passed", "x": 1, "x": 1}]}', encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.json: key 'x' appears twice"):
        read_reports([path])


def test_case_texts_read_each_case_anew() -> None:
    cases = [{"id": "a", "checks": {"t": "passed"}}, {"id": "b", "passed": False}]
    texts = CaseTexts([json.dumps(case).encode() for case in cases])
    assert len(texts) == 2 and list(texts) == cases and texts[1] == cases[1]
    assert texts == tuple(cases) and tuple(cases) == texts and texts != cases[:1]
    first = texts[0]
    first["id"] = "changed"  # type: ignore[index]
    assert texts[0]["id"] == "a"
