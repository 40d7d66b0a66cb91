"""Fuzzing every reader of untrusted input: reports, policies, checks.yaml, rubrics, recordings, journals, datasets
(evalkit's JSON, JSON Lines, CSV, Parquet and saved `datasets` folders), manifests, the docs-stage reader and the
five adapters (Inspect, promptfoo, DeepEval, lm-eval, JUnit).

Each reader gets structured inputs (a real file of its kind with one value replaced by any JSON value; in a YAML
file, a value that may be shared, which YAML writes as an anchor and aliases) and mutated ones (its bytes cut,
flipped, repeated or spliced); the dataset readers also get hostile shapes, files built to expand, repeat, nest or
hide what a size on disk does not show. Whatever it gets, it must end in one of two ways: a result, or an
EvalkitError (what the commands print as one line with exit 3). The reads run in a child process under a memory
limit, each within a time bound, so a reader that crashes, hangs or balloons fails the test instead of the
machine. The seed files are the project's own shipped files and the adapters' recorded corpus; the row formats
hold the shipped issue-triage cases, converted here.
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import select
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.documents import paths, replace
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/corpus/adapt"
MEMORY_LIMIT = 3 * 1024**3
"""Address space the child may use: far above any read of these seeds, far below what would hurt the machine."""
READ_TIMEOUT_S = 30.0
"""The longest one read may take on a loaded two-core machine; a hang is reported as one."""
MAX_LINE = 1000  # evalkit's longest error line (evalkit.core.errors.MAX_MESSAGE_CHARS)

# checks.yaml as docs/how-to/write-a-suite.md writes one, with an anchor and an alias (no suite ships one)
CHECKS_SEED = b"""checks:
  - name: reply_is_json
    critical: true
    json-schema: &schema {type: object, required: [label]}
  - {name: still_json, json-schema: *schema}
  - {name: label_matches, field: label, classification: label}
  - {name: polite, contains: [thanks, sorry], match: any, ignore_case: true}
  - {name: ticket_ref, regex: "T-[0-9]+"}
  - {name: same_total, field: total, number: {expected: {case: total}, tolerance: 0.01}}
  - {name: short, length: {max: 400}, where: {kind: chat}}
"""
_recording = ROOT / "recordings/issue_triage/gemini-3.8-flash-v1-issue-triage@1-85d32d9a.json"
_call, _entry = next(iter(json.loads(_recording.read_text(encoding="utf-8"))["calls"].items()))
_CASES = json.loads((ROOT / "suites/issue_triage/datasets/v1.json").read_text(encoding="utf-8"))["cases"]
DATA_FILE = "data-00000-of-00001.arrow"
"""The one data file of a saved `datasets` folder of one shard, as save_to_disk names it."""


def _csv(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows({k: v if isinstance(v, str) else json.dumps(v) for k, v in row.items()} for row in rows)
    return out.getvalue().encode()


def _parquet(table: pa.Table, **options: Any) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    return bytes(sink.getvalue().to_pybytes())


def _arrow(table: pa.Table, compression: str | None = None) -> bytes:
    """An Arrow IPC stream, as a saved folder's data file holds one (`compression` is never save_to_disk's)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression)) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


# state.json with the keys datasets' save_to_disk writes (datasets 5.2); written here, not by datasets
STATE = json.dumps({"_data_files": [{"filename": DATA_FILE}], "_fingerprint": "0123456789abcdef",
                    "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
                    "_output_all_columns": False, "_split": None}).encode()
