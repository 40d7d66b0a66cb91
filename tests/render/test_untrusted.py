"""One hostile corpus through every output evalkit writes or shows: terminal, Markdown (decision.md, the sweep's
summary.md), HTML, JUnit XML and GitHub annotations. None may carry raw markup, a control character or a secret.

The reports here are authored fixtures: every string in them is chosen to attack a reader."""

from __future__ import annotations

import html
import re
import unicodedata
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from conftest import KEY

from evalkit.cli.evidence import evidence, policy_identity, report_identity
from evalkit.cli.guard import say
from evalkit.core.policy import Policy
from evalkit.core.untrusted import MAX_LINE_CHARS, annotation, cut, markdown, terminal, visible
from evalkit.gate.decide import decide
from evalkit.gate.policy_change import Pair, decide_again
from evalkit.live.redact import Redactor
from evalkit.records.report_reader import report_from_mapping
from evalkit.render.history import HistoryRun, render_history_text
from evalkit.render.junit import render_junit
from evalkit.render.markdown import render_markdown
from evalkit.render.policy_diff import render_policy_diff
from evalkit.render.report_page import render_report_html
from evalkit.render.text import render_decision
from evalkit.sweeps.summary import render_summary

SECRET = 'k3y&<"Zq8pLr3TnV6wXy'  # authored: holds what HTML and Markdown escape
ZERO_WIDTH = "\u200b".join(SECRET)
FULLWIDTH = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in SECRET)
FORGED = "\n\x1b[2J\x1b[1;32mdecision: GO\x1b[0m"
HOSTILE = [
    "<img src=http://evil.example/x.png>", FORGED, "![p](http://evil.example/p.png)", "[ok](javascript:alert(1))",
    "a|b", "nul\x00byte\x07bell", "\u202eevil", "r\rcarriage", "x" * 4_000, SECRET, ZERO_WIDTH, FULLWIDTH,
]
ENV = {"EVALKIT_HOSTILE_KEY": SECRET}


def _corpus_reports() -> tuple[Any, Any, Any, Policy, dict[str, Any]]:
    """A baseline and a candidate whose model name, test ids, metric names and failure messages are the corpus,
    and a policy whose name and version are too."""
    ids = [f"test_x.py::test_answer[{i}-{text}]" for i, text in enumerate(HOSTILE)]
    metrics_before = {f"m{i}{text}": {"mean": 1.0} for i, text in enumerate(HOSTILE)}
    metrics_after = {f"m{i}{text}": {"mean": 0.2} for i, text in enumerate(HOSTILE)}
    baseline = report_from_mapping({"eval": {**KEY, "model": "<img src=http://evil.example/b.png>" + FORGED},
                                    "tests": [{"nodeid": n, "outcome": "passed"} for n in ids],
                                    "metrics": metrics_before, **_agent_cases(True)}, "authored hostile baseline")
    candidate = report_from_mapping({
        "eval": {**KEY, "model": SECRET + FORGED},
        "tests": [{"nodeid": n, "outcome": "failed",
                   "call": {"outcome": "failed", "crash": {"message": f"AssertionError: {text}"}}}
                  for n, text in zip(ids, HOSTILE, strict=True)],
        "metrics": metrics_after, **_agent_cases(False)}, "authored hostile candidate")
    policy = Policy(name="<img src=http://evil.example/p.png>" + FORGED, version=ZERO_WIDTH + FORGED,
                    critical=("test_answer",), block_on_drop=tuple(metrics_after))
    identity = policy_identity(policy, fallback_name="x", source="conf/policy/<b>.yaml", chosen_by=FORGED)
    facts = evidence(identity, report_identity("base<img>.json", "0" * 64, baseline),
                     report_identity("cand\x1b.json", "1" * 64, candidate))
    return baseline, candidate, decide(policy, baseline, candidate), policy, facts


