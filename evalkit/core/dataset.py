"""Datasets: a versioned file of cases, fingerprinted by its bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.core.errors import InputError
from evalkit.core.files import decode, read_bytes
from evalkit.core.fingerprint import fingerprint
from evalkit.core.parsing import parse_json

__all__ = ["MAX_ID_CHARS", "Case", "Dataset", "check_case_id", "load_dataset"]

MAX_ID_CHARS = 100
"""The longest case id, dataset name or dataset version."""
_CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_LABEL = _CASE_ID


@dataclass(frozen=True)
class Case:
    """One dataset row with a stable id; other fields are read as attributes (`case.issue`)."""

    id: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(f"case {self.id!r} has no field {name!r}") from None

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


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


def load_dataset(path: Path) -> Dataset:
    """Read a dataset file: `{"name": ..., "version": ..., "cases": [{"id": ..., ...}, ...]}`."""
    raw = read_bytes(path, "dataset")
    data = parse_json(decode(raw, path, "dataset"), str(path), "dataset")
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
    cases: list[Case] = []
    seen: set[str] = set()
    for index, row in enumerate(data["cases"]):
        if not isinstance(row, dict):
            raise InputError(f"{path}: cases[{index}] is {type(row).__name__}; each case is an object with an 'id'")
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
