"""The run explorer: many runs' cases as one folder of static files (index.html, explorer.js, explorer.css and one
data/run-N.js per run), opened from disk or any static host with no server.

Pure: runs go in, a mapping of relative file names to their text comes out; evalkit.cli.view writes it.

Why data as scripts: a page opened from `file://` may not fetch() the JSON beside it, but it may load a script
beside it, so each run is a script that only appends one JSON literal to `window.EVALKIT_RUNS`. The page's
Content-Security-Policy admits scripts and styles from the folder itself and nothing else (`default-src 'none'`: no
fetch, image, font, frame or form), no inline script or style and no eval, and explorer.js writes report text only
through `textContent`, so a model's output that looks like markup stays text, as on report.html.

Review in the page: a reviewer labels a case's checks (pass or fail, or the levels of a number the judge rated on
levels: evalkit.programs.labelling) with a note; the labels stay in the browser's localStorage under the reviewed
report's SHA-256 and export as a labels file (evalkit.records.labels) that `evalkit review --labels` and `evalkit
calibrate --labels` read. The queue orders the cases by how unsure the judge was (the margin computed here), least
sure first. The page names the evalkit that wrote it, for the labels file's header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from evalkit.core.nodeid import matches_critical
from evalkit.core.untrusted import visible
from evalkit.core.version import __version__
from evalkit.programs.labelling import PASS_FAIL, Unsure, label_targets, unsure
from evalkit.records.report_reader import RunReport
from evalkit.render.html import environment

__all__ = ["CONTENT_SECURITY_POLICY", "OUTPUT_CHARS", "ExplorerRun", "explorer_files", "run_data"]

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; "
                           "form-action 'none'")
"""The folder's own scripts and style, nothing inline, nothing fetched (the report pages name their one inline
script by hash instead; here the data are files, so the folder is what is trusted)."""

OUTPUT_CHARS = 20_000
"""An output or trajectory longer than this is cut in the data, with a note: twenty runs of a megabyte reply would
otherwise make the page load megabytes per case; the whole text stays in the run's report.json."""

_ASSETS = ("explorer.js", "explorer.css")
_BLOCKS = ("trajectory", "transcript")
"""Case fields shown whole beside the output where a case has them (an agent's steps, a conversation's turns)."""


@dataclass(frozen=True)
class ExplorerRun:
    """One run as the explorer shows it: its report, where it was read, the SHA-256 of the report's bytes and the
    decision saved beside it (None when there is none)."""

    report: RunReport
    path: str
    sha256: str
    decision: str | None = None


def explorer_files(runs: Sequence[ExplorerRun], reference: int = 0) -> dict[str, str]:
    """Every file of the explorer, by its path relative to the folder: the page, its script and style, and
    `data/run-N.js` for each run (N from 1, in the order given). `reference` (0-based) is the run other runs are
    diffed against and regressions are counted from when the page opens; the page can choose another."""
    if not 0 <= reference < len(runs):
        raise ValueError(f"reference {reference} is not one of the {len(runs)} runs")
    out = {f"data/run-{index}.js": _run_script(index, run) for index, run in enumerate(runs, start=1)}
    out["index.html"] = environment().get_template("explorer.html.j2").render(
        csp=CONTENT_SECURITY_POLICY, reference=reference, data=list(out), version=__version__,
        runs=[_run_row(index, run) for index, run in enumerate(runs, start=1)],
        cases=len({str(case.get("id")) for run in runs for case in run.report.cases}))
    out.update({name: _asset(name) for name in _ASSETS})
    return out


def run_data(index: int, run: ExplorerRun) -> dict[str, Any]:
    """One run's data as the page reads it: what identifies the run, then each case's outcome, the outcome of
    each of its checks, its slices, whether a critical check failed, its output and trajectory (cut, with a
    note)."""
    report = run.report
    doubts = unsure(report)
    cases = [_case(case, report, doubts) for case in report.cases if isinstance(case, Mapping)]
    return {"index": index, "path": _text(run.path), "sha256": run.sha256, "decision": run.decision,
            "key": _key(report.eval), "cases": cases}


