"""The labels file (evalkit.records.labels) and what reads it: `evalkit review --labels` records it on the report
whose SHA-256 its header names, and refuses it on any other; `evalkit calibrate --labels` sets the judged checks
against its pass/fail labels. Every refusal is one line."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalkit.cli import calibrate as calibrate_cli
from evalkit.cli import review as review_cli
from evalkit.core.errors import InputError
from evalkit.programs.review import IDENTITY_ASSURANCE, apply_labels
from evalkit.records import LABELS_FORMAT, Label, LabelsFile, LabelsHeader, read_labels

KEY = {"key_version": 1, "suite": "s", "dataset": "d@1", "dataset_sha": "d1", "model": "m", "prompt_version": "v1",
       "prompt_sha": "p1", "judge_model": "j"}
TIME = "2026-12-03T12:00:00.000Z"


def report() -> dict[str, Any]:
    """Two cases judged by `faithful` (a ready-made judge's check with its score), one rated on a rubric."""
    cases = [{"id": "a", "status": "scored", "passed": True, "checks": {"faithful": "passed"},
              "metrics": {"faithful.score": 5.0}},
             {"id": "b", "status": "scored", "passed": False, "checks": {"faithful": "failed"},
              "metrics": {"faithful.score": 2.0, "rubric.relevance": 1.0}}]
    tests = [{"nodeid": f"checks.yaml::faithful[{c['id']}]", "outcome": c["checks"]["faithful"]} for c in cases]
    return {"format": "evalkit-run-report/1", "eval": KEY, "tests": tests, "cases": cases}


def raw(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=1) + "\n").encode("utf-8")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def labels_text(report_sha: str, *labels: dict[str, Any], reviewer: str = "ana") -> str:
    header = {"format": LABELS_FORMAT, "report_sha256": report_sha, "reviewer": reviewer, "tool": "evalkit",
              "tool_version": "0.1.0"}
    return "\n".join(json.dumps(line) for line in (header, *labels)) + "\n"


def label(case: str, check: str, value: Any, note: str = "") -> dict[str, Any]:
    return {"case_id": case, "check_id": check, "label": value, "note": note, "time": TIME}


# --- the file ---

def test_a_labels_file_reads_back_as_it_was_written():
    text = labels_text("a" * 64, label("a", "faithful", "pass", "<b>fine</b>"), label("b", "rubric.relevance", 1))
    read = read_labels(text, "l.jsonl")
    assert read.header == LabelsHeader(report_sha256="a" * 64, reviewer="ana", tool_version="0.1.0")
    assert [(x.case_id, x.check_id, x.label, x.note) for x in read.labels] == [
        ("a", "faithful", "pass", "<b>fine</b>"), ("b", "rubric.relevance", 1, "")]
    assert read_labels(read.to_jsonl(), "again.jsonl") == read
    assert read.to_jsonl().splitlines()[0].startswith('{"format":"evalkit-labels/1",')


@pytest.mark.parametrize(("text", "message"), [
    ("", r"l.jsonl: empty; export the labels from the run explorer"),
    ('{"a": 1}\n', r"l.jsonl: line 1: not an evalkit labels header \(format None"),
    ('{"format": "evalkit-labels/9"}\n', r"format 'evalkit-labels/9'; expected 'evalkit-labels/1'"),
    ("not json\n", r"l.jsonl: line 1"),
    (labels_text("A" * 64), r"line 1 \(header\): 'report_sha256': String should match pattern"),
    (labels_text("a" * 64, reviewer="  "), r"line 1 \(header\): 'reviewer': Value error, must not be blank"),
    (labels_text("a" * 64, label("a", "faithful", "yes")), r"line 2: 'label': Value error, label 'yes': give pass "
                                                           r"or fail, or the level"),
    (labels_text("a" * 64, label("a", "faithful", True)), r"line 2: 'label': Value error, label True"),
    (labels_text("a" * 64, {**label("a", "faithful", "pass"), "time": "2026-12-03T12:00:00"}),
     r"line 2: 'time': Input should have timezone info"),
    (labels_text("a" * 64, {**label("a", "faithful", "pass"), "score": 3}), r"line 2: unknown key 'score'"),
    (labels_text("a" * 64, label("a", "faithful", "pass"), label("a", "faithful", "fail")),
     r"case 'a' check 'faithful' is labelled twice; keep one"),
])
def test_a_bad_labels_file_is_one_line(text, message):
    with pytest.raises(InputError, match=message) as refused:
        read_labels(text, "l.jsonl")
    assert "\n" not in str(refused.value)


def test_the_schema_is_the_models():
    schema = LabelsFile.model_json_schema()
    assert set(schema["properties"]) == {"header", "labels"}
    assert set(schema["$defs"]["Label"]["properties"]) == set(Label.model_fields)
    assert schema["$defs"]["LabelsHeader"]["properties"]["format"]["const"] == LABELS_FORMAT


# --- evalkit review --labels ---

