"""The Inspect source: real logs made by inspect-ai 0.3.285 (tests/corpus/adapt/inspect/, see its README) read
without inspect-ai, gated through the real command; bad inputs derived from those logs in the tests; the logs
regenerated with the real tool where it is installed."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli

from evalkit.adapt.framework import gate_runs
from evalkit.adapt.inspect import FORMAT_VERSION, MAX_ID_CHARS, _member, read_inspect_log
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT
from evalkit.gate.decision import Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
LOGS = PROJECT_ROOT / "tests/corpus/adapt/inspect"


def gate(baseline: Path, candidate: Path) -> Any:
    return gate_runs(STRICT_DEFAULT, read_inspect_log(baseline), read_inspect_log(candidate),
                     baseline_where=str(baseline), candidate_where=str(candidate))


def as_json_log(path: Path) -> dict[str, Any]:
    """A .eval log as one EvalLog object (its header with the summaries as samples): the `.json` layout."""
    data = path.read_bytes()
    archive = zipfile.ZipFile(io.BytesIO(data))
    header = json.loads(_member(archive, data, "header.json", str(path)))
    return {**header, "samples": json.loads(_member(archive, data, "summaries.json", str(path)))}


def refused(tmp_path: Path, log: dict[str, Any] | bytes, name: str = "bad.json") -> str:
    path = tmp_path / name
    path.write_bytes(log if isinstance(log, bytes) else json.dumps(log).encode())
    with pytest.raises(InputError) as error:
        read_inspect_log(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_a_regression_and_a_fix_between_two_real_logs() -> None:
    result = gate(LOGS / "baseline.eval", LOGS / "candidate.eval")
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("arith::match[q1]",)
    assert result.decision.fixed == ("arith::match[q6]",)
    assert result.decision.messages["arith::match[q1]"] == "scored \"I\" (answer 'ANSWER: 5')"
    key = result.candidate["eval"]
    assert (key["suite"], key["model"], key["judge_model"]) == ("inspect:arith", "mockllm/model", "scorer:match; "
                                                                                               "task_version=0")
    assert result.candidate["metrics"] == {"match.accuracy": pytest.approx(5 / 6)}  # stderr left out
    assert any("fingerprint of the sample inputs" in warning for warning in result.decision.warnings)


def test_the_json_format_maps_to_the_same_tests_and_key_as_the_eval_format() -> None:
    for name in ("baseline", "candidate"):
        from_eval, from_json = read_inspect_log(LOGS / f"{name}.eval"), read_inspect_log(LOGS / f"{name}.json")
        assert from_eval.tests == from_json.tests
        assert from_eval.key.dataset_sha == from_json.key.dataset_sha
        assert from_eval.key.scorer == from_json.key.scorer
    assert gate(LOGS / "baseline.json", LOGS / "candidate.eval").decision.regressed == ("arith::match[q1]",)


@pytest.mark.parametrize(("other", "field"), [("dataset-changed.eval", "dataset: "),
                                              ("scorer-changed.eval", "scorer: ")])
def test_another_dataset_or_scorer_is_incomparable_naming_the_field(other: str, field: str) -> None:
    result = gate(LOGS / "candidate.eval", LOGS / other)
    assert result.decision.decision is Verdict.INCOMPARABLE
    assert len(result.decision.reasons) == 1 and result.decision.reasons[0].startswith(field)


def test_epochs_become_repeats_and_only_the_significant_drop_regresses() -> None:
    result = gate(LOGS / "baseline-epochs.eval", LOGS / "candidate-epochs.eval")
    tests = {test["nodeid"]: test for test in result.candidate["tests"]}
    assert len(tests) == 6  # one test per sample, not one per epoch
    assert tests["arith::match[q3]"]["repeats"] == {"passed": 2, "runs": 10}
    assert tests["arith::match[q5]"]["repeats"] == {"passed": 9, "runs": 10}
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("arith::match[q3]",)  # q5's 9 of 10 is within noise
    # ... and named for review: it passed all 10 on the baseline, and 10 samples a side cannot tell its drop
    assert [f.tests for f in result.decision.findings if f.rule == "too_small_to_tell"] == [("arith::match[q5]",)]


def test_an_errored_sample_is_an_errored_test_listed_never_dropped() -> None:
    run = read_inspect_log(LOGS / "errored.eval")
    assert run.errored == ("q4",)
    assert {test.nodeid: test.outcome for test in run.tests}["arith::match[q4]"] == "error"
    result = gate(LOGS / "candidate.eval", LOGS / "errored.eval")
    assert result.decision.decision is Verdict.BLOCK
    assert "incomplete run: 1 unscored (q4)" in result.decision.reasons
    assert result.decision.messages["arith::match[q4]"] == "RuntimeError('mock model failure')"


def test_a_failed_run_is_refused_in_one_line(tmp_path: Path) -> None:
    message = refused(tmp_path, (LOGS / "failed.eval").read_bytes(), "failed.eval")
    assert "failed run (status 'error': RuntimeError('mock model failure'))" in message


def test_a_cancelled_run_is_refused(tmp_path: Path) -> None:
    assert "cancelled run" in refused(tmp_path, {**as_json_log(LOGS / "candidate.eval"), "status": "cancelled"})


@pytest.mark.parametrize("name", ["candidate.eval", "candidate.json"])
def test_a_truncated_log_is_refused(tmp_path: Path, name: str) -> None:
    data = (LOGS / name).read_bytes()
    message = refused(tmp_path, data[: len(data) // 2], name)
    assert "truncated" in message


def test_an_older_format_version_is_refused_naming_it(tmp_path: Path) -> None:
    message = refused(tmp_path, {**as_json_log(LOGS / "candidate.eval"), "version": 1})
    assert f"Inspect log format version 1 is older than version {FORMAT_VERSION}" in message


def test_an_older_version_inside_a_deflated_eval_zip_is_refused(tmp_path: Path) -> None:
    """Older Inspect wrote .eval members with deflate; the version is read (and refused) from header.json."""
    log = as_json_log(LOGS / "candidate.eval")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({**{k: v for k, v in log.items() if k != "samples"},
                                                    "version": 1}))
        archive.writestr("summaries.json", json.dumps(log["samples"]))
    assert "format version 1 is older" in refused(tmp_path, buffer.getvalue(), "old.eval")


def test_a_deflated_eval_zip_of_the_current_version_is_read(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    path = tmp_path / "deflated.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in log.items() if k != "samples"}))
        archive.writestr("summaries.json", json.dumps(log["samples"]))
    assert read_inspect_log(path).tests == read_inspect_log(LOGS / "candidate.eval").tests


def test_duplicate_sample_ids_are_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    log["samples"].append(log["samples"][0])
    assert "duplicate sample id 'q1'" in refused(tmp_path, log)


def test_a_mix_of_epochs_is_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate-epochs.eval")
    log["samples"] = [s for s in log["samples"] if not (s["id"] == "q2" and s["epoch"] == 10)]
    assert "a mix of epochs: sample 'q1' has 10 epoch(s), sample 'q2' 9" in refused(tmp_path, log)


def test_a_sample_without_scores_is_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    log["samples"][2]["scores"] = {}
    assert "sample 'q3' (epoch 1) has no scores and no error" in refused(tmp_path, log)


def test_a_list_valued_score_is_refused(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    log["samples"][0]["scores"]["match"]["value"] = [1, 0]
    assert "a list of values has no pass or fail" in refused(tmp_path, log)


def test_a_dict_valued_score_gives_one_test_per_key(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    for sample in log["samples"]:
        sample["scores"]["match"]["value"] = {"exact": "C", "format": 0.5}
    path = tmp_path / "dict.json"
    path.write_text(json.dumps(log))
    outcomes = {test.nodeid: test.outcome for test in read_inspect_log(path).tests}
    assert outcomes["arith::match.exact[q1]"] == "passed" and outcomes["arith::match.format[q1]"] == "failed"


def test_the_command_writes_a_new_folder_and_exits_with_the_decision(tmp_path: Path) -> None:
    out = tmp_path / "result"
    policy = tmp_path / "policy.yaml"
    policy.write_text("name: inspect-release\nmax_regressions: 0\nmin_pass_rate: 0.5\n")
    done = evalkit_cli("evalkit.cli.main", "adapt", "inspect", str(LOGS / "baseline.eval"), str(LOGS / "candidate.eval"),
                       "--policy", str(policy), "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["baseline.json", "candidate.json", "decision.json",
                                                     "decision.md", "decision.xml", "report.html"]
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "block" and decision["regressed"] == ["arith::match[q1]"]
    assert decision["evidence"]["sources"]["candidate"]["tool"] == "inspect_ai 0.3.285"
    assert decision["evidence"]["policy"]["name"] == "inspect-release"
    assert "arith::match[q1]" in (out / "decision.md").read_text()
    again = evalkit_cli("evalkit.cli.main", "adapt", "inspect", str(LOGS / "baseline.eval"), str(LOGS / "candidate.eval"),
                        "--out", str(out))
    assert again.returncode == 3 and "already exists" in again.stderr


@pytest.mark.parametrize(("candidate", "code"), [("dataset-changed.eval", 2), ("failed.eval", 3),
                                                 ("baseline.json", 0)])
def test_the_command_exit_codes(candidate: str, code: int) -> None:
    done = evalkit_cli("evalkit.cli.main", "adapt", "inspect", str(LOGS / "baseline.eval"), str(LOGS / candidate))
    assert done.returncode == code, done.stderr
    if code == 3:
        assert len(done.stderr.strip().splitlines()) == 1


def _inspect_python() -> str | None:
    if importlib.util.find_spec("inspect_ai") is not None:
        return sys.executable
    return os.environ.get("EVALKIT_INSPECT_PYTHON") or None


@pytest.mark.slow
@pytest.mark.external
@pytest.mark.skipif(_inspect_python() is None, reason="inspect-ai is not installed here and EVALKIT_INSPECT_PYTHON "
                                                      "names no Python that has it (scripts/test.sh sets one up)")
def test_regenerated_logs_map_to_the_same_tests_and_decisions(tmp_path: Path) -> None:
    python = _inspect_python()
    assert python is not None
    subprocess.run([python, str(LOGS / "make_logs.py"), str(tmp_path)], check=True, timeout=600,
                   capture_output=True)
    for name in ("baseline.eval", "candidate.eval", "baseline.json", "candidate-epochs.eval", "errored.eval"):
        fresh, kept = read_inspect_log(tmp_path / name), read_inspect_log(LOGS / name)
        assert fresh.tests == kept.tests and fresh.key == kept.key and fresh.errored == kept.errored, name
    for baseline, candidate in (("baseline.eval", "candidate.eval"), ("candidate.eval", "dataset-changed.eval"),
                                ("candidate.eval", "scorer-changed.eval"),
                                ("baseline-epochs.eval", "candidate-epochs.eval")):
        fresh, kept = gate(tmp_path / baseline, tmp_path / candidate), gate(LOGS / baseline, LOGS / candidate)
        assert fresh.decision.record() == kept.decision.record()
    with pytest.raises(InputError, match="failed run"):
        read_inspect_log(tmp_path / "failed.eval")


# ---- hostile logs: refused in one line, as every other reader refuses them

def _zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip written byte by byte, as a crafted log would be: (name, data as stored, method, declared size,
    CRC of the declared content) per member; zipfile itself would not write a lie."""
    local, central = b"", b""
    for name, raw, method, size, crc in members:
        encoded = name.encode()
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(raw), size, len(encoded), 0)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc, len(raw), size,
                               len(encoded), 0, 0, 0, 0, 0, len(local)) + encoded
        local += head + encoded + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(local), 0)
    return local + central + end


