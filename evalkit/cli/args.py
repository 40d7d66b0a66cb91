"""What evalkit's argparse commands share: usage errors exit with the input-error code."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from evalkit.gate.decision import ExitCode

__all__ = ["ArgumentParser"]


class ArgumentParser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors, which would read as `incomparable`; use the input-error code."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ExitCode.INPUT_ERROR, f"{self.prog}: error: {message}\n")
