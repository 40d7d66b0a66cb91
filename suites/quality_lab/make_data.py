"""Write the quality-lab dataset: public samples, private references and the manifest that pins them.

The 26 tasks are AUTHORED SYNTHETIC fixtures (no real users, projects or model outputs): per project one file
task (set `timeout_ms` in `service.cfg` without touching `policy.lock`) and one answer task (the current refund
window, with a superseded policy as a distractor). Projects never cross splits: train 3, dev 4, acceptance 6.
File instructions of even-numbered projects (7 of 13) start with an unrelated ticket number, the trap a naive
number extractor falls into.

Maintenance only: `python suites/quality_lab/make_data.py` rewrites data/. A change to the samples or the
references needs a new `version` (and a note in the suite's README), not only new hashes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
VERSION = "synthetic-quality-v1"
# (split, projects, first target value): values differ per split so a leak would show in the numbers
SPLITS = (("train", 3, 10), ("dev", 4, 30), ("acceptance", 6, 60))
INITIAL_CONFIG = "timeout_ms=5\nretries=2\n"
PROTECTED = "DO NOT MODIFY\n"
ORIGIN = "authored-synthetic-v1"


def canonical(value: Any) -> bytes:
    """Sorted keys, no spaces, one trailing newline: the hashed bytes do not depend on who wrote them."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def file_task(project: str, split: str, index: int, target: int) -> tuple[dict[str, Any], dict[str, Any]]:
    instruction = f"Set timeout_ms to {target}"
    if index % 2 == 0:
        instruction = f"Ticket 900{index}: {instruction}"
    sample = {"id": f"{project}-file", "group": project, "project": project, "split": split, "kind": "file",
              "origin": ORIGIN, "instruction": instruction,
              "files": {"service.cfg": INITIAL_CONFIG, "policy.lock": PROTECTED}}
    reference = {"expected_file": f"timeout_ms={target}\nretries=2\n", "protected": PROTECTED}
    return sample, reference


def answer_task(project: str, split: str, target: int) -> tuple[dict[str, Any], dict[str, Any]]:
    old, current = f"{project}-old", f"{project}-current"
    documents = [
        {"id": old, "status": "superseded", "days": 7,
         "text": f"An old policy for {project}: refund window is 7 days."},
        {"id": current, "status": "current", "days": target,
         "text": f"The current policy for {project}: refund window is {target} days."},
    ]
    sample = {"id": f"{project}-answer", "group": project, "project": project, "split": split, "kind": "answer",
              "origin": ORIGIN, "instruction": f"How many days is the current {project} refund window?",
              "documents": documents}
    return sample, {"days": target, "supporting_ids": [current]}


def build() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    samples: list[dict[str, Any]] = []
    references: dict[str, dict[str, Any]] = {}
    for split, projects, first in SPLITS:
        for index in range(projects):
            project, target = f"{split}-project-{index}", first + index
            for sample, reference in (file_task(project, split, index, target), answer_task(project, split, target)):
                samples.append(sample)
                references[sample["id"]] = reference
    return samples, references


def main() -> None:
    samples, references = build()
    DATA.mkdir(exist_ok=True)
    files = {"samples.json": canonical(samples), "answers.json": canonical(references)}
    for name, data in files.items():
        (DATA / name).write_bytes(data)
    manifest = {
        "version": VERSION,
        "synthetic": True,
        "purpose": "Test quality pipeline behavior, not model intelligence or vendor ranking",
        "splits": {split: {"samples": sum(s["split"] == split for s in samples),
                           "groups": len({s["group"] for s in samples if s["split"] == split})}
                   for split, _, _ in SPLITS},
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    (DATA / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(manifest["sha256"]))


if __name__ == "__main__":
    main()
