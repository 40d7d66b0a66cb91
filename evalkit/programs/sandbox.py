"""Run a candidate program for one case, isolated as far as this machine allows, and say which isolation held.

The program gets a task folder holding only itself, `task.json` and the files it was given (references and
graders are never written there), stdin on /dev/null, its output discarded, an environment of LANG, HOME and
TMPDIR only, and `python -I`. A launcher (evalkit.programs.launcher) lays the folder out, runs the program
under limits, kills every descendant when it exits or its time is up, and only then reads back `response.json`
and the watched files and reports them on a channel the program cannot reach.

Where bubblewrap works (evalkit.programs.isolation) all of that happens in a view of the machine holding only
the task folder and the runtime, as an unprivileged user, in its own network and PID namespaces, with memory,
CPU time, processes and disk limited. Where it does not, the launcher runs in a host temporary directory as
evalkit's own user, in whatever namespaces `unshare` gives: host files stay readable by absolute path there, and
evalkit's runner fingerprints the suite's checks before and after the candidates run. `Isolation.to_json()`
(each run's `provenance.isolation`) names every layer as held or not; a policy can require them.

A program that calls a model (a suite with `program.endpoint`) reaches evalkit's endpoint (evalkit.programs.endpoint)
and nothing else: the endpoint listens on a Unix socket, which bubblewrap binds into the view (a path-bound socket is
a file, so it crosses the network namespace, which bubblewrap leaves with a loopback of its own and no way out), and
the launcher relays a loopback port of the sandbox to it. The program finds it by OPENAI_BASE_URL and
ANTHROPIC_BASE_URL, with dummy keys; no real key is in the launcher's environment to inherit. A program's packages
(the `openai` SDK) come from a virtual environment shown read-only (`python_env`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import signal
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from evalkit.core.config import ProgramLimits
from evalkit.core.errors import InputError
from evalkit.core.fingerprint import sha256
from evalkit.programs import launcher
from evalkit.programs.isolation import (
    ENDPOINT_SOCKET,
    NOBODY,
    PROGRAM_ENV,
    Isolation,
    probe_isolation,
    seccomp_file,
)

__all__ = ["ARTIFACT_LIMIT", "LAUNCHER", "ProgramRun", "check_python_env", "run_program"]

LAUNCHER = Path(launcher.__file__).read_text(encoding="utf-8")
TASK, RESPONSE = "task.json", "response.json"
Status = Literal["finished", "timeout", "crashed", "limit_exceeded", "missing_response", "oversized_response",
                 "invalid_response"]
ARTIFACT_LIMIT = 1 << 20  # a watched file bigger than 1 MiB is not evidence a grader needs; never load it
# Beyond the program's own timeout: the launcher's start, its kill of every descendant and its report. Past it
# evalkit kills the launcher itself, and what the program left is lost with it.
_LAUNCHER_GRACE_S = 10.0
_MIB = 1024 * 1024


@dataclass(frozen=True)
class ProgramRun:
    """What one candidate run produced. `wall_ms` is this machine's process time, not a model latency."""

    status: Status
    reason: str | None  # None when finished, else one line saying what went wrong
    response: dict[str, Any] | None  # the response.json object, only when finished
    artifacts: dict[str, str | None]  # each watched file's text after the run; None if absent, a symlink, a
    # hard link (more than one name), on another file system, over ARTIFACT_LIMIT or not UTF-8
    artifact_sha256: dict[str, str | None]  # of the bytes, so a non-UTF-8 file still has a hash
    visible_files: tuple[str, ...]  # everything in the task folder when the program started
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
                *, timeout_s: float, max_response_bytes: int, limits: ProgramLimits | None = None,
                isolation: Isolation | None = None, endpoint: Path | None = None,
                python_env: Path | None = None, mcp: Sequence[str] = ()) -> ProgramRun:
    """Run `program` on `task` in a fresh task folder and read back its response.json and the `watch`ed files.

    `files` (name -> text) are written beside the program; `watch` names the files whose text after the run is
    evidence. `isolation` defaults to the best this machine allows (probe_isolation). `endpoint` is the Unix socket
    of evalkit's endpoint the program may call (the only way out), `mcp` the MCP servers it reaches through the
    endpoint's MCP proxy (EVALKIT_MCP_<NAME>), `python_env` a virtual environment whose packages the program imports.
    """
    if not program.exists():
        raise InputError(f"{program}: candidate program not found")
    if not program.is_file():  # a device (/dev/zero), a FIFO or a folder: copying it would never end or fail
        raise InputError(f"{program}: the candidate program is not a regular file; name a script file")
    for name in [*files, *watch]:
        _check_name(name, program.name)
    limits = limits or ProgramLimits()
    isolation = isolation or probe_isolation()
    contents = {program.name: program.read_bytes(), TASK: task,
                **{name: text.encode("utf-8") for name, text in files.items()}}
    request = {
        "files": {name: base64.b64encode(data).decode("ascii") for name, data in contents.items()},
        "program": program.name, "args": list(args), "timeout_s": timeout_s,
        "limits": _rlimits(limits, isolation), "task_tmpfs": isolation.bubblewrap,
        "fetch": {RESPONSE: max_response_bytes, **{name: ARTIFACT_LIMIT for name in watch}},
    }
    with tempfile.TemporaryDirectory(prefix="evalkit-candidate-", ignore_cleanup_errors=True) as tmp:
        # under bubblewrap the launcher never sees this directory: it only gives the process a harmless cwd (and
        # holds the shim of a program's virtual environment, shown read-only)
        binds: list[tuple[str, str]] = []
        if endpoint is not None:
            request["relay"] = ENDPOINT_SOCKET if isolation.bubblewrap else str(endpoint)
            binds.append((str(endpoint), ENDPOINT_SOCKET))
            request["mcp"] = list(mcp)
        if python_env is not None:
            request["python"], env_binds = _program_env(python_env, isolation, Path(tmp))
            binds += env_binds
        with seccomp_file(isolation) as fd:
            command = [*isolation.command(limits, fd, binds), isolation.python, "-I", "-c", LAUNCHER]
            report, failure = _launch(command, Path(tmp), json.dumps(request).encode(), timeout_s, isolation, fd)
    visible = tuple(sorted(contents))
    if report is None:
        status, reason = failure
        return ProgramRun(status=status, reason=reason, response=None, artifacts=dict.fromkeys(watch),
                          artifact_sha256=dict.fromkeys(watch), visible_files=visible, input_bytes=len(task),
                          output_bytes=None, wall_ms=round(timeout_s * 1000, 3), isolation=isolation.label)
    fetched = report.get("files", {})
    status, reason = _ending(report, timeout_s, limits)
    response, output_bytes = None, None
    if status == "finished":
        status, reason, response, output_bytes = _read_response(fetched.get(RESPONSE, {}), max_response_bytes)
    data = {name: _artifact(fetched.get(name, {})) for name in watch}
    return ProgramRun(
        status=status, reason=reason, response=response,
        artifacts={name: _utf8(value) for name, value in data.items()},
        artifact_sha256={name: None if value is None else sha256(value) for name, value in data.items()},
        visible_files=visible, input_bytes=len(task), output_bytes=output_bytes,
        wall_ms=float(report.get("wall_ms", 0.0)), isolation=isolation.label)


