"""Dataset files of rows (evalkit.core.loaders): JSON Lines, CSV, Parquet and saved `datasets` folders mapped to
cases, stable generated ids, a fingerprint of the loaded cases, and refusals that name the file, row and field.

The hostile datasets of issue 35 (the last part) each run in a child process under an address-space and a
wall-clock limit (tests/helpers/bounded.py), so a blowup or a hang fails the test instead of the machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.bounded import evalkit_bounded, run_bounded

from evalkit.core.dataset import DatasetLimits
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
    with pytest.raises(InputError, match=r"big\.parquet: the Parquet file's uncompressed data take [\d,]+ bytes, "
                                         r"over the 2,000-byte limit \(EVALKIT_MAX_INPUT_BYTES\)"):
        load_cases(tmp_path / "big.parquet", None, "d", "1")
    monkeypatch.delenv("EVALKIT_MAX_INPUT_BYTES")
    with pytest.raises(InputError, match=r"over the 2,000-byte limit \(dataset\.limits\.max_bytes\)"):
        load_cases(tmp_path / "big.parquet", None, "d", "1", DatasetLimits(max_bytes=2000))
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
# --- Hostile datasets (issue 35): each read in a bounded child, under limits the test names ---

LOAD = """
import sys
from pathlib import Path
from evalkit.core.dataset import DatasetLimits
from evalkit.core.errors import EvalkitError
from evalkit.core.loaders import load_cases
try:
    loaded = load_cases(Path(sys.argv[1]), None, "d", "1", DatasetLimits.model_validate_json(sys.argv[2]))
except EvalkitError as refusal:
    print(refusal)
    sys.exit(3)
print(len(loaded.cases), loaded.cases[-1].id)
"""


def load_bounded(path: Path, timeout_s: float = 60.0, **limits: object) -> tuple[int, str]:
    """load_cases(path) in a child under the bounded helper's memory and time limits: (exit code, its one line)."""
    done = run_bounded([sys.executable, "-c", LOAD, str(path), DatasetLimits(**limits).model_dump_json()],  # type: ignore[arg-type]
                       timeout_s=timeout_s)
    assert done.returncode in (0, 3), f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.count("\n") == 1 and not done.stderr, (done.stdout[-500:], done.stderr[-2000:])
    return done.returncode, done.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["repeated rows", "wide header"])
def test_numbering_repeated_rows_and_checking_a_header_take_linear_time(tmp_path, shape):
    """200,000 identical rows without ids (the finding: 40,000 took 204 s, as each repeat counted the ids before
    it), and a CSV header of 200,000 columns (each column was counted across the header): a few seconds when
    linear, hours when quadratic, so the bound below (generous for a loaded machine) cannot be met by the old
    code. Not a timing test: benchmarks/datasets.py measures the rate."""
    n = 200_000
    if shape == "repeated rows":
        path = write(tmp_path, "same.jsonl", '{"q": "same"}\n' * n)
        code, line = load_bounded(path, timeout_s=180)
        assert code == 0 and re.fullmatch(rf"{n} row-[0-9a-f]{{12}}-{n}", line), line
    else:
        path = write(tmp_path, "wide.csv", ",".join(f"c{i}" for i in range(n)) + "\n" + "x," * (n - 1) + "x\n")
        assert load_bounded(path, timeout_s=180)[0] == 0


def test_repeats_are_numbered_in_file_order_around_ids_the_rows_give_themselves(tmp_path):
    first = load_cases(write(tmp_path, "a.jsonl", '{"q": "x"}\n'), None, "d", "1").cases[0].id
    rows = [{"id": first, "q": "y"}, {"q": "x"}, {"id": f"{first}-3", "q": "z"}, {"q": "x"}, {"q": "x"}]
    loaded = load_cases(write(tmp_path, "b.jsonl", "".join(json.dumps(r) + "\n" for r in rows)), None, "d", "1")
    assert [c.id for c in loaded.cases] == [first, f"{first}-2", f"{first}-3", f"{first}-4", f"{first}-5"]


