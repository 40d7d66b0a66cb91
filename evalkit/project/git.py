"""Files as a commit holds them: `git:REF:PATH`, read with `git show` in the project's repository.

The one reader behind `baseline=git:...` and `evalkit policy-diff git:...`, so both say the same thing
when git is missing, the folder is not in a repository, the clone lacks REF (a shallow CI checkout: with the
fetch that brings it) or PATH is absent at REF, and both refuse a REF that git would read as an option.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from evalkit.core.errors import InputError
from evalkit.core.files import max_input_bytes

__all__ = ["GIT", "split_spec", "show", "fetch_advice"]

GIT = "git:"
# control characters cannot be in a ref name, and a NUL could not even be passed to git as an argument
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def split_spec(spec: str, label: str, usage: str) -> tuple[str, str]:
    """(REF, PATH) of `git:REF:PATH`, PATH empty for `git:REF`; a malformed spec is one line: `label: usage`."""
    ref, sep, path = spec[len(GIT):].partition(":")
    if not ref or (sep and not path):
        raise InputError(f"{label}: {usage}")
    if ref.startswith("-"):  # `git show --output=FILE` would write FILE: a ref is never read as an option
        raise InputError(f"{label}: {ref!r} is not a git ref (refs never start with '-')")
    if ".." in ref:  # git would show a range's commits, not a file
        raise InputError(f"{label}: {ref!r} is a range of commits; name one commit (a branch, tag or commit), e.g. "
                         "git:origin/main:PATH")
    if _CONTROL.search(spec):
        raise InputError(f"{label}: a git ref or path cannot hold control characters; name the ref and path as "
                         "git:REF:PATH")
    return ref, path


def show(ref: str, path: str, cwd: Path, label: str) -> bytes:
    """The bytes of PATH at REF (at most `max_input_bytes()`), read in `cwd`: a `./` path is relative to it, any
    other to the repository's top. Every refusal is one InputError line starting with `label`."""
    done = _git(["show", "--end-of-options", f"{ref}:{path}"], cwd, label)
    if done.returncode != 0:
        if _git(["rev-parse", "--git-dir"], cwd, label).returncode != 0:
            raise InputError(f"{label}: {cwd} is not in a git repository, so git cannot read {path} at {ref}")
        if _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd,
                label).returncode != 0:
            raise InputError(_missing_ref(label, ref, cwd))
        first = (_text(done.stderr).strip().splitlines() or ["unknown error"])[0]
        raise InputError(f"{label}: git show failed: {first}")
    kind = _text(_git(["cat-file", "-t", f"{ref}:{path}"], cwd, label).stdout).strip()
    if kind == "tree":  # git shows a folder as a listing of its names, which no reader should try to parse
        raise InputError(f"{label}: {path} is a folder at {ref}, not a file; name the file inside it")
    if len(done.stdout) > max_input_bytes():
        raise InputError(f"{label}: {path} at {ref} is larger than {max_input_bytes()} bytes (EVALKIT_MAX_INPUT_BYTES "
                         "raises the limit)")
    return done.stdout


def _git(args: list[str], cwd: Path, label: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise InputError(f"{label}: cannot run git ({error}); install git, or give a file instead") from None


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _missing_ref(label: str, ref: str, cwd: Path) -> str:
    """One line: REF is not in this clone, and the `git fetch` that brings it."""
    shallow = _text(_git(["rev-parse", "--is-shallow-repository"], cwd, label).stdout).strip() == "true"
    why = (" (a shallow clone, as CI checkouts are by default, holds only the commits it was made from)"
           if shallow else "")
    remotes = _text(_git(["remote"], cwd, label).stdout).split()
    return f"{label}: {ref} is not in this clone{why}; {fetch_advice(ref, remotes, shallow)}"


def fetch_advice(ref: str, remotes: list[str], shallow: bool = True) -> str:
    """The fetch that makes REF resolvable. An explicit refspec also works in single-branch clones
    (`git clone --depth 1`), where `git fetch origin main` would update only FETCH_HEAD. In a full clone, history
    relative to a commit (`HEAD~1000000`) that is missing cannot be fetched: it does not exist."""
    if not shallow and re.search(r"[~^@{}:]", ref):
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