_TABLE = pa.Table.from_pylist(_CASES)
SEEDS: dict[str, tuple[str, bytes]] = {  # reader -> (file name the reader expects, seed bytes)
    "report": ("report.json", (ROOT / "suites/issue_triage/runs/baseline.json").read_bytes()),
    "policy": ("policy.yaml", (ROOT / "conf/policy/triage.yaml").read_bytes()),
    "checks": ("checks.yaml", CHECKS_SEED),
    "rubric": ("rubric.yaml", (ROOT / "conf/rubric/evidencedesk.yaml").read_bytes()),
    "recording": ("recording.json", _recording.read_bytes()),
    "journal": ("rec.json.journal.jsonl", (json.dumps({"call_id": _call, "entry": _entry}) + "\n").encode()),
    "dataset": ("dataset.json", (ROOT / "suites/issue_triage/datasets/v1.json").read_bytes()),
    "manifest": ("manifest.json", (ROOT / "suites/quality_lab/data/manifest.json").read_bytes()),
    "docs_stage": ("stage.json", (ROOT / "suites/docs_stages/fixtures/gemma4-e2b.json").read_bytes()),
    "inspect": ("log.eval", (CORPUS / "inspect/baseline.eval").read_bytes()),
    "promptfoo": ("results.json", (CORPUS / "promptfoo/baseline.json").read_bytes()),
    "deepeval": ("run.json", (CORPUS / "deepeval/baseline.json").read_bytes()),
    "lm_eval": ("results.json", next((CORPUS / "lm_eval/baseline").glob("results_*.json")).read_bytes()),
    "junit": ("junit.xml", (CORPUS / "junit/pytest/baseline.xml").read_bytes()),
    "dataset_jsonl": ("dataset.jsonl", "".join(json.dumps(case) + "\n" for case in _CASES).encode()),
    "dataset_csv": ("dataset.csv", _csv(_CASES)),
    "dataset_parquet": ("dataset.parquet", _parquet(_TABLE)),
    "dataset_saved": (DATA_FILE, _arrow(_TABLE)),  # in a folder whose state.json names it (the `child` fixture)
    "dataset_state": ("state.json", STATE),  # in a folder holding the data file it names
}
JSON_READERS = [name for name, (file, _) in SEEDS.items() if file.endswith((".json", ".jsonl"))]
YAML_READERS = [name for name, (file, _) in SEEDS.items() if file.endswith(".yaml")]
COLUMNAR = {"dataset_parquet", "dataset_saved", "dataset_state"}
"""Readers that decode in a confined child of their own (evalkit.core.confined): a second or so a read, so they
take a fifth of the profile's examples."""


class Child:
    """One worker process (tests/fuzz/worker.py) under the memory limit, reused for every read."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process = self._start()

    def _start(self) -> subprocess.Popen[str]:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("worker.py"))], cwd=self.folder,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                   preexec_fn=limit)
        assert self._answer(process, 120.0) == {"outcome": "ready"}
        return process

    @staticmethod
    def _answer(process: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if ready else ""
        return json.loads(line) if line else None

    def read(self, reader: str, data: bytes) -> dict[str, Any]:
        name = SEEDS[reader][0]
        target = self.folder / reader / name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data)
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"reader": reader, "path": str(target)}) + "\n")
        self.process.stdin.flush()
        answer = self._answer(self.process, READ_TIMEOUT_S)
        if answer is None:  # hung past the bound, or died (out of memory): a fresh child for the next read
            self.process.kill()
            self.process.wait()
            code = self.process.returncode
            self.process = self._start()
            return {"outcome": "crash", "error": f"no answer within {READ_TIMEOUT_S} s (exit {code})"}
        return answer

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture
def fuzz_settings(request: pytest.FixtureRequest) -> settings:
    """The profile the harness runs under: `--hypothesis-profile=NAME` if given, else `quick`. Applied to the
    harness's tests only, so the rest of the suite keeps its own Hypothesis settings."""
    chosen = request.config.getoption("hypothesis_profile", None)
    return settings.get_profile(chosen or "quick")


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Child]:
    folder = tmp_path_factory.mktemp("fuzz")
    # a manifest names its data files beside it: the reader gets the real ones to resolve
    (folder / "manifest").mkdir()
    for data in (ROOT / "suites/quality_lab/data").iterdir():
        if data.name != "manifest.json":
            shutil.copyfile(data, folder / "manifest" / data.name)
    # a saved folder is a state.json and the data files it names: each reader gets the other one whole
    (folder / "dataset_saved").mkdir()
    (folder / "dataset_saved" / "state.json").write_bytes(STATE)
    (folder / "dataset_state").mkdir()
    (folder / "dataset_state" / DATA_FILE).write_bytes(SEEDS["dataset_saved"][1])
    worker = Child(folder)
    yield worker
    worker.close()


