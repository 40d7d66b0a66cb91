"""One reader of `git:REF:PATH` (evalkit/project/git.py) behind baselines and policy-diff: the same refusals from
both, the blob's exact bytes, and refs that could be read as options or hold control characters refused."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from conftest import report, write_json

from evalkit.cli.policy_diff import read_policy
from evalkit.core.errors import InputError
from evalkit.project.git import show, split_spec
from evalkit.run.baseline import load_baseline


def _git(*args: str, cwd: Path) -> None:
    done = subprocess.run(["git", "-c", "user.name=evalkit tests", "-c", "user.email=tests@evalkit.invalid",
                           "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false", *args], cwd=cwd,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shallow single-branch clone of an authored repository whose main holds a policy and a run report."""
    origin = tmp_path / "origin"
    (origin / "conf" / "policy").mkdir(parents=True)
    (origin / "conf" / "config.yaml").write_text("{}\n", encoding="utf-8")
    # CRLF line ends: git show must hand over the blob's bytes, which the baseline's SHA-256 names
    (origin / "conf" / "policy" / "p.yaml").write_bytes(b"max_regressions: 2\r\n")
    (origin / "runs").mkdir()
    write_json(origin / "runs" / "base.json", report({"test_a": "passed"}))
    _git("init", "-q", cwd=origin)
    _git("add", "-A", cwd=origin)
    _git("commit", "-q", "-m", "main", cwd=origin)
    _git("checkout", "-q", "-b", "pr", cwd=origin)
    _git("commit", "-q", "--allow-empty", "-m", "pr", cwd=origin)
    clone = tmp_path / "clone"
    _git("clone", "-q", "--depth", "1", "--branch", "pr", origin.as_uri(), str(clone), cwd=tmp_path)
    monkeypatch.setenv("EVALKIT_PROJECT", str(clone))
    monkeypatch.chdir(clone)
    return clone


def test_both_readers_read_the_blob_at_a_ref(clone: Path) -> None:
    assert read_policy("git:HEAD:conf/policy/p.yaml").max_regressions == 2
    name, baseline, sha = load_baseline("git:HEAD:runs/base.json", None, "s")
    assert name == "git:HEAD:runs/base.json" and list(baseline.outcomes) == ["test_triage.py::test_a"]
    assert sha == hashlib.sha256((clone / "runs" / "base.json").read_bytes()).hexdigest()
    assert show("HEAD", "conf/policy/p.yaml", clone, "x") == b"max_regressions: 2\r\n"


def test_a_ref_the_shallow_clone_lacks_is_one_line_with_the_fetch_from_either_reader(clone: Path) -> None:
    fetch = ("origin/main is not in this clone (a shallow clone, as CI checkouts are by default, holds only the "
             "commits it was made from); fetch it with: git fetch --depth=1 origin "
             "+refs/heads/main:refs/remotes/origin/main")
    with pytest.raises(InputError) as policy_error:
        read_policy("git:origin/main:conf/policy/p.yaml")
    with pytest.raises(InputError) as baseline_error:
        load_baseline("git:origin/main:runs/base.json", None, "s")
    assert str(policy_error.value) == f"git:origin/main:conf/policy/p.yaml: {fetch}"
    assert str(baseline_error.value) == f"baseline=git:origin/main:runs/base.json: {fetch}"
    subprocess.run(["git", "fetch", "-q", "--depth=1", "origin", "+refs/heads/main:refs/remotes/origin/main"],
                   cwd=clone, check=True, capture_output=True)
    assert read_policy("git:origin/main:conf/policy/p.yaml").max_regressions == 2


def test_a_path_absent_at_the_ref_says_what_git_said(clone: Path) -> None:
    with pytest.raises(InputError, match=r"^git:HEAD:nope.yaml: git show failed: fatal: path 'nope.yaml' does not "
                                         r"exist in 'HEAD'$"):
        read_policy("git:HEAD:nope.yaml")


@pytest.mark.parametrize(("spec", "why"), [
    ("git:--output=OUT:conf/policy/p.yaml", r"'--output=OUT' is not a git ref \(refs never start with '-'\)"),
    ("git:HEAD\x00:conf/policy/p.yaml", "cannot hold control characters"),
    ("git:HEAD:conf/policy/p.yaml\n--output=OUT", "cannot hold control characters"),
])
def test_hostile_refs_are_refused_before_git_runs(clone: Path, spec: str, why: str) -> None:
    with pytest.raises(InputError, match=why):
        read_policy(spec)
    with pytest.raises(InputError, match=why):
        load_baseline(spec, None, "s")
    assert not list(clone.rglob("OUT*"))


def test_a_malformed_spec_shows_the_callers_usage() -> None:
    with pytest.raises(InputError, match=r"^where: expected git:REF:PATH$"):
        split_spec("git::x.yaml", "where", "expected git:REF:PATH")
    assert split_spec("git:main", "where", "usage") == ("main", "")
