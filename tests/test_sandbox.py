"""Candidate programs run in a fresh directory, with a minimal environment, in namespaces where the machine allows,
their whole process tree killed, judged on files that are their own."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.errors import InputError
from evalkit.programs import sandbox
from evalkit.programs.sandbox import ISOLATION_BASE, LAUNCHER, ProgramRun, isolation_label, probe_isolation, run_program

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


def test_host_files_stay_readable_by_absolute_path_as_the_label_says(tmp_path: Path) -> None:
    reference = tmp_path / "reference.json"
    reference.write_text('{"answer": 42}')
    result = run(tmp_path, f"""
    respond({{"stolen": open({str(reference)!r}).read()}})
    """)
    assert result.response == {"stolen": '{"answer": 42}'}
    assert ("same OS user, so host files (the suite and its references included) stay readable by absolute path: "
            "not an OS sandbox") in result.isolation


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


def pid_namespace() -> bool:
    return probe_isolation().pid


# A descendant that leaves the program's process group and session, then beats: it appends to a host file (by
# absolute path: the same OS user can) every 20 ms while it lives. Its pid is of no use outside a PID namespace.
ESCAPE = """
import subprocess, sys, time
beat = "import sys, time\\nwhile True:\\n    open(sys.argv[1], 'a').write('.')\\n    time.sleep(0.02)\\n"
subprocess.Popen([sys.executable, "-c", beat, sys.argv[1]], start_new_session=True)  # setsid()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
"""


def _live_processes_naming(marker: str) -> list[int]:
    """Pids in the process table, zombies left out, whose command line holds `marker`. The host's /proc lists
    processes of every PID namespace, so a descendant inside one is found too."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):  # it ended while being read
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def still_beating(heartbeat: Path, within_s: float = 10.0) -> bool:
    """True if a process started with `heartbeat` on its command line is still in the process table `within_s`
    after the run returned. Death is read from the table: a process the kernel is still tearing down is waited
    for, and one that lives on is found however loaded the machine is (a quiet file would prove nothing)."""
    deadline = time.monotonic() + within_s
    while _live_processes_naming(str(heartbeat)):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
    return False


def test_the_process_table_check_sees_a_process_that_lives(tmp_path: Path) -> None:
    # the check the tests below rely on is not vacuous: a live process naming the file is found, a killed one not
    marker = tmp_path / "heartbeat"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(marker)])
    try:
        assert still_beating(marker, within_s=0.2)
    finally:
        child.kill()
        child.wait()
    assert not still_beating(marker)


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
@pytest.mark.parametrize("ending", ["exit", "timeout"])
def test_setsid_descendants_do_not_outlive_the_run(tmp_path: Path, namespaces: bool, ending: str) -> None:
    if namespaces and not pid_namespace():
        pytest.skip(probe_isolation().label)
    heartbeat = tmp_path / "heartbeat"
    tail = "respond({'message': 'done'})" if ending == "exit" else "time.sleep(30)"
    started = time.monotonic()
    result = run(tmp_path, ESCAPE + tail + "\n", args=[str(heartbeat)], timeout_s=2.0, namespaces=namespaces)
    assert time.monotonic() - started < 10
    assert result.status == ("finished" if ending == "exit" else "timeout"), result.reason
    assert heartbeat.exists(), "the program did not get to start its descendant"
    assert not still_beating(heartbeat), "a setsid() descendant outlived the run"
    assert "setsid() descendants included" in result.isolation or "setsid() ones included" in result.isolation


def test_in_a_pid_namespace_killing_the_launcher_does_not_help(tmp_path: Path) -> None:
    if not pid_namespace():
        pytest.skip(probe_isolation().label)
    heartbeat = tmp_path / "heartbeat"
    result = run(tmp_path, ESCAPE + """
import signal
os.kill(os.getppid(), signal.SIGKILL)  # the launcher is the namespace's init: its own namespace cannot kill it
respond({"parent": os.getppid()})
""", args=[str(heartbeat)])
    assert result.response == {"parent": 1}
    assert not still_beating(heartbeat)


