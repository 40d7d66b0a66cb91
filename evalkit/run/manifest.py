"""Manifest datasets: public samples and private references, pinned by a manifest's SHA-256s and split counts.

A folder holds `manifest.json`, `samples.json` (a list of public records, each with `id`, `split` and
`group`) and `answers.json` (`{case_id: reference}`). The manifest records the hash of both files and how
many samples and groups each split has, so a changed, relabelled or leaking dataset is refused before it
is scored.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalkit.core.dataset import Case, Dataset, DatasetLimits, byte_limit, check_case_id, check_row, too_many_rows
from evalkit.core.errors import InputError, describe_validation
from evalkit.core.files import decode, read_bytes
from evalkit.core.fingerprint import fingerprint, sha256
from evalkit.core.parsing import parse_json

__all__ = [
    "ACCEPTANCE",
    "ANSWERS_FILE",
    "SAMPLES_FILE",
    "Manifest",
    "ManifestDataset",
    "SplitCounts",
    "is_acceptance",
    "load_manifest_dataset",
]

ACCEPTANCE = "acceptance"
"""The held-out split a release decision must be taken on (the gate will refuse others: `not_acceptance_split`)."""

SAMPLES_FILE = "samples.json"
ANSWERS_FILE = "answers.json"

_SHA256 = r"^[0-9a-f]{64}$"


class SplitCounts(BaseModel):
    """What the manifest promises about one split."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    samples: int = Field(ge=0)
    """How many samples the split holds."""

    groups: int = Field(ge=0)
    """How many distinct groups those samples come from."""


class Hashes(BaseModel):
    """The SHA-256 (hex) of each data file, keyed by its name relative to the manifest's folder."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    samples: str = Field(alias=SAMPLES_FILE, pattern=_SHA256)
    answers: str = Field(alias=ANSWERS_FILE, pattern=_SHA256)


class Manifest(BaseModel):
    """The reviewed description of one dataset version."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    version: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """The dataset version (letters, digits, '.', '_', '-'; it names the recording and the eval key), changed
    whenever samples or references change."""

    synthetic: bool
    """Whether the cases were authored for testing the pipeline rather than drawn from real use."""

    purpose: str
    """What the dataset may be used to conclude (and, by omission, what not)."""

    sha256: Hashes
    """The SHA-256 of `samples.json` and `answers.json`."""

    splits: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")], SplitCounts] = Field(min_length=1)
    """Each split's sample and group counts."""


@dataclass(frozen=True)
class ManifestDataset:
    """The cases of one split (or all), with their references kept apart from what a candidate sees."""

    version: str
    synthetic: bool
    purpose: str
    splits: dict[str, SplitCounts]
    split: str | None
    """The selected split; None when every split was loaded."""
    cases: tuple[Case, ...]
    """Public fields only: `Case.fields` never holds a reference."""
    references: dict[str, dict[str, Any]] = field(repr=False)
    """`{case_id: reference}` for the selected cases; for scoring, never for the candidate."""
    sha: str
    """Fingerprint of the manifest and both data files (not of the split: record `split` beside it)."""


    def identity(self, name: str) -> Dataset:
        """The dataset as the eval key names it: the split is part of what was measured."""
        return Dataset(name, f"{self.version}:{self.split or 'all'}",
                       fingerprint({"dataset": self.sha, "split": self.split}), self.cases)


def is_acceptance(split: str | None) -> bool:
    """Whether a run on `split` may back a release decision."""
    return split == ACCEPTANCE


