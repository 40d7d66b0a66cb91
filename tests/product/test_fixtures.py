"""Every shipped recording and baseline says where its replies came from: an authored fixture, or (the SmolLM2
ones only) a real model, named by its file's SHA-256, runtime and settings; the quality lab's data is what its
generator writes, with the seed's hashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.run.suite import load_module

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

RECORDINGS = sorted((PROJECT_ROOT / "recordings").glob("*/*.json"))
BASELINES = sorted((PROJECT_ROOT / "suites").glob("*/runs/*.json"))


def test_there_are_fixtures_to_check() -> None:
    assert len(RECORDINGS) >= 12 and len(BASELINES) >= 4


REAL_RECORDINGS = {"SmolLM2-135M-Instruct-Q4_1-v1-issue-triage@1-6b5ed1a8.json"}
"""Recorded live from SmolLM2-135M-Instruct (README, "Real recordings"); every other recording is authored."""
REAL_BASELINES = {"baseline-smollm2.json"}


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_every_shipped_recording_is_labelled_authored_or_names_its_model(path: Path) -> None:
    provenance = json.loads(path.read_text())["provenance"]
    if path.name not in REAL_RECORDINGS:
        assert provenance["kind"] == "authored"
        assert "authored" in provenance["note"] and "not produced by any model" in provenance["note"]
        return
    assert provenance["kind"] == "recorded" and provenance["recorded_at"]
    for role in ("model", "judge"):
        producer = provenance["producer"][role]
        assert producer["model_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
        assert len(producer["model_sha256"]) == 64 and producer["runtime"] == "llama-cpp-python"
        assert producer["runtime_version"] and producer["settings"]["temperature"] == 0
        assert isinstance(producer["settings"]["seed"], int) and producer["settings"]["max_tokens"] > 0


def test_the_real_recordings_are_shipped() -> None:
    assert REAL_RECORDINGS <= {p.name for p in RECORDINGS}
    assert REAL_BASELINES <= {p.name for p in BASELINES}


@pytest.mark.parametrize("path", BASELINES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_shipped_baseline_says_where_its_outputs_came_from(path: Path) -> None:
    report = json.loads(path.read_text())
    provenance = report["provenance"]
    if path.name in REAL_BASELINES:  # replayed from a real model's recording
        assert provenance["recording_provenance"] == "recorded"
        assert Path(provenance["recording"]).name in REAL_RECORDINGS
    elif "recording_provenance" in provenance:  # a suite of model calls: replayed from an authored recording
        assert provenance["recording_provenance"] == "authored"
    else:  # a suite of candidate programs: authored programs over a synthetic dataset
        assert "authored" in provenance["run_kind"] and report["dataset"]["synthetic"] is True


def test_quality_lab_data_is_what_make_data_writes_with_the_seeds_hashes() -> None:
    import hashlib

    suite = PROJECT_ROOT / "suites" / "quality_lab"
    make_data = load_module(suite, "make_data.py", "the quality lab's data generator")
    samples, references = make_data.build()
    written = {"samples.json": make_data.canonical(samples), "answers.json": make_data.canonical(references)}
    manifest = json.loads((suite / "data" / "manifest.json").read_text())
    for name, data in written.items():
        assert (suite / "data" / name).read_bytes() == data
        assert hashlib.sha256(data).hexdigest() == manifest["sha256"][name]
    assert manifest["sha256"] == {
        "samples.json": "684c829ea8ed4a07c5f47caa60df2a5548b6c7942ec364a30b18257028907727",  # seed 004's manifest
        "answers.json": "970d44538c5649961c20dcd0e536100020e247ee91d078c68a22b53245141d59",
    }
    ticketed = [s for s in samples if s["kind"] == "file" and s["instruction"].startswith("Ticket")]
    assert len(ticketed) == 7 and sum(s["kind"] == "file" for s in samples) == 13