def test_timeout_kills_the_program_and_its_children(tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    started = time.monotonic()
    result = run(tmp_path, """
    import subprocess, sys, time
    beat = "import sys, time\\nwhile True:\\n    open(sys.argv[1], 'a').write('.')\\n    time.sleep(0.02)\\n"
    subprocess.Popen([sys.executable, "-c", beat, sys.argv[1]])
    time.sleep(30)
    """, args=[str(heartbeat)], timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert (result.status, result.reason, result.response) == ("timeout", "timeout after 1 s", None)
    assert 1000 <= result.wall_ms < 10_000
    assert heartbeat.exists(), "the program did not get to start its child"
    assert not still_beating(heartbeat), "a child survived the timeout"


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
parent = open(f"/proc/{os.getppid()}/environ", "rb").read().decode() if os.getppid() else ""
respond({"environ": found["environ"], "cwd": found["cwd"], "parent": parent, "me": os.getcwd()})
"""


def test_through_proc_the_program_sees_nothing_of_evalkit(tmp_path: Path) -> None:
    """This process's environment (PATH, and any API key it started with) and its folder never show."""
    if not pid_namespace():
        pytest.skip(probe_isolation().label)
    result = run(tmp_path, PROC)
    assert result.response is not None, result.reason
    me = result.response["me"]
    assert result.response["environ"], "the program could read no /proc/*/environ at all"
    assert set(result.response["environ"]) == {f"LANG=C.UTF-8\0HOME={me}\0TMPDIR={me}\0"}
    assert set(result.response["cwd"]) == {result.response["me"]}  # evalkit's folder (the suite's) is not there
    assert result.response["parent"] == f"LANG=C.UTF-8\0HOME={result.response['me']}\0TMPDIR={result.response['me']}\0"
    assert "parent environment: clean" in result.isolation and "PID namespace: own" in result.isolation


def test_without_a_pid_namespace_the_label_says_proc_shows_evalkit(tmp_path: Path) -> None:
    result = run(tmp_path, PROC, namespaces=False, limit=10_000_000)
    assert result.response is not None
    assert os.getcwd() in result.response["cwd"]  # what the label warns of: evalkit's folder, its environment
    assert any(f"PATH={os.environ['PATH']}" in env for env in result.response["environ"])
    me = result.response["me"]
    assert result.response["parent"] == f"LANG=C.UTF-8\0HOME={me}\0TMPDIR={me}\0"  # the launcher's is clean
    assert "parent environment: NOT clean" in result.isolation and "PID namespace: NOT held" in result.isolation


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


def test_hard_links_to_host_files_are_refused(tmp_path: Path) -> None:
    outside, other = tmp_path / "outside.json", tmp_path / "other.py"
    outside.write_text('{"secret": "s3cr3t-host-bytes"}')
    other.write_text('SECRET = "s3cr3t-host-bytes"')
    result = run(tmp_path, f"""
    import os
    os.link({str(outside)!r}, "response.json")
    os.remove("solution.py")
    os.link({str(other)!r}, "solution.py")
    """, files={"solution.py": BUGGY}, watch=["solution.py"])
    assert (result.status, result.response) == ("invalid_response", None)
    assert result.reason == "response.json is a hard link (2 names): it may be a host file"
    assert result.artifacts == {"solution.py": None}
    assert result.artifact_sha256 == {"solution.py": None}
    assert "s3cr3t-host-bytes" not in json.dumps(result.to_json())


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": "host file"}')
    result = run(tmp_path, f"""
    import os
    os.symlink({str(outside)!r}, "response.json")
    os.remove("solution.py")
    os.symlink({str(outside)!r}, "solution.py")
    """, files={"solution.py": BUGGY}, watch=["solution.py"])
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


def test_network_is_cut_when_the_machine_allows(tmp_path: Path, local_server: tuple[int, list[bool]]) -> None:
    isolation = probe_isolation()
    if not isolation.network:
        pytest.skip(isolation.label)
    port, accepted = local_server
    result = run(tmp_path, CONNECT, args=[str(port)])
    assert result.response is not None and result.response["connected"] is False, result.response
    assert not accepted
    assert result.isolation == isolation.label
    assert "; network namespace: own, empty (no interfaces, not even loopback); " in result.isolation


def test_without_unshare_the_label_says_not_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     local_server: tuple[int, list[bool]]) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    commands = spy_on_popen(monkeypatch)
    port, accepted = local_server
    result = run(tmp_path, CONNECT, args=[str(port)])
    assert result.isolation == isolation_label(False, False, "util-linux unshare not found")
    assert "; network namespace: NOT held (util-linux unshare not found); " in result.isolation
    assert commands == [[sys.executable, "-I", "-c", LAUNCHER, "candidate.py", str(port)]]
    assert result.response == {"connected": True}


def test_isolation_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     local_server: tuple[int, list[bool]]) -> None:
    commands = spy_on_popen(monkeypatch)
    port, _ = local_server
    result = run(tmp_path, CONNECT, args=[str(port)], namespaces=False)
    assert result.isolation == isolation_label(False, False, "namespaces=False")
    assert commands[0][:3] == [sys.executable, "-I", "-c"]
    assert result.response == {"connected": True}


