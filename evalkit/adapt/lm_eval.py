"""The lm-eval source: lm-evaluation-harness `--output_path ... --log_samples` output read into a neutral run.

`lm_eval run ... --output_path OUT --log_samples` writes `OUT/<model>/results_<time>.json` (aggregates, the task
configs, versions, n-shot, seeds, `task_hashes`) and one `samples_<task>_<time>.jsonl` per task: a line per
document and filter, with `doc_id`, `doc_hash`, `target_hash`, `prompt_hash`, the metric names and each metric's
value for that document. Here each document x per-document pass/fail metric (acc, acc_norm, exact_match, ...: a
0/1 value) is an evalkit test `<task>::<metric>[<doc_id>]` (`<metric>,<filter>` under a filter other than
`none`); metrics that are not 0/1 per document (bleu, perplexity, f1) are run-level metrics only, said in the
notes. The eval key: the dataset is each task's dataset path, name and split, its fingerprint lm-eval's own
`doc_hash` and `target_hash` of every document; the scorer is each task's version, output type, metric list,
filters and answer format; few-shot count and `--limit` are the contract; the model is `--model` with its
arguments; the prompt is each task's template, description, delimiters, system instruction and chat template;
the seeds and generation arguments are shown as changed. lm-eval 0.4.0 to 0.4.8 record no `lm_eval_version`:
their results are recognised by the fields every 0.4 writes (configs, versions, n-shot); results
of the v0 harness (`results` and `versions` only), or of a recorded version before 0.4, are refused, naming it.
Older 0.4 releases logged samples differently, and each is read as it was written: 0.4.0 to 0.4.2 wrote
`results.json` (or the file `--output_path` named) with one `<model_args>_<task>.jsonl` per task beside it (the
model arguments' `/` and `=` written `__`), a JSON array of samples; 0.4.0 to 0.4.6 logged no `metrics` and no
`filter` in a sample, so a sample's metrics are those of the task's config (`metric_list`) and results it holds,
and a task run under several filters logs each document once per filter, in the order of its `filter_list`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey
from evalkit.core.errors import InputError
from evalkit.core.files import read_text_sha256
from evalkit.core.fingerprint import canonical_json, fingerprint
from evalkit.core.parsing import parse_json

__all__ = ["PASS_FAIL_METRICS", "SOURCE", "read_lm_eval"]

PASS_FAIL_METRICS = frozenset({"acc", "acc_norm", "acc_mutual_info", "exact_match", "em", "exact", "pass@1"})
"""lm-eval metrics whose per-document value is a pass (1) or a fail (0); the others are aggregates only."""

_OLDEST = (0, 4)
_PROMPT_FIELDS = ("doc_to_text", "description", "target_delimiter", "fewshot_delimiter", "fewshot_config",
                  "process_docs", "use_prompt")
_SCORER_FIELDS = ("output_type", "metric_list", "filter_list", "doc_to_target", "doc_to_choice", "process_results")
_DATASET_FIELDS = ("dataset_path", "dataset_name", "test_split", "validation_split")


def read_lm_eval(path: Path) -> NeutralRun:
    """Read a `results_<time>.json` (or the folder holding one) and its `samples_<task>_<time>.jsonl` files (or
    lm-eval 0.4.0-0.4.2's `results.json` and `<model_args>_<task>.jsonl`)."""
    results_path = _results_file(path)
    text, digest = read_text_sha256(results_path, "lm-eval results")
    where = str(results_path)
    data = parse_json(text, where, "lm-eval results")
    if not isinstance(data, dict):
        raise InputError(f"{where}: not an lm-eval results object")
    version = _version(data, where)
    configs = data.get("configs")
    if not isinstance(configs, dict) or not configs:
        raise InputError(f"{where}: no task configs (configs); is this lm-eval's results_<time>.json?")
    stamp = results_path.name.removeprefix("results_").removesuffix(".json")
    several = len(configs) > 1
    tests: list[AdaptedTest] = []
    hashes: list[list[Any]] = []
    other_metrics: set[str] = set()
    sample_digests: dict[str, str] = {}
    for task in sorted(configs):
        config = configs[task]
        if not isinstance(config, dict):
            raise InputError(f"{where}: configs[{task!r}] is not an object")
        rows, sample_digests[task] = _samples(_samples_path(results_path, task, data), task)
        better = _mapping(_mapping(data, "higher_is_better"), task)
        logged = _Logged(_metric_names(config, data, task), _filter_names(config, data, task))
        found, seen_hashes, others = _task_tests(rows, task, logged, better, several, str(results_path.parent))
        _check_count(data, task, {row[0] for row in seen_hashes}, where)
        tests.extend(found)
        hashes.extend([task, *row] for row in seen_hashes)
        other_metrics |= {f"{task}/{name}" for name in others}
    if not tests:
        raise InputError(f"{where}: no per-document pass/fail metric ({', '.join(sorted(PASS_FAIL_METRICS))}) in "
                         "any task's samples, so there is nothing to gate per document")
    run_config = _mapping(data, "config")
    notes = []
    if other_metrics:
        notes.append(f"metrics without a per-document pass or fail ({', '.join(sorted(other_metrics))}) are "
                     "reported as run metrics, not gated per document")
    if run_config.get("limit") is not None:
        notes.append(f"the run was limited to {run_config['limit']} documents per task (--limit)")
    key = SourceKey(
        task=",".join(sorted(configs)),
        dataset=", ".join(f"{task}: " + "/".join(str(configs[task].get(f)) for f in _DATASET_FIELDS
                                                  if configs[task].get(f) is not None) for task in sorted(configs)),
        dataset_sha=fingerprint(sorted(hashes)), dataset_sha_from="source",
        scorer="; ".join(_scorer(task, configs[task], data, where) for task in sorted(configs)),
        model=f"{run_config.get('model')} {canonical_json(run_config.get('model_args') or {})}",
        prompt=canonical_json({"tasks": {task: {f: configs[task].get(f) for f in _PROMPT_FIELDS}
                                         for task in sorted(configs)},
                               **{f: data.get(f) for f in ("system_instruction", "chat_template_sha",
                                                           "fewshot_as_multiturn")}}),
        contract={"num_fewshot": canonical_json(data.get("n-shot")), "limit": str(run_config.get("limit"))},
        components={"seeds": canonical_json({f: run_config.get(f) for f in ("random_seed", "numpy_seed",
                                                                          "torch_seed", "fewshot_seed")}),
                    "gen_kwargs": canonical_json(run_config.get("gen_kwargs"))})
    return NeutralRun(
        source="lm-eval", tool=f"lm-eval {version}", key=key, tests=tuple(tests),
        metrics=_aggregates(data), notes=tuple(notes),
        provenance={"file_sha256": digest, "format_version": f"lm-eval {version} results",
                    "samples_sha256": sample_digests, "task_hashes": data.get("task_hashes"),
                    "run_id": stamp})


def _mapping(data: Mapping[str, Any], field: str) -> dict[str, Any]:
    """`data[field]` when it is an object, else empty (lm-eval leaves out what a run did not use)."""
    value = data.get(field)
    return value if isinstance(value, dict) else {}


def _results_file(path: Path) -> Path:
    """The results file: `path` itself, or the one `results_*.json` (0.4.0-0.4.2: `results.json`) in the folder or
    its model subfolder."""
    if not path.is_dir():
        # a samples file names its run's time: the results file of that time beside it is the run
        stamped = re.fullmatch(r"samples_.+_(\d{4}-\d\d-\d\dT[\d.-]+)\.jsonl", path.name)
        if stamped is None:
            return path
        results = path.parent / f"results_{stamped[1]}.json"
        if not results.is_file():
            raise InputError(f"{path}: a samples file of lm-eval, and no {results.name} beside it; name the "
                             "results_<time>.json lm_eval wrote with --output_path")
        return results
    found = sorted({*path.glob("results_*.json"), *path.glob("*/results_*.json"), *path.glob("results.json")})
    if len(found) != 1:
        what = "no results_*.json" if not found else f"{len(found)} results files ({found[0].name}, ...)"
        raise InputError(f"{path}: {what} in the folder or its model subfolder; name the results_<time>.json "
                         "lm_eval wrote with --output_path")
    return found[0]


# what lm-eval 0.4.0 and later write beside `results`, before `lm_eval_version` was recorded (0.4.9, June 2025);
# the v0 harness wrote `results` and `versions` only
_V04_FIELDS = ("configs", "versions", "n-shot")


def _version(data: Mapping[str, Any], where: str) -> str:
    version = data.get("lm_eval_version")
    if version is None and isinstance(data.get("configs"), dict) and all(f in data for f in _V04_FIELDS):
        return "0.4 (before 0.4.9, which records its version)"
    match = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    if match is None:
        raise InputError(f"{where}: results of lm-eval before 0.4 (no configs, n-shot or n-samples beside the "
                         "results): evalkit reads the per-document samples lm-eval 0.4 and later log: rerun with "
                         "a current lm-eval and --log_samples")
    if (int(match[1]), int(match[2])) < _OLDEST:
        raise InputError(f"{where}: lm_eval_version {version} is older than 0.4, whose results format evalkit "
                         "reads: rerun with a current lm-eval")
    return str(version)


_STAMPED = re.compile(r"results_(.+)\.json")


def _samples_path(results_path: Path, task: str, data: Mapping[str, Any]) -> Path:
    """Where lm-eval logged the task's samples: `samples_<task>_<time>.jsonl` beside `results_<time>.json` (0.4.3 and
    later), else `<model_args>_<task>.jsonl` beside the results file (0.4.0-0.4.2, `/` and `=` written `__`)."""
    stamped = _STAMPED.fullmatch(results_path.name)
    current = results_path.parent / f"samples_{task}_{stamped[1]}.jsonl" if stamped else None
    model_args = _mapping(data, "config").get("model_args")
    early = (results_path.parent / f"{re.sub('/|=', '__', model_args)}_{task}.jsonl"
             if isinstance(model_args, str) else None)
    if current is not None and (current.exists() or early is None or not early.exists()):
        return current
    return early or results_path.parent / f"samples_{task}.jsonl"


def _samples(path: Path, task: str) -> tuple[list[dict[str, Any]], str]:
    """The task's logged samples, one object per line (0.4.0-0.4.2: one JSON array), and the file's SHA-256."""
    if not path.exists():
        raise InputError(f"{path}: missing; the samples of task {task!r} are needed to gate per document: rerun "
                         f"lm_eval with --log_samples and keep the {path.name} it writes beside the results")
    text, digest = read_text_sha256(path, "lm-eval samples")
    if text.lstrip().startswith("["):  # lm-eval 0.4.0-0.4.2 dumped the samples as one indented JSON array
        listed = parse_json(text, str(path), "lm-eval samples")
        if not isinstance(listed, list) or not all(isinstance(row, dict) for row in listed):
            raise InputError(f"{path}: not a list of sample objects; is the samples file truncated?")
        if not listed:
            raise InputError(f"{path}: no samples; was the run cancelled before it logged any?")
        return listed, digest
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            row = parse_json(line, f"{path} line {number}", "lm-eval sample")
            if not isinstance(row, dict):
                raise InputError(f"{path} line {number}: not a sample object")
            rows.append(row)
    if not rows:
        raise InputError(f"{path}: no samples; was the run cancelled before it logged any?")
    return rows, digest


@dataclass(frozen=True)
class _Logged:
    """What a task's samples hold when they do not say it themselves (lm-eval before 0.4.7): its metric names, and
    its filters in the order each document was logged under them."""

    metrics: tuple[str, ...]
    filters: tuple[str, ...]


def _metric_names(config: Mapping[str, Any], data: Mapping[str, Any], task: str) -> tuple[str, ...]:
    """The task's metrics: its config's `metric_list`, then any other its results report (`acc,none` -> acc)."""
    listed = config.get("metric_list")
    names = [m.get("metric") for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
    names += [key.split(",", 1)[0] for key in _mapping(_mapping(data, "results"), task) if "," in key]
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str) and not n.endswith("_stderr")))


