"""Decisions say what decided them (evalkit.cli.evidence): the policy's identity and why it was chosen, both
reports' SHA-256 and eval keys, evalkit's version; and `evalkit gate` without --policy uses the
candidate's suite policy or the strict default, never a demo suite's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import report, write_json

from evalkit.core.policy import STRICT_DEFAULT, Policy, load_policy, policy_sha256
from evalkit.core.version import __version__

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

pytestmark = pytest.mark.slow

BASELINE = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"
TRIAGE = PROJECT_ROOT / "conf/policy/triage.yaml"
# test_priority fails on both sides: no regression, but a critical failure under the triage demo's policy
BASE = {f"test_label[c{i}]": "passed" for i in range(5)} | {"test_priority[c0]": "failed"}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_policy_hash_is_of_the_validated_content():
    assert policy_sha256(load_policy(TRIAGE)) == policy_sha256(
        Policy(max_regressions=0, min_pass_rate=0.9, critical=("test_priority", "test_reply_matches_schema")))
    assert policy_sha256(Policy(max_regressions=1)) != policy_sha256(Policy())
    assert policy_sha256(Policy(version="2")) != policy_sha256(Policy())


def test_strict_default_blocks_regressions_and_nothing_the_suite_cannot_know():
    assert STRICT_DEFAULT.max_regressions == 0 and STRICT_DEFAULT.regressions == "block"
    assert STRICT_DEFAULT.critical == () and STRICT_DEFAULT.min_pass_rate == 0.0
    assert STRICT_DEFAULT.name == "strict-default" and STRICT_DEFAULT.version == "1"


def test_a_run_decision_names_its_policy_reports_and_version(run_evalkit, tmp_path):
    done = run_evalkit("model=gemma4", "policy.max_regressions=3")
    assert done.returncode == 1, done.stderr  # the critical failure still blocks
    job = tmp_path / "job"
    facts = json.loads((job / "decision.json").read_text())["evidence"]
    assert facts["policy"] == {
        "name": "triage", "version": None, "source": "conf/policy/triage.yaml",
        "overrides": ["policy.max_regressions=3"],
        "chosen_by": "the default of suite issue_triage, conf/suite/issue_triage.yaml",
        "sha256": policy_sha256(load_policy(TRIAGE).model_copy(update={"max_regressions": 3}))}
    assert facts["baseline"]["path"] == "suites/issue_triage/runs/baseline.json"
    assert facts["baseline"]["sha256"] == sha(BASELINE)
    # the report beside the decision, by its name: never the runner's absolute path, which decision.md would publish
    assert facts["candidate"] == {"path": "report.json", "sha256": sha(job / "report.json"),
                                  "eval": dict(sorted(json.loads((job / "report.json").read_text())["eval"].items()))}
    assert facts["candidate"]["eval"]["model"] == "gemma4:e2b" and facts["baseline"]["eval"]["model"] == "gemini-3.8-flash"
    assert facts["evalkit_version"] == __version__
    markdown = (job / "decision.md").read_text()
    assert str(tmp_path) not in markdown
    assert (f"**Decided by:** policy triage from conf/policy/triage.yaml policy.max_regressions=3 (the default of "
            f"suite issue_triage, conf/suite/issue_triage.yaml); sha256 {facts['policy']['sha256']}") in markdown
    assert f"sha256 `{sha(BASELINE)}`" in markdown and f"- evalkit {__version__}" in markdown


def test_a_policy_chosen_on_the_command_line_says_so(run_evalkit, tmp_path):
    assert run_evalkit("suite=evidencedesk", "policy=evidencedesk-strict").returncode == 1
    policy = json.loads((tmp_path / "job" / "decision.json").read_text())["evidence"]["policy"]
    assert policy["chosen_by"] == "policy=evidencedesk-strict on the command line"
    assert policy["source"] == "conf/policy/evidencedesk-strict.yaml" and policy["overrides"] == []


def gate(run_evalkit, tmp_path: Path, baseline: Path, candidate: Path, *args: str):
    out, md = tmp_path / "d.json", tmp_path / "d.md"
    done = run_evalkit(str(baseline), str(candidate), *args, "--out", str(out), "--markdown", str(md),
                       command="gate")
    return done, (json.loads(out.read_text()) if out.exists() else None), (md.read_text() if md.exists() else "")


def test_gate_without_policy_uses_the_candidates_suite_policy(run_evalkit, tmp_path):
    assert run_evalkit("model=gemma4", "baseline=none").returncode == 0
    candidate = tmp_path / "job" / "report.json"
    assert json.loads(candidate.read_text())["provenance"]["policy"] == "triage"
    done, decision, md = gate(run_evalkit, tmp_path, BASELINE, candidate)
    assert done.returncode == 1 and decision["critical_failures"] == ["test_triage.py::test_priority[import-drops-tasks]"]
    policy = decision["evidence"]["policy"]
    assert policy["name"] == "triage" and policy["chosen_by"] == "named by the candidate's suite (provenance.policy)"
    assert policy["sha256"] == policy_sha256(load_policy(TRIAGE))
    assert decision["evidence"]["baseline"]["sha256"] == sha(BASELINE)
    assert decision["evidence"]["candidate"]["sha256"] == sha(candidate)
    assert done.stdout.splitlines()[-1].startswith("policy triage from conf/policy/triage.yaml (named by the candidate")
    assert "**Decided by:** policy triage" in md


def test_gate_on_plain_pytest_reports_uses_the_strict_default_not_triage(run_evalkit, tmp_path):
    b = write_json(tmp_path / "b.json", report(BASE))
    c = write_json(tmp_path / "c.json", report(BASE))
    done, decision, _ = gate(run_evalkit, tmp_path, b, c)
    # triage would block: test_priority is critical there and fails; the strict default has no critical tests
    assert done.returncode == 0, done.stdout + done.stderr
    assert decision["decision"] == "go"
    policy = decision["evidence"]["policy"]
    assert policy["name"] == "strict-default" and policy["sha256"] == policy_sha256(STRICT_DEFAULT)
    assert policy["chosen_by"] == "strict default: no --policy, and the candidate names no policy"
    regressed = write_json(tmp_path / "c2.json", report(BASE | {"test_label[c1]": "failed"}))
    done, decision, _ = gate(run_evalkit, tmp_path, b, regressed)
    assert done.returncode == 1 and decision["reasons"] == ["1 regression(s); policy allows 0"]


def test_gate_with_policy_names_the_file(run_evalkit, tmp_path):
    b = write_json(tmp_path / "b.json", report(BASE))
    policy_file = write_json(tmp_path / "mine.json", {"name": "release", "version": "7", "max_regressions": 0})
    done, decision, md = gate(run_evalkit, tmp_path, b, b, "--policy", str(policy_file))
    assert done.returncode == 0
    policy = decision["evidence"]["policy"]
    assert (policy["name"], policy["version"], policy["source"], policy["chosen_by"]) == (
        "release", "7", str(policy_file), "--policy")
    assert f"policy release version 7 from {policy_file} (--policy)" in md
    done, decision, _ = gate(run_evalkit, tmp_path, b, b, "--policy", "triage")
    assert done.returncode == 1  # triage only when asked for: its critical test_priority fails
    assert decision["evidence"]["policy"]["source"] == "conf/policy/triage.yaml"


def test_a_candidate_naming_an_unknown_policy_is_refused(run_evalkit, tmp_path):
    b = write_json(tmp_path / "b.json", report(BASE))
    c = write_json(tmp_path / "c.json", report(BASE) | {"provenance": {"policy": "theirs"}})
    done, decision, _ = gate(run_evalkit, tmp_path, b, c)
    assert done.returncode == 3 and decision is None
    assert "its run composed policy 'theirs' (provenance.policy)" in done.stderr and "--policy" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_gate_html_writes_the_page_a_run_writes(run_evalkit, tmp_path):
    assert run_evalkit("model=gemma4", "baseline=none").returncode == 0
    candidate, page, other = tmp_path / "job" / "report.json", tmp_path / "decision.html", tmp_path / "other.html"
    done = run_evalkit(str(BASELINE), str(candidate), "--html", str(page), command="gate")
    assert done.returncode == 1, done.stderr
    html = page.read_text()
    assert '<section class="banner block"' in html and 'data-initial="regressed"' in html
    assert html.count('data-tags="regressed') == 2
    assert "conf/policy/triage.yaml" in html  # the policy the gate decided under, as the run's page says
    clash = run_evalkit(str(BASELINE), str(candidate), "--markdown", str(other), "--html", str(other),
                        command="gate")
    assert clash.returncode == 3 and "--html names a file another output of this command writes" in clash.stderr
    assert not other.exists()  # refused before anything was written
