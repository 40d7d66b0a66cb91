"""Why a recording cannot serve a replay: the first field where what was recorded and what is asked differ, and
the refusal that names the command recording what is missing.

A replay the recording cannot serve (a call not recorded, recorded for another request, fewer samples than
`run.repeats` asks, no recording of this identity at all) measured nothing, so it is refused before any check runs:
exit 3, never case failures, a pass rate or a decision.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.core.errors import RecordingError

__all__ = ["ReplayRefusal", "differences", "first_difference", "record_missing_command"]

_SHOWN = 60  # characters of a differing value shown; a prompt's whole text would drown the line


class ReplayRefusal(RecordingError):
    """A replay the recording cannot serve. `reason` names the first mismatch; the message adds the command that
    records what is missing, spelt with the run's own overrides once the command line knows them (`for_command`)."""

    def __init__(self, reason: str, overrides: Sequence[str] = ()) -> None:
        self.reason = reason
        self.overrides = tuple(overrides)
        super().__init__(f"{reason}; nothing was scored: record what is missing with "
                         f"`{record_missing_command(overrides)}`")

    def for_command(self, overrides: Sequence[str]) -> ReplayRefusal:
        return ReplayRefusal(self.reason, overrides)


def record_missing_command(overrides: Sequence[str]) -> str:
    """The run's command with `mode=record-missing` in place of any mode it gave."""
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] != "mode"]
    return " ".join(["evalkit run", *(shlex.quote(o) for o in kept), "mode=record-missing"])


def differences(recorded: Any, asked: Any, path: str = "") -> list[str]:
    """Every leaf where two JSON values differ, in the recorded value's order, as
    `path: recorded X, asked Y` (`options.max_tokens: recorded 96, asked 17`); a side lacking it reads (absent)."""
    if isinstance(recorded, Mapping) and isinstance(asked, Mapping):
        out = []
        for name in [*recorded, *(n for n in asked if n not in recorded)]:
            inner = f"{path}.{name}" if path else str(name)
            if name not in asked or name not in recorded:
                out.append(_line(inner, recorded.get(name, _ABSENT), asked.get(name, _ABSENT)))
            else:
                out += differences(recorded[name], asked[name], inner)
        return out
    if isinstance(recorded, list | tuple) and isinstance(asked, list | tuple) and len(recorded) == len(asked):
        return [line for i, (a, b) in enumerate(zip(recorded, asked, strict=True))
                for line in differences(a, b, f"{path}[{i}]")]
    return [] if recorded == asked else [_line(path or "value", recorded, asked)]


def first_difference(recorded: Any, asked: Any) -> str | None:
    """The first of `differences`, with how many more there are; None when the values are equal."""
    found = differences(recorded, asked)
    if not found:
        return None
    return found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def _line(path: str, recorded: Any, asked: Any) -> str:
    return f"{path}: recorded {_shown(recorded)}, asked {_shown(asked)}"


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, _Absent) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."
