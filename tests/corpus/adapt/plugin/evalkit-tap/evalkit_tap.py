"""Test Anything Protocol output (`ok 1 - name`, `not ok 2 - name # SKIP why`) read as an evalkit neutral run."""

from __future__ import annotations

import re
from pathlib import Path

from evalkit.adapt.framework import Source
from evalkit.adapt.neutral import AdaptedTest, NeutralRun, SourceKey
from evalkit.core.errors import InputError
from evalkit.core.files import read_text_sha256

_LINE = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(SKIP|TODO)\b(.*))?$", re.IGNORECASE)


def read_tap(path: Path) -> NeutralRun:
    """Each test line is a test `tap::<description>`; a `# SKIP` or `# TODO` directive makes it skipped."""
    text, digest = read_text_sha256(path, "TAP output")
    tests = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LINE.match(line.strip())
        if match is None:
            continue  # plans, diagnostics and YAML blocks carry no outcome
        status, _, description, directive, why = match.groups()
        if not description:
            raise InputError(f"{path}: line {number}: a test without a description cannot be paired")
        passed = status.lower() == "ok"
        outcome = "skipped" if directive else "passed" if passed else "failed"
        nodeid = f"tap::{description}"
        tests.append(AdaptedTest(nodeid, outcome, nodeid, message=None if passed else (why or "").strip() or None))
    return NeutralRun(
        source="tap", tool="TAP", tests=tuple(tests),
        key=SourceKey(task="tap", dataset="none (TAP records no dataset)", dataset_sha="unrecorded",
                      dataset_sha_from="unrecorded", scorer="test outcomes (TAP)"),
        provenance={"source_sha256": digest})


SOURCE = Source(name="tap", summary="gate two Test Anything Protocol outputs", read=read_tap)
