"""Rows of columnar dataset files: Parquet, and the folders Hugging Face `datasets` saves with `save_to_disk`.

Both are read with pyarrow, an optional dependency (`pip install 'evalkit[parquet]'`): pyarrow is what writes
and reads both formats in every tool that produces them, and evalkit needs nothing else of `datasets` (a saved
folder is Arrow IPC stream files named by its `state.json`). Nothing is downloaded: a dataset must be on disk.

Each row becomes a dict of JSON values, as a JSON Lines row would be, so the same cases read from Parquet, a
saved folder or JSON Lines have the same fingerprint (evalkit.core.loaders.cases_fingerprint). A value JSON cannot
hold as it is (a date, a decimal) is written as its text; one it cannot hold at all (bytes, NaN) is refused,
naming the row and field.

A few hundred bytes of Parquet can declare millions of rows, or hold one string that a dictionary repeats in
every row; a compressed Arrow buffer decompresses to the size it declares. So the files are read under the
dataset's limits (evalkit.core.dataset.DatasetLimits) three times over: a Parquet file's row count and
uncompressed size are checked from its metadata before a row is read; every batch is counted, rows and decoded
bytes, as it is read, so a file whose metadata lie or whose data expand is stopped at the batch that passes a
limit; and all of it runs in a child process under a memory and a time limit (evalkit.core.confined), so a batch
too large to decode, or a malformed file that crashes pyarrow, is one refusal line, not a dead run. A saved
folder's data files are its own: a name with a path, or a symbolic link that leads out of the folder, is refused.
Nesting needs no check of evalkit's: pyarrow reads no Parquet schema deeper than 100 levels, and no Arrow type
nested deeper than 64.
"""

from __future__ import annotations

import datetime
import decimal
import importlib.util
import json
import math
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evalkit.core.confined import run_confined, serve
from evalkit.core.dataset import DatasetLimits, byte_limit, check_row, too_many_rows
from evalkit.core.errors import InputError
from evalkit.core.files import read_text
from evalkit.core.parsing import parse_json

__all__ = ["CHILD_BASE_MEMORY", "columnar_rows", "is_saved_dataset", "main", "parquet_rows", "saved_dataset_rows"]

_INSTALL = "pip install 'evalkit[parquet]' (pyarrow)"
CHILD_BASE_MEMORY = 1 << 30
"""The reading child's address space beyond twice the byte limit: Python, pyarrow's libraries and one batch."""
_BATCH_BYTES = 8 << 20  # a batch of about this many bytes (by the metadata's average row) is decoded at a time
_BATCH_VALUES = 1_000_000  # turned into Python values (each an object) this many, rows x columns, at a time


def is_saved_dataset(path: Path) -> bool:
    """Whether `path` is a folder written by `datasets`' `save_to_disk` (a Dataset or a DatasetDict)."""
    return path.is_dir() and ((path / "state.json").is_file() or (path / "dataset_dict.json").is_file())


def columnar_rows(path: Path, limits: DatasetLimits) -> Iterator[tuple[str, dict[str, Any]]]:
    """("row N", fields) for each row of a Parquet file or saved folder, read in a confined child process."""
    saved = is_saved_dataset(path)
    what = "saved `datasets` folder" if saved else "Parquet file"
    if saved and (path / "dataset_dict.json").is_file():
        splits = _splits(path, limits)
        raise InputError(f"{path}: a DatasetDict folder (splits {', '.join(splits) or 'none named'}); point "
                         f"dataset.file at one split's folder ({path.name}/{splits[0] if splits else 'SPLIT'})")
    if _pyarrow_missing():
        raise InputError(f"{path}: reading {'a ' + what} needs pyarrow, which is not installed: {_INSTALL}; or save "
                         "it as JSON Lines and point dataset.file at that")
    limit, setting = byte_limit(limits)
    out = run_confined("evalkit.core.columnar", [str(path), limits.model_dump_json()], where=f"{path} ({what})",
                       memory_bytes=CHILD_BASE_MEMORY + 2 * limit, timeout_s=limits.read_timeout_s,
                       memory_setting=setting, timeout_setting="dataset.limits.read_timeout_s")
    for number, line in enumerate(out.splitlines(), start=1):
        yield f"row {number}", json.loads(line)  # the child's own JSON, each row already checked there


