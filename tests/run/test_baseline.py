"""Where the baseline comes from (evalkit/run/baseline.py): `git:REF:PATH` and `git:REF` in real git repositories,
a shallow clone that lacks the ref (the line names the fetch that brings it), and refs that look like options."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.docs_text import DOCS

from evalkit.core.errors import InputError
from evalkit.project.git import fetch_advice, show
from evalkit.run.baseline import load_baseline

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHIPPED = PROJECT_ROOT / "suites/issue_triage/runs/baseline.json"
SUITE_BASELINE = "suites/issue_triage/runs/baseline.json"


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", "-c", "user.name=evalkit tests", "-c", "user.email=tests@evalkit.invalid",
                           "-c", "init.defaultBranch=main", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A repository whose main holds a project in the folder `project/` with the suite's baseline."""
    repo = tmp_path / "origin"
    project = repo / "project"
    (project / "conf").mkdir(parents=True)
    (project / "conf" / "config.yaml").write_text("defaults: [evalkit]\n", encoding="utf-8")
    (project / SUITE_BASELINE).parent.mkdir(parents=True)
    shutil.copyfile(SHIPPED, project / SUITE_BASELINE)
    _git("init", "-q", str(repo), cwd=tmp_path)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "main", cwd=repo)
    _git("checkout", "-q", "-b", "pr", cwd=repo)
    (project / "README.md").write_text("a pull request\n", encoding="utf-8")
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "pr", cwd=repo)
    return repo