def _header_and_summaries() -> tuple[bytes, bytes]:
    log = as_json_log(LOGS / "candidate.eval")
    return (json.dumps({k: v for k, v in log.items() if k != "samples"}).encode(),
            json.dumps(log["samples"]).encode())


def _stored(name: str, data: bytes) -> tuple[str, bytes, int, int, int]:
    return name, data, 0, len(data), zlib.crc32(data)


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda text: text.replace('"value": "C"', '"value": "I", "value": "C"', 1), "appears twice"),
    (lambda text: text.replace('"value": "C"', '"value": 1e400', 1), "too large for a number"),
    (lambda text: "\ufeff" + text, "byte-order mark"),
])
def test_the_strict_json_parser_reads_inspect_logs_too(tmp_path: Path, edit: Any, expected: str) -> None:
    text = json.dumps(as_json_log(LOGS / "candidate.eval"), indent=1)
    assert '"value": "C"' in text
    assert expected in refused(tmp_path, edit(text).encode())


def test_inspect_nan_constants_are_still_read_as_no_credit(tmp_path: Path) -> None:
    text = json.dumps(as_json_log(LOGS / "candidate.eval")).replace('"value": "C"', '"value": NaN', 1)
    (tmp_path / "nan.json").write_text(text)
    assert "failed" in {t.outcome for t in read_inspect_log(tmp_path / "nan.json").tests}


