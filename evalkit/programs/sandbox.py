"""Run a candidate program for one case, isolated as far as this machine allows, and say what isolation held.

What is isolated: the program starts in a fresh temporary directory holding only itself, `task.json` and the
files it was given (references and graders stay in the parent); it runs under `python -I` with stdin on
/dev/null, its output discarded, and an environment of LANG, HOME and TMPDIR only, so no credentials are
inherited; where util-linux `unshare` works it also runs in its own empty network namespace (no interfaces up,
not even loopback). On timeout its whole process group is killed.

What is not: it runs as the same OS user, so any host file that user can read (references included) is readable
by absolute path, and it can write wherever that user can. There are no memory, CPU, disk or process limits.
Descendants are killed with the process group when the program exits or times out (or the parent is
interrupted), but one that calls setsid() escapes that. This is a cooperative harness for honest candidates,
not an OS sandbox; `ProgramRun.isolation` records which parts held.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit.core.errors import InputError
from evalkit.core.fingerprint import sha256

__all__ = ["ARTIFACT_LIMIT", "ISOLATION_BASE", "Isolation", "ProgramRun", "probe_isolation", "run_program"]

ISOLATION_BASE = ("cooperative subprocess: fresh temporary directory, python -I, closed stdin, minimal environment, "
                  "timeout, response size limit; same OS user, so host files stay readable: not an OS sandbox")
NETWORK_ISOLATED = "; network: own empty network namespace (unshare)"
TASK, RESPONSE = "task.json", "response.json"
# O_NOFOLLOW: a program could point response.json or an artifact at a host file and have the parent copy it
# into the report. O_NONBLOCK: opening a FIFO left in the work dir must not hang the parent.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK

Status = Literal["finished", "timeout", "crashed", "missing_response", "oversized_response", "invalid_response"]


@dataclass(frozen=True)
class Isolation:
    """Whether candidate programs get their own network namespace here, and the label saying so."""

    network: bool
    label: str
    unshare: tuple[str, ...] = ()  # the command prefix that worked in the probe, ending in "--"; empty if none


def _not_isolated(why: str) -> Isolation:
    return Isolation(network=False, label=f"{ISOLATION_BASE}; network: NOT isolated ({why})")


@functools.cache
def probe_isolation() -> Isolation:
    """Find out once whether `unshare` can give a program an empty network namespace; never raises."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return _not_isolated("util-linux unshare not found")
    failures: list[str] = []
    # Plain --net needs root (or CAP_SYS_ADMIN); an unprivileged user may still get one inside a user namespace.
    for flags in (("--net",), ("--user", "--map-root-user", "--net")):
        prefix = (unshare, *flags, "--")
        # Probe with the interpreter and empty environment the run will use, so success means the run can start.
        try:
            done = subprocess.run([*prefix, sys.executable, "-I", "-c", ""], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={}, timeout=5, check=False)
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            failures.append(f"unshare {' '.join(flags)}: {error}")
            continue
        if done.returncode == 0:
            return Isolation(network=True, label=ISOLATION_BASE + NETWORK_ISOLATED, unshare=prefix)
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit code {done.returncode}"]
        failures.append(f"unshare {' '.join(flags)}: {lines[-1][:200]}")
    return _not_isolated("; ".join(failures))


@dataclass(frozen=True)
class ProgramRun:
    """What one candidate run produced. `wall_ms` is this machine's process time, not a model latency."""

    status: Status
    reason: str | None  # None when finished, else one line saying what went wrong
    response: dict[str, Any] | None  # the response.json object, only when finished
    artifacts: dict[str, str | None]  # each watched file's text after the run; None if absent, a link, over
    # ARTIFACT_LIMIT or not UTF-8
    artifact_sha256: dict[str, str | None]  # of the bytes, so a non-UTF-8 file still has a hash
    visible_files: tuple[str, ...]  # everything in the work dir when the program started
    input_bytes: int
    output_bytes: int | None  # response.json's size when it was read
    wall_ms: float
    isolation: str  # the Isolation.label in force

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["visible_files"] = list(self.visible_files)
        return data


