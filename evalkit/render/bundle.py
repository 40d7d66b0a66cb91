"""The decision's files, one set for every command that decides: decision.json, decision.xml, decision.md and
report.html, rendered from one value.

`evalkit run`, `evalkit gate` and `evalkit adapt` each used to assemble these files themselves (three ways to
merge the evidence into decision.json, two ways to pick the critical tests); now each builds a `Decided` and
writes what `render_bundle` returns, all or nothing (evalkit.cli.guard.write_outputs), so the same inputs give
the same files whichever command decided. Rendering stays pure: the texts are returned, never written here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from evalkit.core.policy import Policy
from evalkit.gate.compared import critical_of
from evalkit.gate.decision import Decision
from evalkit.records.decision import Evidence
from evalkit.records.report_reader import RunReport
from evalkit.render.junit import render_junit
from evalkit.render.markdown import render_markdown

__all__ = ["DECISION_FILES", "Decided", "Masker", "render_bundle"]

DECISION_FILES = ("decision.json", "decision.xml", "decision.md", "report.html")
"""The decision's files by their names in a run folder, in the order they are listed to a reader."""


class Masker(Protocol):
    """What masks secrets in a run's files (evalkit.live.redact.Redactor): texts, and JSON-like data before it is
    dumped, so that a pattern can never break the file's format."""

    def __call__(self, text: str) -> str: ...

    def scrub(self, data: Any, messages: bool = True) -> Any: ...


@dataclass(frozen=True)
class Decided:
    """A decision with everything its files show: both reports, the policy it was made under, and the evidence
    (the policy's and both reports' identities: evalkit.cli.evidence)."""

    decision: Decision
    baseline: RunReport
    candidate: RunReport
    policy: Policy
    evidence: Evidence
    baseline_name: str
    """How the baseline was named to the command: a shipped baseline's name, or the path of its report."""


def render_bundle(decided: Decided, *, mask: Masker | None = None,
                  names: tuple[str, ...] = DECISION_FILES) -> dict[str, str]:
    """The texts of the decision's files named in `names` (of DECISION_FILES), by name. `mask` masks secrets (a
    live run's texts may carry a key's value); without it the texts are rendered as they are."""
    unknown = sorted(set(names) - set(DECISION_FILES))
    if unknown:
        raise ValueError(f"not a decision file: {', '.join(unknown)}")
    critical = critical_of(decided.policy, decided.baseline, decided.candidate)
    texts: dict[str, str] = {}
    for name in names:
        if name == "decision.json":
            written = decided.decision.record(baseline=decided.baseline_name, evidence=decided.evidence)
            texts[name] = json.dumps(written.data(mask.scrub if mask else None), indent=2, allow_nan=False) + "\n"
        elif name == "decision.xml":
            texts[name] = render_junit(decided.decision, decided.candidate)
        elif name == "decision.md":
            texts[name] = render_markdown(decided.decision, decided.candidate, critical, decided.evidence,
                                          decided.baseline)
        else:
            # Jinja and the page's code load only when a page is asked for
            from evalkit.render.report_page import render_report_html

            texts[name] = render_report_html(decided.candidate, decided.decision, decided.baseline, critical,
                                             decided.evidence, decided.policy.critical_cases)
    if mask is not None:
        texts = {name: text if name == "decision.json" else mask(text) for name, text in texts.items()}
    return texts
