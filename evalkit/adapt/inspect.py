"""Inspect eval logs (`.eval` and `.json`, log format version 2) read into a neutral run, without inspect-ai.

Read through the documented format (inspect_ai.log.EvalLog): a `.json` log is one EvalLog object; a `.eval`
log is a zip holding `header.json` (the EvalLog without samples), `summaries.json` (one EvalSampleSummary per
sample and epoch) and `samples/<id>_epoch_<n>.json`. Only the header and the summaries are read: they carry each
sample's id, epoch, input, target, scores and error, so a log of 10,000 samples never parses its transcripts.
Current Inspect compresses the zip's members with zstandard (zip method 93), which Python's zipfile cannot
read before 3.14: those members are decompressed with the `zstandard` package (extra `inspect`).

Mapping: each sample x scorer is a test `<task>::<scorer>[<sample id>]` (a scorer returning a dict of values
gives one test per key, `<scorer>.<key>`); a score passes when Inspect's own value_to_float gives it full
credit (C, true, yes, 1.0); epochs become repeats (`passed` only when every epoch passed); a sample that errored
is an `error` test per scorer, listed, never dropped. Inspect records no fingerprint of its dataset: the key's
`dataset_sha` is the fingerprint of the samples' ids, inputs and targets, and the decision says so.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Mapping
from io import BytesIO
from pathlib import Path
from typing import Any

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey, fingerprint_inputs
from evalkit.core.errors import InputError
from evalkit.core.failure import first_line
from evalkit.core.files import decode, read_bytes
from evalkit.core.fingerprint import canonical_json, fingerprint, sha256
from evalkit.core.parsing import json_object, parse_json

__all__ = ["FORMAT_VERSION", "MAX_ID_CHARS", "MAX_MEMBER_BYTES", "SOURCE", "read_inspect_log", "run_from_log"]

FORMAT_VERSION = 2
"""The EvalLog `version` read here (inspect-ai 0.3.x since the `.eval` format; tested with 0.3.285)."""

_ZSTD = 93  # the zip compression method number of zstandard (APPNOTE 4.4.5)
_METHODS = {12: "bzip2-compressed", 14: "LZMA-compressed", 95: "xz-compressed", 98: "PPMd-compressed",
            99: "AES-encrypted"}
_CHUNK = 1 << 20
MAX_MEMBER_BYTES = 256 << 20
"""The most a member of a `.eval` zip (the header, the summaries) is inflated to: 256 MiB, where a log of
10,000 samples has summaries of a few tens of MB."""
MAX_ID_CHARS = 1000
"""The longest task name or sample id read: it becomes part of every test id and every line that names one."""
_PASSING_TEXT = frozenset({"c", "yes", "true", "y", "correct"})
_FAILING_TEXT = frozenset({"i", "n", "p", "no", "false", "incorrect", "partial", "noanswer"})
# Inspect's metrics that measure spread, not quality: "higher is better" does not hold for them
_SPREAD = frozenset({"stderr", "std", "var", "bootstrap_stderr", "bootstrap_std"})
_TEXT_CUT = 5120  # Inspect's MAX_TEXT_LENGTH: summaries cut inputs and targets there, so the fingerprint does too
_CUT_MARK = "...\n(content truncated)"
_FIX = "write the log again with a current inspect-ai, or convert it: `inspect log convert LOG --to eval`"


def read_inspect_log(path: Path, pass_thresholds: Mapping[str, float] | None = None) -> NeutralRun:
    """Read an Inspect `.eval` or `.json` log into a neutral run; every refusal is one line naming the file.

    `pass_thresholds` (scorer name, or `scorer.key` of a dict-valued score -> the least numeric value that
    passes) read a numeric scale other than full credit (a 0-10 grade passing at 7); a scorer not named passes
    at 1.0, Inspect's full credit."""
    data = read_bytes(path, "Inspect log")
    where = str(path)
    if data[:4] == b"PK\x03\x04" or path.suffix == ".eval":
        header, samples = _read_eval_zip(data, where)
    else:
        log = json_object(_parse(data, where, "log"), f"{where}: the log")
        header, samples = log, log.get("samples")
        if samples is None:
            _check_header(header, where)  # a failed run's own reason first, if it is one
            raise InputError(f"{where}: the log holds no samples (was it written with log_samples=False, or "
                             "with header_only?); evalkit gates samples")
    return run_from_log(header, samples, where, source_sha256=sha256(data), pass_thresholds=pass_thresholds)


