"""`evalkit policy-diff OLD NEW`: stored pairs decided under both policies; the changes as Markdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import evalkit_cli, evalkit_env, report, write_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
OLD = "max_regressions: 0\ncritical: [test_crit]\n"
NEW = "max_regressions: 1\ncritical: [test_crit]\n"


def _run(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "policy-diff", *args], cwd=project,
                          env={**evalkit_env(), "EVALKIT_PROJECT": str(project), **(env or {})},
                          capture_output=True, text=True, timeout=120)


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=project, check=True,
                   capture_output=True)


def _stored(outcomes: dict[str, str], policy: str = "p") -> dict:
    """An authored run report naming its suite, policy and baseline, as evalkit's own reports do."""
    data = report(outcomes, suite="s")
    data["provenance"] = {"suite": "s", "policy": policy, "baseline": "suites/s/runs/baseline.json"}
    return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An authored project: policy p in git (OLD), changed in the working tree (NEW); a shipped baseline; one run
    under outputs/ with a regression, gated against that baseline; one run of another policy."""
    root = tmp_path / "proj"
    (root / "conf/policy").mkdir(parents=True)
    (root / "conf/config.yaml").write_text("defaults: []\n")
    (root / "conf/policy/p.yaml").write_text(OLD)
    runs = root / "suites/s/runs"
    runs.mkdir(parents=True)
    write_json(runs / "baseline.json", _stored({"test_a": "passed", "test_crit": "passed"}))
    job = root / "outputs/2026-11-30/10-00-00"
    job.mkdir(parents=True)
    write_json(job / "report.json", _stored({"test_a": "failed", "test_crit": "passed"}))
    write_json(job / "decision.json", {"baseline": "suites/s/runs/baseline.json", "decision": "block"})
    other = root / "outputs/2026-11-30/11-00-00"
    other.mkdir(parents=True)
    write_json(other / "report.json", _stored({"test_a": "failed", "test_crit": "passed"}, policy="q"))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "old policy")
    (root / "conf/policy/p.yaml").write_text(NEW)
    return root


def test_a_loosened_limit_shows_the_block_it_lets_through(project: Path):
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "conf/policy/p.yaml")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "`max_regressions` `0` → `1`" in out
    assert "**1 decision(s) change**, 0 keep their decision with other reasons, 1 unchanged, of 2 pair(s)." in out
    rows = [line for line in out.splitlines() if line.startswith("| s |")]
    assert rows == ["| s | `suites/s/runs/baseline.json` | `outputs/2026-11-30/10-00-00/report.json` | "
                    "**BLOCK → GO** | 1 → 0 | 1 regression(s); policy allows 0 | - |"]
    assert "1 of other policies left out" in out  # the run of policy q


def test_all_decides_the_pairs_of_other_policies_too(project: Path):
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "p", "--all")
    assert done.returncode == 0, done.stderr
    assert "**2 decision(s) change**" in done.stdout and "11-00-00" in done.stdout


def test_the_same_rules_change_nothing(project: Path):
    done = _run(project, "p", "conf/policy/p.yaml")
    assert done.returncode == 0, done.stderr
    assert "none (the two policies are the same rules)" in done.stdout
    assert "**0 decision(s) change**" in done.stdout and "| s |" not in done.stdout


def test_pairs_given_on_the_command_line(tmp_path: Path):
    base = write_json(tmp_path / "b.json", report({"test_a": "passed", "test_crit": "passed"}))
    cand = write_json(tmp_path / "c.json", report({"test_a": "passed", "test_crit": "failed"}))
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("critical: [test_crit]\nmax_regressions: 1\n")
    new.write_text("critical: []\nmax_regressions: 1\n")
    done = evalkit_cli("evalkit.cli.main", "policy-diff", str(old), str(new), "--pair", str(base), str(cand))
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "c.json" in line)
    assert "**BLOCK → GO**" in row and "1 critical test(s) fail" in row


def test_shipped_pairs_of_the_examples_project_under_a_lower_floor(tmp_path: Path):
    lower = tmp_path / "triage.yaml"
    lower.write_text((PROJECT_ROOT / "conf/policy/triage.yaml").read_text().replace("0.9", "0.25"))
    smollm2 = "suites/issue_triage/runs/baseline-smollm2.json"
    done = evalkit_cli("evalkit.cli.main", "policy-diff", "triage", str(lower), "--pair", smollm2, smollm2)
    assert done.returncode == 0, done.stderr
    assert "BLOCK (same)" in done.stdout and "pass rate 0.294 is below 0.9" in done.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["nope.yaml", "p"], "nope.yaml"),
    (["git:HEAD:conf/policy/p.yaml", "git:no-such-ref:conf/policy/p.yaml"], "no-such-ref is not in this clone"),
    (["git:HEAD:conf/policy/missing.yaml", "p"], "git show failed"),
    (["git:HEAD", "p"], "expected git:REF:PATH"),
    (["git:--output=x:conf/policy/p.yaml", "p"], "is not a git ref"),
    (["git:HEAD:conf", "p"], "conf is a folder at HEAD, not a file"),
    (["git:HEAD..HEAD:conf/policy/p.yaml", "p"], "is a range of commits"),
    (["p", "p", "--pair", "missing.json", "suites/s/runs/baseline.json"], "missing.json"),
    (["p", "p", "--pair", "conf/config.yaml", "suites/s/runs/baseline.json"], "conf/config.yaml"),
])
def test_bad_inputs_exit_3_in_one_line(project: Path, args: list[str], expected: str):
    done = _run(project, *args)
    assert done.returncode == 3, done.stdout + done.stderr
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_a_wrong_policy_is_refused_naming_the_key(project: Path):
    (project / "bad.yaml").write_text("max_regression: 1\n")
    done = _run(project, "p", "bad.yaml")
    assert done.returncode == 3 and "max_regression" in done.stderr
    (project / "conf/policy/p.yaml").write_text("min_pass_rate: 2\n")
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "p")
    assert done.returncode == 3 and "min_pass_rate" in done.stderr


def test_without_git_it_says_so(project: Path):
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "p", env={"PATH": str(project / "no-bin")})
    assert done.returncode == 3 and "cannot run git" in done.stderr


def test_a_folder_outside_git_says_so(project: Path, tmp_path: Path):
    outside = tmp_path / "plain"
    (outside / "conf").mkdir(parents=True)
    (outside / "conf/config.yaml").write_text("defaults: []\n")
    done = _run(outside, "git:HEAD:conf/policy/p.yaml", str(project / "conf/policy/p.yaml"),
                env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert done.returncode == 3 and "not in a git repository" in done.stderr, done.stderr


def test_unreadable_stored_reports_are_listed_not_fatal(project: Path):
    broken = project / "outputs/2026-11-30/12-00-00"
    broken.mkdir(parents=True)
    (broken / "report.json").write_text("{half")
    write_json(broken / "decision.json", {"baseline": "suites/s/runs/baseline.json"})
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "p")
    assert done.returncode == 0, done.stderr
    assert "Not decided (1)" in done.stdout and "12-00-00/report.json" in done.stdout
    assert json.loads((project / "suites/s/runs/baseline.json").read_text())["tests"]  # inputs untouched


def test_repeated_runs_of_one_key_are_decided_once_by_the_newest(project: Path):
    """Ten ad-hoc runs of the same thing against the same baseline under the same policy are one pair, not ten."""
    for minute in range(10, 20):
        job = project / f"outputs/2026-11-30/10-{minute}-00"
        job.mkdir(parents=True)
        write_json(job / "report.json", _stored({"test_a": "failed", "test_crit": "passed"}))
        write_json(job / "decision.json", {"baseline": "suites/s/runs/baseline.json", "decision": "block"})
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "conf/policy/p.yaml")
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| s |")]
    assert len(rows) == 1 and "outputs/2026-11-30/10-19-00/report.json" in rows[0]
    assert "10 older run(s) of the same eval key, policy and baseline left out" in done.stdout


def test_runs_named_with_run_are_the_ones_decided(project: Path):
    done = _run(project, "git:HEAD:conf/policy/p.yaml", "conf/policy/p.yaml", "--run", "outputs/2026-11-30/10-00-00")
    assert done.returncode == 0, done.stderr
    assert "`outputs/2026-11-30/10-00-00/report.json` | **BLOCK → GO**" in done.stdout