def _parquet_of_nothing_but_rows(path: Path, rows: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"q": pa.nulls(rows, pa.string())}), path, compression="zstd")
    return path


def test_a_parquet_file_declaring_millions_of_rows_is_refused_from_its_metadata(tmp_path):
    """A few KB of Parquet holding 3,000,000 rows (the finding: it hung) is refused before a row is read."""
    path = _parquet_of_nothing_but_rows(tmp_path / "rows.parquet", 3_000_000)
    assert path.stat().st_size < 20_000
    code, line = load_bounded(path)
    assert code == 3 and line.endswith("rows.parquet: the dataset has 3,000,000 rows, more than "
                                       "dataset.limits.max_rows (1,000,000); split it, or raise the limit")
    code, line = load_bounded(_parquet_of_nothing_but_rows(tmp_path / "small.parquet", 500), max_rows=499)
    assert code == 3 and "has 500 rows, more than dataset.limits.max_rows (499)" in line


def _saved_folder(folder: Path, table: object, compression: str | None = None) -> Path:
    """A folder laid out as `datasets`' save_to_disk lays one out (state.json naming Arrow IPC stream files),
    written here with pyarrow; `compression` compresses the stream's buffers, which save_to_disk never does."""
    import pyarrow as pa

    folder.mkdir()
    name = "data-00000-of-00001.arrow"
    with pa.OSFile(str(folder / name), "wb") as sink:
        writer = pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression))  # type: ignore[attr-defined]
        writer.write_table(table)
        writer.close()
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": name}], "_split": None}))
    return folder


def test_a_saved_folder_is_held_to_its_decoded_size_as_parquet_is(tmp_path):
    """The finding: 6.8 KB of compressed Arrow became a 200 MB field under a 10 MB limit, checked only by its size
    on disk, while the same data as Parquet was refused. Here at a tenth of that: both refused, in one line naming
    the limit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"q": ["y" * 20_000_000]})
    folder = _saved_folder(tmp_path / "saved", table, compression="zstd")
    assert sum(f.stat().st_size for f in folder.iterdir()) < 5_000
    pq.write_table(table, tmp_path / "same.parquet", compression="zstd")
    for path, data in ((folder, "saved dataset's decoded data"), (tmp_path / "same.parquet",
                                                                  "Parquet file's uncompressed data")):
        code, line = load_bounded(path, max_bytes=1_000_000)
        assert code == 3 and f"the {data} take 20,000,0" in line and "over the 1,000,000-byte limit " \
            "(dataset.limits.max_bytes)" in line, line


def test_a_dictionary_that_repeats_one_string_in_every_row_is_stopped(tmp_path):
    """500 bytes of Parquet whose metadata say 1 MB (honestly: one dictionary entry) and whose rows repeat that
    entry 3,000 times: 3 GB decoded. The reader child stops at its memory limit, in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    repeated = pa.DictionaryArray.from_arrays(pa.array([0] * 3000, pa.int32()), pa.array(["x" * 1_000_000]))
    # as another tool writes it: no Arrow schema inside, so the column reads back as plain strings
    pq.write_table(pa.table({"q": repeated}), tmp_path / "bomb.parquet", compression="zstd", store_schema=False)
    assert (tmp_path / "bomb.parquet").stat().st_size < 2000
    code, line = load_bounded(tmp_path / "bomb.parquet")
    assert code == 3 and "bomb.parquet" in line and ("MiB of memory" in line or "decoded data take" in line), line


