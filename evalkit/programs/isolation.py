"""Find out once how candidate programs can be isolated on this machine, and state each layer as held or not.

Best: bubblewrap (`bwrap`). The launcher (evalkit.programs.launcher) runs as an unprivileged user (nobody, when
evalkit runs as root) in new user, mount, PID, network, IPC, UTS and cgroup namespaces, with no capabilities,
no_new_privs, no further user namespaces, and a view of the machine holding only: the task folder (a size-limited
tmpfs, read-write), /usr and the Python runtime (read-only), the dynamic linker's cache, a private /proc, a minimal
/dev and a size-limited private /tmp. Nothing else exists there: no project, suite or references, no home, no other
user's files, no host Unix socket paths but evalkit's own endpoint socket when the suite's program calls a model
(evalkit.programs.endpoint). Limits (memory, CPU time, processes, file size) are set on the program by
the launcher; the tmpfs sizes bound the disk it can write.

Otherwise: util-linux `unshare` gives what it can (network and PID namespaces) and the program runs in a host
temporary directory as evalkit's own user, so host files stay readable by absolute path. The layers that did not
hold are named, with why, in `Isolation.to_json()` (each run's `provenance.isolation`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.core.config import ProgramLimits
from evalkit.core.isolation import Layer
from evalkit.programs.seccomp import DENIED, seccomp_filter

__all__ = ["ENDPOINT_SOCKET", "NOBODY", "PROGRAM_ENV", "TASK_DIR", "Isolation", "probe_isolation", "seccomp_file",
           "unisolated"]

NOBODY = 65534  # the conventional unprivileged user and group: owns no file of the machine
TASK_DIR = "/task"  # where the task folder is inside the bubblewrap view
ENDPOINT_SOCKET = "/evalkit/endpoint.sock"  # where evalkit's endpoint socket is inside it, when the suite has one
PROGRAM_ENV = "/evalkit/env"  # where a program's virtual environment is inside it
_MIB = 1024 * 1024
_SYSTEM_DIRS = ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin")  # links into /usr, or directories

# unshare: what the probe tries, best first: every namespace, then the network alone, then the PID namespace alone
_NAMESPACES = ("--net", "--pid", "--fork", "--kill-child", "--mount-proc")
_AS_USER = ("--user", "--map-root-user")  # not root: the namespaces may still be had inside a user namespace
_UNSHARE_PROBES = (_NAMESPACES, (*_AS_USER, *_NAMESPACES), ("--net",), (*_AS_USER, "--net"), _NAMESPACES[1:],
                   (*_AS_USER, *_NAMESPACES[1:]))


@dataclass(frozen=True)
class Isolation:
    """How candidate programs run here: the command prefix, where the task folder is, and each layer's state."""

    layers: dict[Layer, tuple[bool, str]]  # layer -> (held, what holds or why not)
    prefix: tuple[str, ...] = ()  # the command before the interpreter (bwrap ... -- or unshare ... --)
    python: str = sys.executable  # the interpreter the launcher and the program run with
    user: int | None = None  # the host user to run bwrap as (nobody when evalkit is root), else evalkit's own
    bubblewrap: bool = False  # the task folder is the sandbox's own tmpfs at TASK_DIR, not a host directory
    limited_processes: bool = False  # RLIMIT_NPROC counts the sandbox's user alone, so it can be set
    seccomp: bytes | None = None  # the filter bubblewrap loads (evalkit.programs.seccomp), if any

    def held(self, layer: Layer) -> bool:
        return self.layers[layer][0]

    @property
    def label(self) -> str:
        """One line naming every layer, held or NOT, with what holds or why not."""
        return "; ".join(f"{layer.value}: {'held' if held else 'NOT held'} ({detail})"
                         for layer, (held, detail) in self.layers.items())

    def to_json(self) -> dict[str, Any]:
        return {"layers": {layer.value: {"held": held, "detail": detail}
                           for layer, (held, detail) in self.layers.items()}, "label": self.label}

    def command(self, limits: ProgramLimits, seccomp_fd: int | None = None,
                binds: Sequence[tuple[str, str]] = ()) -> list[str]:
        """The command that starts the launcher; the tmpfs sizes are this run's disk limit, `seccomp_fd` an open
        descriptor holding `self.seccomp` for bubblewrap to read, and `binds` (host path, sandbox path) what the run
        shows besides: evalkit's endpoint socket (read-write: connecting needs it) and a program's packages
        (read-only)."""
        if not self.bubblewrap:
            return list(self.prefix)
        size = str(limits.disk_mb * _MIB)
        seccomp = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
        shown = [arg for host, inside in binds
                 for arg in (("--bind", host, inside) if inside == ENDPOINT_SOCKET else ("--ro-bind", host, inside))]
        return [*self.prefix[:-1], "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", TASK_DIR,
                *shown, "--chdir", TASK_DIR, *seccomp, "--"]