def check(answer: dict[str, Any], reader: str, data: bytes) -> None:
    """A result, or one refusal line of evalkit's length: anything else is a finding."""
    assert answer["outcome"] in ("result", "refused"), (
        f"{reader} on {data[:200]!r}... ({len(data)} bytes): {answer.get('error')}\n{answer.get('traceback', '')}")
    if answer["outcome"] == "refused":
        line = answer["line"]
        assert "\n" not in line and len(line) <= MAX_LINE, line


# JSON values of every type, including the awkward ones: huge integers, non-finite floats, deep nesting
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40) | st.sampled_from(["", "\x00", "\x1b[2J", "\ud800", "../../etc/passwd", "9" * 5000])
    | st.sampled_from([[], {}]),
    lambda inner: st.lists(inner, min_size=1, max_size=4)
    | st.dictionaries(st.text(max_size=10), inner, min_size=1, max_size=4),
    max_leaves=12)


@st.composite
def structured(draw: st.DrawFn, reader: str) -> bytes:
    """The seed with one value, anywhere in it, replaced by any JSON value (or its key dropped); in a JSON Lines
    file, in one of its lines."""
    name, seed = SEEDS[reader]
    lines = seed.decode("utf-8").splitlines() if name.endswith(".jsonl") else [seed.decode("utf-8")]
    at = draw(st.integers(0, len(lines) - 1))
    document = json.loads(lines[at])
    path = draw(st.sampled_from(paths(document)))
    if path and draw(st.booleans()) and isinstance(parent := _get(document, path[:-1]), dict):
        changed = replace(document, path[:-1], {k: v for k, v in parent.items() if k != path[-1]})
    else:
        changed = replace(document, path, draw(json_values))
    lines[at] = json.dumps(changed, allow_nan=True, ensure_ascii=draw(st.booleans()))
    return "\n".join(lines).encode("utf-8", "surrogatepass") + (b"\n" if name.endswith(".jsonl") else b"")


def _shared(value: Any, levels: int, width: int) -> Any:
    """`value` in `levels` nested lists of `width` references to one list: YAML writes each list once, with an
    anchor, and every further reference as an alias (levels 6, width 9: a 400-byte "billion laughs")."""
    for _ in range(levels):
        value = [value] * width
    return value


@st.composite
def structured_yaml(draw: st.DrawFn, reader: str) -> bytes:
    """The YAML seed with one value, anywhere in it, replaced by any JSON value, possibly shared many times."""
    document = yaml.safe_load(SEEDS[reader][1])
    path = draw(st.sampled_from(paths(document)))
    new = draw(json_values)
    if draw(st.booleans()):
        new = _shared(new, draw(st.integers(1, 9)), draw(st.integers(2, 9)))
    changed = replace(document, path, new)
    return yaml.safe_dump(changed, allow_unicode=draw(st.booleans())).encode("utf-8", "surrogatepass")


def _get(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


@st.composite
def mutated(draw: st.DrawFn, reader: str) -> bytes:
    """The seed's bytes with a few random edits: cut, flipped, a span repeated, or foreign bytes spliced in."""
    data = bytearray(SEEDS[reader][1])
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        kind = draw(st.sampled_from(["cut", "flip", "repeat", "splice"]))
        if kind == "cut":
            del data[at:]
        elif kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "repeat":
            span = bytes(data[at:at + draw(st.integers(1, 64))])
            data[at:at] = span * draw(st.integers(1, 50))
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=16)
                               | st.sampled_from([b"\xef\xbb\xbf", b'"value": 1, "value": 0', b"1e400", b"\x00",
                                                  b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"\xff\xfe"]))
    return bytes(data)


# What the harness found that is not fixed yet: each marked strictly, so the fix turns the marker into a failure
# that says to remove it.
FINDINGS: dict[tuple[str, str], str] = {}
"""Known crashes the harness found and that are not fixed yet, as (input kind, reader) -> what happens: each runs
as a strict xfail, so a fix that lands shows by failing until its entry is removed."""


