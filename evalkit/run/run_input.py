"""Reading the run input (`run-input.json`), whose model is evalkit.records.run_input's; its names stay importable
from here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalkit.core.errors import InputError
from evalkit.core.files import read_bytes
from evalkit.records.run_input import FORMAT, CallInput, RunInput, SuiteInput

__all__ = ["FORMAT", "CallInput", "RunInput", "SuiteInput", "read_run_input", "run_input_schema"]


def read_run_input(path: Path) -> RunInput:
    """The run input at `path`; anything else (another format, a torn file) is refused in one line."""
    try:
        return RunInput.model_validate_json(read_bytes(path, "run input"))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the file"
        raise InputError(f"{path}: not a run input of format {FORMAT} ({where}: {first['msg']}); it is written by "
                         "`evalkit run` for its own checks, so run the suite again rather than reusing the file") \
            from None


def run_input_schema() -> dict[str, Any]:
    """The JSON Schema of the run input (docs/reference/schemas.md)."""
    return RunInput.model_json_schema()
