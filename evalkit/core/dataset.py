"""Datasets: a versioned file of cases, fingerprinted by its bytes, and the limits every dataset is read under.

A dataset is input evalkit did not write, often from elsewhere (an export, a download), so every reader of one
(evalkit's JSON here, rows in evalkit.core.loaders, Parquet and saved `datasets` folders in
evalkit.core.columnar, manifests in evalkit.run.manifest) reads it under one `DatasetLimits`: the dataset
option's `limits` (`dataset.limits.max_rows=...`), documented in docs/reference/limits.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalkit.core.errors import InputError
from evalkit.core.files import MAX_INPUT_BYTES_ENV, decode, max_input_bytes, read_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.parsing import lone_surrogate, parse_json

__all__ = ["MAX_ID_CHARS", "Case", "Dataset", "DatasetLimits", "byte_limit", "check_case_id", "check_row",
           "load_dataset", "too_many_rows"]

MAX_ID_CHARS = 100
"""The longest case id, dataset name or dataset version."""
_CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_LABEL = _CASE_ID


class DatasetLimits(BaseModel):
    """What one dataset may hold, whatever its format (evalkit's JSON, JSON Lines, CSV, Parquet, a saved
    `datasets` folder, a manifest's files). A dataset past one is refused in one line naming the setting to
    raise; the defaults hold datasets far larger than the shipped ones."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    max_rows: int = Field(1_000_000, ge=1)
    """The most rows (cases) a dataset may have; a Parquet file's row count is checked from its metadata before
    a row is read."""
    max_bytes: int = Field(256 * 1024 * 1024, ge=1)
    """The most bytes of data: a text file's size (each of a manifest's files); a Parquet file's or a saved
    folder's data uncompressed and decoded, checked from the metadata before reading and again as it is read.
    EVALKIT_MAX_INPUT_BYTES, when lower, bounds it too."""
    max_field_chars: int = Field(1024 * 1024, ge=1)
    """The longest text of one value (a CSV field, a JSON string at any depth, a Parquet string, a column name),
    in characters."""
    max_image_bytes: int = Field(5 * 1024 * 1024, ge=1)
    """The largest image one case field may name (dataset.images), in bytes: one part of a request. 5 MiB is
    Anthropic's limit per image, the strictest of the providers that take images."""
    max_audio_bytes: int = Field(20 * 1024 * 1024, ge=1)
    """The largest audio file one case field may name (dataset.audio), in bytes: one part of a request."""
    max_request_media_bytes: int = Field(20 * 1024 * 1024, ge=1)
    """The most bytes of images and audio one case may name in all, what its request carries (before base64,
    which adds a third); 20 MiB is under every provider's limit per request."""
    read_timeout_s: float = Field(300.0, gt=0, le=24 * 3600)
    """Parquet files and saved folders are decoded in a child process under a memory limit (1 GiB plus twice
    `max_bytes`); this is how long it may take, in seconds, before it is stopped and the dataset refused."""


def byte_limit(limits: DatasetLimits) -> tuple[int, str]:
    """The byte limit a dataset's files are read under, and the setting a refusal names: `dataset.limits.max_bytes`,
    or EVALKIT_MAX_INPUT_BYTES where that is lower (it bounds every input evalkit reads)."""
    everything = max_input_bytes()
    if everything < limits.max_bytes:
        return everything, MAX_INPUT_BYTES_ENV
    return limits.max_bytes, "dataset.limits.max_bytes"


def too_many_rows(path: Path | str, limits: DatasetLimits, count: int | None = None) -> InputError:
    """The refusal of a dataset of more than `max_rows` rows (`count` of them, where it is known)."""
    how_many = f"{count:,} rows, more than" if count is not None else "more rows than"
    return InputError(f"{path}: the dataset has {how_many} dataset.limits.max_rows ({limits.max_rows:,}); "
                      "split it, or raise the limit")


def check_row(row: dict[str, Any], where: str, limits: DatasetLimits) -> None:
    """Refuse a row holding text no case can: a value or a key longer than `max_field_chars`, or a lone
    surrogate (JSON's `"\\ud800"`, half a character that no fingerprint or report can be written with).

    Linear in the row's size and without recursion (parse_json bounds the nesting)."""
    for name, value in row.items():
        for text in _texts(name, value):
            if len(text) > limits.max_field_chars:
                raise InputError(f"{where}: field {_clip(name)} holds text of {len(text):,} characters, more than "
                                 f"dataset.limits.max_field_chars ({limits.max_field_chars:,}); shorten it, or "
                                 "raise the limit")
            bad = lone_surrogate(text)
            if bad is not None:
                raise InputError(f"{where}: field {_clip(name)} holds a lone surrogate ({bad}), half of a UTF-16 "
                                 "pair, which is not text; write the string as UTF-8")


def _texts(name: str, value: Any) -> Iterator[str]:
    """The field's name, then every string in its value (keys and values, at any depth)."""
    yield name
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, inner in item.items():
                yield str(key)
                pending.append(inner)
        elif isinstance(item, list):
            pending.extend(item)


@dataclass(frozen=True)
class Case:
    """One dataset row with a stable id; other fields are read as attributes (`case.issue`)."""

    id: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name == "fields":  # not yet set (while copying or unpickling): no recursion through it
            raise AttributeError(name)
        media = self.__dict__.get("_media", {})
        if name in media:
            return media[name]
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(f"case {self.id!r} has no field {name!r}") from None

    def get(self, name: str, default: Any = None) -> Any:
        if name in self.media:
            return self.media[name]
        return self.fields.get(name, default)

    @property
    def media(self) -> dict[str, Any]:
        """The fields that name an image (dataset.images), as image parts ready to send (evalkit.records.ImagePart):
        `case.receipt` reads the part here, while `fields` keeps its description (media type, SHA-256, size, path),
        which is what the checks and the reports see. Empty outside the process that builds requests: it is no
        dataclass field, so it never reaches run_input or a report."""
        media: dict[str, Any] = self.__dict__.get("_media", {})
        return media

    def with_media(self, media: dict[str, Any]) -> Case:
        """This case with its image parts (see `media`)."""
        case = Case(self.id, self.fields)
        object.__setattr__(case, "_media", dict(media))
        return case


@dataclass(frozen=True)
class Dataset:
    """A named, versioned list of cases and the fingerprint of the file they came from."""

    name: str
    version: str
    sha: str
    cases: tuple[Case, ...]

    @property
    def label(self) -> str:
        """`name@version`, as the eval key writes it."""
        return f"{self.name}@{self.version}"


def load_dataset(path: Path, limits: DatasetLimits | None = None) -> Dataset:
    """Read a dataset file: `{"name": ..., "version": ..., "cases": [{"id": ..., ...}, ...]}`, under `limits`
    (the defaults when None)."""
    limits = limits or DatasetLimits()
    limit, setting = byte_limit(limits)
    raw = read_bytes(path, "dataset", limit=limit, setting=setting)
    text = decode(raw, path, "dataset")
    data = parse_json(text, str(path), "dataset")
    if not isinstance(data, dict) or not {"name", "version", "cases"} <= data.keys():
        raise InputError(f"{path}: a dataset needs the keys 'name', 'version' and 'cases'")
    for key in ("name", "version"):
        if isinstance(data[key], int) and not isinstance(data[key], bool):
            data[key] = str(data[key])  # `version: 1` names version "1"
        if not isinstance(data[key], str) or not _LABEL.fullmatch(data[key]):
            raise InputError(f"{path}: '{key}' must be 1 to {MAX_ID_CHARS} letters, digits, '.', '_' or '-' "
                             f"(it names the recording file), got {_clip(data[key])}")
    if not isinstance(data["cases"], list) or not data["cases"]:
        raise InputError(f"{path}: 'cases' must be a non-empty list of case objects")
    if len(data["cases"]) > limits.max_rows:
        raise too_many_rows(path, limits, len(data["cases"]))
    # no string can be longer than the file, and a lone surrogate can only come from a `\u` escape
    plain = len(text) <= limits.max_field_chars and "\\u" not in text
    cases: list[Case] = []
    seen: set[str] = set()
    for index, row in enumerate(data["cases"]):
        if not isinstance(row, dict):
            raise InputError(f"{path}: cases[{index}] is {type(row).__name__}; each case is an object with an 'id'")
        if not plain:
            check_row(row, f"{path}: cases[{index}]", limits)
        case_id = check_case_id(row.get("id"), f"{path}: cases[{index}]")
        if case_id in seen:
            raise InputError(f"{path}: duplicate case id {case_id!r}")
        seen.add(case_id)
        cases.append(Case(case_id, {k: v for k, v in row.items() if k != "id"}))
    return Dataset(data["name"], data["version"], fingerprint(raw), tuple(cases))


def check_case_id(value: Any, where: str) -> str:
    """A case id as datasets and manifests must give it: it appears in test ids, terminals and decision files,
    so it holds no spaces, newlines or markup; anything else is an InputError at `where`."""
    if not isinstance(value, str) or not _CASE_ID.fullmatch(value):
        raise InputError(f"{where} needs an 'id' of 1 to {MAX_ID_CHARS} letters, digits, '.', '_' or '-' "
                         f"(got {_clip(value)})")
    return value


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