def _read_eval_zip(data: bytes, where: str) -> tuple[Mapping[str, Any], Any]:
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except zipfile.BadZipFile:
        raise InputError(f"{where}: not a readable .eval log (the zip's directory is missing: is the file "
                         "truncated, or still being written?)") from None
    listed = archive.namelist()
    names = set(listed)
    if len(names) != len(listed):  # zipfile would read the last of two members of one name
        twice = next(name for name in listed if listed.count(name) > 1)
        raise InputError(f"{where}: the .eval log holds two members named {twice[:80]!r}; Inspect writes each once")
    if "header.json" not in names:
        raise InputError(f"{where}: the .eval log has no header.json: the run has not finished (or was killed); "
                         "gate a finished log")
    header = json_object(_parse(_member(archive, data, "header.json", where), where, "header.json"),
                         f"{where}: header")
    _check_header(header, where)
    if "summaries.json" in names:
        samples = _parse(_member(archive, data, "summaries.json", where), where, "summaries.json")
    else:  # a log finished by an older writer: the journal's numbered summary files, in order
        journal = sorted((_journal_number(n, where), n) for n in names
                         if n.startswith("_journal/summaries/") and n.endswith(".json"))
        if not journal:
            raise InputError(f"{where}: the .eval log has no sample summaries (summaries.json); evalkit gates "
                             "samples: was it written with log_samples=False?")
        samples = []
        for _, name in journal:
            part = _parse(_member(archive, data, name, where), where, name)
            samples += part if isinstance(part, list) else [part]
    return header, samples


def _journal_number(name: str, where: str) -> int:
    stem = name.rsplit("/", 1)[1].removesuffix(".json")
    if not stem.isdigit() or len(stem) > 9:  # Inspect numbers its summary files 1, 2, 3, ...
        raise InputError(f"{where}: the .eval log holds a journal member {name[:60]!r} that is not a numbered "
                         "summary file (_journal/summaries/<n>.json); Inspect writes no such member")
    return int(stem)


def _member(archive: zipfile.ZipFile, data: bytes, name: str, where: str) -> bytes:
    """A member's bytes, decompressed a chunk at a time and never past its declared size or MAX_MEMBER_BYTES,
    checked against its CRC; zstandard members decompressed here (zipfile cannot before Python 3.14)."""
    info = archive.getinfo(name)
    method = info.compress_type
    if method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, _ZSTD):
        how = _METHODS.get(method, f"compression method {method}")
        raise InputError(f"{where}: {name} inside the .eval log is {how}, which Inspect does not write (it "
                         "writes zstandard or deflate); refused")
    if info.flag_bits & 0x1:
        raise InputError(f"{where}: {name} inside the .eval log is encrypted, which Inspect does not write; refused")
    cap = min(info.file_size, MAX_MEMBER_BYTES)
    if info.file_size > MAX_MEMBER_BYTES:
        raise InputError(f"{where}: {name} inside the .eval log declares {info.file_size:,} bytes, more than the "
                         f"{MAX_MEMBER_BYTES:,} evalkit inflates; refused")
    try:
        if method != _ZSTD:
            with archive.open(name) as stream:
                out = _bounded(stream.read, cap, name, where)
        else:
            start = info.header_offset
            if data[start:start + 4] != b"PK\x03\x04":
                raise zipfile.BadZipFile("bad local header")
            name_len, extra_len = struct.unpack("<HH", data[start + 26:start + 30])
            begin = start + 30 + name_len + extra_len
            raw = data[begin:begin + info.compress_size]
            if len(raw) != info.compress_size:
                raise zipfile.BadZipFile("member cut short")
            out = _zstd_decompress(raw, cap, name, where)
        if zlib.crc32(out) != info.CRC:
            raise zipfile.BadZipFile("CRC mismatch")
        return out
    except (zipfile.BadZipFile, zlib.error, EOFError, struct.error) as error:
        raise InputError(f"{where}: {name} inside the .eval log is damaged ({error}); is the file truncated?") \
            from None


