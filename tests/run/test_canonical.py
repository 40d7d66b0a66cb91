"""Saved baselines are diff-stable: every shipped baseline is the canonical form of its regeneration, byte for
byte, and the canonical form leaves out timings, the commit, machine paths and object addresses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import evalkit_cli
from helpers.docs_text import docs_text

from evalkit.records.report_reader import parse_report
from evalkit.run.canonical import canonical_report, canonical_text

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

# the README's "Baselines" commands, one per shipped baseline
REGENERATE = {
    "suites/issue_triage/runs/baseline.json": [],
    "suites/issue_triage/runs/baseline-dataset-v2.json": ["dataset=v2"],
    "suites/issue_triage/runs/baseline-smollm2.json": ["model=smollm2", "judge=smollm2"],
    "suites/evidencedesk/runs/baseline.json": ["suite=evidencedesk"],
    "suites/quality_lab/runs/baseline.json": ["suite=quality_lab"],
    "suites/order_agent/runs/baseline.json": ["suite=order_agent"],
    "suites/support_chat/runs/baseline.json": ["suite=support_chat"],
    "suites/receipts/runs/baseline.json": ["suite=receipts"],
}


def test_every_shipped_baseline_has_a_regeneration_command():
    shipped = sorted(str(p.relative_to(PROJECT_ROOT)) for p in PROJECT_ROOT.glob("suites/*/runs/*.json"))
    assert shipped == sorted(REGENERATE)
    readme = docs_text()  # the README and the docs site
    for path, overrides in REGENERATE.items():
        assert " ".join(["evalkit run", *overrides, "baseline=none", f"run.save_report={path}"]) in readme


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(REGENERATE))
def test_regenerating_a_shipped_baseline_gives_identical_bytes(tmp_path, path):
    out = tmp_path / "baseline.json"
    done = evalkit_cli("evalkit", *REGENERATE[path], "baseline=none", f"run.save_report={out}",
                       f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (PROJECT_ROOT / path).read_bytes(), (
        f"{path} is not what its command writes: regenerate it (README, Baselines) and review the diff")
    job = (tmp_path / "job" / "report.json").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == canonical_text(json.loads(job))


def test_canonical_form_drops_what_changes_between_regenerations():
    data = {
        "created": 1.5, "duration": 0.2, "exitcode": 1, "eval": {"model": "m"},
        "tests": [{"nodeid": "t.py::a", "outcome": "failed", "setup": {"duration": 0.1, "outcome": "passed"},
                   "call": {"duration": 0.3, "outcome": "failed",
                            "longrepr": f"f = <function f at 0x7f8ec30fdd00>\n{PROJECT_ROOT}/evalkit/run/plugin.py:3"
                                        f"\n{sys.prefix}/lib/x.py:1"}}],
        "provenance": {"git_commit": "abc", "python": "3.11.7", "evalkit_version": "0.1.0", "mode": "replay"},
        "execution": {"calls": {"live": 3}, "live": {"seconds": 1.2, "sent": 3}},
        "cases": [{"id": "c", "program": {"status": "finished", "wall_ms": 36.9}}],
        "warnings": [{"filename": f"{sys.prefix}/lib/python3.11/site-packages/_pytest/fixtures.py"}],
    }
    canon = canonical_report(data)
    assert "created" not in canon and "duration" not in canon
    assert canon["provenance"] == {"evalkit_version": "0.1.0", "mode": "replay"}
    assert canon["execution"] == {"calls": {"live": 3}}
    assert canon["cases"] == [{"id": "c", "program": {"status": "finished"}}]
    assert canon["tests"][0]["setup"] == {"outcome": "passed"}
    assert canon["tests"][0]["call"]["longrepr"] == ("f = <function f at 0x...>\nevalkit/run/plugin.py:3\n"
                                                     "<python>/lib/x.py:1")
    assert canon["warnings"][0]["filename"] == "<python>/lib/python3.11/site-packages/_pytest/fixtures.py"
    assert data["created"] == 1.5 and data["tests"][0]["setup"]["duration"] == 0.1  # the input is untouched
    text = canonical_text(data)
    assert text == canonical_text(json.loads(text))  # idempotent: blessing a baseline again changes nothing
    assert list(json.loads(text)) == sorted(json.loads(text))
    key = {"key_version": 1, "suite": "s", "dataset": "d@1", "model": "m"}  # the key keeps its own order
    assert list(json.loads(canonical_text({**data, "eval": key}))["eval"]) == list(key)


def test_the_gate_reads_the_canonical_form_as_the_full_report():
    job = json.loads((PROJECT_ROOT / "suites/quality_lab/runs/baseline.json").read_text(encoding="utf-8"))
    job["created"], job["provenance"]["git_commit"] = 2.0, "abc"
    full, canon = parse_report(json.dumps(job), "full"), parse_report(canonical_text(job), "canonical")
    assert full.outcomes == canon.outcomes and full.eval == canon.eval and full.metrics == canon.metrics
    assert full.cases == canon.cases and full.dataset == canon.dataset


@pytest.mark.parametrize(("path", "kept"), [("evalkit/run/declared.py", False),
                                            ("<python>/lib/python3.11/site-packages/evalkit/run/declared.py", False),
                                            ("suites/receipts/tests/test_totals.py", True)])
def test_a_failure_placed_in_evalkits_own_code_keeps_no_line_number(path: str, kept: bool) -> None:
    """A declared check fails inside evalkit's check plugin: that line moves with every edit of evalkit, never with
    the run, so a saved baseline keeps the crash's file and message but not its line; a suite's own line stays."""
    crash = {"path": path, "lineno": 128, "message": "Failed: expected 21.60"}
    data = {"tests": [{"nodeid": "checks.yaml::total[taxi]", "outcome": "failed",
                       "call": {"outcome": "failed", "crash": crash}}]}
    canon = canonical_report(data)["tests"][0]["call"]["crash"]
    assert ("lineno" in canon) is kept and canon["path"] == path and canon["message"] == crash["message"]