def test_labels_are_recorded_as_a_review_round_and_change_no_result():
    source = report()
    data = raw(source)
    file = read_labels(labels_text(sha(data), label("b", "faithful", "pass", "the date is right"),
                                   label("b", "rubric.relevance", 2), label("a", "faithful.score", 5)), "l.jsonl")
    out = apply_labels(source, data, file)
    assert source == report()  # the input is not modified
    assert {k: v for k, v in out.items() if k != "review_audit"} == source
    assert out["review_audit"] == [{
        "source_report_sha256": sha(data), "kind": "labels", "reviewer": "ana", "tool_version": "0.1.0",
        "labels": [{"case_id": "b", "check_id": "faithful", "label": "pass", "note": "the date is right",
                    "time": "2026-12-03T12:00:00Z"},
                   {"case_id": "b", "check_id": "rubric.relevance", "label": 2, "note": "", "time": "2026-12-03T12:00:00Z"},
                   {"case_id": "a", "check_id": "faithful.score", "label": 5, "note": "", "time": "2026-12-03T12:00:00Z"}],
        "identity_assurance": IDENTITY_ASSURANCE}]
    again = apply_labels(out, raw(out), read_labels(labels_text(sha(raw(out)), label("a", "faithful", "fail")), "m"))
    assert len(again["review_audit"]) == 2  # a second round is added after the first


@pytest.mark.parametrize(("given", "message"), [
    (label("z", "faithful", "pass"), r"label 1 \(case 'z', check 'faithful'\): no such case in report"),
    (label("a", "relevance", "pass"), r"the case has no such check or rated number \(it has: faithful, "
                                      r"faithful.score\)"),
    (label("b", "rubric.relevance", "pass"), r"'pass' is not a label of this check \(give one of 0, 1, 2\)"),
    (label("b", "faithful", 3), r"3 is not a label of this check \(give one of pass, fail\)"),
    (label("a", "faithful.score", 0), r"0 is not a label of this check \(give one of 1, 2, 3, 4, 5\)"),
])
def test_a_label_the_report_cannot_take_is_refused(given, message):
    data = raw(report())
    with pytest.raises(InputError, match=message):
        apply_labels(report(), data, read_labels(labels_text(sha(data), given), "l.jsonl"))


def test_labels_of_another_report_or_none_are_refused():
    data = raw(report())
    other = read_labels(labels_text("b" * 64, label("a", "faithful", "pass")), "l.jsonl")
    with pytest.raises(InputError, match=r"l.jsonl: the labels were made on another report \(report_sha256 "
                                         r"bbbbbbbbbbbb…\), not on report \(" + sha(data)[:12]):
        apply_labels(report(), data, other, labels_name="l.jsonl")
    with pytest.raises(InputError, match=r"no labels after the header"):
        apply_labels(report(), data, read_labels(labels_text(sha(data)), "l.jsonl"))


def test_the_command_writes_the_reviewed_copy_or_refuses_in_one_line(tmp_path, capsys):
    source = tmp_path / "report.json"
    source.write_bytes(raw(report()))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(labels_text(sha(source.read_bytes()), label("a", "faithful", "fail")), encoding="utf-8")
    assert review_cli.main(["--report", str(source), "--labels", str(labels), "--out", str(tmp_path / "r.json")]) == 0
    assert "recorded 1 label(s) on 1 case(s)" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["review_audit"][0]["labels"][0]["label"] == "fail"
    # labels made on the reviewed copy are not labels of its source
    labels.write_text(labels_text(sha((tmp_path / "r.json").read_bytes()), label("a", "faithful", "fail")))
    assert review_cli.main(["--report", str(source), "--labels", str(labels), "--out", str(tmp_path / "x.json")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the labels were made on another report" in err
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(SystemExit) as usage:  # one kind of review per round
        review_cli.main(["--report", str(source), "--labels", str(labels), "--decisions", str(labels),
                         "--out", str(tmp_path / "y.json")])
    assert usage.value.code == 3


# --- evalkit calibrate --labels ---

@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "conf/suite").mkdir(parents=True)
    (tmp_path / "conf/config.yaml").write_text("defaults: []\n")
    (tmp_path / "conf/suite/s.yaml").write_text("suite:\n  path: suites/s\n")
    (tmp_path / "suites/s").mkdir(parents=True)
    (tmp_path / "report.json").write_bytes(raw(report()))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALKIT_PROJECT", str(tmp_path))
    return tmp_path


def test_calibrate_reads_an_exported_labels_file_of_its_report(project, capsys):
    labels = project / "labels.jsonl"
    labels.write_text(labels_text(sha((project / "report.json").read_bytes()), label("a", "faithful", "pass"),
                                  label("b", "faithful", "pass", "the judge missed the date")))
    assert calibrate_cli.main(["suite=s", "--report", "report.json", "--labels", str(labels), "--out", "c.json"]) == 0
    faithful = json.loads((project / "c.json").read_text())["checks"]["faithful"]
    assert (faithful["tp"], faithful["fp"], faithful["tn"], faithful["fn"]) == (1, 0, 0, 1)
    assert "faithful[b]: labelled pass, the check failed" in capsys.readouterr().out


@pytest.mark.parametrize(("labels", "of_report", "message"), [
    ([label("a", "faithful", "pass")], False, "the labels were made on another report"),
    # levels reach the calibration (weighted kappa), which refuses a check the report never tested
    ([label("b", "rubric.relevance", 1)], True, r"check rubric.relevance has no test in the run report"),
    ([], True, "no labels after the header"),
])
def test_calibrate_refuses_labels_it_cannot_use_in_one_line(project, capsys, labels, of_report, message):
    given = sha((project / "report.json").read_bytes()) if of_report else "c" * 64
    (project / "labels.jsonl").write_text(labels_text(given, *labels))
    assert calibrate_cli.main(["suite=s", "--report", "report.json", "--labels", "labels.jsonl"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err), err
