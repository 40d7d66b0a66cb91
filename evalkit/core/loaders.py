"""Dataset files beyond evalkit's own JSON: JSON Lines, CSV, Parquet and folders saved by Hugging Face `datasets`,
one case per row, with the file's columns mapped to case fields in config (`dataset.fields: {id: ticket_id,
input: body, label: category}`).

A row without an id gets one made from its content (`row-` and 12 hex digits of its fields' fingerprint), so
the same row has the same id whatever its place in the file. The fingerprint of such a dataset is of the cases
as loaded (`cases_fingerprint`), not of the file's bytes: a file re-saved with other quoting, spacing or row
order holds the same cases and keeps its eval key. Every refusal names the file, the row and the field.

Parquet files and saved `datasets` folders are read with pyarrow, an optional extra (evalkit.core.columnar);
without it they are refused in one line that says what to install.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalkit.core.columnar import is_saved_dataset, parquet_rows, saved_dataset_rows
from evalkit.core.dataset import Case, Dataset, check_case_id, load_dataset
from evalkit.core.errors import InputError
from evalkit.core.files import decode, read_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.parsing import parse_json

__all__ = ["ROW_FORMATS", "cases_fingerprint", "load_cases"]

ROW_FORMATS = (".jsonl", ".csv", ".parquet")
"""Suffixes of the files read as one case per row (and a folder saved by `datasets`)."""


def load_cases(path: Path, fields: Mapping[str, str] | None = None, name: str | None = None,
               version: str | None = None) -> Dataset:
    """The dataset at `path`: evalkit's JSON (name and version from the file, fingerprint of its bytes) or a file
    (or saved `datasets` folder) of rows (name and version from config, fingerprint of the loaded cases)."""
    if not path.exists():  # first: every other refusal below is about a file that is there
        raise InputError(f"{path}: dataset file not found; check dataset.file (relative paths are from the project "
                         "root)")
    suffix = path.suffix.lower()
    saved = is_saved_dataset(path)
    if path.is_dir() and not saved:
        raise InputError(f"{path}: a folder, and not one saved by Hugging Face `datasets` (no state.json or "
                         "dataset_dict.json); dataset.file names a .json, .jsonl, .csv or .parquet file, or such a "
                         "folder")
    if suffix not in ROW_FORMATS and not saved:
        if fields or name or version:
            raise InputError(f"{path}: an evalkit JSON dataset names its own fields, name and version; "
                             "dataset.fields, dataset.name and dataset.version are for files of rows")
        return load_dataset(path)
    if not name or not version:
        what = "saved `datasets` folder" if saved else f"{suffix} dataset"
        raise InputError(f"{path}: a {what} needs dataset.name and dataset.version in its config option (they name "
                         "the recording file)")
    rows = saved_dataset_rows(path) if saved else parquet_rows(path) if suffix == ".parquet" else _text_rows(path)
    cases = _cases(rows, path, dict(fields or {}))
    if not cases:
        raise InputError(f"{path}: no rows; a dataset needs at least one case")
    return Dataset(name, version, cases_fingerprint(name, version, cases), tuple(cases))


def cases_fingerprint(name: str, version: str, cases: tuple[Case, ...] | list[Case]) -> str:
    """The fingerprint of a dataset as loaded: its name, version and cases (ids and fields), in id order."""
    ordered = sorted(cases, key=lambda case: case.id)
    return fingerprint({"name": name, "version": version,
                        "cases": [{"id": case.id, "fields": case.fields} for case in ordered]})


def _text_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    text = decode(read_bytes(path, "dataset"), path, "dataset")
    return _jsonl_rows(text, path) if path.suffix.lower() == ".jsonl" else _csv_rows(text, path)


def _jsonl_rows(text: str, path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}: line {number}", "dataset row")
        if not isinstance(row, dict):
            raise InputError(f"{path}: line {number} is {type(row).__name__}; each line is one JSON object")
        yield f"line {number}", row


def _csv_rows(text: str, path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as error:
        raise InputError(f"{path}: line 1: not CSV ({error})") from None
    twice = sorted({column for column in header if header.count(column) > 1})
    if twice or any(not column for column in header):
        raise InputError(f"{path}: line 1: " + (f"column {twice[0]!r} appears twice" if twice
                                                 else "a column has no name") + "; each column names one field")
    try:
        for values in reader:
            where = f"line {reader.line_num}"
            if not values:
                continue
            if len(values) != len(header):
                raise InputError(f"{path}: {where} has {len(values)} values for {len(header)} columns")
            yield where, dict(zip(header, values, strict=True))
    except csv.Error as error:
        raise InputError(f"{path}: line {reader.line_num}: not CSV ({error})") from None


def _cases(rows: Iterator[tuple[str, dict[str, Any]]], path: Path, fields: dict[str, str]) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, str] = {}
    renamed = set(fields.values())
    for where, row in rows:
        missing = [f"{source!r} (mapped to {target})" for target, source in fields.items() if source not in row]
        if missing:
            raise InputError(f"{path}: {where} has no field {missing[0]}; dataset.fields maps case fields to the "
                             f"file's columns (it has: {', '.join(sorted(row))})")
        mapped = {target: row[source] for target, source in fields.items()}
        mapped.update({key: value for key, value in row.items() if key not in renamed and key not in mapped})
        raw_id = mapped.pop("id", None)
        if raw_id is None or raw_id == "":
            case_id = "row-" + fingerprint(mapped)[:12]
            if case_id in seen:  # the same content twice: numbered in file order, still stable
                case_id = f"{case_id}-{sum(1 for known in seen if known.startswith(case_id)) + 1}"
        else:
            source = fields.get("id", "id")
            if isinstance(raw_id, int) and not isinstance(raw_id, bool):
                raw_id = str(raw_id)  # JSON Lines often number their rows
            case_id = check_case_id(raw_id, f"{path}: {where}: field {source!r}")
            if case_id in seen:
                raise InputError(f"{path}: {where}: field {source!r}: id {case_id!r} was already given on "
                                 f"{seen[case_id]}; case ids are unique")
        seen[case_id] = where
        cases.append(Case(case_id, mapped))
    return cases