def _agent_cases(passed: bool) -> dict[str, Any]:
    """Each corpus text as an agent case, and its trajectory: the text is the tool's name, its arguments, its
    result, its error and the final answer (the candidate's arguments differ, so decision.md names that step)."""
    cases, trajectories = [], {}
    for i, text in enumerate(HOSTILE):
        case_id = f"{i}-{text}"
        cases.append({"id": case_id, "status": "scored", "passed": passed, "output": text,
                      "checks": {"test_answer": "passed" if passed else "failed"}})
        trajectories[f"task/{case_id}"] = {"steps": [
            {"kind": "model_call", "call_id": f"task/{case_id}@1", "model": text},
            {"kind": "tool_call", "id": text, "tool": text, "arguments": {text: text if passed else [text, text]}},
            {"kind": "tool_result", "call_id": text, "content": text, "error": True, "error_message": text},
            {"kind": "final_answer", "text": text}]}
    return {"cases": cases, "trajectories": trajectories}


def _plain(text: str) -> str:
    """What a reader sees: entities and Markdown escapes decoded, then as the screen shows it (NFKC, no
    zero-width characters)."""
    text = html.unescape(re.sub(r"\\([\\`*\[\]|~!])", r"\1", text))
    return "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")


def _outside_code(text: str) -> str:
    """Markdown without its code spans, where markup is shown as written and never read."""
    return re.sub(r"(?<!\\)(`+)(?!`).*?(?<!`)\1(?!`)", "", text)


def _controls(text: str, allowed: str) -> list[str]:
    return sorted({repr(c) for c in text if unicodedata.category(c) in ("Cc", "Cs") and c not in allowed})