def _bounded(read: Any, cap: int, name: str, where: str) -> bytes:
    """Read `read(n)` chunks to the end, refusing output past `cap` (the member's declared size): a deflate or
    zstandard stream can claim a small size and inflate a thousandfold."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = read(min(_CHUNK, cap + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            raise InputError(f"{where}: {name} inside the .eval log inflates past its declared {cap:,} bytes; "
                             "refused (a damaged or crafted log)")
        chunks.append(chunk)


def _zstd_decompress(raw: bytes, cap: int, name: str, where: str) -> bytes:
    try:
        import zstandard  # noqa: PLC0415  # imported where needed: only .eval logs of current Inspect use it
    except ImportError:
        raise InputError(f"{where}: the .eval log is zstandard-compressed, which needs the `zstandard` package: "
                         "pip install 'evalkit[inspect]'") from None
    try:
        # a stream, not decompress(): that trusts the frame's own content size, which a crafted frame sets
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return _bounded(reader.read, cap, name, where)
    except zstandard.ZstdError as error:
        raise zipfile.BadZipFile(f"zstandard: {error}") from None


def _parse(data: bytes, where: str, what: str) -> Any:
    """Strictly, as every reader (evalkit.core.parsing): a key given twice, a byte-order mark or `1e400` is
    refused. Inspect writes NaN and Infinity as bare constants (`ser_json_inf_nan="constants"`): read as null."""
    place = where if what == "log" else f"{where}: {what}"
    return parse_json(decode(data, where, f"Inspect {what}"), place, what, constants_as_null=True)


def _check_header(header: Mapping[str, Any], where: str) -> None:
    """The format version, and a run that finished: a failed, cancelled or unfinished run is refused."""
    version = header.get("version")
    if type(version) is not int:
        raise InputError(f"{where}: not an Inspect eval log (no integer 'version' in its header)")
    if version < FORMAT_VERSION:
        raise InputError(f"{where}: Inspect log format version {version} is older than version {FORMAT_VERSION}, "
                         f"the one evalkit reads; {_FIX}")
    if version > FORMAT_VERSION:
        raise InputError(f"{where}: Inspect log format version {version} is newer than version {FORMAT_VERSION}, "
                         "the one evalkit reads; update evalkit, or write the log with the inspect-ai this evalkit "
                         "names in its README")
    status = header.get("status")
    if status == "error":
        error = header.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        raise InputError(f"{where}: the log is of a failed run (status 'error'"
                         f"{': ' + _line(message) if isinstance(message, str) else ''}); fix the run and gate a "
                         "log whose status is 'success'")
    if status == "cancelled":
        raise InputError(f"{where}: the log is of a cancelled run (status 'cancelled'); gate a log whose status "
                         "is 'success'")
    if status != "success":
        raise InputError(f"{where}: the log's status is {status!r}: the run has not finished; gate a log whose "
                         "status is 'success'")
    if header.get("invalidated") is True:
        raise InputError(f"{where}: the log was invalidated (header 'invalidated': true); gate a valid log")
    if not isinstance(header.get("eval"), dict):
        raise InputError(f"{where}: the log's header has no 'eval' block (the task, dataset, model)")


def run_from_log(header: Mapping[str, Any], samples: Any, where: str, *, source_sha256: str = "",
                 pass_thresholds: Mapping[str, float] | None = None) -> NeutralRun:
    """Map a parsed log's header and its samples (summaries or full samples alike) to a neutral run."""
    _check_header(header, where)
    thresholds = {_scorer_name(name): float(value) for name, value in (pass_thresholds or {}).items()}
    spec: Mapping[str, Any] = header["eval"]
    task = _text(spec.get("task"), where, "eval.task")
    if len(task) > MAX_ID_CHARS or not task.isprintable():
        raise InputError(f"{where}: eval.task ({len(task):,} characters) is longer than the {MAX_ID_CHARS:,} "
                         "evalkit reads or holds a control character; it names every test")
    if not isinstance(samples, list) or not samples:
        raise InputError(f"{where}: the log holds no samples, so there is nothing to gate")
    config: Mapping[str, Any] = spec["config"] if isinstance(spec.get("config"), dict) else {}
    scorer_names = _scorer_names(spec, header)

    # (sample id) -> epoch -> {test suffix: (passed, message) | None when errored}
    by_sample: dict[str, dict[int, dict[str, tuple[bool, str | None]] | str]] = {}
    inputs: dict[str, Any] = {}
    for index, sample in enumerate(samples):
        at = f"{where}: samples[{index}]"
        sample = json_object(sample, f"{where}: samples[{index}]")
        sid = _sample_id(sample.get("id"), at)
        epoch = sample.get("epoch", 1)
        if type(epoch) is not int or epoch < 1:
            raise InputError(f"{at} (sample {sid!r}): epoch {epoch!r} is not a whole number from 1")
        epochs = by_sample.setdefault(sid, {})
        if epoch in epochs:
            raise InputError(f"{at}: duplicate sample id {sid!r} (epoch {epoch} appears twice); each sample may "
                             "appear once per epoch")
        inputs.setdefault(sid, [_text_of(sample.get("input")), _text_of(sample.get("target"))])
        error = sample.get("error")
        scores = sample.get("scores")
        if error:
            epochs[epoch] = _line(error.get("message") if isinstance(error, dict) else error) or "errored"
        elif not scores and not scorer_names:
            raise InputError(f"{at}: sample {sid!r} has no scores because the task has no scorer (eval.scorers and "
                             "results.scores are empty); evalkit gates scores: add a scorer to the task")
        elif not scores:
            raise InputError(f"{at}: sample {sid!r} (epoch {epoch}) has no scores and no error; every sample of a "
                             "finished run is scored or errored: was the log edited, or scored with --no-score?")
        else:
            epochs[epoch] = _scores(json_object(scores, f"{where}: sample {sid!r} scores"), sid, at, thresholds)

    counts = {len(epochs) for epochs in by_sample.values()}
    if len(counts) > 1:
        few = min(by_sample, key=lambda s: len(by_sample[s]))
        many = max(by_sample, key=lambda s: len(by_sample[s]))
        raise InputError(f"{where}: a mix of epochs: sample {many!r} has {len(by_sample[many])} epoch(s), sample "
                         f"{few!r} {len(by_sample[few])}; gate a log in which every sample ran every epoch")
    (epoch_count,) = counts
    for sid, epochs in by_sample.items():
        if sorted(epochs) != list(range(1, epoch_count + 1)):
            raise InputError(f"{where}: sample {sid!r} has epochs {sorted(epochs)}, not 1 to {epoch_count}: a mix "
                             "of epochs; gate a log in which every sample ran every epoch")

    tests, errored = _tests(task, by_sample, scorer_names, where)
    scored = {test.nodeid.split("::", 1)[1].rsplit("[", 1)[0] for test in tests}
    unknown = sorted(set(thresholds) - scored)
    if unknown:
        raise InputError(f"{where}: a pass threshold names {unknown[0]!r}, which scored nothing in this log; its "
                         f"scores are {', '.join(sorted(scored))}")
    key = SourceKey(
        task=task,
        dataset=_dataset_label(spec.get("dataset"), task),
        dataset_sha=fingerprint_inputs(inputs.items()),
        dataset_sha_from="sample inputs",
        scorer=_scorer_text(spec, header),
        model=_text(spec.get("model"), where, "eval.model"),
        prompt=canonical_json({"plan": header.get("plan"), "solver": spec.get("solver"),
                               "solver_args": spec.get("solver_args")}),
        prompt_version=_plan_name(header.get("plan")),
        judge=_judge(spec),
        # a threshold decides what passes: runs read with different ones measure different things
        contract={"task_version": str(spec.get("task_version", 0)),
                  **{f"pass_threshold.{name}": repr(value) for name, value in sorted(thresholds.items())}},
        components={name: _short_json(value) for name, value in (
            ("generate_config", spec.get("model_generate_config")), ("task_args", spec.get("task_args")))
            if value},
    )
    packages: Mapping[str, Any] = spec["packages"] if isinstance(spec.get("packages"), dict) else {}
    version = packages.get("inspect_ai", "unknown version")
    notes = ["Inspect's own epoch reducer and metrics are not what is gated: each epoch is one sample of the test "
             "(repeats), and the metrics are shown for reference"] if epoch_count > 1 else []
    results = header.get("results")
    declared = results.get("total_samples") if isinstance(results, dict) else None
    if type(declared) is int and declared != len(samples):  # samples x epochs, as Inspect counts them
        notes.append(f"the log's results declare total_samples={declared} but it holds {len(samples)} sample "
                     "results (samples x epochs); the samples it holds are what is gated")
    return NeutralRun(
        source="inspect",
        tool=f"inspect_ai {version}",
        key=key,
        tests=tuple(tests),
        metrics=_metrics(header.get("results")),
        errored=tuple(errored),
        notes=tuple(notes),
        provenance={"source_sha256": source_sha256, "format_version": header["version"],
                    "run_id": spec.get("run_id"), "eval_id": spec.get("eval_id"), "created": spec.get("created"),
                    "epochs": epoch_count, "epochs_reducer": config.get("epochs_reducer")},
    )