def _known(kind: str, readers: list[str]) -> list[Any]:
    return [pytest.param(reader, marks=pytest.mark.xfail(reason=FINDINGS[(kind, reader)], strict=True))
            if (kind, reader) in FINDINGS else reader for reader in readers]


def _fewer(profile: settings, reader: str) -> settings:
    return settings(profile, max_examples=max(3, profile.max_examples // 5)) if reader in COLUMNAR else profile


@pytest.mark.parametrize("reader", _known("structured", JSON_READERS))
def test_structured_inputs_end_in_a_result_or_one_line(child: Child, reader: str, fuzz_settings: settings) -> None:
    @_fewer(fuzz_settings, reader)
    @given(data=structured(reader))
    def run(data: bytes) -> None:
        check(child.read(reader, data), reader, data)

    run()


@pytest.mark.parametrize("reader", _known("structured", YAML_READERS))
def test_structured_yaml_inputs_end_in_a_result_or_one_line(child: Child, reader: str,
                                                            fuzz_settings: settings) -> None:
    @fuzz_settings
    @given(data=structured_yaml(reader))
    def run(data: bytes) -> None:
        check(child.read(reader, data), reader, data)

    run()


@pytest.mark.parametrize("reader", _known("mutated", sorted(SEEDS)))
def test_mutated_inputs_end_in_a_result_or_one_line(child: Child, reader: str, fuzz_settings: settings) -> None:
    @_fewer(fuzz_settings, reader)
    @given(data=mutated(reader))
    def run(data: bytes) -> None:
        check(child.read(reader, data), reader, data)

    run()


# Hostile dataset shapes: each draws its sizes, and builds a file of one row format that a size on disk, a row
# count or a first glance does not show for what it is. (reader, bytes), for the child to read.
_Shape = Callable[[st.DrawFn], tuple[str, bytes]]


def _repeated_rows(draw: st.DrawFn) -> tuple[str, bytes]:
    n = draw(st.integers(1, 20_000))
    row = draw(st.sampled_from(['{"q": "same"}', '{}', '{"id": ""}', '{"id": null, "q": 1}']))
    return "dataset_jsonl", (row + "\n").encode() * n


def _deep_line(draw: st.DrawFn) -> tuple[str, bytes]:
    depth = draw(st.integers(50, 100_000))
    return "dataset_jsonl", ('{"q": ' + "[" * depth + "]" * depth + "}\n").encode()


def _long_text(draw: st.DrawFn) -> tuple[str, bytes]:
    length = draw(st.sampled_from([131_072, 131_073, 1024 * 1024, 1024 * 1024 + 1, 3_000_000]))
    if draw(st.booleans()):
        return "dataset_csv", b"q\n" + b"x" * length + b"\n"
    return "dataset_jsonl", b'{"q": "' + b"x" * length + b'"}\n'


def _odd_text(draw: st.DrawFn) -> tuple[str, bytes]:
    piece = draw(st.sampled_from(['"\\ud800"', '"\\udfff\\ud800"', '"a\u2028b"', '"\\u0000"', '"\x1b[2J"',
                                  "9" * 5000, "1e999", "NaN", '"\\ud83d\\ude00"']))
    key = draw(st.sampled_from(['"q"', '"\\ud800"', '""', '"id"']))
    return "dataset_jsonl", (f'{{{key}: {piece}}}\n').encode("utf-8", "surrogatepass")


def _broken_csv(draw: st.DrawFn) -> tuple[str, bytes]:
    return "dataset_csv", draw(st.sampled_from([
        b'q\n"never closed\n' + b"x\n" * 1000, b"a,a\n1,2\n", b",\n1\n", b"q\r" * 10_000, b"q\x00\nx\x00\n",
        b"\xef\xbb\xbfq\nx\n", b"q\n" + b'"' * 100_001 + b"\n",
        ",".join(f"c{i}" for i in range(100_000)).encode() + b"\n" + b"x," * 99_999 + b"x\n"]))


def _parquet_rows(draw: st.DrawFn) -> tuple[str, bytes]:
    rows = draw(st.sampled_from([0, 1, 99_999, 1_000_001, 3_000_000]))  # a million takes a minute: legitimately
    return "dataset_parquet", _parquet(pa.table({"q": pa.nulls(rows, pa.string())}), compression="zstd")


def _dictionary_bomb(draw: st.DrawFn) -> tuple[str, bytes]:
    # small enough to read, or past a limit: a dataset that is merely large (a quarter GB accepted) is no finding,
    # and takes longer than the bound on a loaded machine
    size = draw(st.sampled_from([1000, 1_000_000, 2_000_000]))
    rows = draw(st.integers(1, 4000) if size == 1000 else st.integers(300, 4000))
    repeated = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * size]))
    return "dataset_parquet", _parquet(pa.table({"q": repeated}), compression="zstd",
                                       store_schema=draw(st.booleans()))


