"""The GitHub Actions workflow that gates a project's pull requests, and how its runner installs evalkit."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["COMMENT_PATH", "PLACEHOLDER", "TEMPLATE", "WORKFLOW_PATH", "comment_workflow_text", "install_requirement",
           "repository_top", "workflow_text"]

TEMPLATE = Path(__file__).resolve().parent / "templates" / "ci" / "evalkit.yml.tmpl"
WORKFLOW_PATH = Path(".github") / "workflows" / "evalkit.yml"
"""Where the workflow goes, relative to the repository's root."""
PAGES_JOB_TEMPLATE = TEMPLATE.with_name("evalkit-pages-job.yml.tmpl")
"""The opt-in job that publishes the run explorer of main's suites to GitHub Pages (`evalkit new ci --pages`)."""
COMMENT_TEMPLATE = TEMPLATE.with_name("evalkit-comment.yml.tmpl")
COMMENT_PATH = WORKFLOW_PATH.with_name("evalkit-comment.yml")
"""The workflow that posts the decision as a pull-request comment (fork-safe: it runs from the base branch)."""
PLACEHOLDER = "evalkit @ git+https://github.com/OWNER/evalkit"
"""The requirement written when the running evalkit came from somewhere a CI runner cannot reach."""
EDIT_NOTE = ("# EDIT: where the runner installs evalkit from (a git URL, a wheel's URL); "
             "evalkit was not installed here from git or from this repository")
MARKER = "@@REQUIREMENT@@"


# With --pages, a push to main runs the workflow too: the gate keeps to pull requests, the pages job to pushes.
_PUSH_TRIGGER = """
  # evalkit new ci --pages: a push to main (your default branch) publishes the run explorer (the pages job)
  push:
    branches: [main]
    paths:
      - "conf/**"
      - "suites/**"
      - "recordings/**"
      - "requirements*.txt"
      - "pyproject.toml"
      - ".github/workflows/evalkit*.yml"
"""
_GATE = "  gate:\n    runs-on: ubuntu-latest\n"
_GATE_ON_PULL_REQUESTS = ("  gate:\n    # pull requests only: a push to main runs the pages job\n"
                          "    if: github.event_name == 'pull_request'\n    runs-on: ubuntu-latest\n")
_PERMISSIONS = "\npermissions:\n"


def workflow_text(install: str, pages: bool = False) -> str:
    """The workflow's YAML, installing evalkit with the pip requirement `install` (see install_requirement);
    with `pages`, also the job that publishes the run explorer of main's suites to GitHub Pages on each push."""
    value = json.dumps(install)  # a JSON string is a YAML double-quoted scalar: nothing in it can break the file
    if install == PLACEHOLDER:
        value += "  " + EDIT_NOTE
    text = TEMPLATE.read_text(encoding="utf-8")
    assert text.count(MARKER) == 1, f"{TEMPLATE} must hold {MARKER} once"
    text = text.replace(MARKER, value)
    if not pages:
        return text
    assert text.count(_PERMISSIONS) == 1 and text.count(_GATE) == 1, f"{TEMPLATE}: the pages job's anchors moved"
    text = text.replace(_PERMISSIONS, _PUSH_TRIGGER + _PERMISSIONS).replace(_GATE, _GATE_ON_PULL_REQUESTS)
    return text + PAGES_JOB_TEMPLATE.read_text(encoding="utf-8")


def comment_workflow_text() -> str:
    """The YAML of the workflow that posts each decision of the gate workflow on its pull request."""
    return COMMENT_TEMPLATE.read_text(encoding="utf-8")


def install_requirement(repository: Path | None = None) -> str:
    """How the running evalkit was installed, as a pip requirement a CI runner of `repository` can use.

    From its PEP 610 record (`direct_url.json`): a git install gives `evalkit @ git+URL@COMMIT`; an install of a
    folder inside `repository` (default: the git repository of the working directory), editable or not, gives
    `.` (or `./SUBFOLDER`); anything else (a wheel file, another folder, a package index) gives PLACEHOLDER,
    which the workflow marks for editing.
    """
    record = _direct_url()
    if record is None:
        return PLACEHOLDER
    url = record.get("url")
    vcs = record.get("vcs_info")
    if isinstance(url, str) and isinstance(vcs, dict) and vcs.get("vcs") and vcs.get("commit_id"):
        requirement = f"evalkit @ {vcs['vcs']}+{_without_credentials(url)}@{vcs['commit_id']}"
        subdirectory = record.get("subdirectory")
        return requirement + (f"#subdirectory={subdirectory}" if subdirectory else "")
    if isinstance(url, str) and "dir_info" in record and urlsplit(url).scheme == "file":
        folder = Path(unquote(urlsplit(url).path)).resolve()
        top = (repository or repository_top()).resolve()
        if folder == top:
            return "."
        if folder.is_relative_to(top):
            return "./" + folder.relative_to(top).as_posix()
    return PLACEHOLDER


def _direct_url() -> dict[str, Any] | None:
    """The installed distribution's direct_url.json. Several `evalkit` metadata folders can be on sys.path (an
    `evalkit.egg-info` in a checkout run from its root comes first and has no record): take the first record."""
    for distribution in metadata.distributions(name="evalkit"):
        text = distribution.read_text("direct_url.json")
        if text:
            try:
                record = json.loads(text)
            except ValueError:
                return None
            return record if isinstance(record, dict) else None
    return None


def _without_credentials(url: str) -> str:
    """The URL without a user's token (a workflow is committed); ssh's `git@` user stays."""
    parts = urlsplit(url)
    if parts.password is None and parts.username in (None, "git"):
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def repository_top() -> Path:
    """The git repository of the working directory, else the working directory itself."""
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                              check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return Path.cwd()
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else Path.cwd()
