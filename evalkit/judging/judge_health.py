"""Whether a judge told the run's replies apart: one verdict for (nearly) every case, or reasons that echo the
reply. Pure.

A judge too small for its task (SmolLM2-135M grading faithfulness) answers in the right form and says nothing: it
gives level 1 to verbatim-correct replies, or repeats the reply as its "reason". Its verdicts still fail or pass
cases, and the gate decides on them as if they measured something. Nothing here can say that a judge is right;
what the report shows is whether its verdicts vary with the replies, so a run whose judge gave one verdict to at
least ONE_VERDICT of MIN_CASES or more cases, or whose reasons mostly repeat the reply, is warned about and
pointed to `evalkit calibrate`, which checks a judge against labelled cases.

Read from each case's `judge_replies` (the judge's answer per judge metric) and `output` (the reply it judged):
an answer that is a JSON object with `score` (the ready-made judges, 1 to 5) or `pass` (`llm-rubric`) gives the
verdict, and its `reason` the reason. Answers in other forms (a suite's own judge) are not read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["ECHO", "MIN_CASES", "ONE_VERDICT", "JudgeWarning", "answer_verdict", "judge_warnings"]

MIN_CASES: Final = 10
"""Fewer judged cases than this say too little about a judge to warn on."""
ONE_VERDICT: Final = 0.9
"""The share of cases one verdict must reach for the judge to be said not to tell replies apart."""
ECHO: Final = 0.8
"""A reason whose words are this share or more the reply's own repeats the reply instead of judging it."""
_ECHOED_CASES: Final = 0.5
"""The share of a judge's reasons that must echo the reply for the judge to be warned about."""
_FEWEST_WORDS: Final = 3  # "Correct." shares a word with many replies by chance; three words do not
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class JudgeWarning:
    """One judge metric whose verdicts do not vary with the replies, with the figures that show it."""

    metric: str
    """The judge metric (`judge_replies`' key, a check's name for the ready-made judges)."""
    kind: Literal["one_verdict", "echo"]
    cases: int
    """Cases whose judge answer gave a verdict (one_verdict) or a reason (echo)."""
    count: int
    """Cases with the most common verdict (one_verdict) or with a reason that echoes the reply (echo)."""
    verdict: str = ""
    """The most common verdict as the judge wrote it (`score 1`, `fail`); empty for echo."""

    def message(self) -> str:
        """The warning in one line, ending in what to do."""
        if self.kind == "one_verdict":
            said = (f"judge {self.metric}: {self.verdict} for {self.count} of {self.cases} cases, so its verdicts "
                    "barely vary with the replies")
        else:
            said = (f"judge {self.metric}: the reason repeats the reply it judged in {self.count} of {self.cases} "
                    "cases")
        return (f"{said}; a judge that does not tell replies apart measures nothing, and the gate decides on its "
                "verdicts: check it against labelled cases with `evalkit calibrate` before trusting them")

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "kind": self.kind, "cases": self.cases, "count": self.count,
                "verdict": self.verdict}


def judge_warnings(cases: Iterable[Mapping[str, Any]]) -> list[JudgeWarning]:
    """The warnings for a run's cases (a run report's `cases`), by judge metric in name order."""
    verdicts: dict[str, list[str]] = {}
    echoes: dict[str, list[bool]] = {}
    for case in cases:
        replies = case.get("judge_replies") if isinstance(case, Mapping) else None
        if not isinstance(replies, Mapping):
            continue
        output = case.get("output")
        for metric, answer in replies.items():
            verdict, reason = _read(answer)
            if verdict is not None:
                verdicts.setdefault(str(metric), []).append(verdict)
            if reason is not None and isinstance(output, str):
                echoes.setdefault(str(metric), []).append(_echoes(reason, output))
    found = []
    for metric in sorted(verdicts.keys() | echoes.keys()):
        given = verdicts.get(metric, [])
        if len(given) >= MIN_CASES:
            verdict, count = Counter(given).most_common(1)[0]
            if count >= ONE_VERDICT * len(given):
                found.append(JudgeWarning(metric, "one_verdict", len(given), count, verdict))
        reasons = echoes.get(metric, [])
        echoed = sum(reasons)
        if len(reasons) >= MIN_CASES and echoed >= _ECHOED_CASES * len(reasons):
            found.append(JudgeWarning(metric, "echo", len(reasons), echoed))
    return found


def answer_verdict(answer: Any) -> str | None:
    """The verdict a judge answer gives, as written (`score 3`, `pass`, `fail`); None for an answer without one."""
    return _read(answer)[0]


def _read(answer: Any) -> tuple[str | None, str | None]:
    """The verdict (`score 3`, `pass`, `fail`) and reason of a judge answer; None for what it does not give."""
    if not isinstance(answer, str):
        return None, None
    try:
        data = json.loads(answer)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    score, passed, reason = data.get("score"), data.get("pass"), data.get("reason")
    verdict = (f"score {score:g}" if isinstance(score, int | float) and not isinstance(score, bool)
               else ("pass" if passed else "fail") if isinstance(passed, bool) else None)
    return verdict, reason if isinstance(reason, str) else None


def _echoes(reason: str, reply: str) -> bool:
    """Whether the reason's words are (nearly all) the reply's: it repeats the reply rather than judging it."""
    said = _WORD.findall(reason.lower())
    if len(said) < _FEWEST_WORDS:
        return False
    words = set(_WORD.findall(reply.lower()))
    return sum(word in words for word in said) >= ECHO * len(said)
