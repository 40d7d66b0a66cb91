"""One decision bundle: `evalkit run`, `evalkit gate` and `evalkit adapt` write the same decision files for the same
inputs (evalkit.render.bundle), whichever command decided; only how the policy was chosen may differ."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, evalkit_env

from evalkit.render.bundle import DECISION_FILES

BASELINE = "suites/issue_triage/runs/baseline.json"
JUNIT = PROJECT_ROOT / "tests" / "corpus" / "adapt" / "junit" / "pytest"  # made by pytest: see its README


def _evalkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", *args], cwd=PROJECT_ROOT, env=evalkit_env(),
                          capture_output=True, text=True, timeout=300, check=False)


def _files(folder: Path) -> dict[str, str]:
    """The decision files of a folder, with how the policy was chosen and how the candidate report was named (a
    run names its own report.json, gate the path it was given) said alike, and the page's seal (a hash of the page
    itself) left out: everything else must be equal byte for byte."""
    facts = json.loads((folder / "decision.json").read_text())["evidence"]
    texts = {}
    for name in DECISION_FILES:
        text = (folder / name).read_text(encoding="utf-8").replace(facts["policy"]["chosen_by"], "--policy")
        text = text.replace(json.dumps(facts["candidate"]["path"]), '"CANDIDATE"')
        text = text.replace(facts["candidate"]["path"], "CANDIDATE")
        texts[name] = re.sub(r'<meta name="evalkit-seal" content="[^"]*">', "", text)
    return texts


def _gate(baseline: str, candidate: Path, policy: str | None, out: Path) -> subprocess.CompletedProcess[str]:
    out.mkdir()
    chosen = ("--policy", policy) if policy else ()
    return _evalkit("gate", baseline, str(candidate), *chosen, "--out", str(out / "decision.json"),
                    "--markdown", str(out / "decision.md"), "--html", str(out / "report.html"))


@pytest.mark.slow
def test_run_and_gate_write_the_same_decision_files(tmp_path: Path) -> None:
    run = _evalkit("run", "model=gemma4", f"hydra.run.dir={tmp_path / 'run'}")
    assert run.returncode == 1, run.stderr  # a BLOCK: the files carry regressions, not only a GO's few lines
    gated = _gate(BASELINE, tmp_path / "run" / "report.json", "triage", tmp_path / "gate")
    assert gated.returncode == 1, gated.stderr
    assert _files(tmp_path / "gate") == _files(tmp_path / "run")


@pytest.mark.slow
def test_adapt_and_gate_write_the_same_decision_files(tmp_path: Path) -> None:
    baseline, candidate = JUNIT / "baseline.xml", JUNIT / "candidate.xml"
    adapted = _evalkit("adapt", "junit", str(baseline), str(candidate), "--out", str(tmp_path / "adapt"))
    assert adapted.returncode == 1, adapted.stderr  # the candidate breaks a test: a BLOCK
    assert sorted(p.name for p in (tmp_path / "adapt").iterdir()) == sorted(
        ("baseline.json", "candidate.json", *DECISION_FILES))
    gated = _gate(str(tmp_path / "adapt" / "baseline.json"), tmp_path / "adapt" / "candidate.json", None,
                  tmp_path / "gate")  # both without --policy: the strict default
    assert gated.returncode == adapted.returncode, gated.stderr
    adapt_files, gate_files = _files(tmp_path / "adapt"), _files(tmp_path / "gate")
    # what adapt knows and gate, given only the adapted reports, cannot: the source files it read (evidence), and
    # what their format could not carry (the adapter's warnings); everything else is the same decision
    adapt_json, gate_json = json.loads(adapt_files["decision.json"]), json.loads(gate_files["decision.json"])
    assert adapt_json["evidence"].pop("sources") and "sources" not in gate_json["evidence"]
    adapter_notes = [w for w in adapt_json["warnings"] if w not in gate_json["warnings"]]
    assert adapter_notes and all(w.startswith("baseline and candidate: JUnit XML") for w in adapter_notes)
    adapt_json["warnings"] = [w for w in adapt_json["warnings"] if w not in adapter_notes]
    adapt_json["findings"] = [f for f in adapt_json["findings"] if f["message"] not in adapter_notes]
    assert adapt_json == gate_json
    assert "decision: block" in adapt_files["decision.md"].lower() or "**BLOCK**" in adapt_files["decision.md"]
