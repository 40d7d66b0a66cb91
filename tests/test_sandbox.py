"""Candidate programs run in a fresh directory, with a minimal environment, killed on timeout, judged on files."""

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
from evalkit.programs.sandbox import ISOLATION_BASE, ProgramRun, probe_isolation, run_program

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
    assert "same OS user, so host files stay readable: not an OS sandbox" in result.isolation


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


def test_timeout_kills_the_program_and_its_children(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run(tmp_path, """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    open("child.pid", "w").write(str(child.pid))
    time.sleep(30)
    """, watch=["child.pid"], timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert (result.status, result.reason, result.response) == ("timeout", "timeout after 1 s", None)
    assert 1000 <= result.wall_ms < 10_000
    pid = result.artifacts["child.pid"]
    assert pid is not None, "the program did not get to start its child"
    assert wait_until_dead(int(pid)), f"grandchild {pid} survived the timeout"


def test_children_left_behind_after_a_normal_exit_are_killed(tmp_path: Path) -> None:
    result = run(tmp_path, """
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    open("child.pid", "w").write(str(child.pid))
    respond({"message": "done"})
    """, watch=["child.pid"])
    assert result.status == "finished"
    pid = result.artifacts["child.pid"]
    assert pid is not None
    assert wait_until_dead(int(pid)), f"child {pid} outlived the program that started it"


def wait_until_dead(pid: int) -> bool:
    """True once `pid` is gone (or a zombie: the container's init may be slow to reap orphans)."""
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


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
    assert result.isolation == ISOLATION_BASE + "; network: own empty network namespace (unshare)"


def test_without_unshare_the_label_says_not_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     local_server: tuple[int, list[bool]]) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    commands = spy_on_popen(monkeypatch)
    port, accepted = local_server
    result = run(tmp_path, CONNECT, args=[str(port)])
    assert result.isolation == ISOLATION_BASE + "; network: NOT isolated (util-linux unshare not found)"
    assert commands == [[sys.executable, "-I", "candidate.py", str(port)]]
    assert result.response == {"connected": True}


def test_isolation_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     local_server: tuple[int, list[bool]]) -> None:
    commands = spy_on_popen(monkeypatch)
    port, _ = local_server
    result = run(tmp_path, CONNECT, args=[str(port)], isolate_network=False)
    assert result.isolation.endswith("; network: NOT isolated (isolate_network=False)")
    assert commands[0][0] == sys.executable
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
        network=False, label=ISOLATION_BASE + "; network: NOT isolated (util-linux unshare not found)")


@pytest.mark.parametrize(("unshare", "why"), [
    ("/bin/false", "unshare --net: exit code 1; unshare --user --map-root-user --net: exit code 1"),
    ("/nonexistent/unshare", "unshare --net: [Errno 2] No such file or directory"),
])
def test_probe_reports_why_unshare_failed(monkeypatch: pytest.MonkeyPatch, unshare: str, why: str) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: unshare)
    isolation = probe_isolation()
    assert not isolation.network and isolation.unshare == ()
    assert isolation.label.startswith(ISOLATION_BASE + "; network: NOT isolated (" + why)


def test_an_artifact_over_the_limit_is_not_loaded(tmp_path: Path) -> None:
    from evalkit.programs.sandbox import ARTIFACT_LIMIT

    result = run(tmp_path, f"""
    open("big.txt", "wb").write(b"x" * {ARTIFACT_LIMIT + 1})
    open("small.txt", "wb").write(b"x" * {ARTIFACT_LIMIT})
    respond({{"message": "done"}})
    """, watch=["big.txt", "small.txt"])
    assert result.artifacts["big.txt"] is None and result.artifact_sha256["big.txt"] is None
    assert result.artifacts["small.txt"] == "x" * ARTIFACT_LIMIT
