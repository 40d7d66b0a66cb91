"""The run index (evalkit.core.run_index) as `evalkit history` uses it: a report read once is not parsed again;
a report changed after indexing is read again (its SHA-256 differs), even with its size and modification time put
back; a report only touched keeps its entry; an index that cannot be read is rebuilt from the reports."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_env, report, write_json

import evalkit.cli.history as history
from evalkit.core.run_index import INDEX_NAME, SCHEMA, RunIndex
from evalkit.render.history import history_rows

TESTS = 5  # the history row's column of tests passed (#, time, key, decision, policy, tests)


def _run(folder: Path, outcomes: dict[str, str], created: float | None = 1_700_000_000.0) -> Path:
    folder.mkdir(parents=True)
    data = report(outcomes, suite="s")
    if created is not None:
        data["created"] = created
    data["metrics"] = {"recall": {"mean": 0.5}}
    return write_json(folder / "report.json", data)


def _rows(folder: Path, index_path: Path) -> list[list[str]]:
    index = RunIndex(index_path)
    try:
        runs = history.collect_runs([folder], [], index)
    finally:
        index.close()
    return history_rows(runs)[1]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every report the history parses (by path); the index's job is to keep this short."""
    seen: list[str] = []
    real = history.report_from_mapping

    def counting(data: Any, where: str) -> Any:
        seen.append(Path(where).parent.name)
        return real(data, where)

    monkeypatch.setattr(history, "report_from_mapping", counting)
    return seen


def test_a_report_indexed_once_is_not_parsed_again_and_reads_the_same(tmp_path: Path, parses: list[str]):
    _run(tmp_path / "runs/a", {"test_a": "passed", "test_b": "failed"})
    _run(tmp_path / "runs/b", {"test_a": "passed", "test_b": "passed"}, created=None)
    without = history_rows(history.collect_runs([tmp_path / "runs"], []))[1]
    assert sorted(parses) == ["a", "b"]
    parses.clear()
    first = _rows(tmp_path / "runs", tmp_path / INDEX_NAME)
    assert sorted(parses) == ["a", "b"] and first == without
    parses.clear()
    again = _rows(tmp_path / "runs", tmp_path / INDEX_NAME)
    assert parses == [] and again == without  # the summary, counts and the file time included
    assert [row[TESTS] for row in again] == ["1/2", "2/2"]  # a (created 2023) before b (its file time, now)


def test_a_report_changed_after_indexing_is_read_again_by_its_sha256(tmp_path: Path, parses: list[str]):
    path = _run(tmp_path / "runs/a", {"test_a": "passed", "test_b": "failed"})
    assert [row[TESTS] for row in _rows(tmp_path / "runs", tmp_path / INDEX_NAME)] == ["1/2"]
    before = path.stat()
    changed = path.read_bytes().replace(b'"failed"', b'"passed"')
    path.write_bytes(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same size and modification time
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    parses.clear()
    assert [row[TESTS] for row in _rows(tmp_path / "runs", tmp_path / INDEX_NAME)] == ["2/2"]
    assert parses == ["a"]


def test_a_report_only_touched_keeps_its_entry(tmp_path: Path, parses: list[str]):
    path = _run(tmp_path / "runs/a", {"test_a": "passed"})
    _rows(tmp_path / "runs", tmp_path / INDEX_NAME)
    os.utime(path, (1_800_000_000, 1_800_000_000))
    parses.clear()
    assert [row[TESTS] for row in _rows(tmp_path / "runs", tmp_path / INDEX_NAME)] == ["1/1"]
    assert parses == []  # hashed again, the same bytes: not parsed


@pytest.mark.parametrize("damage", ["garbage", "schema"])
def test_an_index_that_cannot_be_read_is_rebuilt_from_the_reports(tmp_path: Path, parses: list[str], damage: str):
    _run(tmp_path / "runs/a", {"test_a": "passed", "test_b": "failed"})
    index_path = tmp_path / INDEX_NAME
    if damage == "garbage":
        index_path.write_bytes(b"not a database, " * 100)
    else:
        with sqlite3.connect(index_path) as db:
            db.execute("CREATE TABLE runs (path TEXT)")
            db.execute(f"PRAGMA user_version = {SCHEMA + 1}")
        db.close()
    index = RunIndex(index_path)
    try:
        assert index.rebuilt
        rows = history_rows(history.collect_runs([tmp_path / "runs"], [], index))[1]
    finally:
        index.close()
    assert [row[TESTS] for row in rows] == ["1/2"] and parses == ["a"]
    parses.clear()
    assert [row[TESTS] for row in _rows(tmp_path / "runs", index_path)] == ["1/2"] and parses == []


def test_an_entry_of_another_shape_reads_as_none(tmp_path: Path, parses: list[str]):
    path = _run(tmp_path / "runs/a", {"test_a": "passed"})
    _rows(tmp_path / "runs", tmp_path / INDEX_NAME)
    with sqlite3.connect(tmp_path / INDEX_NAME) as db:
        db.execute("UPDATE runs SET summary = ?", ('{"eval": {}, "passed": "many"}',))
    db.close()
    parses.clear()
    assert [row[TESTS] for row in _rows(tmp_path / "runs", tmp_path / INDEX_NAME)] == ["1/1"]
    assert parses == ["a"] and path.is_file()


def test_evalkit_history_keeps_the_index_beside_the_projects_runs(tmp_path: Path):
    root = tmp_path / "proj"
    (root / "conf").mkdir(parents=True)
    (root / "conf/config.yaml").write_text("defaults: []\n")
    _run(root / "outputs/2026-12-01/a", {"test_a": "passed", "test_b": "failed"})

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "history", "--no-html"], cwd=root,
                              env={**evalkit_env(), "EVALKIT_PROJECT": str(root)}, capture_output=True, text=True,
                              timeout=120)

    first = run()
    assert first.returncode == 0, first.stderr
    assert (root / "outputs" / INDEX_NAME).is_file()
    second = run()
    assert second.returncode == 0 and second.stdout == first.stdout and "1/2" in second.stdout
