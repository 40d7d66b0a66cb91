"""The fuzz harness's child: reads one request per line on stdin (`{"reader": NAME, "path": FILE}`), runs that
reader on the file and answers one line on stdout: `{"outcome": "result"}`, `{"outcome": "refused", "line": ...}`
(an EvalkitError: what a command prints as one line and exit 3) or `{"outcome": "crash", "error": ...}`.

It runs under a memory limit set by the parent (tests/fuzz/test_readers.py), which also bounds each request's
time: a reader that hangs or balloons is caught there, not here."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _readers() -> dict[str, Callable[[Path], Any]]:
    from evalkit.adapt.deepeval import read_deepeval
    from evalkit.adapt.docs_stage import adapt_docs_stage, parse_docs_stage
    from evalkit.adapt.inspect import read_inspect_log
    from evalkit.adapt.junit import read_junit
    from evalkit.adapt.lm_eval import read_lm_eval
    from evalkit.adapt.promptfoo import read_promptfoo
    from evalkit.core.dataset import Case, load_dataset
    from evalkit.core.files import read_text
    from evalkit.core.loaders import load_cases
    from evalkit.core.policy import load_policy
    from evalkit.judging.rubric import load_rubric
    from evalkit.records.report_reader import read_reports
    from evalkit.run.declared import read_checks
    from evalkit.run.journal import read_journal
    from evalkit.run.manifest import load_manifest_dataset
    from evalkit.run.recording import load_recording

    def docs_stage(path: Path) -> Any:
        return adapt_docs_stage(parse_docs_stage(read_text(path, "docs stage"), str(path)), str(path))

    def rows(path: Path) -> Any:  # a file of rows, as `dataset.file` names one
        return load_cases(path, None, "fuzz", "1")

    def saved(path: Path) -> Any:  # one file of a saved `datasets` folder: the folder is the dataset
        return load_cases(path.parent, None, "fuzz", "1")

    # a checks.yaml is read against its run's cases, as the runner reads it: one case with the fields its seed names
    cases = [Case("c1", {"label": "bug", "total": 12.5, "kind": "chat"})]

    return {"report": lambda p: read_reports([p]), "policy": load_policy, "recording": load_recording,
            "journal": read_journal, "dataset": load_dataset, "manifest": lambda p: load_manifest_dataset(p, None),
            "inspect": read_inspect_log, "promptfoo": read_promptfoo, "deepeval": read_deepeval,
            "lm_eval": read_lm_eval, "junit": read_junit, "docs_stage": docs_stage,
            "checks": lambda p: read_checks(p.parent, cases), "rubric": load_rubric, "dataset_jsonl": rows,
            "dataset_csv": rows, "dataset_parquet": rows, "dataset_saved": saved, "dataset_state": saved}


def main() -> None:
    from evalkit.core.errors import EvalkitError, one_line

    readers = _readers()
    print(json.dumps({"outcome": "ready"}), flush=True)
    for request in sys.stdin:
        ask = json.loads(request)
        try:
            readers[ask["reader"]](Path(ask["path"]))
            answer = {"outcome": "result"}
        except EvalkitError as error:
            answer = {"outcome": "refused", "line": one_line(str(error))}
        except BaseException as error:  # noqa: BLE001  (every other end is what the harness looks for)
            answer = {"outcome": "crash", "error": f"{type(error).__name__}: {error}"[:2000],
                      "traceback": traceback.format_exc()[-4000:]}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