@functools.cache
def probe_isolation() -> Isolation:
    """Find out once what this machine allows; never raises. bubblewrap first, unshare where it fails."""
    failures: list[str] = []
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        failures.append("bubblewrap (bwrap) not found")
    else:
        filter_ = seccomp_filter()
        for python, user in _bubblewrap_tries():
            prefix = _bubblewrap_prefix(bwrap, python)
            trial = Isolation(layers={}, prefix=prefix, python=python, bubblewrap=True, seccomp=filter_)
            with seccomp_file(trial) as fd:
                why = _try([*trial.command(ProgramLimits(), fd), python, "-I", "-c",
                            f"import os; assert os.getcwd() == {TASK_DIR!r} and os.getpid() == 1"], user, fd)
            if why is None:
                return _bubblewrap_isolation(prefix, python, user, filter_)
            who = "nobody" if user == NOBODY else "evalkit's user"
            failures.append(f"bwrap as {who} with {python}: {why}")
    return _unshare_isolation("; ".join(failures))


def _bubblewrap_tries() -> list[tuple[str, int | None]]:
    """(interpreter, host user) pairs to try: evalkit's interpreter as nobody, the system's as nobody (nobody may
    not reach evalkit's, under /root say), then evalkit's as evalkit's own user."""
    own = os.path.realpath(sys.executable)
    if os.geteuid() != 0:
        return [(own, None)]
    tries: list[tuple[str, int | None]] = [(own, NOBODY)]
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is not None and os.path.realpath(system) != own:
        tries.append((os.path.realpath(system), NOBODY))
    return [*tries, (own, None)]


def _bubblewrap_prefix(bwrap: str, python: str) -> tuple[str, ...]:
    """bwrap's arguments up to `--`, without the task folder and /tmp (sized per run, evalkit.programs.sandbox)."""
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--as-pid-1", "--uid", str(NOBODY), "--gid", str(NOBODY), "--hostname", "sandbox", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr"]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    runtime = _runtime_root(python)
    if runtime is not None:
        args += ["--ro-bind", runtime, runtime]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--proc", "/proc", "--dev", "/dev",
             "--clearenv", "--setenv", "LANG", "C.UTF-8", "--setenv", "HOME", TASK_DIR, "--setenv", "TMPDIR",
             TASK_DIR, "--"]
    return tuple(args)


def _runtime_root(python: str) -> str | None:
    """The Python installation to show read-only when it is not under /usr (pyenv, a hosted tool cache)."""
    if python.startswith("/usr/"):
        return None
    root = str(Path(python).parent.parent)  # <prefix>/bin/python3.x
    return root if root != "/" else None


@contextlib.contextmanager
def seccomp_file(isolation: Isolation) -> Iterator[int | None]:
    """A descriptor from which bubblewrap reads the isolation's seccomp filter (None without one); closed after."""
    if isolation.seccomp is None:
        yield None
        return
    read, write = os.pipe()
    try:
        os.write(write, isolation.seccomp)  # a few hundred bytes: the pipe holds them without a reader
        os.close(write)
        yield read
    finally:
        os.close(read)


def _try(command: list[str], user: int | None, fd: int | None = None) -> str | None:
    """None if `command` ran and exited 0 with an empty environment, else one line saying why not."""
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={}, timeout=10, check=False, user=user, group=user,
                              extra_groups=None if user is None else [], pass_fds=() if fd is None else (fd,))
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        return str(error)
    if done.returncode == 0:
        return None
    lines: list[str] = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return (lines or [f"exit code {done.returncode}"])[-1][:200]