def _filter_names(config: Mapping[str, Any], data: Mapping[str, Any], task: str) -> tuple[str, ...]:
    """The task's filters in the order lm-eval applied them: its config's `filter_list`, else its results' keys."""
    listed = config.get("filter_list")
    names = [f.get("name") for f in listed if isinstance(f, dict)] if isinstance(listed, list) else []
    if not names:
        names = [key.split(",", 1)[1] for key in _mapping(_mapping(data, "results"), task)
                 if "," in key and not key.split(",", 1)[0].endswith("_stderr")]
    return tuple(dict.fromkeys(str(n) for n in names)) or ("none",)


def _task_tests(rows: list[dict[str, Any]], task: str, logged: _Logged, better: Mapping[str, Any],
                several: bool, where: str) -> tuple[list[AdaptedTest], set[tuple[int, str, str]], set[str]]:
    """The task's tests, its documents' (doc_id, doc_hash, target_hash), and its metrics not gated per document."""
    tests = []
    seen: set[tuple[int, str]] = set()
    times: dict[object, int] = {}  # how often each document was logged so far: its filter, before lm-eval 0.4.7
    hashes: set[tuple[int, str, str]] = set()
    others: set[str] = set()
    for row in rows:
        doc, kind, metrics = row.get("doc_id"), row.get("filter"), row.get("metrics")
        if "metrics" not in row and "filter" not in row:  # lm-eval 0.4.0-0.4.6: the config says what was logged
            metrics = [name for name in logged.metrics if name in row]
            times[doc] = times.get(doc, -1) + 1  # a copy beyond the last filter is a duplicate, refused below
            kind = logged.filters[min(times[doc], len(logged.filters) - 1)]
            if not metrics:
                raise InputError(f"{where}: task {task!r}, document {doc}: the sample holds none of the task's metrics "
                                 f"({', '.join(logged.metrics) or 'none listed'}): a sample without scores cannot be "
                                 "gated")
        kind = "none" if kind is None else kind
        if not isinstance(doc, int) or not isinstance(metrics, list) or not metrics:
            raise InputError(f"{where}: a sample of task {task!r} has no doc_id or no metrics list; is the samples "
                             "file truncated?")
        if (doc, str(kind)) in seen:
            raise InputError(f"{where}: task {task!r} logs document {doc} twice under filter {kind!r}; duplicate "
                             "samples (two runs' samples in one file?) cannot be paired")
        seen.add((doc, str(kind)))
        hashes.add((doc, *_document_hashes(row)))
        case = f"{task}/{doc}" if several else str(doc)
        for metric in metrics:
            if metric not in row:
                raise InputError(f"{where}: task {task!r}, document {doc}: metric {metric!r} has no value: a sample "
                                 "without scores cannot be gated")
            value = row[metric]
            if metric not in PASS_FAIL_METRICS or isinstance(value, bool) or value not in (0, 1):
                others.add(str(metric))
                continue
            ok = value == 1 if better.get(metric, True) else value == 0
            name = metric if kind == "none" else f"{metric},{kind}"
            tests.append(AdaptedTest(f"{task}::{name}[{doc}]", "passed" if ok else "failed", case,
                                     message=None if ok else f"{metric} {value} (target {row.get('target')})"))
    return tests, hashes, others


