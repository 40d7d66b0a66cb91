"""The EvidenceDesk suite: the seed's release-gate table through real `python -m evalkit` subprocesses
(decisions, exit codes, reasons, metrics and slices), and the retriever's k / min_score / min_margin rules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


pytestmark = pytest.mark.slow

SUITE = PROJECT_ROOT / "suites" / "evidencedesk"
SLICE = "language(input) where kind=rag"
BASE_METRICS = {"recall_at_k": 0.882, "citation_validity": 1.0, "abstention_correct": 0.773, "tool_pass": 1.0,
                "format_pass": 1.0, "case_pass_rate": 0.848}


def job(run_evalkit, tmp_path: Path, *overrides: str) -> tuple[int, str, dict, dict]:
    done = run_evalkit("suite=evidencedesk", *overrides)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    out = tmp_path / "job"
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return done.returncode, done.stdout, decision, report


def means(report: dict) -> dict[str, float | None]:
    return {name: None if m["mean"] is None else round(m["mean"], 3) for name, m in report["metrics"].items()}


def test_baseline_reproduces_the_seed(run_evalkit, tmp_path):
    code, stdout, decision, report = job(run_evalkit, tmp_path)
    assert code == 0 and stdout.splitlines()[0] == "decision: GO"
    assert decision["decision"] == "go" and decision["regressed"] == [] and decision["fixed"] == []
    assert report["eval"]["dataset"] == "evidencedesk-eval@2" and len(report["cases"]) == 33
    assert {k: v for k, v in means(report).items() if k in BASE_METRICS} == BASE_METRICS
    assert sorted(c["id"] for c in report["cases"] if not c["passed"]) == ["lg03", "rc03", "rc06", "rc08", "rc13"]
    slices = report["slices"][SLICE]
    assert {name: (s["cases"], round(s["pass_rate"], 3), s["failures"], s["unsafe"]) for name, s in slices.items()} == {
        "bn": (5, 0.8, ["lg03"], ["lg03"]),
        "en": (14, 0.714, ["rc03", "rc06", "rc08", "rc13"], []),
        "mixed": (3, 1.0, [], []),
    }
    assert report["provenance"]["recording_provenance"] == "authored"


def test_shipped_baseline_is_the_default_run(run_evalkit, tmp_path):
    _, _, _, report = job(run_evalkit, tmp_path)
    shipped = json.loads((SUITE / "runs" / "baseline.json").read_text(encoding="utf-8"))
    assert shipped["eval"] == report["eval"]
    assert {t["nodeid"]: t["outcome"] for t in shipped["tests"]} == {t["nodeid"]: t["outcome"] for t in report["tests"]}


def test_min_score_025_fixes_rc03_and_regresses_nothing(run_evalkit, tmp_path):
    code, stdout, decision, report = job(run_evalkit, tmp_path, "retriever.min_score=0.25")
    assert code == 0 and decision["decision"] == "go" and decision["reasons"] == []
    assert decision["regressed"] == []
    assert decision["fixed"] == ["test_evidencedesk.py::test_abstention[rc03]", "test_evidencedesk.py::test_recall[rc03]"]
    assert means(report)["case_pass_rate"] == 0.879
    assert list(decision["changed"]) == ["components.retriever"]


def test_min_margin_0_blocks_on_rc15_and_citation_validity(run_evalkit, tmp_path):
    code, stdout, decision, report = job(run_evalkit, tmp_path, "retriever.min_margin=0")
    assert code == 1 and stdout.splitlines()[0] == "decision: BLOCK"
    assert decision["reasons"] == ["critical case rc15 failed: test_abstention", "citation_validity fell 1.000 -> 0.941"]
    assert decision["regressed"] == ["test_evidencedesk.py::test_abstention[rc15]"]
    assert decision["fixed"] == ["test_evidencedesk.py::test_abstention[rc13]"]
    assert means(report)["case_pass_rate"] == 0.848 and means(report)["citation_validity"] == 0.941
    en = report["slices"][SLICE]["en"]
    assert (round(en["pass_rate"], 3), en["failures"], en["unsafe"]) == (0.714, ["rc03", "rc06", "rc08", "rc15"], ["rc15"])


def test_k1_is_cheaper_and_blocks(run_evalkit, tmp_path):
    code, _, decision, report = job(run_evalkit, tmp_path, "retriever.k=1")
    assert code == 1 and decision["decision"] == "block"
    assert decision["reasons"][0] == "critical case rc15 failed: test_abstention"
    assert "citation_validity fell 1.000 -> 0.824" in decision["reasons"]
    got = means(report)
    assert (got["recall_at_k"], got["citation_validity"], got["case_pass_rate"]) == (0.824, 0.824, 0.788)
    unsafe = sum(len(s["unsafe"]) for s in report["slices"][SLICE].values())
    assert unsafe == 2  # unanswerable answered: 1 -> 2 (lg03, rc15)
    base = json.loads((SUITE / "runs" / "baseline.json").read_text(encoding="utf-8"))
    before, after = base["execution"]["cost"]["input_tokens"], report["execution"]["cost"]["input_tokens"]
    assert after < before  # fewer chunks in every request that shows evidence


def test_new_reply_schema_blocks(run_evalkit, tmp_path):
    code, _, decision, report = job(run_evalkit, tmp_path, "reply_format=sources")
    assert code == 1 and decision["reasons"][0] == "critical case rc09 failed: test_abstention"
    assert "citation_validity cannot be measured on the candidate (floor 0.9)" in decision["reasons"]
    assert "citation_validity fell 1.000 -> no longer measurable" in decision["reasons"]
    assert len(decision["regressed"]) == 13
    assert decision["fixed"] == ["test_evidencedesk.py::test_abstention[lg03]"]
    base = {c["id"]: c["passed"] for c in json.loads((SUITE / "runs" / "baseline.json").read_text())["cases"]}
    now = {c["id"]: c["passed"] for c in report["cases"]}
    assert sum(base[i] == now[i] for i in base) == 19  # unchanged cases
    got = means(report)
    assert (got["abstention_correct"], got["citation_validity"], got["case_pass_rate"]) == (0.227, None, 0.485)
    lg01 = next(t for t in report["tests"] if t["nodeid"].endswith("test_abstention[lg01]"))
    assert "invalid_schema" in json.dumps(lg01)


def test_strict_policy_blocks_the_baseline_itself(run_evalkit, tmp_path):
    code, _, decision, _ = job(run_evalkit, tmp_path, "policy=evidencedesk-strict")
    assert code == 1 and decision["reasons"] == ["critical case lg03 failed: test_abstention"]


def test_sweep_over_k_prints_one_row_per_k(run_evalkit, tmp_path):
    done = run_evalkit("-m", "suite=evidencedesk", "retriever.k=1,2,3")
    assert done.returncode == 1, done.stdout + done.stderr  # the sweep exits with its most severe job
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text(encoding="utf-8"))
    rows = summary["rows"] if isinstance(summary, dict) else summary
    got = {tuple(r["overrides"]): (r["decision"], r["pass_rate"]) for r in rows}
    assert {o[-1]: d for o, (d, _) in got.items()} == {"retriever.k=1": "block", "retriever.k=2": "go",
                                                      "retriever.k=3": "go"}


# --- the retriever, without evalkit ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def retriever():
    sys.path.insert(0, str(SUITE))
    try:
        import retriever as module
    finally:
        sys.path.remove(str(SUITE))
        sys.modules.pop("retriever", None)
    return module


@pytest.fixture(scope="module")
def corpus(retriever):
    pages = [("a", "refund bike days delivery"), ("a", "refund bike"), ("b", "refund bike days"), ("c", "helmet")]
    return tuple(retriever.Chunk(f"{doc}:c{i}", doc, doc, text, "en", "current", retriever.terms(text))
                 for i, (doc, text) in enumerate(pages))


def test_retriever_terms_drop_stop_words_and_plural_s(retriever):
    assert retriever.terms("How many days do I have to return the bikes?") == {"many", "day", "return", "bike"}
    assert retriever.terms("ডেলিভারি ফ্রি পেতে কত টাকার অর্ডার করতে হয়?") == {"ডেলিভারি", "ফ্রি", "পেতে", "টাকার", "অর্ডার"}


def test_retriever_k_cuts_the_ranked_list(retriever, corpus):
    found = retriever.retrieve("refund bike days delivery", k=2, min_score=0, min_margin=0, corpus=corpus)
    assert [s.chunk.id for s in found.ranked] == ["a:c0", "b:c2"] and found.shown == found.ranked
    assert [float(s.score) for s in found.ranked] == [1.0, 0.75]


def test_retriever_min_score_drops_chunks_below_it_and_keeps_equal(retriever, corpus):
    found = retriever.retrieve("refund bike days delivery", k=5, min_score=0.5, min_margin=0, corpus=corpus)
    assert [s.chunk.id for s in found.ranked] == ["a:c0", "b:c2", "a:c1"]  # 0.5 stays, helmet (0) goes
    none = retriever.retrieve("electric scooter", k=3, min_score=0.3, min_margin=0.05, corpus=corpus)
    assert none.ranked == () and none.shown == () and none.abstained == "no_evidence"


def test_retriever_min_margin_abstains_on_two_close_pages(retriever, corpus):
    close = retriever.retrieve("refund bike", k=3, min_score=0.3, min_margin=0.05, corpus=corpus)
    assert close.abstained == "ambiguous" and close.shown == () and close.ranked_docs == ("a", "b")
    off = retriever.retrieve("refund bike", k=3, min_score=0.3, min_margin=0, corpus=corpus)
    assert off.abstained is None and off.shown == off.ranked
    apart = retriever.retrieve("refund bike days delivery", k=3, min_score=0.3, min_margin=0.25, corpus=corpus)
    assert apart.abstained is None  # 1.0 - 0.75 is exactly 0.25: not closer than the margin (exact fractions)
    one = retriever.retrieve("refund bike", k=1, min_score=0.3, min_margin=0.05, corpus=corpus)
    assert one.abstained is None and [s.chunk.id for s in one.shown] == ["a:c0"]  # k=1: no second page


def test_retriever_refuses_k_below_one(retriever, corpus):
    with pytest.raises(ValueError, match="at least 1"):
        retriever.retrieve("refund", k=0, min_score=0, min_margin=0, corpus=corpus)