def _tests(task: str, by_sample: Mapping[str, Mapping[int, Any]], scorer_names: list[str],
           where: str) -> tuple[list[AdaptedTest], list[str]]:
    """One test per sample x score, epochs folded into repeats; errored samples are `error` tests of each scorer."""
    tests: list[AdaptedTest] = []
    errored: list[str] = []
    for sid, epochs in by_sample.items():
        names: list[str] = []
        for result in epochs.values():  # the score names the sample's scored epochs give, in first-seen order
            if isinstance(result, dict):
                names += [name for name in result if name not in names]
        if not names:
            names = scorer_names
        runs = len(epochs)
        if any(isinstance(result, str) for result in epochs.values()):
            errored.append(sid)
        for name in names:
            passed = 0
            message: str | None = None
            any_error = False
            for epoch, result in sorted(epochs.items()):
                if isinstance(result, str):
                    any_error = True
                    message = message or (f"epoch {epoch} errored: {result}" if runs > 1 else result)
                    continue
                if name not in result:
                    raise InputError(f"{where}: sample {sid!r} (epoch {epoch}) has no score from {name!r}, which "
                                     "scored its other epochs; every epoch is scored by the same scorers")
                ok, why = result[name]
                passed += ok
                if not ok and message is None:
                    message = why if runs == 1 else f"epoch {epoch}: {why}"
            outcome = "passed" if passed == runs else ("error" if any_error else "failed")
            tests.append(AdaptedTest(f"{task}::{name}[{sid}]", outcome, sid,  # type: ignore[arg-type]
                                     repeats=(passed, runs) if runs > 1 else None,
                                     message=None if outcome == "passed" else message))
    return tests, errored