def _document_hashes(row: Mapping[str, Any]) -> tuple[str, str]:
    """A sample's `doc_hash` and `target_hash`; lm-eval before 0.4.3 logged none, so they are computed as lm-eval
    computes them (SHA-256 of the document as indented JSON, and of the target as text)."""
    doc_hash, target_hash = row.get("doc_hash"), row.get("target_hash")
    if doc_hash is None and "doc" in row:
        doc_hash = hashlib.sha256(json.dumps(row["doc"], indent=2, ensure_ascii=False).encode()).hexdigest()
    if target_hash is None and "target" in row:
        target_hash = hashlib.sha256(str(row["target"]).encode()).hexdigest()
    return str(doc_hash), str(target_hash)


def _check_count(data: Mapping[str, Any], task: str, docs: set[int], where: str) -> None:
    """Refuse samples that cover fewer or more documents than lm-eval says it evaluated (a cut or mixed file)."""
    counts = _mapping(data, "n-samples").get(task)
    effective = counts.get("effective") if isinstance(counts, dict) else None
    if isinstance(effective, int) and effective != len(docs):
        raise InputError(f"{where}: task {task!r} evaluated {effective} documents (n-samples) but its samples file "
                         f"logs {len(docs)}; a truncated or mixed samples file: rerun with --log_samples")