def _compressed(draw: st.DrawFn) -> tuple[str, bytes]:
    table = pa.table({"q": ["y" * draw(st.sampled_from([10, 2_000_000, 30_000_000]))]})
    if draw(st.booleans()):
        return "dataset_parquet", _parquet(table, compression="zstd")
    return "dataset_saved", _arrow(table, compression=draw(st.sampled_from(["zstd", "lz4"])))


def _deep_type(draw: st.DrawFn) -> tuple[str, bytes]:
    kind: pa.DataType = pa.string()
    for _ in range(draw(st.integers(1, 63))):  # pyarrow writes no Arrow type nested deeper than 64
        kind = pa.list_(kind) if draw(st.booleans()) else pa.struct([("f", kind)])
    table = pa.table({"q": pa.nulls(2, kind)})
    return draw(st.sampled_from(["dataset_parquet", "dataset_saved"])), (
        _parquet(table) if draw(st.booleans()) else _arrow(table))


def _odd_columns(draw: st.DrawFn) -> tuple[str, bytes]:
    table = draw(st.sampled_from([
        pa.table({"q": [b"\x00\xff"]}), pa.table({"q": [float("nan")]}), pa.table({"q": [{"k": 1}]}, ),
        pa.table({"q": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))}),
        pa.table({f"c{i}": [i] for i in range(5000)}), pa.table({"x" * 2_000_000: [1]}),
        pa.table({"q": pa.array([1], pa.decimal128(38, 10))}), pa.table({"q": pa.array([10**18], pa.timestamp("ns"))})]))
    return draw(st.sampled_from(["dataset_parquet", "dataset_saved"])), (
        _parquet(table) if draw(st.booleans()) else _arrow(table))


def _many_batches(draw: st.DrawFn) -> tuple[str, bytes]:
    batches = draw(st.integers(1, 20_000))
    table = pa.Table.from_batches([pa.record_batch({"q": [None]}, schema=pa.schema([("q", pa.string())]))] * batches)
    return "dataset_saved", _arrow(table)


HOSTILE: dict[str, _Shape] = {shape.__name__[1:]: shape for shape in (
    _repeated_rows, _deep_line, _long_text, _odd_text, _broken_csv, _parquet_rows, _dictionary_bomb, _compressed,
    _deep_type, _odd_columns, _many_batches)}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_hostile_datasets_end_in_a_result_or_one_line(child: Child, shape: str, fuzz_settings: settings) -> None:
    @settings(fuzz_settings, max_examples=max(2, fuzz_settings.max_examples // 8))
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        reader, content = HOSTILE[shape](data.draw)
        check(child.read(reader, content), reader, content)

    run()


def test_the_harness_sees_a_crash(child: Child) -> None:
    """The harness itself can fail: a file the reader cannot even be handed (a folder in its place) is reported,
    and a seed is read as a result."""
    assert child.read("report", SEEDS["report"][1])["outcome"] == "result"
    assert child.read("checks", SEEDS["checks"][1])["outcome"] == "result"  # its fields are the worker's cases'
    assert child.read("dataset", b"{")["outcome"] == "refused"
    crash = {"outcome": "crash", "error": "KeyError: 'x'"}
    with pytest.raises(AssertionError, match="KeyError"):
        check(crash, "report", b"{}")