def check_python_env(env: Path, isolation: Isolation | None = None) -> None:
    """Refuse, in one line naming the path and what to do, a `python_env` no case could run with: no virtual
    environment there, another Python version than the sandbox's, or (under bubblewrap) a site-packages the user
    bwrap runs as cannot reach. bwrap binds the folder as that user (nobody, when evalkit runs as root); a checkout
    under a private folder (mktemp -d makes 0700) would otherwise fail every case alike. The runner calls this
    before the first case; every case checks it again (_program_env)."""
    isolation = isolation or probe_isolation()
    found = sorted(env.glob("lib/python3.*/site-packages"))
    if not found:
        raise InputError(f"{env}: suite.program.python_env names no virtual environment (no lib/python3.*/"
                         "site-packages); create it with python -m venv and install the program's packages")
    if not isolation.bubblewrap:
        return
    packages = found[-1]
    version = packages.parent.name  # python3.X
    inner = _version(isolation.python)
    if version != inner:
        raise InputError(f"{env}: suite.program.python_env is for {version}, the sandbox's interpreter "
                         f"{isolation.python} is {inner}; make the environment with that interpreter")
    uid = os.geteuid() if isolation.user is None else isolation.user
    blocked = _unreachable(packages.resolve(), uid)
    if blocked is not None:
        folder, mode = blocked
        who = "nobody (uid 65534)" if uid == NOBODY else f"uid {uid}"
        fix = "o+rx" if folder == packages.resolve() else "o+x"
        raise InputError(f"{env}: suite.program.python_env cannot be reached by the sandbox: {folder} (mode "
                         f"{mode:04o}) does not let {who}, the user bubblewrap runs as, through; run chmod {fix} "
                         f"{folder}, or make the environment under a folder others may enter")