def _pyarrow_missing() -> bool:
    try:
        return importlib.util.find_spec("pyarrow") is None
    except (ImportError, ValueError):
        return True


def main(args: list[str]) -> None:
    """The child's end (`run_confined`): ARGS are the path and the limits as JSON; each row as a JSON line."""
    path, limits = Path(args[0]), DatasetLimits.model_validate_json(args[1])

    def produce() -> Iterator[bytes]:
        limit, setting = byte_limit(limits)
        written = 0
        rows = saved_dataset_rows(path, limits) if is_saved_dataset(path) else parquet_rows(path, limits)
        for where, row in rows:
            line = json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            written += len(line)
            # what the parent takes in: the rows as JSON Lines, held to the limit a JSON Lines file is held to (a
            # thousand empty columns are a few bytes of Arrow and many more of JSON)
            _check_size(path, written, limit, setting, f"rows as JSON Lines (to {where})")
            yield line

    serve(produce)


def parquet_rows(path: Path, limits: DatasetLimits) -> Iterator[tuple[str, dict[str, Any]]]:
    """("row N", fields) for each row of a Parquet file, read here (in the confined child: `columnar_rows`)."""
    pa = _pyarrow(path, "a Parquet file")
    limit, setting = byte_limit(limits)
    _check_size(path, os.path.getsize(path) if path.is_file() else -1, limit, setting, "Parquet file")
    try:
        file = pa.parquet.ParquetFile(path)  # reads the footer, no data
        meta = file.metadata
        groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
        declared = max(meta.num_rows, sum(group.num_rows for group in groups))
        if declared > limits.max_rows:
            raise too_many_rows(path, limits, declared)
        expanded = sum(group.total_byte_size for group in groups)
        _check_size(path, expanded, limit, setting, "Parquet file's uncompressed data")
        batch = max(1, min(65_536, _BATCH_BYTES * max(declared, 1) // max(expanded, 1)))
        yield from _decoded(file.iter_batches(batch_size=batch, use_threads=False), path, limits, "Parquet file")
    except (pa.ArrowException, OSError, ValueError) as error:  # ArrowInvalid is a ValueError
        raise _unreadable(error, f"{path}: not a readable Parquet file") from None


def saved_dataset_rows(path: Path, limits: DatasetLimits) -> Iterator[tuple[str, dict[str, Any]]]:
    """("row N", fields) for each row of a folder saved by `datasets.Dataset.save_to_disk`, read here (in the
    confined child: `columnar_rows`)."""
    pa = _pyarrow(path, "a saved `datasets` folder")
    limit, setting = byte_limit(limits)
    state_path = _inside(path, "state.json", path / "state.json")
    state = parse_json(read_text(state_path, "datasets state", limit=limit, setting=setting), str(state_path),
                       "datasets state")
    try:
        names = [entry["filename"] for entry in state["_data_files"]]
    except (KeyError, TypeError):
        raise InputError(f"{state_path}: not the state of a saved dataset (no `_data_files` list of filenames); "
                         "save it again with datasets' save_to_disk") from None
    files = [_inside(path, name, state_path) for name in names]
    # the files as they lie on disk: their data can only be larger once decompressed
    _check_size(path, sum(file.stat().st_size for file in files), limit, setting, "saved dataset's data files")
    try:
        yield from _decoded(_stream_batches(pa, files), path, limits, "saved dataset")
    except (pa.ArrowException, OSError, ValueError) as error:  # a batch read whole that cannot become values
        raise _unreadable(error, f"{path}: a data file of the saved dataset is not readable") from None


def _inside(folder: Path, name: Any, named_in: Path) -> Path:
    """The regular file `name` in `folder`: a name with a path, or a symbolic link leading out of the folder, is
    refused (a saved dataset names its own files only)."""
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise InputError(f"{named_in}: data file {str(name)[:80]!r} is not a file name in the folder; a saved dataset "
                         "names its own files only")
    file = folder / name
    try:
        real = file.resolve(strict=True)
        inside = real.is_relative_to(folder.resolve(strict=True))
        kind = os.stat(real).st_mode
    except FileNotFoundError:
        raise InputError(f"{file}: the saved dataset's file is missing (named in {named_in.name})") from None
    except (OSError, RuntimeError, ValueError) as error:  # a loop of links (RuntimeError before Python 3.13), a
        # name the file system cannot encode (ValueError)
        raise InputError(f"{file!s:.200}: cannot read the saved dataset's file ({_first_line(error)})") from None
    if not inside:
        raise InputError(f"{file}: a symbolic link to {real}, outside the folder; a saved dataset's files are in "
                         "its folder: copy the file in instead of linking it")
    if not stat.S_ISREG(kind):
        raise InputError(f"{file}: not a regular file; a saved dataset's files are regular files")
    return file


def _stream_batches(pa: Any, files: list[Path]) -> Iterator[Any]:
    """Every record batch of the folder's Arrow stream files, one at a time."""
    for file in files:
        try:
            with pa.OSFile(str(file)) as source:
                yield from pa.ipc.open_stream(source)
        except (pa.ArrowException, OSError, ValueError) as error:
            raise _unreadable(error, f"{file}: not a readable Arrow data file of a saved dataset") from None


def _decoded(batches: Iterable[Any], path: Path, limits: DatasetLimits,
             what: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of `batches`, counted against the limits batch by batch before any batch becomes Python values."""
    limit, setting = byte_limit(limits)
    rows = size = 0
    for batch in batches:
        first = rows + 1
        rows += batch.num_rows
        if rows > limits.max_rows:
            raise too_many_rows(path, limits)
        size += batch.nbytes
        _check_size(path, size, limit, setting, f"{what}'s decoded data")
        step = max(1, _BATCH_VALUES // max(batch.num_columns, 1))  # a batch's rows as Python values, a slice at a time
        for offset in range(0, batch.num_rows, step):
            for number, values in enumerate(batch.slice(offset, step).to_pylist(), start=first + offset):
                where = f"row {number}"
                row = {str(k): _json_value(v, path, where, str(k)) for k, v in values.items()}
                check_row(row, f"{path}: {where}", limits)
                yield where, row


def _splits(path: Path, limits: DatasetLimits) -> list[str]:
    limit, setting = byte_limit(limits)
    listed = _inside(path, "dataset_dict.json", path / "dataset_dict.json")
    try:
        data = json.loads(read_text(listed, "datasets split list", limit=limit, setting=setting))
        return [str(s)[:80] for s in data.get("splits", [])][:20]
    except (ValueError, AttributeError, TypeError, RecursionError):
        return []


def _pyarrow(path: Path, what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.ipc
        import pyarrow.parquet  # noqa: F401  (the submodules are attributes once imported)
    except ImportError:
        raise InputError(f"{path}: reading {what} needs pyarrow, which is not installed: {_INSTALL}; or save it "
                         "as JSON Lines and point dataset.file at that") from None
    pyarrow.set_cpu_count(1)  # one batch at a time, in the memory the child has
    pyarrow.set_io_thread_count(1)
    return pyarrow


def _check_size(path: Path, size: int, limit: int, setting: str, what: str) -> None:
    if size < 0:
        raise InputError(f"{path}: not a file")
    if size > limit:
        raise InputError(f"{path}: the {what} take {size:,} bytes, over the {limit:,}-byte limit ({setting}); "
                         "split the dataset or raise the limit")


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


def _unreadable(error: BaseException, message: str) -> InputError:
    """The refusal of a file pyarrow could not read (`message`, then pyarrow's reason); its running out of memory
    (ArrowMemoryError is also an ArrowException) goes on as the MemoryError it is, for the child's exit code."""
    if isinstance(error, MemoryError):
        raise error
    return InputError(f"{message} ({_first_line(error)})")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
