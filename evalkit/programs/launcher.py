"""The candidate program's parent inside its sandbox: it lays out the task, runs the program under limits and
reports back what the program left, once nothing the program started is alive.

evalkit runs this file's text with `python -I -c` (standard library only, nothing of evalkit importable there).
It reads one JSON request on stdin: `files` (name -> base64 bytes, written into its working directory, the task
folder), `program` and `args`, `timeout_s`, `limits` (memory_bytes, cpu_s, processes, file_bytes) and `fetch`
(name -> the most bytes to send back). It answers with one JSON report on its stdout, which the program cannot
reach: the program's own stdout and stdin are /dev/null, its stderr a memory file the launcher reads the tail
of, and the launcher is not dumpable, so a process of the same user can neither ptrace it nor open its
/proc/PID/fd. It adopts every orphaned descendant (a child subreaper, setsid() ones included) and kills them
all once the program exits or its time is up; in a PID namespace the kernel also kills whatever is left when
the namespace ends. Files are read back only after that, so nothing can swap them while they are read.

With `relay` (the path of evalkit's endpoint socket as the sandbox sees it), the launcher listens on a loopback port
of the sandbox's own network namespace and relays each connection to that socket, byte for byte: the program's SDK
speaks HTTP over TCP to OPENAI_BASE_URL / ANTHROPIC_BASE_URL, and the socket is the only way out. `env` adds those
variables (and dummy keys) to the program's environment, and, for each name in `mcp`, the command of a relay the
program starts as that MCP server (stdio), which sends each message to evalkit's MCP proxy through the same
socket; `python` is the interpreter to run it with (a virtual environment's, whose packages it imports), else the
launcher's own.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import resource
import shlex
import signal
import socket
import stat
import sys
import threading
import time
from typing import Any

_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 4, 36, 38
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # no symlink to a host file; a FIFO must not hang
_STDERR_TAIL = 4096
# the last lines of a Python program's stderr that say which limit stopped it
_SIGNS = {"memory": ("MemoryError", "[Errno 12]"), "processes": ("[Errno 11]",), "disk": ("[Errno 28]", "[Errno 27]")}


def _prctl(option: int, value: int) -> bool:
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _run_child(program: str, args: list[str], limits: dict[str, int], stderr: int, python: str,
               extra_env: dict[str, str]) -> None:
    """In the forked child: the limits, then the program. Never returns."""
    try:
        os.dup2(stderr, 2)
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
        # SIGXCPU at the soft limit; the kernel kills at the hard one if the program ignores it
        resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if "processes" in limits:  # left out where the count would be of evalkit's own user's processes
            resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
        env = {name: os.environ[name] for name in ("LANG", "HOME", "TMPDIR") if name in os.environ}
        os.execve(python, [python, "-I", program, *args], {**env, **extra_env})
    finally:
        os._exit(127)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes one way until either side closes; then close both ways of the pair."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _relay(listener: socket.socket, target: str) -> None:
    """Accept the program's connections and join each to a new connection to evalkit's endpoint socket."""
    while True:
        try:
            inner, _ = listener.accept()
        except OSError:
            return
        outer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            outer.connect(target)
        except OSError:
            inner.close()
            outer.close()
            continue
        for source, sink in ((inner, outer), (outer, inner)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _endpoint_env(port: int, mcp: list[str]) -> dict[str, str]:
    """What the program's SDK reads to find evalkit's endpoint (the keys are dummies the endpoint ignores), and for
    each proxied MCP server the command the program starts instead of the server (EVALKIT_MCP_<NAME>, a shell-quoted
    command line: the relay below, given the server's path on the endpoint; an MCP client hands a server only a few
    variables of its environment, so the address is in the command)."""
    base = f"http://127.0.0.1:{port}"
    env = {"OPENAI_BASE_URL": base + "/v1", "ANTHROPIC_BASE_URL": base,
           "OPENAI_API_KEY": "evalkit-endpoint-dummy-key", "ANTHROPIC_API_KEY": "evalkit-endpoint-dummy-key"}
    for name in mcp:
        env[f"EVALKIT_MCP_{name.upper()}"] = shlex.join([sys.executable, "-I", "-c", _MCP_RELAY,
                                                          f"{base}/evalkit/mcp/{name}"])
    return env


# The stand-in for an MCP server over stdio: each JSON-RPC message the client writes (one a line) is POSTed to
# evalkit's MCP proxy, and what it answers (nothing for a notification) is written back, one a line.
_MCP_RELAY = """
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
for line in sys.stdin.buffer:
    if not line.strip():
        continue
    request = urllib.request.Request(sys.argv[1], line.strip(), {"Content-Type": "application/json"})
    try:
        with opener.open(request, timeout=3600) as answer:
            body = answer.read()
    except urllib.error.HTTPError as error:
        body = error.read()
    except OSError as error:
        sys.stderr.write(f"evalkit MCP relay: {error}\\n")
        sys.exit(1)
    if body.strip():
        sys.stdout.buffer.write(body.strip() + b"\\n")
        sys.stdout.buffer.flush()
