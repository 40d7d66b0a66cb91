"""What every evalkit command does around its work so that no failure reads as a decision.

Exit codes 0, 1 and 2 are decisions (go, block, incomparable); a refused input or an output that cannot be
written exits 3 with one line on stderr, a model server that failed (an outage: a judge or model called live by
`calibrate`, `review` ...) exits 5 with one line, and anything unexpected exits 4 with its traceback. `command` wraps a
command's `main` to guarantee it; `write_output` and `say` (evalkit.core.console)
are the output steps the commands share.
"""

from __future__ import annotations

import functools
import io
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ParamSpec

from evalkit.core.atomic import write_atomic_set
from evalkit.core.console import say
from evalkit.core.errors import EvalkitError, InputError, OutageError, one_line
from evalkit.core.outputs import refuse_input, refuse_link
from evalkit.gate.decision import ExitCode

__all__ = ["check_outputs", "command", "write_output", "write_outputs", "say"]

P = ParamSpec("P")


def command(main: Callable[P, int]) -> Callable[P, int]:
    """Decorate a command's `main`: refusals exit 3 in one line, outages 5, crashes exit 4 with the traceback."""

    @functools.wraps(main)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> int:
        _tolerant(sys.stdout)  # a test id in any script must not crash an ASCII terminal or CI log
        _tolerant(sys.stderr)
        try:
            return main(*args, **kwargs)
        except OutageError as error:  # the server failed, not the input: a code of its own, as `run` gives it
            print(f"outage: {one_line(str(error))}", file=sys.stderr)
            return ExitCode.OUTAGE
        except EvalkitError as error:
            print(f"error: {one_line(str(error))}", file=sys.stderr)
            return ExitCode.INPUT_ERROR
        except Exception:  # a crash must never read as a decision
            traceback.print_exc()
            print(f"internal error (exit code {int(ExitCode.INTERNAL_ERROR)}): a bug; please report it with the "
                  "traceback above", file=sys.stderr)
            return ExitCode.INTERNAL_ERROR

    return guarded


def _tolerant(stream: object) -> None:
    """Print what the stream's encoding cannot hold as escapes (`\\xfc`) instead of raising."""
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")


def write_output(path: Path, text: str, what: str, *, inputs: Mapping[str, Path] | None = None,
                 make_folder: bool = False) -> None:
    """Write one of a command's output files; refused in one line (exit 3), before anything is written: one of
    the command's `inputs` (named by what they are: {"the candidate report": path}; also through links), a
    symbolic link, a folder, a folder that does not exist (unless `make_folder`: a command that documents making
    its run folder), or a place that cannot be written."""
    write_outputs({path: (text, what)}, inputs=inputs, make_folder=make_folder)


def check_outputs(outputs: Mapping[Path, str], *, inputs: Mapping[str, Path] | None = None,
                  make_folder: bool = False) -> None:
    """Refuse, as `write_outputs` would, a set of output files ({path: what it is}) before they are written: a
    command whose inputs take seconds to read calls this first, so that a mistyped folder costs no wait."""
    for path, what in outputs.items():
        refuse_input(path, inputs or {}, what)
        refuse_link(path, what)
        if not make_folder and not path.parent.is_dir():
            raise InputError(f"{path}: cannot write the {what}: the folder {path.parent} does not exist; "
                             "create it first or choose another path")
        if path.is_dir():
            raise InputError(f"{path}: cannot write the {what}: it is a folder; name a file")


def write_outputs(outputs: Mapping[Path, tuple[str, str]], *, inputs: Mapping[str, Path] | None = None,
                  make_folder: bool = False) -> None:
    """Write a set of output files ({path: (text, what it is)}) all or nothing, each checked as `write_output`
    checks one: a CI step must never find half of the set (a decision.json without its decision.xml) after a full
    disk."""
    check_outputs({path: what for path, (_, what) in outputs.items()}, inputs=inputs, make_folder=make_folder)
    try:
        write_atomic_set({path: text for path, (text, _) in outputs.items()})
    except OSError as error:
        what = next((what for path, (_, what) in outputs.items() if str(path) == error.filename), "output")
        rest = " (nothing of the set was written)" if len(outputs) > 1 else ""
        raise InputError(f"{error.filename}: cannot write the {what} ({error.strerror or error}){rest}") from None
