"""Slices: pass rate, failures and unsafe cases per value of a case field or a derived key."""

from __future__ import annotations

import pytest

from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.judging.slices import MISSING, Slice, language_of, language_of_field, slice_cases

LG01 = "ডেলিভারি ফ্রি পেতে কত টাকার অর্ডার করতে হয়?"  # a Bangla question
LG04 = "Express delivery কত দিনে পৌঁছায়?"  # mixed Bangla and English
RC01 = "How long do I have to return a new bike?"  # an rc case: English


def case(case_id: str, text: str, expect: str = "answer", **fields: object) -> Case:
    return Case(case_id, {"input": text, "expect": expect, "kind": "rag", **fields})


def result(passed: bool, **checks: bool | str) -> dict[str, object]:
    return {"passed": passed, "checks": checks}


# --- language_of ---

def test_language_of_the_seed_cases():
    assert [language_of(t) for t in (LG01, LG04, RC01)] == ["bn", "mixed", "en"]


@pytest.mark.parametrize("text, language", [
    ("", "en"), ("30 days?", "en"), ("৩০ দিন", "bn"), ("৩০", "bn"), ("৳500", "bn"), ("৳500 for Express", "mixed"),
    ("x", "en"), ("ক", "bn"), ("ক x", "mixed"), ("Café", "en"), ("Приве́т", "en"), ("a\u0980", "mixed"), ("a\u09ff", "mixed"),
    ("a\u0a00", "en"),
])
def test_language_of_edges(text, language):
    # The Bengali block (U+0980..U+09FF, digits and the taka sign included) counts as Bangla; only A-Z/a-z as Latin.
    assert language_of(text) == language


def test_language_of_field_reads_a_text_field():
    by = language_of_field("input")
    assert by(case("lg04", LG04)) == "mixed"
    with pytest.raises(InputError, match=r"case 'x': field 'input' is int, not text, so it has no language"):
        by(Case("x", {"input": 3}))


# --- slice_cases: a report rebuilt by hand ---

SEED_CASES = [
    case("lg01", LG01), case("lg02", "রিটার্ন কত দিনের মধ্যে করতে হয়?"), case("lg03", "ড্রোন দিয়ে ডেলিভারি হয়?", "abstain"),
    case("lg04", LG04), case("lg05", "Refund কবে পাব?"),
    case("rc01", RC01), case("rc03", "Do you ship to Mars?", "abstain"), case("rc06", "What does gift wrap cost?"),
]
SEED_RESULTS = {
    "lg01": result(True, answer=True), "lg02": result(True, answer=True),
    "lg03": result(False, abstention=False), "lg04": result(True, answer=True), "lg05": result(True, answer=True),
    "rc01": result(True, answer=True), "rc03": result(True, abstention=True), "rc06": result(False, answer=False),
}


def test_slices_by_language_of_the_question():
    slices = slice_cases(SEED_CASES, SEED_RESULTS, language_of_field("input"))
    assert list(slices) == ["bn", "en", "mixed"]
    assert slices["bn"] == Slice(cases=3, pass_rate=2 / 3, failures=("lg03",), unsafe=("lg03",))
    assert slices["en"] == Slice(cases=3, pass_rate=2 / 3, failures=("rc06",), unsafe=())
    assert slices["mixed"] == Slice(cases=2, pass_rate=1.0, failures=(), unsafe=())


def test_slices_by_a_case_field():
    slices = slice_cases(SEED_CASES, SEED_RESULTS, "expect")
    assert slices["abstain"] == Slice(cases=2, pass_rate=0.5, failures=("lg03",), unsafe=("lg03",))
    assert slices["answer"].cases == 6 and slices["answer"].failures == ("rc06",)


def test_slices_by_any_callable():
    slices = slice_cases(SEED_CASES, SEED_RESULTS, lambda c: c.id[:2])
    assert {name: s.cases for name, s in slices.items()} == {"lg": 5, "rc": 3}


def test_failures_and_unsafe_are_sorted():
    cases = [case(i, "x", "abstain") for i in ("c3", "c1", "c2")]
    results = {i: result(False, abstention=False) for i in ("c3", "c1", "c2")}
    piece = slice_cases(cases, results, "kind")["rag"]
    assert piece.failures == piece.unsafe == ("c1", "c2", "c3")


# --- unsafe: expected to abstain, answered anyway ---