"""


def _adopted() -> list[int]:
    """The live processes whose parent is this launcher (its own children and the orphans it adopted)."""
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


def _kill_all() -> int:
    """Kill and reap every descendant; how many there were. Each sweep finds the children of those the previous
    one killed, so the count is of every process killed, not of one sweep."""
    killed: set[int] = set()
    for _ in range(1000):
        alive = _adopted()
        killed.update(alive)
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
    return len(killed)


def _fetch(name: str, limit: int, own_device: int) -> dict[str, Any]:
    """What the program left under `name`: its kind, and its bytes (at most limit + 1) when a plain file."""
    try:
        if stat.S_ISLNK(os.lstat(name).st_mode):
            return {"kind": "symlink"}
        fd = os.open(name, _READ_FLAGS)
    except FileNotFoundError:
        return {"kind": "missing"}
    except OSError as error:
        return {"kind": "unreadable", "error": error.strerror or str(error)}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {"kind": "not_regular"}
        # O_NOFOLLOW stops symlinks, not hard links: a second name may be a host file's; a file on another device
        # than the task folder was not made in it
        if info.st_nlink > 1:
            return {"kind": "hard_link", "names": info.st_nlink}
        if info.st_dev != own_device:
            return {"kind": "foreign_device"}
        data = os.pread(fd, limit + 1, 0)
    except OSError as error:
        return {"kind": "unreadable", "error": error.strerror or str(error)}
    finally:
        os.close(fd)
    return {"kind": "file", "size": info.st_size, "data": base64.b64encode(data).decode("ascii")}


def _limits_hit(status: int, cpu_s: float, killed: int, stderr_tail: str, limits: dict[str, int],
                disk_full: bool, timed_out: bool) -> list[str]:
    """The limits the program ran into, from its end, its CPU time, what was still alive and its last words."""
    hit = []
    signalled = -os.waitstatus_to_exitcode(status) if os.WIFSIGNALED(status) else None
    last_lines = stderr_tail.strip().splitlines()[-3:]
    if any(sign in line for line in last_lines for sign in _SIGNS["memory"]):
        hit.append("memory")
    if signalled == signal.SIGXCPU or (signalled == signal.SIGKILL and not timed_out
                                       and cpu_s >= limits["cpu_s"] - 0.05):
        hit.append("cpu")
    # the launcher and the program itself count against the same limit
    near = killed >= limits.get("processes", sys.maxsize) - 3
    if near or any(s in line for line in last_lines for s in _SIGNS["processes"]):
        hit.append("processes")
    if disk_full or signalled == signal.SIGXFSZ or any(s in line for line in last_lines for s in _SIGNS["disk"]):
        hit.append("disk")
    return hit


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    report = os.fdopen(os.dup(1), "w")  # not inheritable: the program never holds the way back to evalkit
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_DUMPABLE, 0)
    for name, data in request["files"].items():
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.b64decode(data))
    own_device = os.stat(".").st_dev
    limits: dict[str, int] = request["limits"]
    stderr = os.memfd_create("stderr")  # close-on-exec here; the child makes it its fd 2
    env: dict[str, str] = {}
    listener = None
    if request.get("relay"):
        # bound before the fork, so the program can connect at once; not inheritable, so the program never holds it
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        env = _endpoint_env(listener.getsockname()[1], list(request.get("mcp") or []))
    started = time.monotonic()
    child = os.fork()
    if child == 0:
        _run_child(request["program"], request["args"], limits, stderr, request.get("python") or sys.executable,
                   env)
    if listener is not None:  # threads only after the fork: the child starts from a one-thread copy
        threading.Thread(target=_relay, args=(listener, request["relay"]), daemon=True).start()
    timed_out = False

    def stop(*_: object) -> None:
        nonlocal timed_out
        timed_out = True
        os.kill(child, signal.SIGKILL)

    signal.signal(signal.SIGALRM, stop)
    signal.signal(signal.SIGTERM, stop)
    signal.setitimer(signal.ITIMER_REAL, request["timeout_s"])
    _, status, usage = os.wait4(child, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)
    wall_ms = round((time.monotonic() - started) * 1000, 3)
    killed = _kill_all()
    disk = os.statvfs(".")
    # a size-limited tmpfs with (next to) nothing left; the host's disk when there is none
    disk_full = request.get("task_tmpfs", False) and disk.f_bavail * disk.f_frsize < 64 * 1024
    size = os.fstat(stderr).st_size
    tail = os.pread(stderr, _STDERR_TAIL, max(0, size - _STDERR_TAIL)).decode("utf-8", "replace")
    cpu_s = usage.ru_utime + usage.ru_stime
    json.dump({"exit_code": os.waitstatus_to_exitcode(status), "timed_out": timed_out, "wall_ms": wall_ms,
               "cpu_s": round(cpu_s, 3),
               "limits_hit": _limits_hit(status, cpu_s, killed, tail, limits, disk_full, timed_out),
               "files": {name: _fetch(name, limit, own_device) for name, limit in request["fetch"].items()}},
              report)
    report.close()


if __name__ == "__main__":
    main()
