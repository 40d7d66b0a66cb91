"""How every evalkit command ends: a refusal is one line and exit 3, a crash is a traceback and exit 4.

Neither may ever exit 0, 1 or 2: those codes are decisions.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable

from evalkit.core.errors import EvalkitError
from evalkit.gate.decision import ExitCode

__all__ = ["run_command"]


def run_command(prog: str, body: Callable[[], int]) -> int:
    """Run a command's body and return its exit code, mapping refusals to 3 and anything unexpected to 4."""
    try:
        return body()
    except EvalkitError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    except Exception:  # a crash must never read as a decision
        traceback.print_exc()
        print(f"{prog}: internal error (a bug in evalkit; exit code 4)", file=sys.stderr)
        return ExitCode.INTERNAL_ERROR
