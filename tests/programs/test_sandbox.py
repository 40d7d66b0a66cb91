"""Candidate programs run in a view of the machine holding their task alone, as an unprivileged user, under limits,
their whole process tree killed, judged on files that are their own; where that cannot be had, each layer says so."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.config import ProgramLimits
from evalkit.core.errors import InputError
from evalkit.core.isolation import Layer
from evalkit.programs.isolation import Isolation, probe_isolation, unisolated
from evalkit.programs.sandbox import ProgramRun, run_program

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


RESPOND = """
import json, os, sys
def respond(value):
    with open("response.json", "w") as f:
        json.dump(value, f)
"""


@pytest.fixture(autouse=True)
def fresh_probe() -> Iterator[None]:
    """Tests that force the probe's unavailable path must not leave that answer cached for the others."""
    probe_isolation.cache_clear()
    yield
    probe_isolation.cache_clear()


def run(tmp_path: Path, body: str, *, args: Sequence[str] = (), files: dict[str, str] | None = None,
        watch: Sequence[str] = (), timeout_s: float = 20.0, limit: int = 4096, **kwargs: Any) -> ProgramRun:
    """Write `body` as candidate.py in tmp_path (with a `respond` helper) and run it on a small task."""
    program = tmp_path / "candidate.py"
    program.write_text(RESPOND + textwrap.dedent(body), encoding="utf-8")
    return run_program(program, args, b'{"question": "add"}', files or {}, watch,
                       timeout_s=timeout_s, max_response_bytes=limit, **kwargs)


def test_the_program_sees_only_itself_the_task_and_its_files(tmp_path: Path) -> None:
    (tmp_path / "reference.json").write_text('{"answer": 42}')
    result = run(tmp_path, """
    seen = sorted(os.path.relpath(os.path.join(r, f)) for r, _, fs in os.walk(".") for f in fs)
    readable = [p for p in ("reference.json", "../reference.json") if os.path.exists(p)]
    respond({"seen": seen, "readable": readable, "task": open("task.json").read()})
    """, files={"solution.py": BUGGY})
    assert result.finished, result.reason
    assert result.visible_files == ("candidate.py", "solution.py", "task.json")
    assert result.response == {"seen": ["candidate.py", "solution.py", "task.json"], "readable": [],
                               "task": '{"question": "add"}'}
    assert result.input_bytes == len(b'{"question": "add"}')
    assert result.output_bytes is not None and result.output_bytes > 0


def test_without_bubblewrap_host_files_stay_readable_by_absolute_path_as_the_label_says(tmp_path: Path) -> None:
    reference = tmp_path / "reference.json"
    reference.write_text('{"answer": 42}')
    result = run(tmp_path, f"""
    respond({{"stolen": open({str(reference)!r}).read()}})
    """, isolation=unisolated("not asked for"))
    assert result.response == {"stolen": '{"answer": 42}'}
    assert ("filesystem: NOT held (a host directory as evalkit's own user: host files (the suite and its references "
            "included) readable by absolute path (not asked for))") in result.isolation


def test_artifacts_are_the_files_as_the_program_left_them(tmp_path: Path) -> None:
    result = run(tmp_path, f"""
    open("solution.py", "w").write({FIXED!r})
    respond({{"status": "fixed"}})
    """, files={"solution.py": BUGGY}, watch=["solution.py", "notes.txt"])
    assert result.artifacts == {"solution.py": FIXED, "notes.txt": None}
    assert result.artifact_sha256 == {"solution.py": hashlib.sha256(FIXED.encode()).hexdigest(), "notes.txt": None}


def test_claiming_success_does_not_change_the_artifact(tmp_path: Path) -> None:
    result = run(tmp_path, """
    respond({"status": "fixed", "tests": "all pass"})
    """, files={"solution.py": BUGGY}, watch=["solution.py"])
    assert result.finished
    assert result.artifacts == {"solution.py": BUGGY}
    assert result.artifact_sha256 == {"solution.py": hashlib.sha256(BUGGY.encode()).hexdigest()}


