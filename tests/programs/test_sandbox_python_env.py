"""A candidate program's `python_env` that bubblewrap's user cannot reach (a checkout under a private 0700 folder) is
refused once, before any case, in one line naming the folder and what to do, instead of crashing every case."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.core.config import ProgramSpec
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.live.budget import UnitBudget
from evalkit.programs import candidate, sandbox
from evalkit.programs.candidate import CandidateConfig, ModelAccess
from evalkit.programs.isolation import NOBODY, Isolation, probe_isolation
from evalkit.programs.sandbox import check_python_env, run_program
from evalkit.records.call import Reply

VERSION = f"python3.{sys.version_info[1]}"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A folder others may enter (pytest's own base folder is private, 0700: it would be what the check names)."""
    with tempfile.TemporaryDirectory(prefix="evalkit-python-env-test-") as folder:
        os.chmod(folder, 0o755)
        yield Path(folder).resolve()


def _venv(root: Path) -> Path:
    env = root / "project" / ".venv"
    (env / "lib" / VERSION / "site-packages").mkdir(parents=True)
    (env / "lib" / VERSION / "site-packages" / "shopmod.py").write_text("ANSWER = 42\n", encoding="utf-8")
    return env


def _as_nobody() -> Isolation:
    """bubblewrap run as nobody, as it is when evalkit runs as root (what the check reasons about, on any machine)."""
    return Isolation(layers={}, python=sys.executable, user=NOBODY, bubblewrap=True)


def test_a_private_folder_above_the_environment_is_named_with_what_to_do(tmp_path: Path) -> None:
    env = _venv(tmp_path)
    private = tmp_path / "project"
    os.chmod(tmp_path, 0o755)
    os.chmod(private, 0o700)
    try:
        with pytest.raises(InputError) as refused:
            check_python_env(env, _as_nobody())
        message = str(refused.value)
        assert message.startswith(f"{env}: suite.program.python_env cannot be reached by the sandbox: "
                                  f"{private.resolve()} (mode 0700)")
        assert f"chmod o+x {private.resolve()}" in message and "\n" not in message
        os.chmod(private, 0o711)  # the search bit alone is enough: nobody passes through, lists nothing
        check_python_env(env, _as_nobody())
        os.chmod(env / "lib" / VERSION / "site-packages", 0o711)  # the packages themselves must be readable
        with pytest.raises(InputError, match="site-packages \\(mode 0711\\) .* chmod o\\+rx"):
            check_python_env(env, _as_nobody())
    finally:
        os.chmod(private, 0o755)
        os.chmod(env / "lib" / VERSION / "site-packages", 0o755)


def test_evalkit_s_own_user_passes_its_own_private_folder(tmp_path: Path) -> None:
    env = _venv(tmp_path)
    os.chmod(tmp_path / "project", 0o700)
    try:  # bubblewrap run as evalkit's own user (evalkit is not root) owns the folder: reachable
        check_python_env(env, Isolation(layers={}, python=sys.executable, user=os.geteuid(), bubblewrap=True))
    finally:
        os.chmod(tmp_path / "project", 0o755)


def test_the_run_refuses_before_its_first_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _venv(tmp_path)
    os.chmod(tmp_path / "project", 0o700)
    started: list[object] = []
    monkeypatch.setattr(sandbox, "probe_isolation", _as_nobody)
    monkeypatch.setattr(candidate, "run_program", lambda *a, **k: started.append(a))
    program = tmp_path / "agent.py"
    program.write_text("print('never')\n", encoding="utf-8")
    access = ModelAccess(answer=lambda call_id, request: Reply(text="x"), model="m", python_env=env)
    try:
        with pytest.raises(InputError, match="cannot be reached by the sandbox"):
            candidate.run_programs([Case("a"), Case("b")], ProgramSpec(endpoint=True),
                                   CandidateConfig(program=str(program), change="x"), program, UnitBudget(None),
                                   access)
    finally:
        os.chmod(tmp_path / "project", 0o755)
    assert started == []  # no case ran


@pytest.mark.skipif(not probe_isolation().bubblewrap or probe_isolation().user != NOBODY,
                    reason="needs bubblewrap run as nobody (evalkit as root), where the bind itself fails")
def test_with_real_bubblewrap_the_refused_folder_is_the_one_the_bind_fails_on(tmp_path: Path) -> None:
    env = _venv(tmp_path)
    program = tmp_path / "project" / "agent.py"
    program.write_text("import json, shopmod\njson.dump({'a': shopmod.ANSWER}, open('response.json', 'w'))\n",
                       encoding="utf-8")
    os.chmod(tmp_path, 0o755)
    os.chmod(tmp_path / "project", 0o755)
    ran = run_program(program, [], b"{}", {}, [], timeout_s=30, max_response_bytes=1000, python_env=env)
    assert ran.status == "finished" and ran.response == {"a": 42}, ran.reason
    os.chmod(tmp_path / "project", 0o700)
    try:
        with pytest.raises(InputError, match="cannot be reached by the sandbox"):
            run_program(program, [], b"{}", {}, [], timeout_s=30, max_response_bytes=1000, python_env=env)
    finally:
        os.chmod(tmp_path / "project", 0o755)