def _unreachable(packages: Path, uid: int) -> tuple[Path, int] | None:
    """The first folder on the way to `packages` (itself included, which must also be readable) that `uid` may not
    pass, by its permission bits, with its mode; None when every one lets it through. Root passes everything."""
    if uid == 0:
        return None
    for folder in (*reversed(packages.parents), packages):
        try:
            info = folder.stat()
        except OSError:
            return folder, 0
        shift = 6 if info.st_uid == uid else 3 if uid == NOBODY and info.st_gid == NOBODY else 0
        need = 0o5 if folder == packages else 0o1  # read the packages; only pass through the folders above
        if (info.st_mode >> shift) & need != need:
            return folder, stat.S_IMODE(info.st_mode)
    return None


def _program_env(env: Path, isolation: Isolation, tmp: Path) -> tuple[str, list[tuple[str, str]]]:
    """The interpreter to run the program with, and what to show read-only, for a virtual environment `env`.

    Outside bubblewrap, the environment's own interpreter. Inside, only /usr and the sandbox's interpreter exist, so a
    shim environment is shown at PROGRAM_ENV: a pyvenv.cfg and `bin/python` naming the sandbox's interpreter, whose
    site-packages is `env`'s (read-only). Python reads pyvenv.cfg even under `-I`, so the program imports `env`'s
    packages and nothing of the host's environment variables. The two interpreters must be one Python version:
    compiled packages are built for one."""
    check_python_env(env, isolation)
    if not isolation.bubblewrap:
        return str(env / "bin" / "python"), []
    packages = sorted(env.glob("lib/python3.*/site-packages"))[-1]
    version = packages.parent.name  # python3.X
    shim = tmp / "env"
    (shim / "bin").mkdir(parents=True)
    (shim / "lib" / version / "site-packages").mkdir(parents=True)
    (shim / "bin" / "python").symlink_to(isolation.python)
    (shim / "pyvenv.cfg").write_text(f"home = {Path(isolation.python).parent}\ninclude-system-site-packages = "
                                     f"false\nversion = {version.removeprefix('python')}\n", encoding="utf-8")
    for folder in (tmp, *(p for p in shim.rglob("*") if p.is_dir() and not p.is_symlink()), shim):
        os.chmod(folder, 0o755)  # nobody must be able to reach what bubblewrap binds
    return f"{PROGRAM_ENV}/bin/python", [(str(shim), PROGRAM_ENV),
                                         (str(packages), f"{PROGRAM_ENV}/lib/{version}/site-packages")]