def test_two_header_members_are_refused(tmp_path: Path) -> None:
    header, summaries = _header_and_summaries()
    other = header.replace(b'"status": "success"', b'"status": "success" ', 1)
    data = _zip([_stored("header.json", header), _stored("header.json", other), _stored("summaries.json", summaries)])
    assert "two members named 'header.json'" in refused(tmp_path, data, "twice.eval")


def test_a_zstandard_member_lying_about_its_size_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    header, summaries = _header_and_summaries()
    bomb = b"[" + b" " * (64 << 20) + b"]"  # 64 MiB of JSON that claims, in the frame and the zip, 2 KB
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(bomb)
    data = _zip([_stored("header.json", header), ("summaries.json", frame, 93, 2048, zlib.crc32(bomb))])
    assert len(data) < 100_000
    assert "inflates past its declared 2,048 bytes" in refused(tmp_path, data, "bomb.eval")


def test_a_deflate_member_lying_about_its_size_is_refused(tmp_path: Path) -> None:
    header, summaries = _header_and_summaries()
    bomb = b"[" + b" " * (64 << 20) + b"]"
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw = packer.compress(bomb) + packer.flush()
    lying = _zip([_stored("header.json", header), ("summaries.json", raw, 8, 4096, zlib.crc32(bomb))])
    assert "summaries.json inside the .eval log is damaged" in refused(tmp_path, lying, "lying.eval")
    honest = _zip([_stored("header.json", header), ("summaries.json", raw, 8, 3 << 30, zlib.crc32(bomb))])
    assert "more than the 268,435,456 evalkit inflates" in refused(tmp_path, honest, "honest.eval")


