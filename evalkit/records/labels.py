"""The labels file: a person's verdicts on the cases of one run report, made in the run explorer (`evalkit view`).

JSON Lines. The first line is the header: the format, the SHA-256 of the exact bytes of the report that was
reviewed, who reviewed it (self-asserted), and the evalkit that wrote the page. Every later line is one label:
a case id, a check id, the label (`pass` or `fail`, or a level of a check rated on levels, such as a rubric
criterion's 0 to 2), the reviewer's note and when it was given. `evalkit review --labels` records the file in a
reviewed copy of that report and `evalkit calibrate --labels` sets the judge's verdicts against it; both refuse a
file whose header names another report.

Why JSON Lines: a reviewer's export can be long, and a line per label keeps a diff of two exports readable. Why
one model (`LabelsFile`) for two kinds of line: the file is one record, header and labels together, and the
model is what reads and writes it, so the published JSON Schema is the file's.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

from evalkit.core.errors import InputError, describe_validation
from evalkit.core.parsing import parse_json

__all__ = ["LABELS_FORMAT", "Label", "LabelsFile", "LabelsHeader", "read_labels"]

LABELS_FORMAT: Final = "evalkit-labels/1"

MAX_LEVEL = 100
"""The highest level a label may give (rubrics rate 0 to 2, the ready judges 1 to 5)."""

MAX_LABEL_LINES = 1_000_000
"""More labels than this is not a person's review; the file is refused before it is read whole."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class LabelsHeader(_Record):
    """The first line: which report was reviewed, by whom, with which evalkit."""

    format: Literal["evalkit-labels/1"] = LABELS_FORMAT
    """The file's format and version."""
    report_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """SHA-256 (lower-case hex) of the exact bytes of the run report the labels are about: they apply to it only."""
    reviewer: Annotated[str, Field(min_length=1, max_length=200)]
    """Who labelled (self-asserted: evalkit does not authenticate it)."""
    tool: Literal["evalkit"] = "evalkit"
    """What wrote the file."""
    tool_version: Annotated[str, Field(min_length=1, max_length=100)]
    """The version of the evalkit whose `evalkit view` wrote the page the labels were made in."""
    report: str | None = None
    """Where the page read the report (as `evalkit view` showed it), for a reader; the SHA-256 is what binds."""

    @field_validator("reviewer")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank: name who labelled")
        return value


class Label(_Record):
    """One later line: a person's verdict on one check of one case."""

    case_id: Annotated[str, Field(min_length=1)]
    """The case's `id` in the report's `cases`."""
    check_id: Annotated[str, Field(min_length=1)]
    """The check: a test's name as the case's `checks` name it (`test_priority`, a checks.yaml check), or a
    metric rated on levels (`rubric.relevance`, `faithful.score`)."""
    label: Literal["pass", "fail"] | Annotated[StrictInt, Field(ge=0, le=MAX_LEVEL)]
    """`pass` or `fail`; for a check rated on levels, the level (an integer, as the judge rates)."""
    note: Annotated[str, Field(max_length=10_000)] = ""
    """The reviewer's note: why, in words a later reader can check against the reply."""
    time: AwareDatetime
    """When the label was given (ISO 8601 with its offset; the page writes UTC)."""

    @field_validator("label", mode="before")
    @classmethod
    def _pass_fail_or_level(cls, value: object) -> object:
        # one line for every wrong value, rather than one per member of the union
        if value in ("pass", "fail") or (type(value) is int and 0 <= value <= MAX_LEVEL):
            return value
        raise ValueError(f"label {value!r}: give pass or fail, or the level (an integer 0 to {MAX_LEVEL})")


class LabelsFile(_Record):
    """A labels file. On disk it is JSON Lines: `header` is the first line, and each of `labels` one line after it,
    in the order given."""

    header: LabelsHeader
    labels: tuple[Label, ...] = ()

    @field_validator("labels")
    @classmethod
    def _once_each(cls, labels: tuple[Label, ...]) -> tuple[Label, ...]:
        seen: set[tuple[str, str]] = set()
        for label in labels:
            pair = (label.case_id, label.check_id)
            if pair in seen:
                raise ValueError(f"case {label.case_id!r} check {label.check_id!r} is labelled twice; keep one")
            seen.add(pair)
        return labels

    def to_jsonl(self) -> str:
        """The file's text: the header line, then one line per label."""
        lines = [self.header.model_dump_json(), *(label.model_dump_json() for label in self.labels)]
        return "\n".join(lines) + "\n"


def read_labels(text: str, where: str) -> LabelsFile:
    """A labels file's text read and checked; every mistake is one InputError naming the file, the line and the
    field."""
    lines = text.splitlines()
    if len(lines) > MAX_LABEL_LINES + 1:
        raise InputError(f"{where}: {len(lines)} lines; a labels file holds at most {MAX_LABEL_LINES:,} labels")
    rows = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not rows:
        raise InputError(f"{where}: empty; export the labels from the run explorer (evalkit view)")
    number, first = rows[0]
    head = _line(first, where, number)
    if not isinstance(head, dict) or head.get("format") != LABELS_FORMAT:
        found = head.get("format") if isinstance(head, dict) else None
        raise InputError(f"{where}: line {number}: not an evalkit labels header (format {found!r}; expected "
                         f"{LABELS_FORMAT!r}); the first line names the report's SHA-256 and the reviewer")
    try:
        header = LabelsHeader.model_validate(head)
    except ValidationError as error:
        raise InputError(describe_validation(error, LabelsHeader, f"{where}: line {number} (header)")) from None
    labels = []
    for number, line in rows[1:]:
        try:
            labels.append(Label.model_validate(_line(line, where, number)))
        except ValidationError as error:
            raise InputError(describe_validation(error, Label, f"{where}: line {number}")) from None
    try:
        return LabelsFile(header=header, labels=tuple(labels))
    except ValidationError as error:
        raise InputError(f"{where}: {error.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def _line(line: str, where: str, number: int) -> object:
    return parse_json(line, f"{where}: line {number}", "labels line")  # strict and bounded; InputError if not