def _bubblewrap_isolation(prefix: tuple[str, ...], python: str, user: int | None,
                          filter_: bytes | None) -> Isolation:
    uid = os.geteuid() if user is None else user
    user_held = uid != 0
    who = ("nobody (uid 65534), another user than evalkit's" if user == NOBODY
           else f"evalkit's own user (uid {uid}), shown as nobody inside its user namespace")
    layers = {
        Layer.FILESYSTEM: (True, "bubblewrap mount namespace: the task folder (read-write), /usr and the Python "
                                 f"runtime {python} (read-only), a private /proc, /dev and /tmp; no project, suite, "
                                 "references, home or host Unix socket paths"),
        Layer.NETWORK: (True, "own empty network namespace: no interfaces but a loopback of its own, the host's "
                              "abstract Unix sockets cut"),
        Layer.PID: (True, "own PID namespace with the launcher as its init: evalkit invisible, the whole tree "
                          "killed when the program exits or times out, setsid() descendants included"),
        Layer.USER: (user_held, f"{who}; no capabilities, no_new_privs, no further user namespaces; "
                                + (f"a seccomp filter denying {len(DENIED)} system calls (ptrace, bpf, mount, "
                                   "unshare, keyctl, io_uring ...)" if filter_ is not None
                                   else f"no seccomp filter (no system call table for {platform.machine()})")
                                + "; the launcher is not dumpable" + ("" if user_held else "; it is root on the host")),
        Layer.LIMITS: (True, _limits_detail(processes=True, disk=True)),
    }
    return Isolation(layers=layers, prefix=prefix, python=python, user=user, bubblewrap=True,
                     limited_processes=True, seccomp=filter_)


def _limits_detail(*, processes: bool, disk: bool) -> str:
    parts = ["memory: address space per process (RLIMIT_AS)", "CPU time per process (RLIMIT_CPU)"]
    parts.append("processes: RLIMIT_NPROC of the sandbox's own user" if processes
                 else "processes: NOT limited (RLIMIT_NPROC would count evalkit's own user, or is not enforced "
                      "for root)")
    parts.append("disk: the task folder and /tmp are size-limited tmpfs" if disk
                 else "disk: NOT limited but for the size of each file (RLIMIT_FSIZE): the task folder is a host "
                      "directory")
    return ", ".join(parts)


def unisolated(why: str) -> Isolation:
    """No namespace at all: the launcher and the limits it can set still run, in a host directory."""
    return _host_isolation((), why, why)


def _unshare_isolation(why_not_bubblewrap: str) -> Isolation:
    """The cooperative fallback: namespaces from util-linux unshare where they work, in a host directory."""
    unshare = shutil.which("unshare")
    failures: list[str] = []
    if unshare is None:
        failures.append("util-linux unshare not found")
    else:
        for flags in _UNSHARE_PROBES:
            check = "import os; assert os.getpid() == 1" if "--pid" in flags else ""
            why = _try([unshare, *flags, "--", sys.executable, "-I", "-c", check], None)
            if why is None:
                return _host_isolation((unshare, *flags, "--"), why_not_bubblewrap, "; ".join(failures))
            failures.append(f"unshare {' '.join(flags)}: {why}")
    return _host_isolation((), why_not_bubblewrap, "; ".join(failures))


def _host_isolation(prefix: tuple[str, ...], why_not_bubblewrap: str, why_not_unshare: str) -> Isolation:
    network, pid = "--net" in prefix, "--pid" in prefix
    layers = {
        Layer.FILESYSTEM: (False, "a host directory as evalkit's own user: host files (the suite and its "
                                  f"references included) readable by absolute path ({why_not_bubblewrap})"),
        Layer.NETWORK: (True, "own empty network namespace (unshare); host Unix sockets bound to a path still "
                              "reachable") if network else (False, why_not_unshare),
        Layer.PID: (True, "own PID namespace (unshare) with the launcher as its init") if pid
        else (False, f"{why_not_unshare}; evalkit's process, environment and folder readable through /proc"),
        Layer.USER: (False, f"evalkit's own user (uid {os.geteuid()})"),
        Layer.LIMITS: (False, _limits_detail(processes=False, disk=False)),
    }
    return Isolation(layers=layers, prefix=prefix)