@pytest.mark.parametrize(("method", "expected"), [(14, "LZMA-compressed"), (99, "AES-encrypted"), (12, "bzip2")])
def test_members_of_methods_inspect_never_writes_are_refused(tmp_path: Path, method: int, expected: str) -> None:
    header, summaries = _header_and_summaries()
    data = _zip([("header.json", header, method, len(header), zlib.crc32(header)),
                 _stored("summaries.json", summaries)])
    message = refused(tmp_path, data, "method.eval")
    assert expected in message and "Inspect does not write" in message


def test_a_journal_member_of_five_thousand_digits_is_refused(tmp_path: Path) -> None:
    header, summaries = _header_and_summaries()
    data = _zip([_stored("header.json", header), _stored(f"_journal/summaries/{'9' * 5000}.json", summaries)])
    assert "not a numbered summary file" in refused(tmp_path, data, "journal.eval")


def test_task_names_and_sample_ids_are_capped(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    long_task = {**log, "eval": {**log["eval"], "task": "t" * (MAX_ID_CHARS + 1)}}
    assert f"longer than the {MAX_ID_CHARS:,}" in refused(tmp_path, long_task)
    long_id = {**log, "samples": [{**log["samples"][0], "id": "s" * (MAX_ID_CHARS + 1)}, *log["samples"][1:]]}
    assert f"longer than the {MAX_ID_CHARS:,}" in refused(tmp_path, long_id)


@pytest.mark.parametrize("names", [("match", "match()")])
def test_one_scorer_named_by_two_inspect_versions_is_comparable(tmp_path: Path, names: tuple[str, str]) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    runs = []
    for name in names:
        scorers = [{**scorer, "name": name, "options": {}} for scorer in log["eval"]["scorers"]]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**log, "eval": {**log["eval"], "scorers": scorers}}))
        runs.append(read_inspect_log(path))
    assert runs[0].key.scorer == runs[1].key.scorer == "match"
    changed = [{**scorer, "name": "includes", "options": {}} for scorer in log["eval"]["scorers"]]
    (tmp_path / "includes.json").write_text(json.dumps({**log, "eval": {**log["eval"], "scorers": changed}}))
    decision = gate_runs(STRICT_DEFAULT, runs[0], read_inspect_log(tmp_path / "includes.json")).decision
    assert decision.decision is Verdict.INCOMPARABLE and decision.reasons[0].startswith("scorer:")


