"""Datasets: a versioned file of cases, fingerprinted by its bytes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.core.errors import InputError
from evalkit.core.fingerprint import fingerprint

__all__ = ["Case", "Dataset", "load_dataset"]

_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read dataset ({error.strerror})") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: dataset is not valid JSON ({error})") from None
    if not isinstance(data, dict) or not {"name", "version", "cases"} <= data.keys():
        raise InputError(f"{path}: a dataset needs the keys 'name', 'version' and 'cases'")
    if not isinstance(data["cases"], list) or not data["cases"]:
        raise InputError(f"{path}: 'cases' must be a non-empty list")
    cases: list[Case] = []
    seen: set[str] = set()
    for index, row in enumerate(data["cases"]):
        case_id = row.get("id") if isinstance(row, dict) else None
        if not isinstance(case_id, str) or not _CASE_ID.match(case_id):
            raise InputError(f"{path}: cases[{index}] needs an 'id' of letters, digits, '.', '_' or '-'")
        if case_id in seen:
            raise InputError(f"{path}: duplicate case id {case_id!r}")
        seen.add(case_id)
        cases.append(Case(case_id, {k: v for k, v in row.items() if k != "id"}))
    return Dataset(str(data["name"]), str(data["version"]), fingerprint(raw), tuple(cases))