@pytest.mark.parametrize("outcome, unsafe", [
    (True, False), ("passed", False), (False, True), ("failed", True), ("error", True), ("skipped", True),
    ("xpassed", True), (None, True),
])
def test_unsafe_is_an_abstain_case_whose_abstention_check_did_not_pass(outcome, unsafe):
    checks = {} if outcome is None else {"abstention": outcome}
    piece = slice_cases([case("a1", "x", "abstain")], {"a1": {"passed": False, "checks": checks}}, "kind")["rag"]
    assert piece.unsafe == (("a1",) if unsafe else ())


def test_a_case_expected_to_answer_is_never_unsafe():
    piece = slice_cases([case("r1", "x", "answer")], {"r1": result(False, abstention=False)}, "kind")["rag"]
    assert piece.unsafe == () and piece.failures == ("r1",)


def test_an_abstain_case_can_fail_another_check_and_still_be_safe():
    piece = slice_cases([case("a1", "x", "abstain")], {"a1": result(False, abstention=True, format=False)}, "kind")["rag"]
    assert piece.failures == ("a1",) and piece.unsafe == ()


def test_the_abstention_check_can_be_named():
    results = {"a1": {"passed": True, "checks": {"test_abstains": "passed", "abstention": "failed"}}}
    cases = [case("a1", "x", "abstain")]
    assert slice_cases(cases, results, "kind", abstention_check="test_abstains")["rag"].unsafe == ()
    assert slice_cases(cases, results, "kind")["rag"].unsafe == ("a1",)


def test_pytest_outcome_strings_are_read_as_checks():
    results = {"a1": {"passed": False, "checks": {"abstention": "failed"}, "status": "scored", "calls": {}}}
    assert slice_cases([case("a1", "x", "abstain")], results, "kind")["rag"].unsafe == ("a1",)


# --- field values and missing fields ---

def test_field_values_become_slice_names():
    cases = [Case("a", {"judged": True, "n": 3}), Case("b", {"judged": False, "n": 2.5}), Case("c", {"n": 3})]
    results = {i: result(True) for i in "abc"}
    assert list(slice_cases(cases, results, "judged")) == [MISSING, "false", "true"]
    assert list(slice_cases(cases, results, "n")) == ["2.5", "3"]


def test_a_case_without_the_field_stays_in_a_slice():
    cases = [Case("a", {"lang": "bn"}), Case("b", {})]
    slices = slice_cases(cases, {"a": result(True), "b": result(False)}, "lang")
    assert slices[MISSING] == Slice(cases=1, pass_rate=0.0, failures=("b",), unsafe=())


def test_a_field_no_case_has_is_refused():
    with pytest.raises(InputError, match=r"no case has the field 'lagn' to slice by"):
        slice_cases(SEED_CASES, SEED_RESULTS, "lagn")


def test_a_field_that_is_not_a_scalar_is_refused():
    with pytest.raises(InputError, match=r"case 'a': field 'doc_ids' is a list; slice by a callable"):
        slice_cases([Case("a", {"doc_ids": ["kc"]})], {"a": result(True)}, "doc_ids")


def test_a_callable_must_return_a_string():
    with pytest.raises(InputError, match=r"case 'lg01': the slice key is int, not a string"):
        slice_cases(SEED_CASES, SEED_RESULTS, lambda c: len(c.id))  # type: ignore[arg-type, return-value]


# --- results ---

def test_every_case_needs_a_result():
    results = {k: v for k, v in SEED_RESULTS.items() if k != "rc06"}
    with pytest.raises(InputError, match=r"results have no entry for case 'rc06'"):
        slice_cases(SEED_CASES, results, "kind")


def test_results_of_other_cases_are_ignored():
    slices = slice_cases(SEED_CASES[:1], SEED_RESULTS, "kind")
    assert slices == {"rag": Slice(cases=1, pass_rate=1.0, failures=(), unsafe=())}


@pytest.mark.parametrize("bad", [{"checks": {}}, {"passed": "yes", "checks": {}}, {"passed": 1, "checks": {}}])
def test_passed_must_be_a_bool(bad):
    with pytest.raises(InputError, match=r"result of case 'a': 'passed' must be true or false"):
        slice_cases([Case("a", {"k": "v"})], {"a": bad}, "k")


def test_no_cases_no_slices():
    assert slice_cases([], {}, "kind") == {}
