"""Renderers: the decision first; quality, cost and latency as separate sections; Markdown for a PR."""

from __future__ import annotations

from conftest import report

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.records.report_reader import report_from_mapping
from evalkit.render.markdown import render_markdown
from evalkit.render.sections import render_sections
from evalkit.render.text import render_decision

BASE = {"test_priority[a]": "passed", "test_label[a]": "passed", "test_label[b]": "passed"}


def run(outcomes, metrics, execution=None, **key):
    data = report(outcomes, **key) | {"metrics": metrics, "execution": execution or {},
                                      "cases": [{"id": "a", "passed": True}, {"id": "b", "passed": False}]}
    return report_from_mapping(data, "r")


def test_sections_keep_quality_cost_and_latency_apart():
    candidate = run(BASE, {"citation_validity": None, "recall": 0.5},
                    {"cost": {"model_calls": 4, "input_tokens": 100, "output_tokens": 20,
                              "estimated_calls": {"output_tokens": 4}}, "latency": {"measured_calls": 0}})
    text = render_sections(candidate)
    assert text.splitlines()[0] == "QUALITY"
    assert "citation_validity               n/a" in text and "recall                          0.500" in text
    assert "failing cases                   b" in text
    assert "output_tokens                   20 (estimated for 4 calls: characters / 4)" in text
    assert text.endswith("LATENCY\n  not measured")


def test_markdown_leads_with_the_verdict_and_lists_metric_changes():
    policy = Policy(critical=("test_priority",), block_on_drop=("recall",))
    baseline = run(BASE, {"recall": 0.9})
    candidate = run(BASE | {"test_priority[a]": "failed"}, {"recall": 0.5}, model="other")
    decision = decide(policy, baseline, candidate)
    markdown = render_markdown(decision, candidate, policy.critical)
    assert markdown.startswith("### evalkit: **BLOCK**")
    assert "- recall fell 0.900 -> 0.500" in markdown and "**Changed:** model m -> other" in markdown
    assert "- `test_triage.py::test_priority[a]` (critical)" in markdown
    assert "| recall | 0.900 | 0.500 | -0.400 | regressed |" in markdown
    assert render_decision(decision).splitlines()[0] == "decision: BLOCK"


def test_review_reasons_are_shown_apart_from_block_reasons():
    policy = Policy(review_on_drop=("recall",))
    decision = decide(policy, run(BASE, {"recall": 0.9}), run(BASE, {"recall": 0.8}))
    text = render_decision(decision)
    assert text.splitlines()[:3] == ["decision: REVIEW", "for review:", "  - recall fell 0.900 -> 0.800"]
    assert "**For review**" in render_markdown(decision)


# --- why it failed, and the answers of regressed cases ----------------------------------------

def case_entry(case_id: str, checks: dict, output: str | None = None, judge: dict | None = None) -> dict:
    entry = {"id": case_id, "checks": checks, "passed": all(o == "passed" for o in checks.values())}
    if output is not None:
        entry["output"] = output
    if judge is not None:
        entry["judge_replies"] = judge
    return entry


def answered(outcomes: dict, cases: list[dict], messages: dict | None = None, **key):
    data = report(outcomes, **key) | {"cases": cases}
    for test in data["tests"]:
        why = (messages or {}).get(test["nodeid"].split("::", 1)[1])
        if why:
            test["call"] = {"outcome": "failed", "crash": {"message": why}}
    return report_from_mapping(data, "r")


def test_each_listed_test_carries_the_first_line_of_why():
    policy = Policy(critical=("test_priority",))
    baseline = answered(BASE, [])
    candidate = answered(BASE | {"test_priority[a]": "failed", "test_new[a]": "error"}, [],
                         {"test_priority[a]": "AssertionError: assert 'p1' == 'p0'\n  - p0",
                          "test_new[a]": "fixture 'tmp_pth' not found `x`"})
    decision = decide(policy, baseline, candidate)
    text = render_decision(decision, policy.critical)
    assert ("regressed (1):\n  - test_triage.py::test_priority[a]  (critical) -- AssertionError: assert 'p1' == 'p0'"
            in text)
    assert "new failing (1):\n  - test_triage.py::test_new[a] -- fixture 'tmp_pth' not found `x`" in text
    assert "critical failures (1):\n  - test_triage.py::test_priority[a] -- AssertionError" in text
    assert "for review:\n  - 1 new test(s) not passing (absent from the baseline)" in text
    markdown = render_markdown(decision, candidate, policy.critical, baseline=baseline)
    assert "- `test_triage.py::test_priority[a]` (critical): `AssertionError: assert 'p1' == 'p0'`" in markdown
    # a backtick inside the message gets a longer fence (and a space where it ends in one), so the span holds it
    assert "<details><summary>New failing (1)</summary>" in markdown
    assert "- `test_triage.py::test_new[a]`: `` fixture 'tmp_pth' not found `x` ``" in markdown


