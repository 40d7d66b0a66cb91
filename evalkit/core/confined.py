"""A reader of hostile bytes, run in a child process confined in memory and time.

Some formats are decoded by native code evalkit cannot bound from outside: pyarrow decompresses a Parquet page
or an Arrow buffer to the size the file declares, expands a dictionary-encoded column to as many values as the
file says, and a malformed file can crash it. Such a reader runs here as `python -P -c ...` importing this very
evalkit, under an address-space limit (RLIMIT_AS) and a wall-clock limit: whatever the file does, the caller
gets the child's output or one InputError line (refused, ran out of memory, ran out of time, or crashed), never a
hang, a machine out of memory or a dead process. An exception of evalkit's own code in the child is not the
file's doing: it comes back as the bug it is (a RuntimeError, exit code 4 from the commands).

Both ends of the protocol are here: `run_confined` (the parent) and `serve` (the child's main). The child writes
its result on stdout; a refusal is its last stderr line after `REFUSAL`, with exit code `REFUSED`; a bug, after
`BUG`, with exit code `FAILED`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from evalkit.core.errors import EvalkitError, InputError, one_line

__all__ = ["BUG", "FAILED", "OUT_OF_MEMORY", "REFUSAL", "REFUSED", "run_confined", "serve"]

REFUSED = 3
"""The child's exit code for a refusal (an InputError), as evalkit's commands exit."""
FAILED = 4
"""The child's exit code for an exception of evalkit's own code (an internal error, as the commands exit)."""
OUT_OF_MEMORY = 12
"""The child's exit code when an allocation failed under its memory limit."""
REFUSAL = "evalkit-refusal: "
"""Starts the stderr line that carries a refusal's message."""
BUG = "evalkit-bug: "
"""Starts the stderr line that names an internal error (after its traceback)."""

_PACKAGE = Path(__file__).resolve().parents[1]
# The child confines itself first (no preexec_fn, which is unsafe in a process with threads), then imports the
# evalkit this process runs, wherever it lies, without putting its folder (a checkout, or site-packages) ahead of
# the standard library on sys.path. argv: memory limit, evalkit's __init__.py, its folder, module, its arguments.
_BOOT = """
import importlib.util, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
except (ImportError, ValueError, OSError):  # no RLIMIT_AS here (not Linux): time still bounds the child
    pass
spec = importlib.util.spec_from_file_location("evalkit", sys.argv[2], submodule_search_locations=[sys.argv[3]])
package = importlib.util.module_from_spec(spec)
sys.modules["evalkit"] = package
spec.loader.exec_module(package)
importlib.import_module(sys.argv[4]).main(sys.argv[5:])
"""


def run_confined(module: str, args: Sequence[str], *, where: str, memory_bytes: int, timeout_s: float,
                 memory_setting: str, timeout_setting: str) -> bytes:
    """The stdout of `module.main(args)` run in a child under `memory_bytes` of address space (or the lower limit
    this process is under) and `timeout_s` seconds; an InputError naming `where` and the setting to raise when it
    refused, ran out of memory or time, or crashed."""
    memory_bytes = _within_own_limit(memory_bytes)
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-P", "-c", _BOOT, str(memory_bytes), str(_PACKAGE / "__init__.py"), str(_PACKAGE),
               module, *args]
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise InputError(f"{where}: still being read after {timeout_s:g} s, and stopped; check that it is the "
                         f"right file, or raise {timeout_setting}") from None
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    if child.returncode == 0:
        return out
    lines = err.decode("utf-8", "replace").splitlines()
    refusal = next((line[len(REFUSAL):] for line in reversed(lines) if line.startswith(REFUSAL)), None)
    if child.returncode == REFUSED and refusal is not None:
        raise InputError(refusal)
    bug = next((line[len(BUG):] for line in reversed(lines) if line.startswith(BUG)), None)
    if child.returncode == FAILED and bug is not None:
        raise RuntimeError(f"{where}: the reader failed ({bug}); its traceback:\n" + "\n".join(lines[-40:]))
    if child.returncode == OUT_OF_MEMORY:
        raise InputError(f"{where}: reading it needs more than {memory_bytes // 2**20:,} MiB of memory (data that "
                         f"expand when decoded); check that it is the right file, or raise {memory_setting}")
    ended = (f"signal {signal.Signals(-child.returncode).name}" if child.returncode < 0
             and -child.returncode in signal.valid_signals() else f"exit code {child.returncode}")
    last = one_line(lines[-1], 200) if lines else "no message"
    raise InputError(f"{where}: the reader stopped with {ended} ({last}): a file it cannot read within "
                     f"{memory_bytes // 2**20:,} MiB, or a malformed one; check that it is the right file")


def _within_own_limit(wanted: int) -> int:
    """`wanted`, or this process's own hard address-space limit where that is lower (a child cannot raise it)."""
    try:
        import resource

        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    except (ImportError, AttributeError, OSError):
        return wanted
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def serve(produce: Callable[[], Iterable[bytes]]) -> None:
    """The child's end: write each chunk `produce` yields to stdout and exit 0; exit `REFUSED` with the message
    on stderr for an EvalkitError, `OUT_OF_MEMORY` for a failed allocation, `FAILED` with the traceback for any
    other exception. A signal (native code crashing) ends it as it ends it, which the parent reports."""
    try:
        out = sys.stdout.buffer
        for chunk in produce():
            out.write(chunk)
        out.flush()
    except EvalkitError as refusal:
        print(REFUSAL + one_line(str(refusal)), file=sys.stderr, flush=True)
        os._exit(REFUSED)
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except Exception as error:  # noqa: BLE001  (the parent raises it again as the bug it is)
        traceback.print_exc(file=sys.stderr)
        print(BUG + one_line(f"{type(error).__name__}: {error}", 300), file=sys.stderr, flush=True)
        os._exit(FAILED)
    os._exit(0)  # without the interpreter's teardown, which can take longer than the read for a large table