def spy_on_popen(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    commands: list[list[str]] = []
    real = subprocess.Popen

    def spy(command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        commands.append(list(command))
        return real(command, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)  # the module sandbox calls through
    return commands


def test_probe_never_raises_without_unshare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert probe_isolation() == sandbox.Isolation(
        network=False, pid=False, label=isolation_label(False, False, "util-linux unshare not found"))


ALL = "--net --pid --fork --kill-child --mount-proc"
PID = "--pid --fork --kill-child --mount-proc"
USER = "--user --map-root-user"


@pytest.mark.parametrize(("unshare", "why"), [
    ("/bin/false", f"unshare {ALL}: exit code 1; unshare {USER} {ALL}: exit code 1; unshare --net: exit code 1; "
                   f"unshare {USER} --net: exit code 1; unshare {PID}: exit code 1; unshare {USER} {PID}: exit code 1"),
    ("/nonexistent/unshare", f"unshare {ALL}: [Errno 2] No such file or directory"),
])
def test_probe_reports_why_unshare_failed(monkeypatch: pytest.MonkeyPatch, unshare: str, why: str) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: unshare)
    isolation = probe_isolation()
    assert not isolation.network and not isolation.pid and not isolation.mount and isolation.unshare == ()
    assert isolation.label.startswith(ISOLATION_BASE + "; network namespace: NOT held (" + why)
    assert f"; PID namespace: NOT held ({why}" in isolation.label


def test_the_probe_takes_the_best_it_can_get(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An unshare that refuses the PID namespace (as some containers do) still gives the network one, and the
    label says which held and why the other did not."""
    fake = tmp_path / "unshare"
    fake.write_text("#!/bin/sh\ncase \"$*\" in *--pid*) echo 'unshare: unshare failed: Operation not permitted' >&2; "
                    "exit 1;; esac\nwhile [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake))
    isolation = probe_isolation()
    assert (isolation.network, isolation.pid, isolation.unshare) == (True, False, (str(fake), "--net", "--"))
    assert "; network namespace: own, empty" in isolation.label
    assert f"; PID namespace: NOT held (unshare {ALL}: unshare: unshare failed: Operation not permitted; " in (
        isolation.label)
    assert "; parent environment: NOT clean" in isolation.label


def test_the_label_states_every_property() -> None:
    for network in (True, False):
        for pid in (True, False):
            label = isolation_label(network, pid, "why")
            assert [part.split(":")[0] for part in label.split("; ")[-6:]] == [
                "network namespace", "Unix sockets", "PID namespace", "mount namespace", "parent environment",
                "process tree"], label


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
    yield names
    for server in servers:
        server.close()


def test_unix_sockets_are_cut_as_far_as_the_label_says(tmp_path: Path, unix_servers: dict[str, str]) -> None:
    if not probe_isolation().network:
        pytest.skip(probe_isolation().label)
    abstract = run(tmp_path, ABSTRACT, args=[unix_servers["abstract"]])
    assert abstract.response is not None and abstract.response["connected"] is False, abstract.response
    by_path = run(tmp_path, ABSTRACT, args=[unix_servers["path"]])
    assert by_path.response == {"connected": True}  # what the label warns of
    assert ("Unix sockets: the host's abstract ones cut with the network namespace, ones bound to a path still "
            "reachable by that path") in abstract.isolation


def test_without_a_network_namespace_abstract_sockets_are_reachable_as_the_label_says(
        tmp_path: Path, unix_servers: dict[str, str]) -> None:
    result = run(tmp_path, ABSTRACT, args=[unix_servers["abstract"]], namespaces=False)
    assert result.response == {"connected": True}
    assert "Unix sockets: NOT cut, the host's are all reachable" in result.isolation


def test_an_artifact_over_the_limit_is_not_loaded(tmp_path: Path) -> None:
    from evalkit.programs.sandbox import ARTIFACT_LIMIT

    result = run(tmp_path, f"""
    open("big.txt", "wb").write(b"x" * {ARTIFACT_LIMIT + 1})
    open("small.txt", "wb").write(b"x" * {ARTIFACT_LIMIT})
    respond({{"message": "done"}})
    """, watch=["big.txt", "small.txt"])
    assert result.artifacts["big.txt"] is None and result.artifact_sha256["big.txt"] is None
    assert result.artifacts["small.txt"] == "x" * ARTIFACT_LIMIT