def test_non_utf8_artifact_is_none_but_still_hashed(tmp_path: Path) -> None:
    result = run(tmp_path, """
    open("solution.py", "wb").write(b"\\xff\\xfe")
    respond({})
    """, files={"solution.py": BUGGY}, watch=["solution.py"])
    assert result.artifacts == {"solution.py": None}
    assert result.artifact_sha256 == {"solution.py": hashlib.sha256(b"\xff\xfe").hexdigest()}


def test_environment_is_minimal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_TEST_SECRET", "sk-test-123")
    result = run(tmp_path, """
    respond({"env": dict(os.environ), "cwd": os.getcwd()})
    """)
    assert result.response is not None
    assert "sk-test-123" not in json.dumps(result.response)
    cwd = result.response["cwd"]
    assert result.response["env"] == {"LANG": "C.UTF-8", "HOME": cwd, "TMPDIR": cwd}
    if probe_isolation().bubblewrap:
        assert cwd == "/task"


@pytest.fixture
def parent_stdin_with_data() -> Iterator[None]:
    """Give this process a stdin holding data, so a program that inherited it would read something."""
    saved = os.dup(0)
    read_end, write_end = os.pipe()
    os.write(write_end, b"parent's stdin")
    os.close(write_end)
    os.dup2(read_end, 0)
    os.close(read_end)
    yield
    os.dup2(saved, 0)
    os.close(saved)


@pytest.mark.usefixtures("parent_stdin_with_data")
def test_stdin_is_closed(tmp_path: Path) -> None:
    result = run(tmp_path, """
    respond({"stdin": sys.stdin.read()})
    """)
    assert result.response == {"stdin": ""}


def sandboxed() -> Isolation:
    """The isolation the attacks run under: every layer must hold on a machine where the tests run (scripts/test.sh
    installs bubblewrap); anything less fails, naming what did not hold, rather than skipping."""
    isolation = probe_isolation()
    short = [layer.value for layer in Layer if not isolation.held(layer)]
    assert not short, f"isolation not held: {short}: {isolation.label}"
    return isolation


def survivors(marker: str) -> list[str]:
    """Host processes whose command line carries `marker`: what outlived a run."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            if marker in cmdline and int(name) != os.getpid():
                found.append(f"{name}: {cmdline}")
    return found


def gone(marker: str) -> bool:
    """Whether nothing carrying `marker` is alive, allowing the kernel a moment to finish killing a namespace."""
    deadline = time.monotonic() + 5
    while survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not survivors(marker)


# A descendant that leaves the program's process group and session (setsid) and, through a double fork, its
# parent too; it then lives forever under a name the test can look for on the host.
ESCAPE = """
import subprocess, time
linger = "import os, sys, time\\nif os.fork(): sys.exit(0)\\nos.setsid()\\nwhile True: time.sleep(0.05)\\n"
subprocess.Popen([sys.executable, "-c", linger, sys.argv[1]], start_new_session=True)
time.sleep(0.3)
"""


@pytest.mark.parametrize("sandbox", ["sandboxed", "unisolated"])
@pytest.mark.parametrize("ending", ["exit", "timeout"])
def test_setsid_and_double_fork_descendants_do_not_outlive_the_run(tmp_path: Path, sandbox: str,
                                                                   ending: str) -> None:
    isolation = sandboxed() if sandbox == "sandboxed" else unisolated("not asked for")
    marker = f"evalkit-escape-{os.getpid()}-{sandbox}-{ending}"
    tail = "respond({'message': 'done'})" if ending == "exit" else "time.sleep(30)"
    started = time.monotonic()
    result = run(tmp_path, ESCAPE + tail + "\n", args=[marker], timeout_s=2.0, isolation=isolation)
    assert time.monotonic() - started < 15
    assert result.status == ("finished" if ending == "exit" else "timeout"), result.reason
    assert gone(marker), f"a descendant outlived the run: {survivors(marker)}"


def test_in_a_pid_namespace_killing_the_launcher_does_not_help(tmp_path: Path) -> None:
    marker = f"evalkit-kill-launcher-{os.getpid()}"
    result = run(tmp_path, ESCAPE + """