def _scores(scores: Mapping[str, Any], sid: str, where: str,
            thresholds: Mapping[str, float]) -> dict[str, tuple[bool, str | None]]:
    """Each score (a dict value: each of its keys) -> (full credit?, why not, in one line)."""
    out: dict[str, tuple[bool, str | None]] = {}
    for name, score in scores.items():
        score = json_object(score, f"{where}: sample {sid!r} score {name!r}")
        value = score.get("value")
        if isinstance(value, dict):
            for part, item in value.items():
                out[f"{name}.{part}"] = _judge_value(item, score, f"{where}: sample {sid!r} score {name}.{part}",
                                                     thresholds.get(f"{_scorer_name(name)}.{part}", 1.0))
        else:
            out[name] = _judge_value(value, score, f"{where}: sample {sid!r} score {name!r}",
                                     thresholds.get(_scorer_name(name), 1.0))
    return out


def _judge_value(value: Any, score: Mapping[str, Any], where: str, threshold: float = 1.0) -> tuple[bool, str | None]:
    """Inspect's value_to_float, read as pass/fail: full credit passes; partial credit does not."""
    if isinstance(value, bool):
        full = value
    elif isinstance(value, int | float):
        full = value >= threshold
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in _PASSING_TEXT:
            full = True
        elif text in _FAILING_TEXT:
            full = False
        else:
            try:
                full = float(text) >= threshold
            except ValueError:
                raise InputError(f"{where}: value {value[:40]!r} is none of C, I, P, N, yes/no, true/false or a "
                                 "number, so it cannot be read as full credit or not") from None
    elif value is None:
        full = False  # NaN in the log (read as null): no credit
    else:
        raise InputError(f"{where}: value is a {type(value).__name__}; a list of values has no pass or fail "
                         "(return a dict of named values, one test each)")
    if full:
        return True, None
    answer = score.get("answer")
    shown = f" (answer {_line(answer)[:80]!r})" if isinstance(answer, str) and answer else ""
    return False, f"scored {json.dumps(value)}{shown}"


