"""Calibration examples of the quality lab: AUTHORED counterexamples with reference verdicts.

Each example pairs a dev-split case with a response and the files a candidate could have left, and says
whether a correct grader should pass it. The reference verdicts come from mechanically checkable facts (the
file on disk, the cited document), not from a human rating study, so a perfect score here shows only that
these constructed traps are caught: it is no population false-positive rate.

`python -m evalkit.calibrate suite=quality_lab` runs every grader in GRADERS on every example.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import graders

from evalkit import load_manifest_dataset

GRADERS = {"naive": graders.naive_grade, "contract": graders.grade}
"""name -> grader(case, reference, response, artifacts) returning a bool or an evalkit.Grade."""

_MANIFEST = Path(__file__).parent / "data" / "manifest.json"


def examples() -> list[dict[str, Any]]:
    dev = load_manifest_dataset(_MANIFEST, "dev")
    file_case = next(c for c in dev.cases if c.fields["kind"] == "file")
    answer_case = next(c for c in dev.cases if c.fields["kind"] == "answer")
    file_ref, answer_ref = dev.references[file_case.id], dev.references[answer_case.id]
    file_fields = {"id": file_case.id, **file_case.fields}
    answer_fields = {"id": answer_case.id, **answer_case.fields}
    written = {"service.cfg": file_ref["expected_file"], "policy.lock": file_ref["protected"]}
    untouched = dict(file_fields["files"])
    supported = {"message": f"The window is {answer_ref['days']} days.", "days": answer_ref["days"],
                 "citations": list(answer_ref["supporting_ids"])}

    def example(name: str, fields: dict[str, Any], reference: dict[str, Any], response: dict[str, Any],
                artifacts: dict[str, str | None], should_pass: bool, why: str) -> dict[str, Any]:
        return {"id": name, "case": fields, "reference": reference, "response": response, "artifacts": artifacts,
                "reference_pass": should_pass, "why": why}

    return [
        example("file-written", file_fields, file_ref, {"message": "done"}, written, True,
                "the file holds the requested value and the protected file is intact"),
        example("claims-done-file-unchanged", file_fields, file_ref, {"message": "done"}, untouched, False,
                "the message claims success; the file on disk is unchanged"),
        example("correct-value-wrong-citation", answer_fields, answer_ref, {**supported, "citations": ["wrong-doc"]},
                {}, False, "the number is right but the cited document does not support it"),
        example("empty-answer", answer_fields, answer_ref, {**supported, "message": ""}, {}, False,
                "the structured answer is right; the message shown to the user is empty"),
        example("supported-answer", answer_fields, answer_ref, supported, {}, True,
                "right number, supporting citation, message states it"),
        example("explicit-failure", file_fields, file_ref, {"message": "failed"}, untouched, False,
                "the candidate reports failure and changed nothing"),
    ]