def _scorer(task: str, config: Mapping[str, Any], data: Mapping[str, Any], where: str) -> str:
    listed = config.get("metric_list") or []
    if not isinstance(listed, list):
        raise InputError(f"{where}: configs[{task!r}].metric_list is {type(listed).__name__} "
                         f"{str(listed)[:40]!r}, not a list of metrics; is the file edited?")
    metrics = [m.get("metric") for m in listed if isinstance(m, dict)]
    version = _mapping(data, "versions").get(task)
    settings = fingerprint(canonical_json({f: config.get(f) for f in _SCORER_FIELDS}))
    return f"{task} v{version}: {', '.join(map(str, metrics)) or 'default metrics'} ({settings})"


def _aggregates(data: Mapping[str, Any]) -> dict[str, float | None]:
    """lm-eval's per-task aggregates whose higher value is better (`acc,none`), as `<task>/<metric>,<filter>`."""
    found: dict[str, float | None] = {}
    results, better = _mapping(data, "results"), _mapping(data, "higher_is_better")
    for task, values in sorted(results.items()):
        if not isinstance(values, dict):
            continue
        for name, value in sorted(values.items()):
            metric = name.split(",", 1)[0]
            if ("," in name and not metric.endswith("_stderr") and _mapping(better, task).get(metric) is True
                    and isinstance(value, int | float) and not isinstance(value, bool)):
                found[f"{task}/{name}"] = float(value)
    return found


SOURCE = Source(
    name="lm-eval", summary="lm-evaluation-harness results with --log_samples (results_*.json or its folder)",
    read=read_lm_eval,
    description="Each document x pass/fail metric (acc, acc_norm, exact_match, ...) of each task becomes a test "
                "<task>::<metric>[<doc_id>]; other metrics are run-level only. Runs whose documents (lm-eval's "
                "doc_hash and target_hash), task versions, metrics, filters or few-shot counts differ are "
                "incomparable.")
