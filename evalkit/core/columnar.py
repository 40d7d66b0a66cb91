"""Rows of columnar dataset files: Parquet, and the folders Hugging Face `datasets` saves with `save_to_disk`.

Both are read with pyarrow, an optional dependency (`pip install 'evalkit[parquet]'`): pyarrow is what writes
and reads both formats in every tool that produces them, and evalkit needs nothing else of `datasets` (a saved
folder is Arrow IPC stream files named by its `state.json`). Nothing is downloaded: a dataset must be on disk.

Each row becomes a dict of JSON values, as a JSON Lines row would be, so the same cases read from Parquet, a
saved folder or JSON Lines have the same fingerprint (evalkit.core.loaders.cases_fingerprint). A value JSON cannot
hold as it is (a date, a decimal) is written as its text; one it cannot hold at all (bytes, NaN) is refused,
naming the row and field. The files' sizes, and a Parquet file's uncompressed size, are checked against the input
limit before anything is read, so a small file cannot expand past it.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalkit.core.errors import InputError
from evalkit.core.files import max_input_bytes, read_text

__all__ = ["is_saved_dataset", "parquet_rows", "saved_dataset_rows"]

_INSTALL = "pip install 'evalkit[parquet]' (pyarrow)"


def is_saved_dataset(path: Path) -> bool:
    """Whether `path` is a folder written by `datasets`' `save_to_disk` (a Dataset or a DatasetDict)."""
    return path.is_dir() and ((path / "state.json").is_file() or (path / "dataset_dict.json").is_file())


def parquet_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """("row N", fields) for each row of a Parquet file."""
    parquet = _pyarrow(path, "a Parquet file").parquet
    _check_size(path, os.path.getsize(path) if path.is_file() else -1, "Parquet file")
    try:
        file = parquet.ParquetFile(path)
        expanded = sum(file.metadata.row_group(i).total_byte_size for i in range(file.metadata.num_row_groups))
        _check_size(path, expanded, "Parquet file's uncompressed data")
        table = file.read()
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"{path}: not a readable Parquet file ({_first_line(error)})") from None
    yield from _rows(table.to_pylist(), path)


def saved_dataset_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """("row N", fields) for each row of a folder saved by `datasets.Dataset.save_to_disk`."""
    if (path / "dataset_dict.json").is_file():
        splits = _splits(path)
        raise InputError(f"{path}: a DatasetDict folder (splits {', '.join(splits) or 'none named'}); point "
                         f"dataset.file at one split's folder ({path.name}/{splits[0] if splits else 'SPLIT'})")
    pa = _pyarrow(path, "a saved `datasets` folder")
    try:
        state = json.loads(read_text(path / "state.json", "datasets state"))
        names = [entry["filename"] for entry in state["_data_files"]]
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{path / 'state.json'}: not the state of a saved dataset (no `_data_files` list of "
                         "filenames); save it again with datasets' save_to_disk") from None
    files = []
    for name in names:
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise InputError(f"{path / 'state.json'}: data file {str(name)[:80]!r} is not a file name in the "
                             "folder; a saved dataset names its own files only")
        files.append(path / name)
    _check_size(path, sum(f.stat().st_size for f in files if f.is_file()), "saved dataset's data files")
    rows: list[dict[str, Any]] = []
    for file in files:
        try:
            with pa.memory_map(str(file)) as source:
                rows += pa.ipc.open_stream(source).read_all().to_pylist()
        except (OSError, ValueError) as error:
            raise InputError(f"{file}: not a readable Arrow data file of a saved dataset "
                             f"({_first_line(error)})") from None
    yield from _rows(rows, path)


def _splits(path: Path) -> list[str]:
    try:
        data = json.loads(read_text(path / "dataset_dict.json", "datasets split list"))
        return [str(s) for s in data.get("splits", [])]
    except (ValueError, AttributeError):
        return []


def _pyarrow(path: Path, what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.ipc
        import pyarrow.parquet  # noqa: F401  (the submodules are attributes once imported)
    except ImportError:
        raise InputError(f"{path}: reading {what} needs pyarrow, which is not installed: {_INSTALL}; or save it "
                         "as JSON Lines and point dataset.file at that") from None
    return pyarrow


def _check_size(path: Path, size: int, what: str) -> None:
    limit = max_input_bytes()
    if size < 0:
        raise InputError(f"{path}: not a file")
    if size > limit:
        raise InputError(f"{path}: the {what} take {size:,} bytes, over the {limit:,}-byte input limit "
                         "(EVALKIT_MAX_INPUT_BYTES); split the dataset or raise the limit")


def _rows(rows: list[dict[str, Any]], path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, row in enumerate(rows, start=1):
        where = f"row {number}"
        yield where, {str(k): _json_value(v, path, where, str(k)) for k, v in row.items()}


def _json_value(value: Any, path: Path, where: str, field: str) -> Any:
    """A column's value as JSON holds it: dates and decimals as their text; bytes and non-finite numbers refused."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{path}: {where}: field {field!r} is {value}; a case's fields are JSON values")
        return value
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta | decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_value(v, path, where, f"{field}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v, path, where, f"{field}[{i}]") for i, v in enumerate(value)]
    raise InputError(f"{path}: {where}: field {field!r} holds {type(value).__name__}, which a case's JSON fields "
                     "cannot hold; leave that column out of the file")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