import signal
os.kill(os.getppid(), signal.SIGKILL)  # the launcher is the namespace's init: its own namespace cannot kill it
respond({"parent": os.getppid()})
""", args=[marker], isolation=sandboxed())
    assert result.response == {"parent": 1}
    assert gone(marker)


def test_timeout_kills_the_program_and_its_children(tmp_path: Path) -> None:
    marker = f"evalkit-timeout-{os.getpid()}"
    started = time.monotonic()
    result = run(tmp_path, """
    import subprocess, time
    subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)", sys.argv[1]])
    time.sleep(30)
    """, args=[marker], timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert (result.status, result.reason, result.response) == ("timeout", "timeout after 1 s", None)
    assert 1000 <= result.wall_ms < 10_000
    assert gone(marker)


def test_a_program_killed_by_a_signal_says_so(tmp_path: Path) -> None:
    result = run(tmp_path, "import signal; os.kill(os.getpid(), signal.SIGKILL)\n")
    assert (result.status, result.reason) == ("crashed", "killed by signal 9")


# -- what the program can see of evalkit through /proc ---------------------------------------------------------

PROC = """
found = {"environ": [], "cwd": []}
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            found["environ"].append(open(f"/proc/{name}/environ", "rb").read().decode("utf-8", "replace"))
            found["cwd"].append(os.readlink(f"/proc/{name}/cwd"))
        except OSError:
            pass
respond({"environ": found["environ"], "cwd": found["cwd"], "me": os.getcwd(), "pids": sorted(
    int(n) for n in os.listdir("/proc") if n.isdigit())})
"""


def test_through_proc_the_program_sees_nothing_of_evalkit(tmp_path: Path) -> None:
    """This process's environment (PATH, and any API key it started with) and its folder never show."""
    result = run(tmp_path, PROC, isolation=sandboxed())
    assert result.response is not None, result.reason
    me = result.response["me"]
    assert result.response["pids"] == [1, 2]  # the launcher and the program: nothing else exists
    assert set(result.response["environ"]) == {f"LANG=C.UTF-8\0HOME={me}\0TMPDIR={me}\0"}  # its own only
    assert set(result.response["cwd"]) == {me}
    assert "pid: held (own PID namespace" in result.isolation


def test_without_a_pid_namespace_the_label_says_proc_shows_evalkit(tmp_path: Path) -> None:
    result = run(tmp_path, PROC, isolation=unisolated("not asked for"), limit=10_000_000)
    assert result.response is not None
    assert os.getcwd() in result.response["cwd"]  # what the label warns of: evalkit's folder, its environment
    assert any(f"PATH={os.environ['PATH']}" in env for env in result.response["environ"])
    assert ("pid: NOT held (not asked for; evalkit's process, environment and folder readable through /proc)"
            in result.isolation)


@pytest.mark.parametrize(("body", "status", "reason"), [
    ("import sys; sys.exit(3)", "crashed", "exit code 3"),
    ("pass", "missing_response", "no response.json"),
    ("open('response.json', 'w').write('{\"a\": \"xxxxxxxxxx\"}')", "oversized_response",
     "response.json is 19 bytes; the limit is 10"),
    ("open('response.json', 'w').write('{oops')", "invalid_response", "response.json is not valid UTF-8 JSON"),
    ("open('response.json', 'w').write('[1]')", "invalid_response", "response.json is not a JSON object"),
    ("open('response.json', 'w').write('{\"a\": NaN}')", "invalid_response", "response.json is not valid UTF-8 JSON"),
    ("open('response.json', 'wb').write(b'{\"a\": \"\\xff\"}')", "invalid_response",
     "response.json is not valid UTF-8 JSON"),
    ("import os; os.mkfifo('response.json')", "invalid_response", "response.json is not a regular file"),
    ("import os; os.mkdir('response.json')", "invalid_response", "response.json is not a regular file"),
])
def test_failures_are_named(tmp_path: Path, body: str, status: str, reason: str) -> None:
    result = run(tmp_path, body, limit=10)
    assert (result.status, result.reason, result.response) == (status, reason, None)
    assert not result.finished