@functools.cache
def _version(python: str) -> str:
    """`python3.X` of an interpreter."""
    done = subprocess.run([python, "-I", "-c", "import sys; print(f'python3.{sys.version_info[1]}')"],
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()


def _rlimits(limits: ProgramLimits, isolation: Isolation) -> dict[str, int]:
    out = {"memory_bytes": limits.memory_mb * _MIB, "cpu_s": limits.cpu_s, "file_bytes": limits.disk_mb * _MIB}
    if isolation.limited_processes:
        out["processes"] = limits.processes
    return out


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


def _launch(command: list[str], cwd: Path, request: bytes, timeout_s: float, isolation: Isolation,
            seccomp_fd: int | None) -> tuple[dict[str, Any] | None, tuple[Status, str | None]]:
    """Start the launcher in its own session, hand it the request, and parse its report; on no report, why."""
    env = {"LANG": "C.UTF-8", "HOME": str(cwd), "TMPDIR": str(cwd)}  # nothing inherited: no credentials leak
    if isolation.user is not None:
        os.chmod(cwd, 0o755)  # nobody must be able to start in it
    # as another user (nobody) with every group of evalkit's dropped
    proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True, user=isolation.user,
                            group=isolation.user, extra_groups=None if isolation.user is None else [],
                            pass_fds=() if seccomp_fd is None else (seccomp_fd,))
    try:
        out, err = proc.communicate(request, timeout=timeout_s + _LAUNCHER_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, ("timeout", f"timeout after {timeout_s:g} s (the launcher did not stop the program in time; "
                                 "what it left is lost)")
    except BaseException:  # the parent was interrupted: leave nothing running behind it
        _kill_group(proc)
        raise
    _kill_group(proc)  # without a PID namespace, a descendant could have left the launcher's reach
    try:
        report = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        report = None
    if not isinstance(report, dict):
        lines = err.decode("utf-8", "replace").strip().splitlines() or [f"exit code {proc.returncode}"]
        return None, ("crashed", f"the launcher gave no report ({lines[-1][:200]})")
    return report, ("finished", None)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # before reaping: the zombie leader keeps the group id from reuse
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _ending(report: Mapping[str, Any], timeout_s: float, limits: ProgramLimits) -> tuple[Status, str | None]:
    """How the program ended, by the launcher's report: a limit it ran into first, then a timeout or a crash."""
    hit = [name for name in report.get("limits_hit", []) if name in _LIMIT_WORDS]
    if hit:
        return "limit_exceeded", "; ".join(_LIMIT_WORDS[name](limits) for name in hit)
    if report.get("timed_out"):
        return "timeout", f"timeout after {timeout_s:g} s"
    code = int(report.get("exit_code", 0))
    if code != 0:
        return "crashed", f"exit code {code}" if code > 0 else f"killed by signal {-code}"
    return "finished", None


_LIMIT_WORDS = {
    "memory": lambda limits: f"memory limit reached ({limits.memory_mb} MiB per process)",
    "cpu": lambda limits: f"CPU time limit reached ({limits.cpu_s} s per process)",
    "processes": lambda limits: f"process limit reached ({limits.processes} processes)",
    "disk": lambda limits: f"disk limit reached ({limits.disk_mb} MiB)",
}


def _read_response(fetched: Mapping[str, Any], limit: int) -> tuple[Status, str | None, dict[str, Any] | None,
                                                                    int | None]:
    """Parse response.json, as the launcher found it, as a JSON object, checking its kind and size first."""
    kind = fetched.get("kind")
    if kind != "file":
        why = _KIND_WORDS.get(str(kind), "could not be read")
        if kind == "missing":
            return "missing_response", "no response.json", None, None
        if kind == "hard_link":
            why = f"is a hard link ({fetched.get('names')} names): it may be a host file"
        elif kind == "unreadable":
            return "invalid_response", f"response.json cannot be opened ({fetched.get('error')})", None, None
        return "invalid_response", f"response.json {why}", None, None
    size = int(fetched.get("size", 0))
    data = _decode(fetched)
    if size > limit or data is None or len(data) > limit:
        return "oversized_response", f"response.json is {size} bytes; the limit is {limit}", None, None
    try:
        # NaN and Infinity are not JSON; accepting them would make the report itself invalid JSON.
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return "invalid_response", "response.json is not valid UTF-8 JSON", None, len(data)
    if not isinstance(value, dict):
        return "invalid_response", "response.json is not a JSON object", None, len(data)
    return "finished", None, value, len(data)


_KIND_WORDS = {"symlink": "is a symlink", "not_regular": "is not a regular file",
               "foreign_device": "is on another file system than the task folder"}


def _artifact(fetched: Mapping[str, Any]) -> bytes | None:
    """The bytes of a watched file the program left; None if absent, not its own regular file, or too big."""
    if fetched.get("kind") != "file" or int(fetched.get("size", 0)) > ARTIFACT_LIMIT:
        return None
    data = _decode(fetched)
    return None if data is None or len(data) > ARTIFACT_LIMIT else data


def _decode(fetched: Mapping[str, Any]) -> bytes | None:
    try:
        return base64.b64decode(str(fetched.get("data", "")), validate=True)
    except (binascii.Error, ValueError):
        return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _utf8(data: bytes | None) -> str | None:
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None