def _sample_id(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or (isinstance(value, str) and not value):
        raise InputError(f"{where}: sample id {value!r} is not a non-empty string or a whole number")
    sid = str(value)
    if len(sid) > MAX_ID_CHARS:
        raise InputError(f"{where}: sample id of {len(sid):,} characters is longer than the {MAX_ID_CHARS:,} "
                         "evalkit reads; it becomes part of a test id")
    if not sid.isprintable():
        raise InputError(f"{where}: sample id {sid[:40]!r} holds a line break or control character; it becomes "
                         "part of a test id")
    return sid


def _scorer_names(spec: Mapping[str, Any], header: Mapping[str, Any]) -> list[str]:
    scorers = spec.get("scorers")
    if isinstance(scorers, list) and scorers:
        return [_scorer_name(s.get("name")) for s in scorers if isinstance(s, dict)]
    results = header.get("results")
    scores = results.get("scores") if isinstance(results, dict) else None
    return [_scorer_name(s.get("name")) for s in scores if isinstance(s, dict)] if isinstance(scores, list) else []


def _scorer_name(name: Any) -> str:
    """A scorer's name without the `()` some inspect_ai versions append (`match()` and `match` are one scorer)."""
    return str(name).removesuffix("()")


def _scorer_text(spec: Mapping[str, Any], header: Mapping[str, Any]) -> str:
    """The scorers with their options (a judge model among them), and the grader role, as one text."""
    scorers = spec.get("scorers")
    if isinstance(scorers, list) and scorers:
        # a scorer without options is written `match` by the older inspect_ai that records only
        # results.scores and `match()` by the newer that records eval.scorers: one scorer, one name
        parts = [_scorer_name(s.get("name")) + (f"({_short_json(s['options'], 400)[1:-1]})" if s.get("options")
                                                 else "")
                 for s in scorers if isinstance(s, dict)]
    else:
        parts = _scorer_names(spec, header)
    if not parts:
        parts = ["unrecorded"]
    judge = _judge(spec)
    return ", ".join(parts) + (f" judged by {judge}" if judge and judge not in ", ".join(parts) else "")


def _judge(spec: Mapping[str, Any]) -> str | None:
    roles = spec.get("model_roles")
    grader = roles.get("grader") if isinstance(roles, dict) else None
    if isinstance(grader, dict) and isinstance(grader.get("model"), str):
        return str(grader["model"])
    for scorer in spec.get("scorers") or []:
        options = scorer.get("options") if isinstance(scorer, dict) else None
        if isinstance(options, dict) and isinstance(options.get("model"), str):
            return str(options["model"])
    return None


def _plan_name(plan: Any) -> str | None:
    steps = plan.get("steps") if isinstance(plan, dict) else None
    if not isinstance(steps, list) or not steps:
        return None
    name = "+".join(str(step.get("solver")) for step in steps if isinstance(step, dict))
    return name if len(name) <= 100 else name[:97] + "..."


def _dataset_label(dataset: Any, task: str) -> str:
    if isinstance(dataset, dict):
        for field in ("name", "location"):
            if isinstance(dataset.get(field), str) and dataset[field]:
                return str(dataset[field])
    return f"sample inputs of {task}"


def _metrics(results: Any) -> dict[str, float | None]:
    """Inspect's own metrics per scorer (`match.accuracy`), spread measures (stderr, std) left out."""
    out: dict[str, float | None] = {}
    scores = results.get("scores") if isinstance(results, dict) else None
    for score in scores if isinstance(scores, list) else []:
        metrics = score.get("metrics") if isinstance(score, dict) else None
        for name, metric in (metrics or {}).items():
            value = metric.get("value") if isinstance(metric, dict) else None
            if name in _SPREAD:
                continue
            number = isinstance(value, int | float) and not isinstance(value, bool)
            out[f"{score.get('name')}.{name}"] = float(value) if number and value is not None else None
    return out


def _text_of(value: Any) -> Any:
    """A sample's input or target as text, cut where Inspect's summaries cut it, so that a `.json` log (full
    samples) and a `.eval` log (summaries) of one dataset give one fingerprint."""
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, list):
        return [_text_of(item) for item in value]
    if isinstance(value, dict):  # a chat message: its role and its text
        content = value.get("content")
        if isinstance(content, list):
            content = "".join(str(part.get("text", "")) for part in content
                              if isinstance(part, dict) and part.get("type") == "text")
        return [value.get("role"), _cut(content) if isinstance(content, str) else None]
    return value


def _cut(text: str) -> str:
    return text.removesuffix(_CUT_MARK)[:_TEXT_CUT]


def _short_json(value: Any, limit: int = 200) -> str:
    text = canonical_json(value)
    return text if len(text) <= limit else f"sha:{fingerprint(value)[:12]}"


def _text(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: {field} is missing or not text")
    return value




def _line(text: Any) -> str:
    return first_line(str(text), 200) or ""


SOURCE = Source(
    read_thresholded=read_inspect_log,
    name="inspect",
    summary="gate two Inspect eval logs (.eval or .json)",
    description="Each sample x scorer becomes a test <task>::<scorer>[<sample id>]; epochs become repeats; "
                "errored samples are errored tests; runs with another dataset (fingerprinted from the sample "
                "inputs), scorer or task version are incomparable.",
    read=read_inspect_log,
)