def load_manifest_dataset(manifest_path: Path, split: str | None,
                          limits: DatasetLimits | None = None) -> ManifestDataset:
    """Read and check a manifest dataset; `split=None` selects every case. Each file is read under `limits`
    (the defaults when None), as every dataset is."""
    limits = limits or DatasetLimits()
    limit, setting = byte_limit(limits)
    folder = manifest_path.parent
    manifest_bytes = read_bytes(manifest_path, "manifest", limit=limit, setting=setting)
    manifest = _parse_manifest(manifest_path, manifest_bytes)
    if split is not None and split not in manifest.splits:
        known = ", ".join(sorted(manifest.splits))
        raise InputError(f"{manifest_path}: unknown split {split!r} (known: {known})")

    digests: dict[str, str] = {}
    raw: dict[str, bytes] = {}
    for name, expected in ((SAMPLES_FILE, manifest.sha256.samples), (ANSWERS_FILE, manifest.sha256.answers)):
        data = read_bytes(folder / name, "dataset", limit=limit, setting=setting)
        actual = sha256(data)
        if actual != expected:
            raise InputError(f"{manifest_path}: dataset_hash_mismatch: {name} (manifest says {expected[:12]}, "
                             f"file is {actual[:12]}); restore the file or rebuild the manifest")
        digests[name], raw[name] = actual, data

    samples = _parse_samples(folder / SAMPLES_FILE, raw[SAMPLES_FILE], limits)
    references = _parse_references(folder / ANSWERS_FILE, raw[ANSWERS_FILE], limits)
    _check_labels(folder, samples, references)
    _check_splits(manifest_path, manifest, samples)

    cases = tuple(
        Case(row["id"], {key: value for key, value in row.items() if key != "id"})
        for row in samples
        if split is None or row["split"] == split
    )
    sha = fingerprint({"manifest": sha256(manifest_bytes), **digests})
    return ManifestDataset(
        version=manifest.version,
        synthetic=manifest.synthetic,
        purpose=manifest.purpose,
        splits=dict(manifest.splits),
        split=split,
        cases=cases,
        references={case.id: references[case.id] for case in cases},
        sha=sha,
    )


def _load_json(path: Path, data: bytes, what: str) -> Any:
    return parse_json(decode(data, path, what), str(path), what)


def _parse_manifest(path: Path, data: bytes) -> Manifest:
    value = _load_json(path, data, "manifest")
    try:
        return Manifest.model_validate(value)
    except ValidationError as error:
        raise InputError(describe_validation(error, Manifest, str(path))) from None


def _parse_samples(path: Path, data: bytes, limits: DatasetLimits) -> list[dict[str, Any]]:
    value = _load_json(path, data, "samples file")
    if not isinstance(value, list):
        raise InputError(f"{path}: samples must be a JSON list of objects")
    if len(value) > limits.max_rows:
        raise too_many_rows(path, limits, len(value))
    seen: set[str] = set()
    for index, row in enumerate(value):
        if not isinstance(row, dict) or not all(isinstance(row.get(key), str) and row[key]
                                                for key in ("id", "split", "group")):
            raise InputError(f"{path}: [{index}] needs non-empty string 'id', 'split' and 'group'")
        check_row(row, f"{path}: [{index}]", limits)
        check_case_id(row["id"], f"{path}: [{index}]")
        if row["id"] in seen:
            raise InputError(f"{path}: duplicate sample id {row['id']!r}")
        seen.add(row["id"])
    return value


def _parse_references(path: Path, data: bytes, limits: DatasetLimits) -> dict[str, dict[str, Any]]:
    value = _load_json(path, data, "references file")
    if not isinstance(value, dict) or not all(isinstance(item, dict) for item in value.values()):
        raise InputError(f"{path}: references must be a JSON object of {{case_id: {{...}}}}")
    for case_id, reference in value.items():
        check_row(reference, f"{path}: [{case_id[:80]!r}]", limits)
    return value


def _check_labels(folder: Path, samples: list[dict[str, Any]], references: dict[str, dict[str, Any]]) -> None:
    ids = {row["id"] for row in samples}
    for row in samples:
        if row["id"] not in references:
            raise InputError(f"{folder / ANSWERS_FILE}: unlabelled sample {row['id']}; add its reference")
    for case_id in references:
        if case_id not in ids:
            raise InputError(f"{folder / ANSWERS_FILE}: orphan_label {case_id}; remove it or add the sample")


def _check_splits(path: Path, manifest: Manifest, samples: list[dict[str, Any]]) -> None:
    samples_path = path.parent / SAMPLES_FILE
    home: dict[str, str] = {}
    groups: defaultdict[str, set[str]] = defaultdict(set)
    for row in samples:
        if row["split"] not in manifest.splits:
            known = ", ".join(sorted(manifest.splits))
            raise InputError(f"{samples_path}: sample {row['id']} is in split {row['split']!r}, "
                             f"which the manifest does not list (known: {known})")
        first = home.setdefault(row["group"], row["split"])
        if first != row["split"]:
            raise InputError(f"{samples_path}: group_leak: {row['group']} in {first} and {row['split']}")
        groups[row["split"]].add(row["group"])
    counts = Counter(row["split"] for row in samples)
    for name, promised in manifest.splits.items():
        found = SplitCounts(samples=counts[name], groups=len(groups[name]))
        if found != promised:
            raise InputError(f"{path}: split {name!r} has {found.samples} samples in {found.groups} groups, "
                             f"the manifest says {promised.samples} in {promised.groups}; rebuild the manifest")
