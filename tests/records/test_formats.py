"""Every file format evalkit writes has one typed model: the shipped files and a fresh run's files are read through
it, older versions are read or refused as docs/reference/schemas.md says, and the published schemas are the
models'."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest
from conftest import PROJECT_ROOT, report

from evalkit.core.errors import InputError
from evalkit.records.decision import decision_schema, read_decision
from evalkit.records.report import RunReportFormat, run_report_schema
from evalkit.records.report_reader import parse_report, report_from_mapping
from evalkit.run.journal import read_journal
from evalkit.run.recording import Recording
from evalkit.run.run_input import RunInput, read_run_input, run_input_schema


def _shipped(pattern: str) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", pattern], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [PROJECT_ROOT / name for name in listed]


SHIPPED_REPORTS = _shipped("suites/*/runs/*.json")
SHIPPED_RECORDINGS = _shipped("recordings/**.json")


def test_the_shipped_files_were_found():
    assert len(SHIPPED_REPORTS) >= 5 and len(SHIPPED_RECORDINGS) >= 10


@pytest.mark.parametrize("path", SHIPPED_REPORTS, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_shipped_run_report_reads_through_its_model(path):
    typed = msgspec.json.decode(path.read_bytes(), type=RunReportFormat)
    read = parse_report(path.read_text(encoding="utf-8"), str(path))
    assert typed.format == "evalkit-run-report/1"
    assert [t.nodeid for t in typed.tests] == list(read.outcomes)
    assert [c.id for c in typed.cases] == [c["id"] for c in read.cases]
    assert {name: m.mean for name, m in typed.metrics.items()} == dict(read.metrics)


@pytest.mark.parametrize("path", SHIPPED_RECORDINGS, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_shipped_recording_reads_through_its_model(path):
    recording = Recording.model_validate_json(path.read_bytes())
    assert recording.format == "evalkit-recording/2" and recording.calls


def test_a_fresh_run_writes_each_file_in_its_format(run_evalkit, tmp_path):
    done = run_evalkit("baseline=suites/issue_triage/runs/baseline.json")
    assert done.returncode == 0, done.stderr
    job = tmp_path / "job"
    run_input = read_run_input(next(job.rglob("run-input.json")))
    assert run_input.format == "evalkit-run-input/1" and run_input.cases and run_input.calls
    assert all(call.status for call in run_input.calls.values())
    typed = msgspec.json.decode(next(job.rglob("report.json")).read_bytes(), type=RunReportFormat)
    assert len(typed.cases) == len(run_input.cases)
    decision = read_decision(json.loads(next(job.rglob("decision.json")).read_text(encoding="utf-8")), "decision")
    assert decision.format == "evalkit-decision/1" and decision.decision == "go"
    assert decision.evidence is not None and decision.evidence.candidate.sha256


def test_a_run_input_of_another_format_is_refused_in_one_line(tmp_path):
    path = tmp_path / "run-input.json"
    path.write_text(json.dumps({"format": "evalkit-run-input/0", "key": {}, "provenance": {}, "cases": []}))
    with pytest.raises(InputError, match=r"run-input.json: not a run input of format evalkit-run-input/1") as caught:
        read_run_input(path)
    assert "\n" not in str(caught.value)
    path.write_text(RunInput(key={"k": 1}, provenance={}, cases=[]).model_dump_json())
    assert read_run_input(path).repeats == 1


def test_a_decision_without_format_is_version_zero_and_reads_as_version_one():
    old = {"decision": "block", "reasons": ["x"], "findings": [{"rule": "critical", "effect": "block",
                                                                "message": "x", "tests": ["t"]}]}
    read = read_decision(old, "old.json")
    assert read.format == "evalkit-decision/1" and read.findings[0].tests == ["t"]
    with pytest.raises(ValueError, match="new.json: not a decision of format evalkit-decision/1"):
        read_decision({**old, "format": "evalkit-decision/9"}, "new.json")
    with pytest.raises(ValueError, match="effect"):
        read_decision({"decision": "go", "findings": [{"rule": "r", "effect": "maybe", "message": "m"}]}, "e.json")


@pytest.mark.parametrize("fast", [True, False], ids=["fast reader", "careful reader"])
def test_a_run_report_of_an_unknown_format_is_refused_by_both_readers(fast):
    data = {**report({"test_a": "passed"}), "format": "evalkit-run-report/7"}
    match = r"where: run report format 'evalkit-run-report/7' is not one this evalkit reads \(evalkit-run-report/1\)"
    with pytest.raises(InputError, match=match):
        if fast:
            parse_report(json.dumps(data), "where")
        else:
            report_from_mapping(data, "where")
    assert parse_report(json.dumps(report({"test_a": "passed"})), "where").passed == 1  # no format: hand-made


@pytest.mark.parametrize("block", [{"passed": 4, "runs": 3}, {"passed": True, "runs": 3}, {"runs": 3}, [1, 3]])
def test_both_readers_refuse_a_repeats_block_the_model_refuses(block):
    data = report({"test_a": "failed"})
    data["tests"][0]["repeats"] = block
    for read in (lambda: parse_report(json.dumps(data), "r.json"), lambda: report_from_mapping(data, "r.json")):
        with pytest.raises(InputError, match=r"r.json: tests\[0\] \(test_triage.py::test_a\): 'repeats' is "):
            read()


def test_a_journal_line_the_model_does_not_describe_is_refused(tmp_path):
    recording = next(iter(SHIPPED_RECORDINGS))
    call_id, entry = next(iter(json.loads(recording.read_text(encoding="utf-8"))["calls"].items()))
    journal = tmp_path / "r.json.journal.jsonl"
    good = json.dumps({"call_id": call_id, "entry": entry})
    journal.write_text(good + "\n" + good + "\n")
    assert list(read_journal(journal)) == [call_id]
    journal.write_text(json.dumps({"call_id": call_id, "entry": entry, "extra": 1}) + "\n" + good + "\n")
    with pytest.raises(Exception, match="line 1 is not a journal entry"):
        read_journal(journal)


@pytest.mark.parametrize("schema, tag", [(run_report_schema, "evalkit-run-report/1"),
                                         (decision_schema, "evalkit-decision/1"),
                                         (run_input_schema, "evalkit-run-input/1")])
def test_each_published_schema_is_generated_from_its_model(schema, tag):
    text = json.dumps(schema())
    assert tag in text and "$defs" in text
    page = (PROJECT_ROOT / "docs/reference/schemas.md").read_text(encoding="utf-8")
    assert f"evalkit:schema {schema.__module__}:{schema.__name__}" in page


def test_the_decision_model_reads_what_the_gate_writes():
    from evalkit.gate.decision import Decision, Verdict
    from evalkit.gate.findings import Effect, Finding

    decision = Decision(Verdict.REVIEW, findings=(Finding("new_failing", Effect.REVIEW, "m", ("t",), {"n": 1}),),
                        changed={"model": ("a", "b")})
    read = read_decision(decision.record().data(), "decision.json")
    assert read.review_reasons == ["m"] and read.changed == {"model": ("a", "b")}