def _graded(tmp_path: Path, name: str, grades: dict[str, int]) -> Path:
    """A real log rescored on a 0-10 scale (C -> the sample's grade if given, else 8; I -> 3), as a model-graded
    scorer with a rubric writes it."""
    log = as_json_log(LOGS / "candidate.eval")
    for sample in log["samples"]:
        for score in sample["scores"].values():
            score["value"] = grades.get(str(sample["id"]), 8 if score["value"] == "C" else 3)
    path = tmp_path / name
    path.write_text(json.dumps(log))
    return path


def test_a_pass_threshold_reads_a_numeric_scale_and_joins_the_key(tmp_path: Path) -> None:
    path = _graded(tmp_path, "graded.json", {})
    plain = {t.case: t.outcome for t in read_inspect_log(path).tests}
    assert set(plain.values()) == {"passed"}  # 3 of 10 is "full credit" to Inspect's value_to_float
    at7 = read_inspect_log(path, {"match()": 7})
    expected = {t.case: t.outcome for t in read_inspect_log(LOGS / "candidate.eval").tests}
    assert {t.case: t.outcome for t in at7.tests} == expected
    assert at7.key.contract["pass_threshold.match"] == "7.0"
    decision = gate_runs(STRICT_DEFAULT, read_inspect_log(path, {"match": 5}), at7).decision
    assert decision.decision is Verdict.INCOMPARABLE and decision.reasons[0].startswith("pass_threshold.match:")
    with pytest.raises(InputError, match="a pass threshold names 'includes', which scored nothing"):
        read_inspect_log(path, {"includes": 7})


def test_the_command_takes_pass_thresholds(tmp_path: Path) -> None:
    baseline = _graded(tmp_path, "baseline.json", {})
    first = next(t.case for t in read_inspect_log(LOGS / "candidate.eval").tests if t.outcome == "passed")
    candidate = _graded(tmp_path, "candidate.json", {first: 6})
    plain = evalkit_cli("evalkit.cli.main", "adapt", "inspect", str(baseline), str(candidate))
    gated = evalkit_cli("evalkit.cli.main", "adapt", "inspect", str(baseline), str(candidate), "--pass-threshold", "match=7")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert gated.returncode == 1 and f"[{first}]" in gated.stdout  # 6 of 10 no longer passes at 7
    bad = evalkit_cli("evalkit.cli.main", "adapt", "inspect", str(baseline), str(candidate), "--pass-threshold", "match=x")
    assert bad.returncode == 3 and "expected SCORER=NUMBER" in bad.stderr


def test_a_declared_total_the_samples_contradict_is_a_warning(tmp_path: Path) -> None:
    log = as_json_log(LOGS / "candidate.eval")
    assert read_inspect_log(LOGS / "candidate.eval").notes == ()
    log["results"]["total_samples"] += 4
    path = tmp_path / "declared.json"
    path.write_text(json.dumps(log))
    held = len(log["samples"])
    decision = gate_runs(STRICT_DEFAULT, read_inspect_log(path), read_inspect_log(path)).decision
    assert any(f"declare total_samples={held + 4} but it holds {held}" in w for w in decision.warnings)


def test_a_member_of_several_zstandard_frames_is_read_whole(tmp_path: Path) -> None:
    """inspect_ai 0.3.213 and later cap each zstd frame's input (200 MiB) so a large member is several frames
    in a row; the reader must read across them, not stop after the first."""
    zstandard = pytest.importorskip("zstandard")
    header, summaries = _header_and_summaries()
    half = len(summaries) // 2
    packer = zstandard.ZstdCompressor()
    frames = packer.compress(summaries[:half]) + packer.compress(summaries[half:])
    data = _zip([_stored("header.json", header), ("summaries.json", frames, 93, len(summaries),
                                                   zlib.crc32(summaries))])
    (tmp_path / "frames.eval").write_bytes(data)
    assert read_inspect_log(tmp_path / "frames.eval").tests == read_inspect_log(LOGS / "candidate.eval").tests
