"""Dataset files beyond evalkit's own JSON: JSON Lines, CSV, Parquet and folders saved by Hugging Face `datasets`,
one case per row, with the file's columns mapped to case fields in config (`dataset.fields: {id: ticket_id,
input: body, label: category}`).

A row without an id gets one made from its content (`row-` and 12 hex digits of its fields' fingerprint), so
the same row has the same id whatever its place in the file; the same content again is numbered in file order
(`row-…-2`), counted as it comes, so numbering is linear in the rows however many repeat. The fingerprint of
such a dataset is of the cases as loaded (`cases_fingerprint`), not of the file's bytes: a file re-saved with
other quoting, spacing or row order holds the same cases and keeps its eval key. Every refusal names the file,
the row and the field.

Every format is read under the same `DatasetLimits` (rows, bytes, the longest field; evalkit.core.dataset).
Parquet files and saved `datasets` folders are read with pyarrow, an optional extra, in a child process under a
memory and a time limit (evalkit.core.columnar); without pyarrow they are refused in one line that says what to
install.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalkit.core.columnar import columnar_rows, is_saved_dataset
from evalkit.core.dataset import (
    Case,
    Dataset,
    DatasetLimits,
    byte_limit,
    check_case_id,
    check_row,
    load_dataset,
    too_many_rows,
)
from evalkit.core.errors import InputError
from evalkit.core.files import decode, read_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.parsing import parse_json

__all__ = ["ROW_FORMATS", "cases_fingerprint", "load_cases"]

ROW_FORMATS = (".jsonl", ".csv", ".parquet")
"""Suffixes of the files read as one case per row (and a folder saved by `datasets`)."""


def load_cases(path: Path, fields: Mapping[str, str] | None = None, name: str | None = None,
               version: str | None = None, limits: DatasetLimits | None = None) -> Dataset:
    """The dataset at `path`: evalkit's JSON (name and version from the file, fingerprint of its bytes) or a file
    (or saved `datasets` folder) of rows (name and version from config, fingerprint of the loaded cases), read
    under `limits` (the defaults when None)."""
    if not path.exists():  # first: every other refusal below is about a file that is there
        raise InputError(f"{path}: dataset file not found; check dataset.file (relative paths are from the project "
                         "root)")
    limits = limits or DatasetLimits()
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
        return load_dataset(path, limits)
    if not name or not version:
        what = "saved `datasets` folder" if saved else f"{suffix} dataset"
        raise InputError(f"{path}: a {what} needs dataset.name and dataset.version in its config option (they name "
                         "the recording file)")
    rows = columnar_rows(path, limits) if saved or suffix == ".parquet" else _text_rows(path, limits)
    cases = _cases(rows, path, dict(fields or {}), limits)
    if not cases:
        raise InputError(f"{path}: no rows; a dataset needs at least one case")
    return Dataset(name, version, cases_fingerprint(name, version, cases), tuple(cases))


def cases_fingerprint(name: str, version: str, cases: tuple[Case, ...] | list[Case]) -> str:
    """The fingerprint of a dataset as loaded: its name, version and cases (ids and fields), in id order."""
    ordered = sorted(cases, key=lambda case: case.id)
    return fingerprint({"name": name, "version": version,
                        "cases": [{"id": case.id, "fields": case.fields} for case in ordered]})


def _text_rows(path: Path, limits: DatasetLimits) -> Iterator[tuple[str, dict[str, Any]]]:
    limit, setting = byte_limit(limits)
    text = decode(read_bytes(path, "dataset", limit=limit, setting=setting), path, "dataset")
    return _jsonl_rows(text, path, limits) if path.suffix.lower() == ".jsonl" else _csv_rows(text, path, limits)


def _jsonl_rows(text: str, path: Path, limits: DatasetLimits) -> Iterator[tuple[str, dict[str, Any]]]:
    # lines end at "\n" only (JSON Lines): str.splitlines would also cut at U+2028 and other separators a JSON
    # string may hold as they are
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        row = parse_json(line, f"{path}: {where}", "dataset row")
        if not isinstance(row, dict):
            raise InputError(f"{path}: {where} is {type(row).__name__}; each line is one JSON object")
        # no string is longer than its line, and a lone surrogate can only come from a `\u` escape
        if len(line) > limits.max_field_chars or "\\u" in line:
            check_row(row, f"{path}: {where}", limits)
        yield where, row


def _csv_rows(text: str, path: Path, limits: DatasetLimits) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[str, dict[str, Any]]] = []
    with _csv_field_limit(limits.max_field_chars):  # read whole inside: the limit is the process's, not this file's
        try:
            header = next(reader)
        except StopIteration:
            return iter(rows)
        except csv.Error as error:
            raise InputError(_not_csv(path, 1, error, limits)) from None
        twice = sorted(column for column, count in Counter(header).items() if count > 1)
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
                if len(rows) == limits.max_rows:
                    raise too_many_rows(path, limits)
                rows.append((where, dict(zip(header, values, strict=True))))
        except csv.Error as error:
            raise InputError(_not_csv(path, reader.line_num, error, limits)) from None
    return iter(rows)


@contextmanager
def _csv_field_limit(chars: int) -> Iterator[None]:
    """csv's longest field set to `max_field_chars` while a file is read (the module keeps one limit for the
    process, 131,072 characters unless set)."""
    before = csv.field_size_limit(chars)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _not_csv(path: Path, line: int, error: csv.Error, limits: DatasetLimits) -> str:
    if "field larger than field limit" in str(error):
        return (f"{path}: line {line}: a field is longer than dataset.limits.max_field_chars "
                f"({limits.max_field_chars:,} characters), or a quote is never closed; shorten it, close the quote, "
                "or raise the limit")
    return f"{path}: line {line}: not CSV ({error})"


def _cases(rows: Iterator[tuple[str, dict[str, Any]]], path: Path, fields: dict[str, str],
           limits: DatasetLimits) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, str] = {}
    repeats: Counter[str] = Counter()  # how often each content id was given, so a repeat's number is one look-up
    renamed = set(fields.values())
    for where, row in rows:
        if len(cases) == limits.max_rows:
            raise too_many_rows(path, limits)
        missing = [f"{source!r} (mapped to {target})" for target, source in fields.items() if source not in row]
        if missing:
            raise InputError(f"{path}: {where} has no field {missing[0]}; dataset.fields maps case fields to the "
                             f"file's columns (it has: {', '.join(sorted(row))})")
        mapped = {target: row[source] for target, source in fields.items()}
        mapped.update({key: value for key, value in row.items() if key not in renamed and key not in mapped})
        raw_id = mapped.pop("id", None)
        if raw_id is None or raw_id == "":
            case_id = _content_id("row-" + fingerprint(mapped)[:12], repeats, seen)
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


def _content_id(base: str, repeats: Counter[str], seen: Mapping[str, str]) -> str:
    """The id of a row without one: `base` (from its content), or, for the same content again, `base-N`, N
    counting it in file order; an id a row gave itself is skipped. Each number is tried once per `base`, so
    numbering every row takes time linear in the rows."""
    while True:
        repeats[base] += 1
        case_id = base if repeats[base] == 1 else f"{base}-{repeats[base]}"
        if case_id not in seen:
            return case_id