def _run_script(index: int, run: ExplorerRun) -> str:
    # ASCII-only JSON: the script's bytes read the same whatever encoding a host declares for .js files, and a
    # JSON literal is a JavaScript expression, so the file holds data and one call, nothing else.
    literal = json.dumps(run_data(index, run), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return f"(window.EVALKIT_RUNS = window.EVALKIT_RUNS || []).push({literal});\n"


def _run_row(index: int, run: ExplorerRun) -> dict[str, Any]:
    return {"index": index, "path": run.path, "sha256": run.sha256, "decision": run.decision or "(none saved)",
            "key": "; ".join(f"{name}: {value}" for name, value in _key(run.report.eval).items()),
            "cases": len(run.report.cases)}


def _key(block: Mapping[str, Any]) -> dict[str, str]:
    """The eval key as name: value lines; settings are the key's inputs, not its identity, and stay in the
    report."""
    out: dict[str, str] = {}
    for name, value in block.items():
        if name == "settings":
            continue
        if isinstance(value, Mapping):
            out.update({f"{name}.{inner}": _text(item) for inner, item in value.items()})
        else:
            out[name] = _text(value)
    return out


def _case(case: Mapping[str, Any], report: RunReport, doubts: Mapping[str, Unsure]) -> dict[str, Any]:
    checks = {str(name): _outcome(value) for name, value in _mapping(case.get("checks")).items()}
    raw = str(case.get("id"))
    entry: dict[str, Any] = {"id": _text(raw), "o": _case_outcome(case), "c": checks}
    if entry["id"] != raw:
        entry["k"] = raw  # the id as the report has it, for the labels file; `id` is how the page shows it
    levels = {name: list(values) for name, values in label_targets(case).items() if values != PASS_FAIL}
    if levels:
        entry["lv"] = levels
    doubt = doubts.get(raw)
    if doubt is not None:
        entry["u"], entry["uw"] = doubt.margin, _text(doubt.why)
    if report.critical and any(outcome == "failed" and matches_critical(name, report.critical)
                               for name, outcome in checks.items()):
        entry["crit"] = True
    slices = _slices(case, report)
    if slices:
        entry["s"] = slices
    output, cut = _cut(case.get("output"))
    entry["out"] = output
    if cut:
        entry["outCut"] = cut
    for name in _BLOCKS:
        if case.get(name) is not None:
            text, cut = _cut(case[name])
            entry[name] = text
            if cut:
                entry[name + "Cut"] = cut
    return entry


def _case_outcome(case: Mapping[str, Any]) -> str:
    """passed, failed, or unscored (a case the run could not measure: its status says why)."""
    status = case.get("status")
    if status not in (None, "scored"):
        return "unscored"
    return "passed" if case.get("passed") is True else "failed" if case.get("passed") is False else "unscored"


def _outcome(value: Any) -> str:
    if value is True or value == "passed":
        return "passed"
    if value is False or value in ("failed", "error"):
        return "failed"
    return _text(value)


def _slices(case: Mapping[str, Any], report: RunReport) -> list[str]:
    """`cut: value` for the case's group and for each of the run's slice cuts that is a field of the case's
    input (a derived cut, such as a text's language, is not recomputed here)."""
    out = []
    if case.get("group") is not None:
        out.append(f"group: {_text(case['group'])}")
    given = _mapping(case.get("input"))
    for cut in report.slices:
        if cut in given and not isinstance(given[cut], Mapping | list):
            out.append(f"{_text(cut)}: {_text(given[cut])}")
    return out


def _cut(value: Any) -> tuple[str, int]:
    text = value if isinstance(value, str) else "" if value is None else json.dumps(value, indent=2,
                                                                                     ensure_ascii=False,
                                                                                     default=str)
    text = _text(text)
    return (text, 0) if len(text) <= OUTPUT_CHARS else (text[:OUTPUT_CHARS], len(text) - OUTPUT_CHARS)


def _text(value: Any) -> str:
    """Report text as the page shows it: control characters and direction overrides as visible escapes (as on
    report.html); line breaks and tabs kept."""
    return visible(value if isinstance(value, str) else str(value), keep="\n\r\t", controls_only=True)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@cache
def _asset(name: str) -> str:
    return files("evalkit.render").joinpath("templates", name).read_text(encoding="utf-8")
