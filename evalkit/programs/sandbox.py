"""Run a candidate program for one case, isolated as far as this machine allows, and say what isolation held.

What is isolated: the program starts in a fresh temporary directory holding only itself, `task.json` and the
files it was given (references and graders stay in the parent); it runs under `python -I` with stdin on
/dev/null, its output discarded, and an environment of LANG, HOME and TMPDIR only, so no credentials are
inherited. It is started by a small launcher (LAUNCHER, `python -I -c`) whose own environment is that same clean
one and whose working directory is the temporary one; the launcher adopts every descendant (a child subreaper)
and kills them all when the program exits. Where util-linux `unshare` works (as root, or in a user namespace):
- its own empty network namespace (no interfaces up, not even loopback), which also cuts the host's *abstract*
  Unix sockets (they belong to a network namespace);
- its own PID namespace, with the launcher as its init and a /proc of its own (so a mount namespace): evalkit's
  process, its environment (API keys), its working folder (the suite) and the references cannot be reached
  through /proc, and when the launcher exits or is killed the kernel kills every process in the namespace,
  setsid() ones included.

What is not: it runs as the same OS user, so any host file that user can read (the suite folder and the
references included) is readable by absolute path, host Unix sockets bound to a *path* stay reachable by that
path, and it can write wherever that user can: evalkit's runner therefore fingerprints the suite's checks
before and after the candidates run and refuses the run when they changed. There are no memory, CPU, disk or
process limits. Without a PID namespace, evalkit's own process (and its environment) stays visible through
/proc, and a descendant that kills the launcher before leaving its process group escapes. This is a cooperative
harness for honest candidates, not an OS sandbox; `Isolation.label` (each run's `provenance.isolation`) states
which parts held.
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

__all__ = ["ARTIFACT_LIMIT", "ISOLATION_BASE", "LAUNCHER", "Isolation", "ProgramRun", "probe_isolation",
           "run_program"]

ISOLATION_BASE = ("cooperative subprocess: fresh temporary directory, python -I, closed stdin, environment of "
                  "LANG, HOME and TMPDIR only, started by a launcher with that same environment, timeout, response "
                  "size limit; same OS user, so host files (the suite and its references included) stay readable "
                  "by absolute path: not an OS sandbox")
TASK, RESPONSE = "task.json", "response.json"
# O_NOFOLLOW: a program could point response.json or an artifact at a host file and have the parent copy it
# into the report. O_NONBLOCK: opening a FIFO left in the work dir must not hang the parent.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
Status = Literal["finished", "timeout", "crashed", "missing_response", "oversized_response", "invalid_response"]
_STOP_GRACE_S = 2.0  # how long the launcher gets to kill what it adopted before its process group is killed

# The candidate's parent. It runs with the candidate's clean environment in its directory, so /proc/$PPID shows
# nothing of evalkit's; it adopts every orphaned descendant (PR_SET_CHILD_SUBREAPER, setsid() ones included) and
# kills them all once the program exits, or on SIGTERM (evalkit's timeout). In a PID namespace it is the init,
# and the kernel kills whatever is left when it exits. Exit status: the program's, or 128 + the signal.
LAUNCHER = r"""
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
except Exception:
    pass
child = os.fork()
if child == 0:
    try:
        os.execv(sys.executable, [sys.executable, "-I", *sys.argv[1:]])
    finally:
        os._exit(127)
signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
def adopted():
    me, found = str(os.getpid()), []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/" + name + "/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1] == me and fields[0] != "Z":
                found.append(int(name))
    return found
for _ in range(1000):
    alive = adopted()
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    if not alive:
        break
os._exit(code if code >= 0 else 128 - code)
"""

_NAMESPACES = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc")
_AS_USER = ("--user", "--map-root-user")  # no root: the namespaces may still be had inside a user namespace
# What the probe tries, best first: every namespace, then the network alone, then the PID namespace alone.
_PROBES = (_NAMESPACES, (*_AS_USER, *_NAMESPACES), ("--net",), (*_AS_USER, "--net"), _NAMESPACES[1:],
           (*_AS_USER, *_NAMESPACES[1:]))


@dataclass(frozen=True)
class Isolation:
    """Which namespaces candidate programs get here, and the label saying exactly what held."""

    network: bool  # own empty network namespace: no network, no abstract Unix sockets of the host
    pid: bool  # own PID namespace with its own /proc (hence a mount namespace): evalkit invisible, tree killed
    label: str
    unshare: tuple[str, ...] = ()  # the command prefix that worked in the probe, ending in "--"; empty if none

    @property
    def mount(self) -> bool:
        return self.pid  # --mount-proc: the mount namespace exists to give the PID namespace its /proc


def isolation_label(network: bool, pid: bool, why: str = "") -> str:
    """The label of a run: every property stated, held or NOT, with the reason when not."""
    reason = f" ({why})" if why else ""
    parts = [ISOLATION_BASE]
    if network:
        parts += ["network namespace: own, empty (no interfaces, not even loopback)",
                  "Unix sockets: the host's abstract ones cut with the network namespace, ones bound to a path "
                  "still reachable by that path"]
    else:
        parts += [f"network namespace: NOT held{reason}", "Unix sockets: NOT cut, the host's are all reachable"]
    if pid:
        parts += ["PID namespace: own, with the launcher as its init",
                  "mount namespace: own, for the PID namespace's /proc only (host paths are unchanged)",
                  "parent environment: clean (through /proc the program sees only the launcher and its own "
                  "descendants, not evalkit's process, environment or working folder)",
                  "process tree: killed with the PID namespace when the program exits or times out, setsid() "
                  "descendants included"]
    else:
        parts += [f"PID namespace: NOT held{reason}", "mount namespace: NOT held",
                  "parent environment: NOT clean (the launcher's is, but evalkit's own process, environment and "
                  "working folder stay readable through /proc)",
                  "process tree: descendants adopted by the launcher and killed when the program exits or times "
                  "out, setsid() ones included, unless one kills the launcher first"]
    return "; ".join(parts)


def _not_isolated(why: str) -> Isolation:
    return Isolation(network=False, pid=False, label=isolation_label(False, False, why))


@functools.cache
def probe_isolation() -> Isolation:
    """Find out once which namespaces `unshare` can give a program here; never raises."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return _not_isolated("util-linux unshare not found")
    failures: list[str] = []
    for flags in _PROBES:
        prefix = (unshare, *flags, "--")
        pid = "--pid" in flags
        # Probe with the interpreter and empty environment the run will use, so success means the run can start;
        # in a PID namespace the program must see itself as its init.
        check = "import os; assert os.getpid() == 1" if pid else ""
        try:
            done = subprocess.run([*prefix, sys.executable, "-I", "-c", check], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={}, timeout=5, check=False)
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            failures.append(f"unshare {' '.join(flags)}: {error}")
            continue
        if done.returncode == 0:
            network = "--net" in flags
            why = "; ".join(failures)
            return Isolation(network=network, pid=pid, label=isolation_label(network, pid, why), unshare=prefix)
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines() or [f"exit code {done.returncode}"]
        failures.append(f"unshare {' '.join(flags)}: {lines[-1][:200]}")
    return _not_isolated("; ".join(failures))


