"""evalkit/project/scaffold.py and `evalkit new`: what a new project and suite get, and what is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.core.errors import InputError
from evalkit.project.scaffold import project_files, set_default_suite, suite_files, write_new


def new(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALKIT_PROJECT"}
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "new", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_scaffolded_suite_composes_validates_and_is_the_default(tmp_path: Path) -> None:
    assert new(tmp_path, "project").returncode == 0
    done = new(tmp_path / "suites", "suite", "reviews")  # found from a folder inside the project
    assert done.returncode == 0, done.stderr
    assert "  - suite: reviews" in (tmp_path / "conf/config.yaml").read_text()
    # the composed config is valid: replay reaches the recording (none yet) and says how to make one
    env = {k: v for k, v in os.environ.items() if k != "EVALKIT_PROJECT"}
    run = subprocess.run([sys.executable, "-m", "evalkit", "baseline=none"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3
    assert run.stderr.startswith("error: recordings/reviews/local-model-v1-reviews@1-")
    assert ": no recording of this identity" in run.stderr and "mode=record-missing" in run.stderr


def test_a_second_suite_keeps_the_default(tmp_path: Path) -> None:
    assert new(tmp_path, "project").returncode == 0
    assert new(tmp_path, "suite", "first").returncode == 0
    assert new(tmp_path, "suite", "second").returncode == 0
    config = (tmp_path / "conf/config.yaml").read_text()
    assert "- suite: first" in config and "second" not in config
    assert (tmp_path / "suites/second/checks.yaml").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (("suite", "Bad-Name"), "suite name 'Bad-Name': use lower-case letters"),
    (("suite", "reviews"), "no evalkit project here"),  # no project yet
    (("nope",), "invalid choice: 'nope'"),
    (("suite", "tickets", "--labels", "billing,Bug"), "--labels: 'Bug' is not a label"),
    (("suite", "tickets", "--labels", "billing,billing"), "give two or more distinct labels"),
    (("suite", "tickets", "--labels", "billing"), "give two or more distinct labels"),
])
def test_refusals_are_one_line_and_exit_3(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = new(tmp_path, *args)
    assert done.returncode == 3 and message in done.stderr, done.stderr


def test_nothing_is_overwritten(tmp_path: Path) -> None:
    assert new(tmp_path, "project").returncode == 0
    again = new(tmp_path, "project")
    assert again.returncode == 3 and "already an evalkit project" in again.stderr
    assert new(tmp_path, "suite", "reviews").returncode == 0
    test_file = tmp_path / "suites/reviews/checks.yaml"
    test_file.write_text("# mine\n")
    done = new(tmp_path, "suite", "reviews")
    assert done.returncode == 3 and "already exists; a scaffold never overwrites a file" in done.stderr
    assert test_file.read_text() == "# mine\n"


def test_write_new_writes_all_or_nothing(tmp_path: Path) -> None:
    files = suite_files(tmp_path, "x")
    taken = next(iter(files))
    taken.parent.mkdir(parents=True)
    taken.write_text("keep")
    with pytest.raises(InputError, match="already exists"):
        write_new(files)
    assert [p for p in files if p.exists()] == [taken]
    assert set(write_new(project_files(tmp_path / "p"))) == set(project_files(tmp_path / "p"))


def test_set_default_suite() -> None:
    slot = "defaults:\n  - evalkit\n  # - suite: NAME    # comment\n  - _self_\n"
    assert set_default_suite(slot, "a") == "defaults:\n  - evalkit\n  - suite: a    # the default suite; " \
                                           "suite=OTHER picks another\n  - _self_\n"
    assert set_default_suite("defaults:\n  - evalkit\n  - _self_\n", "a") == \
        "defaults:\n  - evalkit\n  - suite: a\n  - _self_\n"
    assert set_default_suite("defaults:\n  - suite: b\n  - _self_\n", "a") is None


def test_new_ci_writes_the_workflow_at_the_repository_top(tmp_path: Path) -> None:
    from evalkit.project.ci import PLACEHOLDER, WORKFLOW_PATH, workflow_text

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    project = tmp_path / "evals"  # a project in a subfolder of its repository
    project.mkdir()
    assert new(project, "project").returncode == 0
    done = new(project, "ci")
    assert done.returncode == 0, done.stderr
    written = tmp_path / WORKFLOW_PATH
    # this test's evalkit is installed from another folder than the new repository: the requirement is marked
    assert written.read_text() == workflow_text(PLACEHOLDER)
    assert "edit EVALKIT_REQUIREMENT" in done.stdout
    again = new(project, "ci")
    assert again.returncode == 3 and "already exists" in again.stderr
    outside = new(tmp_path, "ci")  # the repository top holds no project
    assert outside.returncode == 3 and "no evalkit project here" in outside.stderr


def test_new_ci_pages_adds_the_pages_job(tmp_path: Path) -> None:
    from evalkit.project.ci import PLACEHOLDER, WORKFLOW_PATH, workflow_text

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert new(tmp_path, "project").returncode == 0
    done = new(tmp_path, "ci", "--pages")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / WORKFLOW_PATH).read_text() == workflow_text(PLACEHOLDER, pages=True) != \
        workflow_text(PLACEHOLDER)
    assert "publishes the run explorer of main's suites to GitHub Pages" in done.stdout


def test_a_labelled_suite_declares_its_checks_labels_and_metrics(tmp_path: Path) -> None:
    from evalkit.judging.checks import parse_checks
    from evalkit.project.scaffold import parse_labels

    files = {str(p.relative_to(tmp_path)): text
             for p, text in suite_files(tmp_path, "tickets", parse_labels("billing,bug,account")).items()}
    assert sorted(files) == ["conf/policy/tickets.yaml", "conf/suite/tickets.yaml", "suites/tickets/checks.yaml",
                             "suites/tickets/datasets/v1.json", "suites/tickets/prompts/v1.txt",
                             "suites/tickets/task.py"]
    checks = parse_checks(files["suites/tickets/checks.yaml"], "checks.yaml")
    assert checks.critical == ("reply_is_json",)
    assert [c.kind for c in checks.checks] == ["json-schema", "classification", "length"]
    assert checks.checks[0].options["properties"]["label"] == {"enum": ["billing", "bug", "account"]}
    cases = json.loads(files["suites/tickets/datasets/v1.json"])["cases"]
    assert [c["label"] for c in cases] == ["billing", "bug", "account"]
    assert "exactly one of: billing, bug, account" in files["suites/tickets/prompts/v1.txt"]
    assert "recall.account" in files["conf/suite/tickets.yaml"]
    policy = files["conf/policy/tickets.yaml"]
    assert "case_pass_rate: 0.8" in policy and "macro_f1: 0.7" in policy
