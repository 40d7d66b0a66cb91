"""Declared check kinds (evalkit.judging.checks): each passes what it should, fails the rest with one line of
expected against came, and a reply that does not parse fails (never raises)."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from helpers.bounded import python_bounded

from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.judging.checks import CheckSpec, judge, parse_checks

CASE = Case("t-1", {"label": "billing", "answer": 42, "keywords": ["refund", "invoice"]})


def check(**entry):
    return CheckSpec.model_validate({"name": "c", **entry})


def verdict(reply, **entry):
    return judge(check(**entry), reply, CASE)


@pytest.mark.parametrize(("entry", "reply", "passed"), [
    ({"equals": "yes"}, "yes", True),
    ({"equals": "yes"}, "Yes", False),
    ({"equals": "yes", "ignore_case": True}, "YES", True),
    ({"equals": {"case": "label"}, "field": "label"}, '{"label": "billing"}', True),
    ({"equals": 42, "field": "n"}, '{"n": 42}', True),
    ({"one-of": ["a", "b"]}, "b", True),
    ({"one-of": ["a", "b"]}, "c", False),
    ({"one-of": ["a", "b"], "ignore_case": True}, "B", True),
    ({"contains": ["refund", "invoice"]}, "a refund and an invoice", True),
    ({"contains": ["refund", "invoice"]}, "a refund", False),
    ({"contains": ["refund", "invoice"], "match": "any"}, "a refund", True),
    ({"contains": ["refund", "invoice"], "match": "any"}, "nothing", False),
    ({"contains": "Refund", "ignore_case": True}, "a refund", True),
    ({"contains": {"case": "keywords"}}, "refund invoice", True),
    ({"regex": r"^\d{3}$"}, "123", True),
    ({"regex": r"^\d{3}$"}, "12a", False),
    ({"is-json": True}, '{"a": 1}', True),
    ({"json-schema": {"type": "object", "required": ["a"]}}, '{"a": 1}', True),
    ({"json-schema": {"type": "object", "required": ["a"]}}, '{"b": 1}', False),
    ({"number": {"expected": 3.0, "tolerance": 0.5}}, "3.4", True),
    ({"number": {"expected": 3.0, "tolerance": 0.5}}, "3.6", False),
    ({"number": {"expected": {"case": "answer"}}, "field": "n"}, '{"n": 42}', True),
    ({"number": {"min": 0, "max": 1}}, "1.5", False),
    ({"number": {"min": 0}}, "many", False),
    ({"length": {"max": 5}}, "short", True),
    ({"length": {"max": 5}}, "longer", False),
    ({"length": {"min": 2}, "field": "items"}, '{"items": [1]}', False),
    ({"classification": "label", "field": "label"}, '{"label": "billing"}', True),
    ({"classification": "label", "field": "label"}, '{"label": "shipping"}', False),
    ({"classification": "label"}, "Billing", False),
    ({"classification": "label", "ignore_case": True}, "Billing", True),
])
def test_each_kind_passes_and_fails(entry, reply, passed):
    result = verdict(reply, **entry)
    assert result.passed is passed
    assert (result.message == "") is passed
    assert "\n" not in result.message


def test_a_failure_says_expected_and_came_on_one_line():
    assert verdict("c", **{"one-of": ["a", "b"]}).message == 'expected one of ["a", "b"], came "c"'
    assert verdict("3.6", number={"expected": 3, "tolerance": 0.5}).message == "expected 3 ± 0.5, came 3.6"
    assert verdict('{"label": "x"}', classification="label", field="label").message == \
        'expected label "billing", came "x"'
    assert verdict("line one\nline two", equals="x").message == r'expected "x", came "line one\nline two"'
    long = verdict("y" * 500, equals="x").message
    assert len(long) < 120 and long.endswith("...")


def test_an_unparseable_reply_fails_the_checks_that_need_json_with_the_parse_error():
    cut = '{"label": "billing", "summary": "cut off'
    result = verdict(cut, classification="label", field="label")
    assert not result.passed
    assert result.message.startswith("expected a JSON reply, came unparseable JSON (Unterminated string")
    assert result.predicted is None
    assert verdict(cut, **{"is-json": True}).passed is False
    assert verdict(cut, contains="billing").passed  # a text check reads the text, parsed or not


@pytest.mark.parametrize("reply", ["[" * 100_000 + "]" * 100_000, '{"n": ' + "9" * 5000 + "}"])
def test_a_reply_python_cannot_read_as_json_fails_in_one_line(reply):
    # a hostile reply: nested deeper than Python's json reads, or a number of more digits than it converts
    result = verdict(reply, **{"is-json": True})
    assert result.ran and not result.passed and "\n" not in result.message and len(result.message) < 250
    assert result.message.startswith("expected a JSON reply, came JSON Python cannot read (")


def test_a_missing_field_fails_naming_it():
    result = verdict('{"a": {"b": 1}}', field="a.c", equals=1)
    assert not result.passed
    assert result.message.startswith("expected field 'a.c' in the reply, came none")
    assert verdict('{"a": [{"b": 7}]}', field="a.0.b", equals=7).passed


def test_classification_reports_the_predicted_label():
    assert verdict('{"label": "shipping"}', classification="label", field="label").predicted == "shipping"


def test_a_case_field_the_case_lacks_means_the_check_could_not_run():
    result = verdict("x", equals={"case": "nope"})
    assert not result.ran and not result.passed
    assert result.message == "expected a value from case field 'nope', but case t-1 has none"
    assert not verdict('{"label": "x"}', classification="missing", field="label").ran


def test_python_checks_pass_fail_and_explain():
    functions = {
        "m:ok": lambda reply, case: None,
        "m:true": lambda reply, case: True,
        "m:false": lambda reply, case: False,
        "m:says": lambda reply, case: f"wanted {case.label}",
    }

    def raises(reply, case):
        raise AssertionError("too\nlong")

    functions["m:asserts"] = raises
    load = functions.__getitem__
    assert judge(check(python="m:ok"), "r", CASE, load).passed
    assert judge(check(python="m:true"), "r", CASE, load).passed
    assert judge(check(python="m:false"), "r", CASE, load).message == 'expected m:false to accept the reply, came "r"'
    assert judge(check(python="m:says"), "r", CASE, load).message == "wanted billing"
    assert judge(check(python="m:asserts"), "r", CASE, load).message == "too long"


def test_where_selects_cases():
    spec = check(equals="x", where={"label": "billing"})
    assert spec.applies_to(CASE)
    assert not spec.applies_to(Case("t-2", {"label": "shipping"}))


@pytest.mark.parametrize(("text", "message"), [
    ("checks: []", "checks"),
    ("checks:\n  - name: a\n    equals: x\n    regex: y", "exactly one kind"),
    ("checks:\n  - name: a", "names none"),
    ("checks:\n  - name: a\n    equals: x\n  - name: a\n    equals: y", "appear more than once"),
    ("checks:\n  - name: bad-name\n    equals: x", "Python identifier"),
    ("checks:\n  - name: a\n    regex: '('", "does not compile"),
    ("checks:\n  - name: a\n    python: nofunction", "module:function"),
    ("checks:\n  - name: a\n    python: ..evil:fn", "no leading dots"),  # issue 35: was a TypeError line
    ("checks:\n  - name: a\n    python: .helpers:fn", "no leading dots"),
    ("checks:\n  - name: a\n    python: 'helpers.:fn'", "module:function"),
    ("checks:\n  - name: a\n    json-schema: {$ref: 'http://127.0.0.1:9/s.json'}", "points outside the schema"),
    ("checks:\n  - name: a\n    json-schema: {items: {$ref: 'file:///etc/hostname'}}", "points outside the schema"),
    ("checks:\n  - name: a\n    json-schema: {$defs: {a: {$id: 'http://x/', $ref: 'b.json'}}}", "'b.json'"),
    ("checks:\n  - name: a\n    json-schema: {type: 12}", "not a valid JSON Schema"),
    ("checks:\n  - name: a\n    equals: x\n    colour: red", "unknown key 'checks.0.colour'"),
    ("checks:\n  - name: a\n    length: {}", "needs 'min', 'max'"),
])
def test_a_bad_checks_file_is_one_line_naming_the_file(text, message):
    with pytest.raises(InputError, match=message) as error:
        parse_checks(text, "suite/checks.yaml")
    assert str(error.value).startswith("suite/checks.yaml: ")
    assert "\n" not in str(error.value)


def test_critical_checks_are_listed():
    parsed = parse_checks("checks:\n  - {name: a, equals: x, critical: true}\n  - {name: b, equals: y}", "f")
    assert parsed.critical == ("a",)
    assert [c.kind for c in parsed.checks] == ["equals", "equals"]


def test_llm_rubric_reads_the_judges_verdict():
    spec = check(**{"llm-rubric": "The reason names the customer's problem"})
    assert spec.kind == "llm-rubric" and spec.call == "judge"
    assert judge(spec, '{"pass": true, "reason": "names the refund"}', CASE).passed
    failed = judge(spec, '{"pass": false, "reason": "says nothing\\nabout it"}', CASE)
    assert failed.message == "expected the rubric met, came the judge's fail: says nothing about it"
    assert judge(spec, '{"verdict": "yes"}', CASE).message.startswith(
        "expected the judge's verdict {\"pass\": true|false, \"reason\": ...}, came {\"verdict\": \"yes\"}")
    assert judge(spec, "yes", CASE).message.startswith("expected the judge's verdict as JSON, came unparseable")
    with pytest.raises(ValueError, match="takes no 'field'"):
        check(**{"llm-rubric": "x", "field": "reason"})


def test_llm_rubric_requests_show_the_judge_the_rubric_case_and_reply():
    from evalkit.core.config import ModelConfig
    from evalkit.judging.llm_rubric import JUDGE_PROMPT, VERDICT_SCHEMA, rubric_request

    judge_model = ModelConfig(name="judge-1", provider="openai", options={"temperature": 0})
    request = rubric_request("Names the problem", CASE, '{"label": "billing"}', judge_model)
    assert request.model == "judge-1" and request.options == {"temperature": 0}
    assert request.response_schema == VERDICT_SCHEMA
    assert request.messages[0].content == JUDGE_PROMPT
    user = request.messages[1].content
    assert user.startswith("Case t-1: {") and '"label": "billing"' in user and user.endswith("Rubric: Names the problem")


def test_a_schema_refers_within_itself_and_fetches_nothing_even_if_its_checks_yaml_was_not_read():
    local = check(**{"json-schema": {"$defs": {"label": {"enum": ["billing", "bug"]}},
                                     "properties": {"label": {"$ref": "#/$defs/label"}}}})
    assert verdict('{"label": "bug"}', **{"json-schema": local.options}).passed
    assert not verdict('{"label": "other"}', **{"json-schema": local.options}).passed
    # a spec that bypassed checks.yaml's refusal (built in code): the reference resolves to nothing, never to a fetch
    # (issue 35: a replay of 5 cases made 5 requests, and a file's text reached report.json)
    requests: list[str] = []

    class Schema(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            requests.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Schema) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            for ref in (f"http://127.0.0.1:{server.server_address[1]}/schema.json", "file:///etc/hostname",
                        "#/$defs/nowhere"):
                spec = CheckSpec.model_construct(name="c", kind="json-schema", options={"$ref": ref}, where={},
                                                 field=None)
                result = judge(spec, '"x"', CASE)
                assert not result.ran and result.message.startswith("json-schema: "), result
        finally:
            server.shutdown()
    assert requests == []


def test_checks_naming_a_field_no_case_has_or_a_where_no_case_matches_are_refused():
    cases = [Case("refund-window", {"question": "q", "context": "c", "kind": "billing"}),
             Case("late-fee", {"question": "q", "kind": "fees"})]
    ok = parse_checks("checks:\n  - {name: f, faithfulness: {context: context}}\n"
                      "  - {name: w, equals: x, where: {kind: fees}}", "s/checks.yaml")
    ok.check_cases(cases, "s/checks.yaml")  # some cases lack `context`: those could not run, case by case
    refusals = {
        "faithfulness: {context: passages}": "check c: faithfulness.context names case field 'passages', which no "
                                             "case of the dataset has (its cases have: context, kind, question)",
        "equals: {case: expected}": "check c: equals names case field 'expected'",
        "one-of: {case: labels}": "check c: one-of names case field 'labels'",
        "field: n, number: {expected: {case: answer}}": "check c: number.expected names case field 'answer'",
        "classification: label": "check c: classification names case field 'label'",
        "answer-relevancy: {question: query}": "check c: answer-relevancy.question names case field 'query'",
        "pairwise: {against: {case: reference}}": "check c: pairwise.against names case field 'reference'",
        "equals: x, where: {lang: en}": "check c: where names case field 'lang'",
        "equals: x, where: {kind: billng}": "check c: where kind='billng' matches no case of the dataset, so the "
                                           "check would never run (kind takes 'billing', 'fees')",
    }
    for entry, message in refusals.items():
        checks = parse_checks(f"checks:\n  - {{name: c, {entry}}}", "s/checks.yaml")
        with pytest.raises(InputError) as refused:
            checks.check_cases(cases, "s/checks.yaml")
        assert str(refused.value).startswith(f"s/checks.yaml: {message}"), str(refused.value)
        assert "\n" not in str(refused.value)


def test_a_regex_check_runs_under_a_time_budget_in_a_bounded_child():
    # issue 35: a 35-character reply against ^(\w+\s?)*$ hung the run (Python's re backtracks without end on it)
    code = """if True:
        import json
        from evalkit.core.dataset import Case
        from evalkit.judging.checks import CheckSpec, judge
        for pattern, reply in (("^(\\\\w+\\\\s?)*$", "aaaa aaaa aaaa aaaa aaaa aaaa aaaa!"),
                               ("^(\\\\w|\\\\w\\\\w)*$", "a" * 45 + "!")):
            spec = CheckSpec.model_validate({"name": "c", "regex": pattern})
            result = judge(spec, reply, Case("t"))
            print(json.dumps([result.passed, result.ran, result.message]))
    """
    done = python_bounded(code, timeout_s=60)
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first == [False, True, 'expected a match of /^(\\w+\\s?)*$/, came "aaaa aaaa aaaa aaaa aaaa aaaa aaaa!"']
    # a pattern that backtracks without end even for the regex module: stopped at its budget, and the check could
    # not run, saying so (never a hang, never a plain failure)
    assert second == [False, False, "regex /^(\\w|\\w\\w)*$/ ran past its time budget of 0.5 s on a reply of 46 "
                                    "characters (evalkit.core.patterns)"]
