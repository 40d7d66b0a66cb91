"""Where the baseline run report comes from: the suite's shipped report, a path, `git:REF:PATH` or `git:REF`."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from evalkit.core.errors import InputError
from evalkit.core.files import read_text_sha256
from evalkit.core.report import RunReport, parse_report
from evalkit.project.paths import find_project, project_path

__all__ = ["DEFAULT", "Baseline", "load_baseline", "git_spec_problem", "git_object_problem"]

DEFAULT = "default"
GIT = "git:"


class Baseline(NamedTuple):
    name: str
    """How the baseline was named: the suite's baseline path, the path given, or `git:REF:PATH`."""
    report: RunReport
    sha256: str
    """SHA-256 of the report's bytes as read, so a decision names exactly what it compared against."""


def load_baseline(spec: str, suite_baseline: str | None, suite: str) -> Baseline:
    """The baseline report and its identity. `git:REF:PATH` is read with `git show`, as CI reads main's;
    `git:REF` is the suite's own baseline path at REF."""
    if spec == DEFAULT:
        if not suite_baseline:
            raise InputError(f"suite {suite} ships no baseline report; pass baseline=PATH or baseline=none")
        return Baseline(str(suite_baseline), *_read(project_path(suite_baseline)))
    if spec.startswith(GIT):
        return _from_git(spec, suite_baseline, suite)
    return Baseline(spec, *_read(Path(spec).expanduser()))


def _from_git(spec: str, suite_baseline: str | None, suite: str) -> Baseline:
    ref, sep, path_in_repo = spec[len(GIT):].partition(":")
    if not ref or (sep and not path_in_repo):
        raise InputError(f"baseline={spec}: expected git:REF:PATH or git:REF (the suite's own baseline at REF), "
                         "e.g. git:origin/main:suites/x/runs/baseline.json or git:origin/main")
    problem = git_spec_problem(ref)
    if problem:
        raise InputError(f"baseline={spec}: {problem}")
    # git runs in the project root: a `./` path is then relative to the project, wherever the repository's top is
    root = find_project() or Path.cwd()
    name = spec
    if not sep:
        if not suite_baseline:
            raise InputError(f"baseline={spec}: suite {suite} ships no baseline report to read at {ref}; "
                             f"pass baseline=git:{ref}:PATH")
        path_in_repo = _relative_to_project(suite_baseline, root, spec)
        name = f"{GIT}{ref}:{suite_baseline}"
    done = _git(["show", "--end-of-options", f"{ref}:{path_in_repo}"], root, spec)
    if done.returncode == 0:
        problem = git_object_problem(ref, path_in_repo, root)
        if problem:
            raise InputError(f"baseline={spec}: {problem}; a baseline is a run report (a .json file)")
    if done.returncode != 0:
        if _git(["rev-parse", "--git-dir"], root, spec).returncode == 0 and not _has_commit(ref, root, spec):
            raise InputError(_missing_ref(spec, ref, root))
        first = (done.stderr.strip().splitlines() or ["unknown error"])[0]
        raise InputError(f"baseline={spec}: git show failed: {first}")
    # the text as git printed it, re-encoded: the blob's bytes for UTF-8 files with LF line ends
    return Baseline(name, parse_report(done.stdout, name), hashlib.sha256(done.stdout.encode("utf-8")).hexdigest())


def git_spec_problem(ref: str) -> str | None:
    """Why REF cannot name one commit, or None: an option (`git show --output=FILE` would write FILE) or a range."""
    if ref.startswith("-"):
        return f"{ref!r} is not a git ref (refs never start with '-')"
    if ".." in ref:
        return f"{ref!r} is a range of commits; name one commit (a branch, tag or commit), e.g. git:origin/main:PATH"
    return None


def git_object_problem(ref: str, path: str, cwd: Path) -> str | None:
    """Why REF:PATH, which git can show, is not a file, or None: a folder is shown as a listing of its names."""
    try:
        kind = subprocess.run(["git", "cat-file", "-t", f"{ref}:{path}"], cwd=cwd, capture_output=True, text=True,
                              check=False, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):  # git just showed it: the text will be judged as it is
        return None
    if kind == "tree":
        return f"{path} is a folder at {ref}, not a file; name the file inside it"
    if kind and kind != "blob":
        return f"{path} at {ref} is a git {kind}, not a file"
    return None


def _read(path: Path) -> tuple[RunReport, str]:
    text, sha = read_text_sha256(path, "report")
    return parse_report(text, str(path)), sha


def _relative_to_project(suite_baseline: str, root: Path, spec: str) -> str:
    """The suite's baseline as a `./` path for `git show` run in the project root."""
    path = Path(suite_baseline).expanduser()
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError:
            raise InputError(f"baseline={spec}: the suite's baseline {suite_baseline} is outside the project "
                             f"{root}, so git cannot read it at a ref; pass baseline=git:REF:PATH") from None
    return "./" + str(PurePosixPath(*path.parts))


def _git(args: list[str], cwd: Path, spec: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise InputError(f"baseline={spec}: cannot run git ({error})") from None


def _has_commit(ref: str, cwd: Path, spec: str) -> bool:
    done = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd, spec)
    return done.returncode == 0


def _missing_ref(spec: str, ref: str, cwd: Path) -> str:
    """One line: REF is not in this clone, and the `git fetch` that brings it."""
    shallow = _git(["rev-parse", "--is-shallow-repository"], cwd, spec).stdout.strip() == "true"
    why = (" (a shallow clone, as CI checkouts are by default, holds only the commits it was made from)"
           if shallow else "")
    remotes = _git(["remote"], cwd, spec).stdout.split()
    return f"baseline={spec}: {ref} is not in this clone{why}; {_fetch_advice(ref, remotes, shallow)}"


def _fetch_advice(ref: str, remotes: list[str], shallow: bool = True) -> str:
    """The fetch that makes REF resolvable. An explicit refspec also works in single-branch clones
    (`git clone --depth 1`), where `git fetch origin main` would update only FETCH_HEAD."""
    if not shallow and re.search(r"[~^@{}:]", ref):  # the whole history is here: no fetch brings an older commit
        return "the repository's whole history is in this clone and holds no such commit; name one it has"
    if not remotes:
        return "this clone has no remote to fetch it from: add one with git remote add origin URL"
    short = ref.removeprefix("refs/remotes/")
    remote, slash, branch = short.partition("/")
    if slash and branch and remote in remotes:
        return f"fetch it with: git fetch --depth=1 {remote} +refs/heads/{branch}:refs/remotes/{remote}/{branch}"
    default = "origin" if "origin" in remotes else remotes[0]
    if re.fullmatch(r"[0-9a-fA-F]{40}", ref):
        return f"fetch it with: git fetch --depth=1 {default} {ref}"
    if re.search(r"[~^@{}:]|^[0-9a-fA-F]{4,39}$", ref):  # history relative to a commit, or a short hash
        return "fetch more history with: git fetch --unshallow (or --deepen=N)"
    return (f"fetch it with: git fetch --depth=1 {default} +refs/heads/{short}:refs/remotes/{default}/{short}, "
            f"then name it git:{default}/{short}")