def _outputs(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Every output kind of the corpus, each masked by the run's redactor as the commands mask them."""
    baseline, candidate, decision, policy, facts = _corpus_reports()
    redact = Redactor(["EVALKIT_HOSTILE_KEY"], environ=ENV)
    say(render_decision(decision, policy.critical))
    say(render_history_text("s" + FORGED, [HistoryRun("r" + FORGED, candidate, 1.6e9, False, "block")], [FORGED]))
    terminal_text = redact(capsys.readouterr().out)
    rows = [{"job": 0, "overrides": [f"model.name={text}" for text in HOSTILE[:4]], "changed": FORGED,
             "decision": "block", "metrics": {f"m{text}": 0.5 for text in HOSTILE[:3]}, "error": HOSTILE[0]}]
    names = [str(item) for item in decision.reasons + decision.regressed]
    return {
        "terminal": terminal_text,
        "markdown": redact(render_markdown(decision, candidate, policy.critical, facts, baseline)),
        "summary.md": redact(render_summary(rows)),
        "policy_diff.md": redact(render_policy_diff(
            "<img src=x>", Policy(), FORGED, policy,
            decide_again(Policy(), policy, [Pair("b" + FORGED, "c<img src=y>", baseline, candidate)]),
            FORGED, [HOSTILE[2], FORGED])),
        "html": redact(render_report_html(candidate, decision, baseline, policy.critical, facts)),
        "junit": redact(render_junit(decision, candidate)),
        "annotations": redact("\n".join(f"::error title={annotation('evalkit: ' + name, True)}::{annotation(name)}"
                                        for name in names)),
    }


def test_the_hostile_corpus_reaches_no_output_as_markup_control_or_secret(capsys: pytest.CaptureFixture[str]):
    outputs = _outputs(capsys)
    for kind, text in outputs.items():
        if kind in ("markdown", "summary.md", "policy_diff.md", "html", "junit"):  # a terminal shows text as is
            read = _outside_code(text) if kind.endswith("md") or kind == "markdown" else text
            assert "<img" not in read and "<script" not in read.replace("<script>", "", 1), kind
        if kind in ("markdown", "summary.md", "policy_diff.md"):
            assert not re.search(r"(?<!\\)\]\((?:http|javascript)", _outside_code(text)), f"{kind}: a live link"
        assert "\x1b" not in text and "\x00" not in text, kind
        assert SECRET not in _plain(text), f"{kind}: the secret is readable"
        assert "Zq8pLr3TnV6wXy" not in _plain(text), f"{kind}: the secret is readable"
    assert _controls(outputs["terminal"], "\n") == []
    for kind in ("markdown", "summary.md", "policy_diff.md"):
        assert _controls(outputs[kind], "\n") == [], kind
    assert _controls(outputs["annotations"], "\n") == []
    assert all(len(line) <= MAX_LINE_CHARS for line in outputs["terminal"].splitlines())
    # a forged verdict never starts a line of its own
    for kind in ("terminal", "markdown", "summary.md", "policy_diff.md", "annotations"):
        assert not any(line.lstrip("- ").startswith("decision: GO") for line in outputs[kind].splitlines()), kind
    assert outputs["terminal"].splitlines()[0] == "decision: BLOCK"
    ET.fromstring(outputs["junit"])  # still well-formed XML
    assert outputs["html"].count("<script") == 1  # the page's own


def test_each_escape_can_fail():
    """The functions themselves, against the attacks they exist for (so the corpus test above is not vacuous)."""
    assert terminal(FORGED) == "\\n\\x1b[2J\\x1b[1;32mdecision: GO\\x1b[0m"
    assert visible("a\u200bb") == "a\\u200bb" and visible("a\u200bb", controls_only=True) == "a\u200bb"
    assert markdown("<img src=x>") == "&lt;img src=x>"
    assert markdown("![p](http://e/p.png)") == "\\!\\[p\\](http://e/p.png)"
    assert markdown("a|b`c*d") == "a\\|b\\`c\\*d"
    assert annotation("a\nb%c") == "a\\nb%25c" and annotation("x:y,z", prop=True) == "x%3Ay%2Cz"
    assert len(cut("x" * 10_000, 300)) == 300 and cut("short") == "short"
    assert len(terminal("y" * 50_000)) == MAX_LINE_CHARS


@pytest.mark.parametrize("form", [SECRET, ZERO_WIDTH, FULLWIDTH, html.escape(SECRET), markdown(SECRET)],
                         ids=["plain", "zero-width", "fullwidth", "html-escaped", "markdown-escaped"])
def test_a_secret_is_masked_in_every_form_a_reader_would_read_it(form: str):
    redact = Redactor(["EVALKIT_HOSTILE_KEY"], environ=ENV)
    masked = redact(f"before {form} after")
    assert masked == "before [REDACTED] after"


def test_a_reply_in_a_pre_block_shows_controls_and_bidi_overrides_as_escapes() -> None:
    """Issue 35: decision.md kept raw ESC, NUL and U+202E from a reply inside `<pre>`, report.html kept U+202E;
    docs/explanation/security.md promises control characters shown as escapes."""
    from test_render import BASE, answered, case_entry

    reply = "safe\x1b[2J\x00\u202etxt.exe\u2066x\u2069 \u05e9\u05dc\u05d5\u05dd\u200f"
    baseline = answered(BASE, [case_entry("b", {"test_label": "passed"}, "old")])
    candidate = answered(BASE | {"test_label[b]": "failed"}, [case_entry("b", {"test_label": "failed"}, reply)])
    decision = decide(Policy(), baseline, candidate)
    pages = {"decision.md": render_markdown(decision, candidate, (), baseline=baseline),
             "report.html": render_report_html(candidate, decision, baseline, ())}
    for name, page in pages.items():
        assert not {"\x1b", "\x00", "\u202e", "\u2066", "\u2069"} & set(page), name
        assert "\\x1b[2J\\x00\\u202etxt.exe\\u2066x\\u2069" in page, name
        assert "\u05e9\u05dc\u05d5\u05dd\u200f" in page, name  # right-to-left text and its mark, as written


def test_the_corpus_reaches_both_trajectory_views(capsys: pytest.CaptureFixture[str]) -> None:
    """The corpus above is the tools' names, arguments and results too: report.html shows every step of both
    sides, and decision.md names each regressed case's parting step (step 2, the arguments)."""
    outputs = _outputs(capsys)
    assert outputs["html"].count('class="step tool_call"') == 2 * len(HOSTILE)
    assert outputs["html"].count('<tr class="parts" data-step="2">') == len(HOSTILE)
    assert outputs["markdown"].count(": step 2: baseline ") == len(HOSTILE)
