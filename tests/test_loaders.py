"""Dataset files of rows (evalkit.core.loaders): JSON Lines, CSV, Parquet and saved `datasets` folders mapped to
cases, stable generated ids, a fingerprint of the loaded cases, and refusals that name the file, row and field."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evalkit.core.errors import InputError
from evalkit.core.loaders import cases_fingerprint, load_cases

FIELDS = {"id": "ticket_id", "input": "body", "label": "category"}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_and_jsonl_with_the_same_cases_load_alike_and_fingerprint_alike(tmp_path):
    csv_path = write(tmp_path, "t.csv", 'ticket_id,body,category,channel\n'
                                        't-1,"Refund, please",billing,mail\n'
                                        't-2,App crashes,bug,web\n')
    jsonl_path = write(tmp_path, "t.jsonl",  # other order, other spacing: the same cases
                       '{"category": "bug", "ticket_id": "t-2", "body": "App crashes", "channel": "web"}\n\n'
                       '{"ticket_id":"t-1","body":"Refund, please","category":"billing","channel":"mail"}\n')
    from_csv = load_cases(csv_path, FIELDS, "tickets", "1")
    from_jsonl = load_cases(jsonl_path, FIELDS, "tickets", "1")
    assert [(c.id, c.fields) for c in from_csv.cases] == [
        ("t-1", {"input": "Refund, please", "label": "billing", "channel": "mail"}),
        ("t-2", {"input": "App crashes", "label": "bug", "channel": "web"})]
    assert from_csv.label == "tickets@1"
    assert from_csv.sha == from_jsonl.sha == cases_fingerprint("tickets", "1", from_csv.cases)
    changed = write(tmp_path, "u.csv", "ticket_id,body,category,channel\nt-1,Refund please,billing,mail\n"
                                       "t-2,App crashes,bug,web\n")
    assert load_cases(changed, FIELDS, "tickets", "1").sha != from_csv.sha  # one character of one case
    assert load_cases(csv_path, FIELDS, "tickets", "2").sha != from_csv.sha


def test_rows_without_ids_get_ids_from_their_content(tmp_path):
    first = load_cases(write(tmp_path, "a.jsonl", '{"q": "one"}\n{"q": "two"}\n{"q": "one"}\n'), None, "d", "1")
    again = load_cases(write(tmp_path, "b.jsonl", '{"q": "two"}\n{"q": "one"}\n'), None, "d", "1")
    ids = [c.id for c in first.cases]
    assert all(i.startswith("row-") for i in ids) and len(set(ids)) == 3
    assert ids[2] == ids[0] + "-2"  # the same content twice is numbered, in file order
    assert {c.fields["q"]: c.id for c in again.cases} == {"two": ids[1], "one": ids[0]}  # order does not matter


def test_numbers_as_ids_are_their_text(tmp_path):
    loaded = load_cases(write(tmp_path, "n.jsonl", '{"id": 7, "q": "x"}\n'), None, "d", "1")
    assert loaded.cases[0].id == "7"


@pytest.mark.parametrize(("name", "text", "fields", "message"), [
    ("a.csv", "ticket_id,text\nt-1,x\n", FIELDS, r"a\.csv: line 2 has no field 'body' \(mapped to input\)"),
    ("a.csv", "ticket_id,body,category\nt-1,x,y\nt-1,z,y\n", FIELDS,
     r"a\.csv: line 3: field 'ticket_id': id 't-1' was already given on line 2"),
    ("a.csv", "ticket_id,body,category\nt 1,x,y\n", FIELDS, r"a\.csv: line 2: field 'ticket_id' needs an 'id'"),
    ("a.csv", "a,b,a\n1,2,3\n", None, r"a\.csv: line 1: column 'a' appears twice"),
    ("a.csv", "a,b\n1,2,3\n", None, r"a\.csv: line 2 has 3 values for 2 columns"),
    ("a.jsonl", '{"a": 1}\n[1]\n', None, r"a\.jsonl: line 2 is list; each line is one JSON object"),
    ("a.jsonl", '{"a": 1}\n{"a": \n', None, r"a\.jsonl: line 2"),
    ("a.jsonl", "\n", None, r"a\.jsonl: no rows"),
])
def test_refusals_name_the_file_row_and_field(tmp_path, name, text, fields, message):
    with pytest.raises(InputError, match=message):
        load_cases(write(tmp_path, name, text), fields, "d", "1")


ROWS = [{"ticket_id": "t-1", "body": "I was charged twice", "category": "billing", "priority": 2},
        {"ticket_id": "t-2", "body": "The app crashes on start", "category": "bug", "priority": None}]


def _datasets_python() -> str | None:
    """The Python of the lm-eval tool venv, which has Hugging Face `datasets` (scripts/test.sh installs it)."""
    lm_eval = os.environ.get("EVALKIT_LM_EVAL") or shutil.which("lm_eval")
    python = Path(lm_eval).with_name("python") if lm_eval else None
    return str(python) if python is not None and python.is_file() else None


def test_a_parquet_file_loads_the_same_cases_with_the_same_fingerprint_as_json_lines(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "d.parquet")
    jsonl = write(tmp_path, "d.jsonl", "".join(json.dumps(row) + "\n" for row in ROWS))
    parquet = load_cases(tmp_path / "d.parquet", FIELDS, "tickets", "1")
    assert parquet.cases == load_cases(jsonl, FIELDS, "tickets", "1").cases
    assert parquet.sha == load_cases(jsonl, FIELDS, "tickets", "1").sha
    assert parquet.cases[1].fields == {"input": "The app crashes on start", "label": "bug", "priority": None}


@pytest.mark.external
@pytest.mark.skipif(_datasets_python() is None, reason="Hugging Face datasets is not installed (scripts/test.sh "
                                                        "installs it with lm-eval; set EVALKIT_LM_EVAL)")
def test_folders_and_parquet_written_by_hugging_face_datasets_load_as_their_rows(tmp_path):
    script = ("import datasets, json, sys\nrows = json.loads(sys.argv[1])\nd = datasets.Dataset.from_list(rows)\n"
              "d.save_to_disk(sys.argv[2] + '/saved')\nd.to_parquet(sys.argv[2] + '/d.parquet')\n"
              "datasets.DatasetDict(test=d).save_to_disk(sys.argv[2] + '/dict')\n")
    done = subprocess.run([_datasets_python(), "-c", script, json.dumps(ROWS), str(tmp_path)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_DATASETS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    jsonl = load_cases(write(tmp_path, "d.jsonl", "".join(json.dumps(row) + "\n" for row in ROWS)), FIELDS, "t", "1")
    for path in (tmp_path / "saved", tmp_path / "d.parquet", tmp_path / "dict" / "test"):
        read = load_cases(path, FIELDS, "t", "1")
        assert [c.id for c in read.cases] == ["t-1", "t-2"] and read.sha == jsonl.sha, path
    with pytest.raises(InputError, match=r"dict: a DatasetDict folder \(splits test\); point dataset.file at one "
                                         r"split's folder \(dict/test\)"):
        load_cases(tmp_path / "dict", FIELDS, "t", "1")


def test_columnar_refusals_name_the_file_row_and_field(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"a": 1.0}, {"a": float("nan")}]), tmp_path / "nan.parquet")
    with pytest.raises(InputError, match=r"nan\.parquet: row 2: field 'a' is nan; a case's fields are JSON values"):
        load_cases(tmp_path / "nan.parquet", None, "d", "1")
    pq.write_table(pa.Table.from_pylist([{"a": b"\x00"}]), tmp_path / "bytes.parquet")
    with pytest.raises(InputError, match=r"bytes\.parquet: row 1: field 'a' holds bytes"):
        load_cases(tmp_path / "bytes.parquet", None, "d", "1")
    with pytest.raises(InputError, match=r"bad\.parquet: not a readable Parquet file"):
        load_cases(write(tmp_path, "bad.parquet", "PAR1 not really"), None, "d", "1")
    pq.write_table(pa.Table.from_pylist([{"a": "x" * 5000}]), tmp_path / "big.parquet", compression="zstd")
    monkeypatch.setenv("EVALKIT_MAX_INPUT_BYTES", "2000")  # the file is small; its data expands past the limit
    with pytest.raises(InputError, match=r"big\.parquet: the Parquet file's uncompressed data take [\d,]+ bytes"):
        load_cases(tmp_path / "big.parquet", None, "d", "1")
    monkeypatch.delenv("EVALKIT_MAX_INPUT_BYTES")
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../../etc/passwd"}]}))
    with pytest.raises(InputError, match=r"state\.json: data file '\.\./\.\./etc/passwd' is not a file name"):
        load_cases(saved, None, "d", "1")
    folder = tmp_path / "plain"
    folder.mkdir()
    with pytest.raises(InputError, match=r"plain: a folder, and not one saved by Hugging Face `datasets`"):
        load_cases(folder, None, "d", "1")


def test_without_pyarrow_columnar_files_are_refused_saying_what_to_install(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    with pytest.raises(InputError, match=r"d\.parquet: reading a Parquet file needs pyarrow, which is not "
                                         r"installed: pip install 'evalkit\[parquet\]'"):
        load_cases(write(tmp_path, "d.parquet", "PAR1"), None, "d", "1")


def test_row_files_need_a_name_and_version_and_json_datasets_take_none(tmp_path):
    with pytest.raises(InputError, match=r"needs dataset\.name and dataset\.version"):
        load_cases(write(tmp_path, "a.jsonl", '{"a": 1}\n'), None, None, None)
    own = write(tmp_path, "own.json", json.dumps({"name": "d", "version": "1", "cases": [{"id": "a"}]}))
    assert load_cases(own).label == "d@1"
    with pytest.raises(InputError, match=r"an evalkit JSON dataset names its own fields"):
        load_cases(own, {"input": "q"})


def test_the_dataset_option_takes_name_version_and_fields_for_row_files_only():
    from pydantic import ValidationError

    from evalkit.core.config import DatasetConfig

    option = DatasetConfig(file="t.csv", name="tickets", version=1, fields={"id": "ticket_id"})
    assert option.version == "1" and option.fields == {"id": "ticket_id"}
    with pytest.raises(ValidationError, match="'name', 'version' and 'fields' are for datasets of rows"):
        DatasetConfig(manifest="m.json", fields={"id": "x"})
    with pytest.raises(ValidationError, match="String should match pattern"):
        DatasetConfig(file="t.csv", name="two words", version="1")


@pytest.mark.parametrize("name", ["kb.json", "rows.jsonl", "rows.csv"])
def test_a_missing_dataset_file_is_said_to_be_not_found(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match=rf"{name}: dataset file not found; check dataset.file"):
        load_cases(tmp_path / name, {"id": "id"}, name="kb", version="1")
