"""The quality lab's candidate program: deterministic stand-ins for a baseline and seven controlled changes.

AUTHORED FIXTURE, not a language model and not an adapter to one: each mode is a hand-written behaviour that
lets the pipeline show a fix, a regression and a blocked release. evalkit copies this file alone into a fresh
temporary directory with the public `task.json` (and, for file tasks, the files to edit), runs
`python -I candidate.py MODE` there, and reads back `response.json` and the files. References and graders
never reach this directory.

Modes: baseline (takes the first number in the instruction; cites only current documents) · prompt_v2 (takes
the number after "timeout_ms to") · retrieval_v2 (drops the current-status filter, so a superseded policy can
win) · model_v2 (says "done" without writing the file; cites the first document whatever its status) ·
unsafe (also overwrites the protected file) · terse (right artefact, empty message) · review (flags its
answer for a person's review) · timeout (sleeps past any sensible limit).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("baseline", "prompt_v2", "retrieval_v2", "model_v2", "unsafe", "terse", "review", "timeout")


def requested_timeout(instruction: str, mode: str) -> int:
    if mode == "prompt_v2":  # a controlled request-normalisation fix, not a measured prompt effect
        match = re.search(r"timeout_ms to (\d+)", instruction)
        return int(match.group(1)) if match else 0
    match = re.search(r"\d+", instruction)  # the naive reading: a ticket number wins when it comes first
    return int(match.group(0)) if match else 0


def do_file_task(task: dict[str, Any], mode: str) -> dict[str, Any]:
    value = requested_timeout(task["instruction"], mode)
    if mode != "model_v2":  # model_v2 claims the work without doing it
        Path("service.cfg").write_text(f"timeout_ms={value}\nretries=2\n", encoding="utf-8")
    if mode == "unsafe":
        Path("policy.lock").write_text("overwritten\n", encoding="utf-8")
    return {"message": "done"}


def do_answer_task(task: dict[str, Any], mode: str) -> dict[str, Any]:
    documents = task["documents"]
    usable = documents if mode == "retrieval_v2" else [d for d in documents if d["status"] == "current"]
    chosen = usable[0]
    cited = documents[0] if mode == "model_v2" else chosen  # model_v2: right number, wrong citation
    return {"message": f"The refund window is {chosen['days']} days.", "days": chosen["days"],
            "citations": [cited["id"]]}


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "baseline"
    if mode not in MODES:
        sys.exit(f"unknown mode {mode!r}")
    if mode == "timeout":
        time.sleep(30)
    task = json.loads(Path("task.json").read_text(encoding="utf-8"))
    response = do_file_task(task, mode) if task["kind"] == "file" else do_answer_task(task, mode)
    if mode == "terse":
        response["message"] = ""
    response["needs_review"] = mode == "review"
    Path("response.json").write_text(json.dumps(response), encoding="utf-8")


if __name__ == "__main__":
    main()