def test_columns_nested_past_the_json_depth_are_refused_before_a_row_is_read(tmp_path):
    """pyarrow's own bound (100 levels of a Parquet schema), which evalkit relies on, as parse_json's for JSON."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kind: pa.DataType = pa.int64()
    for _ in range(101):
        kind = pa.struct([("f", kind)])
    pq.write_table(pa.table({"deep": pa.nulls(1, kind)}), tmp_path / "deep.parquet")
    with pytest.raises(InputError, match=r"deep\.parquet: not a readable Parquet file \(Parquet schema too deeply "
                                         r"nested"):
        load_cases(tmp_path / "deep.parquet", None, "d", "1")


def test_a_saved_folder_never_follows_a_data_file_out_of_itself(tmp_path):
    import pyarrow as pa

    outside = _saved_folder(tmp_path / "elsewhere", pa.table({"q": ["secret"]}))
    folder = _saved_folder(tmp_path / "saved", pa.table({"q": ["mine"]}))
    data = folder / "data-00000-of-00001.arrow"
    data.unlink()
    data.symlink_to(outside / "data-00000-of-00001.arrow")
    code, line = load_bounded(folder)
    assert code == 3 and line.endswith(f"data-00000-of-00001.arrow: a symbolic link to "
                                       f"{(outside / 'data-00000-of-00001.arrow').resolve()}, outside the folder; a "
                                       "saved dataset's files are in its folder: copy the file in instead of "
                                       "linking it"), line
    data.unlink()
    (folder / "inner").mkdir()
    (folder / "inner" / "real.arrow").write_bytes((outside / "data-00000-of-00001.arrow").read_bytes())
    data.symlink_to(folder / "inner" / "real.arrow")  # a link that stays inside is the folder's own file
    code, line = load_bounded(folder)
    assert code == 0 and line.startswith("1 row-"), line
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": "fifo"}]}))
    os.mkfifo(folder / "fifo")
    assert load_bounded(folder)[1].endswith("fifo: not a regular file; a saved dataset's files are regular files")
    splits = tmp_path / "dict"
    splits.mkdir()
    (tmp_path / "splits.json").write_text(json.dumps({"splits": ["secret-name"]}))
    (splits / "dataset_dict.json").symlink_to(tmp_path / "splits.json")
    with pytest.raises(InputError, match=r"dataset_dict\.json: a symbolic link to .*splits\.json, outside the folder"):
        load_cases(splits, None, "d", "1")


def test_a_lone_surrogate_is_refused_in_one_line_with_exit_3(tmp_path):
    """The finding: `"\\ud800"` in a JSON Lines row ended `python -m evalkit` with exit 4 and a traceback."""
    path = write(tmp_path, "half.jsonl", '{"q": "ok"}\n{"q": ["fine", {"deep": "\\ud800"}]}\n')
    done = evalkit_bounded("run", f"dataset.file={path}", "+dataset.name=d", "+dataset.version=1",
                           f"hydra.run.dir={tmp_path / 'job'}")
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"error: {path}: line 2: field 'q' holds a lone surrogate (\\ud800), half of a UTF-16 pair, which is not "
        "text; write the string as UTF-8"]
    own = write(tmp_path, "own.json", json.dumps({"name": "d", "version": "1", "cases": [{"id": "a", "q": "\ud800"}]}))
    with pytest.raises(InputError, match=r"own\.json: cases\[0\]: field 'q' holds a lone surrogate \(\\ud800\)"):
        load_cases(own)
    key = write(tmp_path, "key.jsonl", '{"\\udfff": 1}\n')
    with pytest.raises(InputError, match=r"key\.jsonl: line 1: field '\\udfff' holds a lone surrogate"):
        load_cases(key, None, "d", "1")


@pytest.mark.parametrize("name", ["a.csv", "a.jsonl"])
def test_csv_and_json_lines_take_the_same_longest_field_one_setting_names(tmp_path, name):
    """The finding: CSV refused fields over 131,072 characters as "not CSV" while JSON Lines took 1 MB."""
    def dataset(length: int) -> Path:
        text = "x" * length
        body = f"q\n{text}\n" if name.endswith(".csv") else json.dumps({"q": text}) + "\n"
        return write(tmp_path, name, body)

    assert load_cases(dataset(1024 * 1024), None, "d", "1").cases[0].fields["q"] == "x" * 1024 * 1024
    with pytest.raises(InputError, match=r"line 2: a field is longer than dataset\.limits\.max_field_chars "
                                         r"\(1,048,576 characters\)" if name.endswith(".csv") else
                       r"line 1: field 'q' holds text of 1,048,577 characters, more than "
                       r"dataset\.limits\.max_field_chars \(1,048,576\)"):
        load_cases(dataset(1024 * 1024 + 1), None, "d", "1")
    small = DatasetLimits(max_field_chars=10)
    assert load_cases(dataset(10), None, "d", "1", small).cases[0].fields["q"] == "x" * 10
    with pytest.raises(InputError, match=r"max_field_chars \(10"):
        load_cases(dataset(11), None, "d", "1", small)
    import csv
    assert csv.field_size_limit() == 131_072  # the module's limit for everyone else, as it was


@pytest.mark.parametrize("name", ["d.jsonl", "d.csv", "d.json"])
def test_rows_and_bytes_are_bounded_alike_in_every_text_format(tmp_path, name):
    rows = [{"id": f"r{i}", "q": "x"} for i in range(3)]
    body = ("".join(json.dumps(r) + "\n" for r in rows) if name.endswith(".jsonl") else
            "id,q\n" + "".join(f"{r['id']},x\n" for r in rows) if name.endswith(".csv") else
            json.dumps({"name": "d", "version": "1", "cases": rows}))
    path = write(tmp_path, name, body)
    names = (None, "d", "1") if not name.endswith(".json") else (None, None, None)
    assert len(load_cases(path, *names, DatasetLimits(max_rows=3)).cases) == 3
    with pytest.raises(InputError, match=r"more (rows than|than) dataset\.limits\.max_rows \(2\)"):
        load_cases(path, *names, DatasetLimits(max_rows=2))
    with pytest.raises(InputError, match=rf"{name}: the dataset is [\d,]+ bytes, more than evalkit reads \(10 bytes\); "
                                         r"check that it is the right file, or raise dataset\.limits\.max_bytes"):
        load_cases(path, *names, DatasetLimits(max_bytes=10))


def test_json_lines_end_lines_at_newlines_only(tmp_path):
    """A JSON string may hold U+2028 as it is; str.splitlines cut the row there and refused a valid file."""
    loaded = load_cases(write(tmp_path, "s.jsonl", '{"q": "a\u2028b\u0085c"}\r\n{"q": "d"}\n'), None, "d", "1")
    assert [c.fields["q"] for c in loaded.cases] == ["a\u2028b\u0085c", "d"]


def test_the_dataset_limits_are_one_setting_group_of_the_dataset_option(hydra_conf):
    from helpers.compose import composed
    from pydantic import ValidationError

    from evalkit.core.config import DatasetConfig, validate_config

    config = validate_config(composed("dataset.limits.max_rows=5", "dataset.limits.read_timeout_s=9.5"), {})
    assert config.dataset.limits == DatasetLimits(max_rows=5, read_timeout_s=9.5)
    assert validate_config(composed(), {}).dataset.limits == DatasetLimits()  # evalkit.yaml states the defaults
    with pytest.raises(ValidationError, match="max_row"):
        DatasetConfig(file="t.csv", limits={"max_row": 5})  # type: ignore[arg-type]


def test_the_datasets_table_of_limits_names_settings_and_tests_that_exist():
    """docs/reference/limits.md, "Datasets": every setting it names is a field of DatasetLimits with the default
    the table gives, and every test it names exists, so the table cannot drift from what holds it."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/reference/limits.md").read_text(encoding="utf-8")
    section = page.split("## Datasets", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| limit")]
    assert len(rows) >= 10
    named = set(re.findall(r"`dataset\.limits\.(\w+)`", section))
    assert named == set(DatasetLimits.model_fields)
    defaults = DatasetLimits()
    shown = {"max_rows": f"{defaults.max_rows:,}", "max_bytes": f"{defaults.max_bytes >> 20} MiB",
             "max_field_chars": f"{defaults.max_field_chars:,} characters",
             "read_timeout_s": f"{defaults.read_timeout_s:g} s"}
    for name, default in shown.items():
        assert any(f"`dataset.limits.{name}`" in row.split(" | ")[1] and row.split(" | ")[2] == default
                   for row in rows), name
    for module, test in re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section):
        source = (root / module).read_text(encoding="utf-8")
        assert f"def {test}(" in source, f"{module}::{test}"
