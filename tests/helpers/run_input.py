"""A checks' process input written by hand for tests that run a suite's checks directly (evalkit.run.checking's
run_checks): authored, as its provenance says, with every case's task call replayed as the text "x"."""

from __future__ import annotations

from typing import Any


def authored_run_input(cases: int) -> dict[str, Any]:
    """The run input of `cases` cases c0, c1 ... (field n = the case's number), each call replayed as "x"."""
    return {
        "key": {"suite": "s", "dataset": "d@1", "dataset_sha": "aaa", "model": "m", "prompt_version": "v1",
                "prompt_sha": "p", "judge_model": None, "components": {}},
        "provenance": {"recording_provenance": "authored"},
        "cases": [{"id": f"c{n}", "fields": {"n": n}} for n in range(cases)],
        "calls": {f"task/c{n}": {"status": "replayed", "text": "x", "reason": None, "stop_reason": "stop"}
                  for n in range(cases)},
    }