def test_crash_still_keeps_the_artifacts_as_evidence(tmp_path: Path) -> None:
    result = run(tmp_path, """
    open("solution.py", "w").write("half-written")
    raise SystemExit(1)
    """, files={"solution.py": BUGGY}, watch=["solution.py"])
    assert (result.status, result.artifacts) == ("crashed", {"solution.py": "half-written"})


def test_a_timeout_still_keeps_the_artifacts_as_evidence(tmp_path: Path) -> None:
    result = run(tmp_path, """
    import time
    open("solution.py", "w").write("half-written")
    time.sleep(30)
    """, files={"solution.py": BUGGY}, watch=["solution.py"], timeout_s=1.0)
    assert (result.status, result.artifacts) == ("timeout", {"solution.py": "half-written"})


def test_hard_links_to_host_files_are_refused(tmp_path: Path) -> None:
    """Only a host directory (no bubblewrap) lets a program link a host file into its folder."""
    outside, other = tmp_path / "outside.json", tmp_path / "other.py"
    outside.write_text('{"secret": "s3cr3t-host-bytes"}')
    other.write_text('SECRET = "s3cr3t-host-bytes"')
    result = run(tmp_path, f"""
    import os
    os.link({str(outside)!r}, "response.json")
    os.remove("solution.py")
    os.link({str(other)!r}, "solution.py")
    """, files={"solution.py": BUGGY}, watch=["solution.py"], isolation=unisolated("not asked for"))
    assert (result.status, result.response) == ("invalid_response", None)
    assert result.reason == "response.json is a hard link (2 names): it may be a host file"
    assert result.artifacts == {"solution.py": None}
    assert result.artifact_sha256 == {"solution.py": None}
    assert "s3cr3t-host-bytes" not in json.dumps(result.to_json())


@pytest.mark.parametrize("sandbox", ["sandboxed", "unisolated"])
def test_symlinks_are_not_followed(tmp_path: Path, sandbox: str) -> None:
    outside = "/etc/hostname" if sandbox == "sandboxed" else str(tmp_path / "outside.json")
    (tmp_path / "outside.json").write_text('{"secret": "host file"}')
    result = run(tmp_path, f"""
    import os
    os.symlink({outside!r}, "response.json")
    os.remove("solution.py")
    os.symlink("task.json", "solution.py")
    """, files={"solution.py": BUGGY}, watch=["solution.py"],
        isolation=sandboxed() if sandbox == "sandboxed" else unisolated("not asked for"))
    assert (result.status, result.reason, result.response) == ("invalid_response", "response.json is a symlink", None)
    assert result.artifacts == {"solution.py": None}
    assert result.artifact_sha256 == {"solution.py": None}


def test_to_json_is_plain_json(tmp_path: Path) -> None:
    result = run(tmp_path, "respond({'ok': True})\n", files={"solution.py": BUGGY}, watch=["solution.py"])
    data = json.loads(json.dumps(result.to_json()))
    assert data["visible_files"] == ["candidate.py", "solution.py", "task.json"]
    assert data["status"] == "finished" and data["response"] == {"ok": True}
    assert set(data) == {"status", "reason", "response", "artifacts", "artifact_sha256", "visible_files",
                         "input_bytes", "output_bytes", "wall_ms", "isolation"}


@pytest.mark.parametrize("name", ["../x", "a/b", "a\\b", ".", "..", "", ".env", "task.json", "response.json",
                                  "candidate.py"])
def test_bad_file_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match=f"candidate file {name!r}".replace("\\", "\\\\").replace(".", r"\.")):
        run(tmp_path, "pass", files={name: "x"})


def test_bad_watch_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"candidate file '\.\./\.\./etc/passwd': it must be a plain file name"):
        run(tmp_path, "pass", watch=["../../etc/passwd"])