def test_markdown_shows_both_answers_of_each_regressed_case_side_by_side():
    outcomes = BASE | {"test_label[b]": "failed"}
    baseline = answered(BASE, [case_entry("a", {"test_label": "passed"}, "A old"),
                               case_entry("b", {"test_label": "passed"}, "{\"label\": \"bug\"}\n\nsecond",
                                          {"faithfulness": "yes"})])
    candidate = answered(outcomes, [case_entry("a", {"test_label": "passed"}, "A new"),
                                    case_entry("b", {"test_label": "failed"}, "<script>x</script>",
                                               {"faithfulness": "no"})])
    markdown = render_markdown(decide(Policy(), baseline, candidate), candidate, (), baseline=baseline)
    assert markdown.count("<details><summary>Answers of regressed case") == 1  # a is not regressed
    assert "<summary>Answers of regressed case <code>b</code> (test_label)</summary>" in markdown
    # escaped, and one line per row: a blank line in a reply would end the HTML block on GitHub
    assert ("<tr><th>task output</th><td><pre>{\"label\": \"bug\"}&#10;&#10;second</pre></td>"
            "<td><pre>&lt;script&gt;x&lt;/script&gt;</pre></td></tr>") in markdown
    assert "<tr><th>judge: faithfulness</th><td><pre>yes</pre></td><td><pre>no</pre></td></tr>" in markdown
    assert "A old" not in markdown and "A new" not in markdown
    # without the baseline (evalkit gate given no answers to compare) no answer block is drawn
    assert "Answers of regressed case" not in render_markdown(decide(Policy(), baseline, candidate), candidate)


def test_an_old_baseline_without_answers_says_so_and_plain_reports_show_none():
    candidate = answered(BASE | {"test_label[b]": "failed"}, [case_entry("b", {"test_label": "failed"}, "new")])
    old = answered(BASE, [case_entry("b", {"test_label": "passed"})])
    markdown = render_markdown(decide(Policy(), old, candidate), candidate, (), baseline=old)
    assert "<td><em>(not in this report: it was written before evalkit kept answers" in markdown
    assert "<td><pre>new</pre></td>" in markdown
    plain = answered(BASE | {"test_label[b]": "failed"}, [case_entry("b", {"test_label": "failed"})])
    assert "Answers of" not in render_markdown(decide(Policy(), old, plain), plain, (), baseline=old)


def test_answer_blocks_stop_at_max_cases_and_name_the_rest():
    from evalkit.render.answers import MAX_CASES
    ids = [f"c{i:02d}" for i in range(MAX_CASES + 2)]
    outcomes = {f"test_label[{i}]": "passed" for i in ids}
    baseline = answered(outcomes, [case_entry(i, {"test_label": "passed"}, "old") for i in ids])
    candidate = answered({k: "failed" for k in outcomes}, [case_entry(i, {"test_label": "failed"}, "new") for i in ids])
    markdown = render_markdown(decide(Policy(), baseline, candidate), candidate, (), baseline=baseline)
    assert markdown.count("Answers of regressed case") == MAX_CASES
    assert f"2 more regressed case(s), answers in report.json: {ids[-2]}, {ids[-1]}" in markdown


def test_a_candidate_equal_to_its_baseline_says_changed_nothing_and_what_that_means() -> None:
    same = report_from_mapping(report({"test_a": "passed"}), "baseline.json")
    decision = decide(Policy(), same, report_from_mapping(report({"test_a": "passed"}), "candidate.json"))
    assert decision.changed == {}
    lines = render_decision(decision).splitlines()
    assert ("changed: - (the two reports' eval keys agree: no component or setting the key covers differs, so the "
            "candidate measured the same system as the baseline; was the change applied?)") in lines
    assert "**Changed:** " in render_markdown(decision) and "was the change applied?" in render_markdown(decision)
    # a change is named as before
    other = report_from_mapping(report({"test_a": "passed"}, prompt_sha="other"), "candidate.json")
    assert any(line.startswith("changed: prompt_sha ") for line in render_decision(decide(Policy(), same, other))
               .splitlines())


def test_a_review_says_which_exit_code_it_got_and_so_what_ci_does() -> None:
    baseline = report_from_mapping(report({"test_a": "passed"}), "baseline.json")
    candidate = report_from_mapping(report({"test_a": "passed", "test_new": "failed"}), "candidate.json")
    decision = decide(Policy(), baseline, candidate)
    assert str(decision.decision) == "review"
    assert render_decision(decision, exits=0).splitlines()[0] == (
        "decision: REVIEW (exit 0: a CI job passes; the policy's review_fails: true would fail it)")
    assert render_decision(decision, exits=1).splitlines()[0] == (
        "decision: REVIEW (exit 1: a CI job fails, as the policy's review_fails asks)")
    assert render_decision(decision).splitlines()[0] == "decision: REVIEW"  # a caller with no exit code says none


SLICES = {"language(input)": {"bn": {"cases": 2, "pass_rate": 0.5, "failures": ["b"], "unsafe": []},
                              "en": {"cases": 1, "pass_rate": 1.0, "failures": [], "unsafe": ["a"]}}}


def test_each_slice_is_a_row_of_its_pass_rate_cases_failures_and_unsafe_cases():
    from evalkit.render.report_page import _slices

    candidate = report_from_mapping(report(BASE) | {"slices": SLICES}, "r")
    text = render_sections(candidate)
    assert f"  {'slice language(input) = bn':<31} 0.500 of 2; failing: b; unsafe: -\n" in text
    assert f"  {'slice language(input) = en':<31} 1.000 of 1; failing: -; unsafe: a\n" in text
    assert [(row["value"].text, row["cases"], row["failures"].text, row["unsafe"].text)
            for row in _slices(candidate)] == [
        ("bn", 2, "b", "-"), ("en", 1, "-", "a")]
