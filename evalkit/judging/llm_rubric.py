"""`llm-rubric` checks: a criterion in plain words that the suite's pinned judge decides, pass or fail, for each
reply (what promptfoo's `llm-rubric` assertion does). The judge call is planned like a suite's own judge calls
(`judge/<check>/<case>`), so it is recorded, replayed and fingerprinted with them.

The judge sees the rubric, the case's fields and the reply, and answers `{"pass": true|false, "reason": "..."}`;
an answer that is not that fails the check with what came, never errors it.
"""

from __future__ import annotations

import json

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.untrusted import squeezed
from evalkit.records.call import Message, Request

__all__ = ["JUDGE_PROMPT", "VERDICT_SCHEMA", "rubric_request", "rubric_verdict"]

JUDGE_PROMPT = (
    "You grade one reply of an AI system against a rubric. Read the case the system was given, its reply and the "
    "rubric. Decide only whether the reply meets the rubric; do not grade anything the rubric does not ask for. "
    'Answer with JSON only: {"pass": true or false, "reason": "<one sentence naming what decided it>"}.'
)
"""The judge's system message (part of every judge request, so changing it changes the recording's identity)."""
VERDICT_SCHEMA = {"type": "object", "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
                  "required": ["pass", "reason"]}
SHOWN_CHARS = 160


def rubric_request(rubric: str, case: Case, reply: str, judge: ModelConfig) -> Request:
    """The judge call that decides `rubric` for one case's reply."""
    task = (f"Case {case.id}: {json.dumps(case.fields, ensure_ascii=False, sort_keys=True)}\n\n"
            f"Reply:\n{reply}\n\nRubric: {rubric}")
    return Request(model=judge.name, messages=(Message(role="system", content=JUDGE_PROMPT),
                                               Message(role="user", content=task)),
                   response_schema=VERDICT_SCHEMA, options=judge.options)


def rubric_verdict(judge_reply: str) -> tuple[bool, str]:
    """(passed, one-line message) from the judge's answer."""
    try:
        data = json.loads(judge_reply)
    except json.JSONDecodeError as error:
        return False, (f"expected the judge's verdict as JSON, came unparseable JSON ({error.msg}): "
                       f"{squeezed(judge_reply, SHOWN_CHARS)}")
    if not isinstance(data, dict) or not isinstance(data.get("pass"), bool):
        return False, ('expected the judge\'s verdict {"pass": true|false, "reason": ...}, came '
                       f"{squeezed(judge_reply, SHOWN_CHARS)}")
    reason = squeezed(str(data.get("reason") or "no reason given"), SHOWN_CHARS)
    return data["pass"], "" if data["pass"] else f"expected the rubric met, came the judge's fail: {reason}"