@dataclass(frozen=True)
class ProgramRun:
    """What one candidate run produced. `wall_ms` is this machine's process time, not a model latency."""

    status: Status
    reason: str | None  # None when finished, else one line saying what went wrong
    response: dict[str, Any] | None  # the response.json object, only when finished
    artifacts: dict[str, str | None]  # each watched file's text after the run; None if absent, a symlink, a
    # hard link (more than one name), on another file system, over ARTIFACT_LIMIT or not UTF-8
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
                *, timeout_s: float, max_response_bytes: int, namespaces: bool = True) -> ProgramRun:
    """Run `program` on `task` in a fresh directory and read back its response.json and the `watch`ed files.

    `files` (name -> text) are written beside the program; `watch` names the files whose text after the run is
    evidence. `wall_ms` is this machine's elapsed process time (monotonic), not a model latency. `namespaces=False`
    runs it without any namespace (the launcher still runs), and the label says so.
    """
    if not program.exists():
        raise InputError(f"{program}: candidate program not found")
    if not program.is_file():  # a device (/dev/zero), a FIFO or a folder: copying it would never end or fail
        raise InputError(f"{program}: the candidate program is not a regular file; name a script file")
    for name in [*files, *watch]:
        _check_name(name, program.name)
    isolation = probe_isolation() if namespaces else _not_isolated("namespaces=False")
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
            command = [*isolation.unshare, sys.executable, "-I", "-c", LAUNCHER, program.name, *args]
            status, reason, wall_ms = _execute(command, work, timeout_s, isolation.pid)
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


def _execute(command: list[str], work: Path, timeout_s: float, pid_namespace: bool) -> tuple[Status, str | None,
                                                                                          float]:
    """Run `command` (the launcher, under unshare where it works) in its own session; on timeout let the launcher
    kill what it adopted, then kill the whole process group, so children die with it."""
    env = {"LANG": "C.UTF-8", "HOME": str(work), "TMPDIR": str(work)}  # nothing inherited: no credentials leak
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(proc, pid_namespace)
        return "timeout", f"timeout after {timeout_s:g} s", round((time.monotonic() - started) * 1000, 3)
    except BaseException:  # the parent was interrupted: leave nothing running behind it
        _stop(proc, pid_namespace)
        raise
    wall_ms = round((time.monotonic() - started) * 1000, 3)
    try:  # children left running after a normal exit could still change the files about to be read
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if code != 0:  # the launcher passes a signal on as 128 + its number
        signalled = -code if code < 0 else code - 128 if code > 128 else None
        return "crashed", f"exit code {code}" if signalled is None else f"killed by signal {signalled}", wall_ms
    return "finished", None, wall_ms


def _stop(proc: subprocess.Popen[bytes], pid_namespace: bool) -> None:
    """Kill the run. In a PID namespace, killing the group kills its init (the launcher), and with it the whole
    namespace. Without one, SIGTERM first: the launcher kills the program and everything it adopted (setsid()
    ones too); then the group, for whatever is left."""
    if pid_namespace:
        _kill_group(proc)
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=_STOP_GRACE_S)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # before reaping: the zombie leader keeps the group id from reuse
    except (ProcessLookupError, PermissionError):
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
        foreign = _foreign(dir_fd, info)
        if foreign:
            return "invalid_response", f"response.json {foreign}", None, None
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
    """The bytes of a regular file of the work dir's own; None if absent, a symlink, a hard link, too big or
    anything else."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or _foreign(dir_fd, info):
            return None
        data = handle.read(ARTIFACT_LIMIT + 1)
    return None if len(data) > ARTIFACT_LIMIT else data


def _foreign(dir_fd: int, info: os.stat_result) -> str | None:
    """Why an opened file may be a host file rather than one the program wrote, or None. O_NOFOLLOW stops
    symlinks, not hard links: a second name (st_nlink > 1) may be a host file's, and a file on another device
    than the work dir was not made in it (a bind mount)."""
    if info.st_nlink > 1:
        return f"is a hard link ({info.st_nlink} names): it may be a host file"
    if info.st_dev != os.fstat(dir_fd).st_dev:
        return "is on another file system than the work dir"
    return None


def _utf8(data: bytes | None) -> str | None:
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None
