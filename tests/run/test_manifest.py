"""Manifest datasets: every rule refuses with one line naming the file, and references stay apart."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evalkit.core.errors import InputError
from evalkit.run.manifest import ACCEPTANCE, is_acceptance, load_manifest_dataset


def _samples() -> list[dict[str, Any]]:
    rows = []
    for split, count in (("train", 2), ("dev", 1), (ACCEPTANCE, 2)):
        for i in range(count):
            group = f"{split}-g{i}"
            for kind in ("file", "answer"):
                rows.append({"id": f"{group}-{kind}", "split": split, "group": group, "kind": kind,
                             "instruction": f"solve {group} {kind}"})
    return rows


def _answers(samples: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["id"]: {"secret_expected": f"REF-{row['id']}"} for row in samples}


def _counts(samples: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    splits: dict[str, dict[str, int]] = {}
    for name in dict.fromkeys(row["split"] for row in samples):
        rows = [row for row in samples if row["split"] == name]
        splits[name] = {"samples": len(rows), "groups": len({row["group"] for row in rows})}
    return splits


def write(folder: Path, samples: list[dict[str, Any]] | None = None,
          answers: dict[str, dict[str, Any]] | None = None, **overrides: Any) -> Path:
    """A consistent manifest folder; `overrides` replace manifest keys after the hashes are computed."""
    samples = _samples() if samples is None else samples
    answers = _answers(samples) if answers is None else answers
    (folder / "samples.json").write_text(json.dumps(samples))
    (folder / "answers.json").write_text(json.dumps(answers))
    manifest = {
        "version": "synthetic-v1", "synthetic": True, "purpose": "test the pipeline",
        "sha256": {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
                   for name in ("samples.json", "answers.json")},
        "splits": _counts(samples),
    }
    manifest.update(overrides)
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest))
    return path


def test_loads_all_cases_with_references_apart(tmp_path: Path) -> None:
    dataset = load_manifest_dataset(write(tmp_path), None)
    assert dataset.split is None
    assert dataset.version == "synthetic-v1" and dataset.synthetic is True
    assert [case.id for case in dataset.cases] == [row["id"] for row in _samples()]
    assert dataset.cases[0].kind == "file" and dataset.cases[0].group == "train-g0"
    assert dataset.references["dev-g0-answer"] == {"secret_expected": "REF-dev-g0-answer"}
    assert set(dataset.references) == {case.id for case in dataset.cases}
    for case in dataset.cases:
        assert "secret_expected" not in case.fields and "id" not in case.fields
        assert "REF-" not in json.dumps(case.fields)
    assert "REF-" not in repr(dataset)


def test_selecting_a_split_returns_only_its_cases_and_references(tmp_path: Path) -> None:
    dataset = load_manifest_dataset(write(tmp_path), ACCEPTANCE)
    assert dataset.split == ACCEPTANCE
    assert {case.split for case in dataset.cases} == {ACCEPTANCE}
    assert len(dataset.cases) == 4
    assert set(dataset.references) == {case.id for case in dataset.cases}


def test_sha_covers_manifest_and_both_files(tmp_path: Path) -> None:
    first = load_manifest_dataset(write(tmp_path), None).sha
    assert load_manifest_dataset(write(tmp_path), "dev").sha == first  # the split is recorded beside it
    assert load_manifest_dataset(write(tmp_path, purpose="other"), None).sha != first
    answers = _answers(_samples()) | {"dev-g0-file": {"secret_expected": "changed"}}
    assert load_manifest_dataset(write(tmp_path, answers=answers), None).sha != first
    samples = _samples()
    samples[0]["instruction"] = "changed"
    assert load_manifest_dataset(write(tmp_path, samples=samples), None).sha != first


def test_is_acceptance() -> None:
    assert is_acceptance(ACCEPTANCE) is True
    assert is_acceptance("dev") is False
    assert is_acceptance(None) is False


@pytest.mark.parametrize("name", ["samples.json", "answers.json"])
def test_hash_mismatch_names_the_file(tmp_path: Path, name: str) -> None:
    path = write(tmp_path)
    with (tmp_path / name).open("a") as handle:
        handle.write(" ")
    with pytest.raises(InputError, match=rf"manifest\.json: dataset_hash_mismatch: {name} \(") as info:
        load_manifest_dataset(path, None)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["samples.json", "answers.json"])
def test_missing_data_file(tmp_path: Path, name: str) -> None:
    path = write(tmp_path)
    (tmp_path / name).unlink()
    with pytest.raises(InputError, match=rf"{name}: dataset file not found"):
        load_manifest_dataset(path, None)


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"manifest\.json: manifest file not found"):
        load_manifest_dataset(tmp_path / "manifest.json", None)


def test_malformed_manifest_json(tmp_path: Path) -> None:
    path = write(tmp_path)
    path.write_text("{not json")
    with pytest.raises(InputError, match=r"manifest\.json: not valid JSON"):
        load_manifest_dataset(path, None)


def test_malformed_samples_json_is_refused_even_when_hashed(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "samples.json").write_text("[{")
    digest = hashlib.sha256((tmp_path / "samples.json").read_bytes()).hexdigest()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["sha256"]["samples.json"] = digest
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"samples\.json: not valid JSON"):
        load_manifest_dataset(tmp_path / "manifest.json", None)


def test_manifest_schema_is_strict(tmp_path: Path) -> None:
    path = write(tmp_path, sha256={"samples.json": "0" * 64, "other.json": "0" * 64})
    with pytest.raises(InputError, match=r"manifest\.json: .*unknown key 'sha256\.other\.json'"):
        load_manifest_dataset(path, None)


def test_duplicate_sample_id(tmp_path: Path) -> None:
    samples = _samples()
    samples[1]["id"] = samples[0]["id"]
    with pytest.raises(InputError, match=r"samples\.json: duplicate sample id 'train-g0-file'"):
        load_manifest_dataset(write(tmp_path, samples=samples), None)


def test_unlabelled_sample(tmp_path: Path) -> None:
    answers = _answers(_samples())
    del answers["dev-g0-answer"]
    with pytest.raises(InputError, match=r"answers\.json: unlabelled sample dev-g0-answer;"):
        load_manifest_dataset(write(tmp_path, answers=answers), None)


def test_orphan_label(tmp_path: Path) -> None:
    answers = _answers(_samples()) | {"ghost": {"secret_expected": "x"}}
    with pytest.raises(InputError, match=r"answers\.json: orphan_label ghost;"):
        load_manifest_dataset(write(tmp_path, answers=answers), None)


def test_group_leak(tmp_path: Path) -> None:
    samples = _samples()
    leaked = next(row for row in samples if row["split"] == ACCEPTANCE)
    leaked["group"] = "train-g0"
    with pytest.raises(InputError, match=r"samples\.json: group_leak: train-g0 in train and acceptance$"):
        load_manifest_dataset(write(tmp_path, samples=samples), None)


@pytest.mark.parametrize("counts", [{"samples": 3, "groups": 1}, {"samples": 2, "groups": 2}])
def test_count_mismatch(tmp_path: Path, counts: dict[str, int]) -> None:
    splits = _counts(_samples()) | {"dev": counts}
    with pytest.raises(InputError, match=r"manifest\.json: split 'dev' has 2 samples in 1 groups, the manifest says"):
        load_manifest_dataset(write(tmp_path, splits=splits), None)


def test_sample_in_a_split_the_manifest_lacks(tmp_path: Path) -> None:
    splits = _counts(_samples())
    del splits["dev"]
    with pytest.raises(InputError, match=r"samples\.json: sample dev-g0-file is in split 'dev', .*known: acceptance, train"):
        load_manifest_dataset(write(tmp_path, splits=splits), None)


def test_unknown_split_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"manifest\.json: unknown split 'test' \(known: acceptance, dev, train\)"):
        load_manifest_dataset(write(tmp_path), "test")


def test_a_manifests_files_are_read_under_the_dataset_limits(tmp_path: Path) -> None:
    from evalkit.core.dataset import DatasetLimits

    path = write(tmp_path)
    rows = len(_samples())
    assert len(load_manifest_dataset(path, None, DatasetLimits(max_rows=rows)).cases) == rows
    with pytest.raises(InputError, match=rf"samples\.json: the dataset has {rows} rows, more than "
                                         rf"dataset\.limits\.max_rows \({rows - 1}\)"):
        load_manifest_dataset(path, None, DatasetLimits(max_rows=rows - 1))
    with pytest.raises(InputError, match=r"manifest\.json: the manifest is [\d,]+ bytes, more than evalkit reads "
                                         r"\(100 bytes\); check that it is the right file, or raise "
                                         r"dataset\.limits\.max_bytes"):
        load_manifest_dataset(path, None, DatasetLimits(max_bytes=100))
    with pytest.raises(InputError, match=r"samples\.json: \[0\]: field 'instruction' holds text of 19 characters, "
                                         r"more than dataset\.limits\.max_field_chars \(18\)"):
        load_manifest_dataset(path, None, DatasetLimits(max_field_chars=18))
    samples = _samples()
    answers = _answers(samples)
    answers[samples[0]["id"]] = {"secret_expected": "\ud800"}
    (tmp_path / "answers.json").unlink()
    with pytest.raises(InputError, match=r"answers\.json: \['train-g0-file'\]: field 'secret_expected' holds a lone "
                                         r"surrogate \(\\ud800\)"):
        load_manifest_dataset(write(tmp_path, samples, answers), None)