@pytest.fixture
def shallow(origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CI runner's checkout: the pull-request branch only, depth 1; evalkit's project is its `project/`."""
    clone = tmp_path / "clone"
    _git("clone", "-q", "--depth", "1", "--branch", "pr", origin.as_uri(), str(clone), cwd=tmp_path)
    monkeypatch.setenv("EVALKIT_PROJECT", str(clone / "project"))
    monkeypatch.chdir(clone)
    return clone


def test_git_ref_and_path_reads_the_report_at_that_ref(origin, monkeypatch):
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    name, report, _ = load_baseline(f"git:main:project/{SUITE_BASELINE}", SUITE_BASELINE, "issue_triage")
    assert name == f"git:main:project/{SUITE_BASELINE}"
    assert report == load_baseline(str(SHIPPED), None, "issue_triage")[1]


def test_git_ref_alone_reads_the_suites_own_baseline_at_that_ref(origin, monkeypatch):
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    (origin / "project" / SUITE_BASELINE).write_text("the pull request's copy, not main's\n", encoding="utf-8")
    # the suite's path is relative to the project, which sits in a subfolder of the repository
    name, report, _ = load_baseline("git:main", SUITE_BASELINE, "issue_triage")
    assert name == f"git:main:{SUITE_BASELINE}"
    assert len(report.outcomes) == 51


def test_git_ref_alone_without_a_suite_baseline_is_refused(origin, monkeypatch):
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    with pytest.raises(InputError, match=r"^baseline=git:main: suite x ships no baseline report to read at main; "
                                         r"pass baseline=git:main:PATH$"):
        load_baseline("git:main", None, "x")


def test_missing_ref_in_a_shallow_clone_names_the_fetch_that_brings_it(shallow):
    with pytest.raises(InputError) as caught:
        load_baseline("git:origin/main", SUITE_BASELINE, "issue_triage")
    message = str(caught.value)
    fetch = "git fetch --depth=1 origin +refs/heads/main:refs/remotes/origin/main"
    assert message == ("baseline=git:origin/main: origin/main is not in this clone (a shallow clone, as CI checkouts "
                       f"are by default, holds only the commits it was made from); fetch it with: {fetch}")
    assert f"error: {message}" in DOCS  # as the docs show it
    # the advice works: run it and the same baseline loads
    _git(*fetch.split()[1:], cwd=shallow)
    name, report, _ = load_baseline("git:origin/main", SUITE_BASELINE, "issue_triage")
    assert name == f"git:origin/main:{SUITE_BASELINE}" and len(report.outcomes) == 51


def test_missing_branch_name_is_fetched_into_its_remote_tracking_ref(shallow):
    with pytest.raises(InputError, match=r"; fetch it with: git fetch --depth=1 origin "
                                         r"\+refs/heads/main:refs/remotes/origin/main, then name it git:origin/main$"):
        load_baseline(f"git:main:project/{SUITE_BASELINE}", SUITE_BASELINE, "issue_triage")


@pytest.mark.parametrize("ref, remotes, advice", [
    ("upstream/release-1", ["origin", "upstream"],
     "fetch it with: git fetch --depth=1 upstream +refs/heads/release-1:refs/remotes/upstream/release-1"),
    ("refs/remotes/origin/main", ["origin"],
     "fetch it with: git fetch --depth=1 origin +refs/heads/main:refs/remotes/origin/main"),
    ("a" * 40, ["origin"], f"fetch it with: git fetch --depth=1 origin {'a' * 40}"),
    ("HEAD~3", ["origin"], "fetch more history with: git fetch --unshallow (or --deepen=N)"),
    ("1f3e9a2", ["origin"], "fetch more history with: git fetch --unshallow (or --deepen=N)"),
    ("main", [], "this clone has no remote to fetch it from: add one with git remote add origin URL"),
])
def test_fetch_advice(ref, remotes, advice):
    assert fetch_advice(ref, remotes) == advice


def test_present_ref_with_a_missing_path_says_what_git_said(origin, monkeypatch):
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    with pytest.raises(InputError, match=r"^baseline=git:main:nope.json: git show failed: fatal: path 'nope.json' "
                                         r"does not exist in 'main'$"):
        load_baseline("git:main:nope.json", SUITE_BASELINE, "issue_triage")


def test_outside_a_git_repository_says_so(tmp_path, monkeypatch):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("{}\n", encoding="utf-8")
    monkeypatch.setenv("EVALKIT_PROJECT", str(tmp_path))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    with pytest.raises(InputError, match=r"^baseline=git:main: .* is not in a git repository, so git cannot read "
                                         r"\./suites/issue_triage/runs/baseline.json at main$"):
        load_baseline("git:main", SUITE_BASELINE, "issue_triage")


@pytest.mark.parametrize("spec", ["git:", "git::x.json", "git:main:"])
def test_malformed_git_spec_is_refused(spec):
    with pytest.raises(InputError, match=r"expected git:REF:PATH or git:REF \(the suite's own baseline at REF\)"):
        load_baseline(spec, SUITE_BASELINE, "issue_triage")


@pytest.mark.parametrize("spec", ["git:--output=OUT:README.md", "git:--output=OUT", "git:-p:README.md"])
def test_a_ref_that_looks_like_an_option_is_refused_and_nothing_is_written(origin, monkeypatch, spec):
    # `git show --output=FILE:README.md` would make git write FILE
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    monkeypatch.chdir(origin)
    before = sorted(p.name for p in origin.rglob("*") if ".git" not in p.parts)
    with pytest.raises(InputError, match=r"is not a git ref \(refs never start with '-'\)"):
        load_baseline(spec, SUITE_BASELINE, "issue_triage")
    assert sorted(p.name for p in origin.rglob("*") if ".git" not in p.parts) == before
    assert not list(origin.rglob("OUT*"))


def test_git_never_reads_a_ref_as_an_option(origin, monkeypatch):
    # the second guard, should the first be bypassed: `--end-of-options` before the ref
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    with pytest.raises(InputError, match=r"^spec: --output=OUT is not in this clone"):
        show("--output=OUT", "README.md", origin / "project", "spec")
    assert not (origin / "project" / "OUT").exists()


@pytest.mark.parametrize(("spec", "message"), [
    ("git:main:project/suites", r"project/suites is a folder at main, not a file; name the file inside it"),
    ("git:main..pr:project/x.json", r"'main..pr' is a range of commits; name one commit"),
    ("git:HEAD~1000000:project/x.json", r"HEAD~1000000 is not in this clone; the repository's whole history is in "
                                        r"this clone and holds no such commit"),
])
def test_unclear_git_baselines_say_what_is_wrong(origin, monkeypatch, spec, message):
    monkeypatch.setenv("EVALKIT_PROJECT", str(origin / "project"))
    monkeypatch.chdir(origin)
    with pytest.raises(InputError, match=message) as refused:
        load_baseline(spec, SUITE_BASELINE, "issue_triage")
    assert "unshallow" not in str(refused.value) and "JSON" not in str(refused.value)