def test_missing_program_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nowhere.py: candidate program not found"):
        run_program(tmp_path / "nowhere.py", [], b"{}", {}, [], timeout_s=5, max_response_bytes=100)


def test_an_artifact_over_the_limit_is_not_loaded(tmp_path: Path) -> None:
    from evalkit.programs.sandbox import ARTIFACT_LIMIT

    result = run(tmp_path, f"""
    open("big.txt", "wb").write(b"x" * {ARTIFACT_LIMIT + 1})
    open("small.txt", "wb").write(b"x" * {ARTIFACT_LIMIT})
    respond({{"message": "done"}})
    """, watch=["big.txt", "small.txt"])
    assert result.artifacts["big.txt"] is None and result.artifact_sha256["big.txt"] is None
    assert result.artifacts["small.txt"] == "x" * ARTIFACT_LIMIT


# -- the network ------------------------------------------------------------------------------------------------

CONNECT = """
import socket
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    respond({"connected": True})
except OSError as error:
    respond({"connected": False, "error": str(error)})
"""


@pytest.fixture
def local_server() -> Iterator[tuple[int, list[bool]]]:
    """A TCP server on 127.0.0.1 (never anything else); the list records whether anyone connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.05)
    accepted: list[bool] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
                accepted.append(True)
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_the_network_is_cut(tmp_path: Path, local_server: tuple[int, list[bool]]) -> None:
    port, accepted = local_server
    result = run(tmp_path, CONNECT, args=[str(port)], isolation=sandboxed())
    assert result.response is not None and result.response["connected"] is False, result.response
    assert not accepted
    assert "network: held (own empty network namespace" in result.isolation


def test_without_namespaces_the_network_is_reachable_as_the_label_says(
        tmp_path: Path, local_server: tuple[int, list[bool]]) -> None:
    port, accepted = local_server
    result = run(tmp_path, CONNECT, args=[str(port)], isolation=unisolated("not asked for"))
    assert result.response == {"connected": True}
    assert accepted == [True]
    assert "network: NOT held (not asked for)" in result.isolation


ABSTRACT = """
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1].replace("@", "\\0", 1))
    respond({"connected": True})
except OSError as error:
    respond({"connected": False, "error": str(error)})
"""


@pytest.fixture
def unix_servers(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A Unix socket server bound to a path and one bound to an abstract name; their addresses (@ for NUL)."""
    servers, names = [], {"path": str(tmp_path / "host.sock"), "abstract": f"@evalkit-test-{os.getpid()}"}
    for address in names.values():
        server = socket.socket(socket.AF_UNIX)
        server.bind(address.replace("@", "\0", 1))
        server.listen()
        servers.append(server)
    os.chmod(tmp_path, 0o755)  # so that nobody could reach the path if it were in its view
    os.chmod(names["path"], 0o777)
    yield names
    for server in servers:
        server.close()


@pytest.mark.parametrize("kind", ["path", "abstract"])
def test_host_unix_sockets_are_unreachable(tmp_path: Path, unix_servers: dict[str, str], kind: str) -> None:
    result = run(tmp_path, ABSTRACT, args=[unix_servers[kind]], isolation=sandboxed())
    assert result.response is not None and result.response["connected"] is False, result.response


def test_without_namespaces_host_unix_sockets_are_reachable_as_the_label_says(
        tmp_path: Path, unix_servers: dict[str, str]) -> None:
    result = run(tmp_path, ABSTRACT, args=[unix_servers["abstract"]], isolation=unisolated("not asked for"))
    assert result.response == {"connected": True}


# -- attacks on the view, the user and the limits ---------------------------------------------------------------

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_references_are_unreadable_by_absolute_path(tmp_path: Path) -> None:
    reference = PROJECT_ROOT / "suites" / "quality_lab" / "data"
    assert reference.is_dir()
    result = run(tmp_path, f"""
    found = {{}}
    for root in ({str(reference)!r}, {str(tmp_path)!r}, "/proc/1/root" + {str(reference)!r}):
        try:
            found[root] = sorted(os.listdir(root))
        except OSError as error:
            found[root] = error.strerror
    respond(found)
    """, isolation=sandboxed())
    assert result.finished, result.reason
    assert result.response is not None
    # the launcher's root through /proc is its own view, and it is not dumpable: refused either way
    assert set(result.response.values()) <= {"No such file or directory", "Permission denied"}, result.response