def run_program(program: Path, args: Sequence[str], task: bytes, files: Mapping[str, str], watch: Sequence[str],
                *, timeout_s: float, max_response_bytes: int, isolate_network: bool = True) -> ProgramRun:
    """Run `program` on `task` in a fresh directory and read back its response.json and the `watch`ed files.

    `files` (name -> text) are written beside the program; `watch` names the files whose text after the run is
    evidence. `wall_ms` is this machine's elapsed process time (monotonic), not a model latency.
    """
    if not program.is_file():
        raise InputError(f"{program}: candidate program not found")
    for name in [*files, *watch]:
        _check_name(name, program.name)
    isolation = probe_isolation() if isolate_network else _not_isolated("isolate_network=False")
    with tempfile.TemporaryDirectory(prefix="evalkit-candidate-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        shutil.copyfile(program, work / program.name)
        (work / TASK).write_bytes(task)
        for name, text in files.items():
            (work / name).write_text(text, encoding="utf-8", newline="")
        visible = tuple(sorted((Path(root) / f).relative_to(work).as_posix()
                               for root, _, names in os.walk(work) for f in names))
        # Read results through a handle on this directory, not its path: the program may rename or replace it.
        dir_fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
        try:
            command = [*isolation.unshare, sys.executable, "-I", program.name, *args]
            status, reason, wall_ms = _execute(command, work, timeout_s)
            response, output_bytes = None, None
            if status == "finished":
                status, reason, response, output_bytes = _read_response(dir_fd, max_response_bytes)
            contents = {name: _read_regular(dir_fd, name) for name in watch}
        finally:
            os.close(dir_fd)
    return ProgramRun(
        status=status, reason=reason, response=response,
        artifacts={name: _utf8(data) for name, data in contents.items()},
        artifact_sha256={name: None if data is None else sha256(data)
                         for name, data in contents.items()},
        visible_files=visible, input_bytes=len(task), output_bytes=output_bytes, wall_ms=wall_ms,
        isolation=isolation.label)


def _check_name(name: str, program_name: str) -> None:
    """Refuse anything but a plain, visible file name that does not clash with the harness's own files."""
    if not name or "/" in name or "\\" in name or "\0" in name or name in (".", ".."):
        why = "it must be a plain file name, without path separators"
    elif name.startswith("."):
        why = "hidden files are not allowed"
    elif name in (TASK, RESPONSE, program_name):
        why = "the name is reserved for the harness or the program"
    else:
        return
    raise InputError(f"candidate file {name!r}: {why}")


def _execute(command: list[str], work: Path, timeout_s: float) -> tuple[Status, str | None, float]:
    """Run `command` in its own session; on timeout kill the whole process group, so children die with it."""
    env = {"LANG": "C.UTF-8", "HOME": str(work), "TMPDIR": str(work)}  # nothing inherited: no credentials leak
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return "timeout", f"timeout after {timeout_s:g} s", round((time.monotonic() - started) * 1000, 3)
    except BaseException:  # the parent was interrupted: leave nothing running behind it
        _kill_group(proc)
        raise
    wall_ms = round((time.monotonic() - started) * 1000, 3)
    try:  # children left running after a normal exit could still change the files about to be read
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if code != 0:
        return "crashed", f"exit code {code}" if code > 0 else f"killed by signal {-code}", wall_ms
    return "finished", None, wall_ms


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # before reaping: the zombie leader keeps the group id from reuse
    except ProcessLookupError:
        pass
    proc.wait()


def _read_response(dir_fd: int, limit: int) -> tuple[Status, str | None, dict[str, Any] | None, int | None]:
    """Parse response.json as a JSON object, checking its kind and size before reading a byte."""
    try:
        if stat.S_ISLNK(os.stat(RESPONSE, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return "invalid_response", "response.json is a symlink", None, None
        fd = os.open(RESPONSE, _READ_FLAGS, dir_fd=dir_fd)  # O_NOFOLLOW again: it may be swapped since
    except FileNotFoundError:
        return "missing_response", "no response.json", None, None
    except OSError as error:
        return "invalid_response", f"response.json cannot be opened ({error.strerror})", None, None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "invalid_response", "response.json is not a regular file", None, None
        if info.st_size > limit:
            return "oversized_response", f"response.json is {info.st_size} bytes; the limit is {limit}", None, None
        data = handle.read(limit + 1)  # a straggler could still be appending: never read past the limit
    if len(data) > limit:
        return "oversized_response", f"response.json grew past the limit of {limit} bytes", None, None
    try:
        # NaN and Infinity are not JSON; accepting them would make the report itself invalid JSON.
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return "invalid_response", "response.json is not valid UTF-8 JSON", None, len(data)
    if not isinstance(value, dict):
        return "invalid_response", "response.json is not a JSON object", None, len(data)
    return "finished", None, value, len(data)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


ARTIFACT_LIMIT = 1 << 20  # a watched file bigger than 1 MiB is not evidence a grader needs; never load it


def _read_regular(dir_fd: int, name: str) -> bytes | None:
    """The bytes of a regular file in the work dir; None if absent, a symlink, too big or anything else."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(ARTIFACT_LIMIT + 1)
    return None if len(data) > ARTIFACT_LIMIT else data


def _utf8(data: bytes | None) -> str | None:
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None