def test_listing_the_root_home_and_the_project_shows_only_the_runtime(tmp_path: Path) -> None:
    result = run(tmp_path, f"""
    found = {{}}
    for root in ("/", "/home", "/root", "/etc", {str(PROJECT_ROOT)!r}):
        try:
            found[root] = sorted(os.listdir(root))
        except OSError as error:
            found[root] = error.strerror
    respond(found)
    """, isolation=sandboxed())
    assert result.response is not None, result.reason
    listing = result.response
    assert set(listing["/"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "task", "tmp",
                                 "usr"} | ({probe_isolation().python.split("/")[1]} if probe_isolation().python else set())
    assert listing["/home"] == listing["/root"] == listing[str(PROJECT_ROOT)] == "No such file or directory"
    assert listing["/etc"] == ["ld.so.cache"]


def test_the_program_runs_unprivileged(tmp_path: Path) -> None:
    result = run(tmp_path, """
    status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    # a nested user namespace (CLONE_NEWUSER) would give the program every capability inside it
    nested = "allowed" if libc.unshare(0x10000000) == 0 else os.strerror(ctypes.get_errno())
    # PTRACE_TRACEME needs no permission at all: only the seccomp filter refuses it
    traceme = "allowed" if libc.ptrace(0, 0, None, None) == 0 else os.strerror(ctypes.get_errno())
    respond({"uid": os.getuid(), "caps": [status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd")],
             "no_new_privs": status["NoNewPrivs"].strip(), "nested": nested, "traceme": traceme,
             "seccomp": status["Seccomp"].strip()})
    """, isolation=sandboxed())
    assert result.response is not None, result.reason
    assert result.response["uid"] == 65534
    assert result.response["caps"] == ["0000000000000000"] * 3
    assert result.response["no_new_privs"] == "1"
    assert result.response["nested"] == result.response["traceme"] == "Operation not permitted"
    assert result.response["seccomp"] == "2"  # filter mode


def test_the_seccomp_filter_checks_the_architecture_then_denies_each_call() -> None:
    import struct

    from evalkit.programs.seccomp import DENIED, seccomp_filter

    assert seccomp_filter("riscv64") is None  # no table: no filter, and the label says so
    program = [struct.unpack("=HBBI", chunk) for chunk in
               (lambda data: [data[i:i + 8] for i in range(0, len(data), 8)])(seccomp_filter("x86_64") or b"")]
    assert program[:3] == [(0x20, 0, 0, 4), (0x15, 1, 0, 0xC000003E), (0x06, 0, 0, 0x80000000)]
    denied = [k for code, _, _, k in program if code == 0x15][1:]
    assert len(denied) == len(DENIED) and 101 in denied  # ptrace
    assert program[-1] == (0x06, 0, 0, 0x7FFF0000)


PTRACE = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
found = {}
for pid in (1, int(sys.argv[1])):  # the launcher, and evalkit's own process (by its host pid)
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        found[str(pid)] = "attached"
    else:
        found[str(pid)] = os.strerror(ctypes.get_errno())
respond(found)
"""


def test_ptrace_of_another_process_fails(tmp_path: Path) -> None:
    result = run(tmp_path, PTRACE, args=[str(os.getpid())], isolation=sandboxed())
    assert result.response is not None, result.reason
    assert result.response["1"] == "Operation not permitted"  # the launcher is not dumpable
    assert result.response[str(os.getpid())] in ("No such process", "Operation not permitted")


SMALL = ProgramLimits(memory_mb=256, cpu_s=1, processes=16, disk_mb=8)


# Each attack runs under SMALL, within a bounded time: the fork bomb is stopped at 16 processes and 3 s (its
# processes also die at 1 CPU second each), the spinning CPU at 1 CPU second, the disk at 8 MiB of memory.
@pytest.mark.parametrize(("attack", "timeout_s", "reason"), [
    ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", 3.0,
     "process limit reached (16 processes)"),
    ("block = bytearray(10 * 1024 ** 3)\nrespond({'allocated': len(block)})\n", 20.0,
     "memory limit reached (256 MiB per process)"),
    ("i = 0\nwhile True:\n    open(f'fill{i}', 'wb').write(b'x' * 1024 * 1024)\n    i += 1\n", 20.0,
     "disk limit reached (8 MiB)"),
    ("open('/tmp/fill', 'wb').write(b'x' * 1024 * 1024 * 64)\n", 20.0, "disk limit reached (8 MiB)"),
    ("while True:\n    pass\n", 20.0, "CPU time limit reached (1 s per process)"),
], ids=["fork-bomb", "allocate-10GB", "fill-the-disk", "fill-tmp", "spin-the-cpu"])
def test_a_program_that_hits_a_limit_fails_its_case_naming_the_limit(tmp_path: Path, attack: str, timeout_s: float,
                                                                     reason: str) -> None:
    started = time.monotonic()
    result = run(tmp_path, attack, limits=SMALL, timeout_s=timeout_s, isolation=sandboxed())
    assert time.monotonic() - started < timeout_s + 10
    assert (result.status, result.response) == ("limit_exceeded", None), result.reason
    assert result.reason is not None and reason in result.reason.split("; "), result.reason
    assert sorted(p.name for p in tmp_path.iterdir()) == ["candidate.py"]  # nothing written on the host


def test_limits_come_from_the_suite(tmp_path: Path) -> None:
    body = "block = bytearray(200 * 1024 * 1024)\nrespond({'allocated': len(block)})\n"
    small = run(tmp_path, body, limits=ProgramLimits(memory_mb=128), isolation=sandboxed())
    large = run(tmp_path, body, limits=ProgramLimits(memory_mb=512), isolation=sandboxed())
    assert (small.status, small.reason) == ("limit_exceeded", "memory limit reached (128 MiB per process)")
    assert large.response == {"allocated": 200 * 1024 * 1024}


# -- the probe and the label ------------------------------------------------------------------------------------

def test_the_probe_falls_back_to_unshare_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, **kw: None if name == "bwrap" else real(name, **kw))
    isolation = probe_isolation()
    assert not isolation.bubblewrap
    assert not isolation.held(Layer.FILESYSTEM) and not isolation.held(Layer.USER)
    assert not isolation.held(Layer.LIMITS)
    assert "filesystem: NOT held (a host directory as evalkit's own user" in isolation.label
    assert "(bubblewrap (bwrap) not found)" in isolation.label


def test_without_bwrap_or_unshare_nothing_is_held_and_every_layer_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, **kw: None)
    isolation = probe_isolation()
    assert [layer for layer in Layer if isolation.held(layer)] == []
    assert isolation.to_json()["layers"]["network"] == {"held": False, "detail": "util-linux unshare not found"}
    assert list(isolation.to_json()["layers"]) == ["filesystem", "network", "pid", "user", "limits"]
    for layer in Layer:
        assert f"{layer.value}: NOT held (" in isolation.label


def test_a_bwrap_that_fails_is_named_in_the_label(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, **kw: str(fake) if name == "bwrap" else real(name, **kw))
    isolation = probe_isolation()
    assert not isolation.held(Layer.FILESYSTEM)
    assert ": bwrap: No permissions to create new namespace" in isolation.layers[Layer.FILESYSTEM][1]


def test_to_json_names_every_layer(tmp_path: Path) -> None:
    data = probe_isolation().to_json()
    assert list(data["layers"]) == ["filesystem", "network", "pid", "user", "limits"]
    assert all(set(v) == {"held", "detail"} for v in data["layers"].values())
    assert data["label"] == probe_isolation().label
