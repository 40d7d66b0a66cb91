"""decision.xml: the decision as JUnit XML, read back by a parser and by junitparser (what CI reporters use)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
from conftest import evalkit_cli, report, write_json

from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.records.report_reader import report_from_mapping
from evalkit.render.junit import junit_names, render_junit, xml_safe

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project


def _cases(xml: str) -> dict[tuple[str, str], ET.Element]:
    root = ET.fromstring(xml.encode("utf-8"))
    return {(c.get("classname", ""), c.get("name", "")): c for c in root.iter("testcase")}


def _render(base: dict, cand: dict, policy: Policy | None = None) -> str:
    policy = policy or Policy(critical=("test_crit",))
    b, c = report_from_mapping(base, "base"), report_from_mapping(cand, "cand")
    return render_junit(decide(policy, b, c), c)


def test_names_split_as_pytest_junitxml_splits_them():
    assert junit_names("suites/x/test_a.py::TestB::test_c[p::q]") == ("suites.x.test_a.TestB", "test_c[p::q]")
    assert junit_names("test_triage.py::test_label[a b]") == ("test_triage", "test_label[a b]")
    assert junit_names("docs/guide.txt") == ("docs.guide.txt", "docs/guide.txt")


def test_regressions_critical_and_missing_tests_are_failures_with_their_messages():
    base = report({"test_ok": "passed", "test_reg": "passed", "test_crit": "passed", "test_known": "failed",
                   "test_gone": "passed", "test_skip": "skipped"})
    cand = report({"test_ok": "passed", "test_reg": "failed", "test_crit": "failed", "test_known": "failed",
                   "test_new": "failed", "test_skip": "skipped"})
    cand["tests"][1]["call"] = {"outcome": "failed", "crash": {"message": "AssertionError: assert 'p1' == 'p0'"}}
    xml = _render(base, cand)
    cases = _cases(xml)
    reg = cases[("test_triage", "test_reg")].find("failure")
    assert reg is not None and reg.get("type") == "regression" and "assert 'p1' == 'p0'" in reg.get("message", "")
    crit = cases[("test_triage", "test_crit")].find("failure")
    assert crit is not None and crit.get("type") == "critical"
    gone = cases[("test_triage", "test_gone")].find("failure")
    assert gone is not None and "absent from the candidate" in gone.get("message", "")
    # a known failure and a new failing test under `new_failing: review` do not count against the candidate
    for name, status in (("test_known", "known failure"), ("test_new", "new failing test")):
        case = cases[("test_triage", name)]
        assert case.find("failure") is None
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["outcome"] == "failed" and status in props["evalkit.status"]
    assert cases[("test_triage", "test_skip")].find("skipped") is not None
    assert cases[("test_triage", "test_ok")].find("failure") is None
    decision = cases[("evalkit", "decision")].find("failure")
    assert decision is not None and decision.get("message", "").startswith("BLOCK: ")
    suite = ET.fromstring(xml.encode()).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("8", "4", "0", "1")
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert props["evalkit.decision"] == "block"


def test_new_failing_tests_are_failures_when_the_policy_blocks_on_them():
    xml = _render(report({"test_ok": "passed"}), report({"test_ok": "passed", "test_new": "failed"}),
                  Policy(new_failing="block"))
    failure = _cases(xml)[("test_triage", "test_new")].find("failure")
    assert failure is not None and failure.get("type") == "new_failing"


def test_incomparable_is_an_error_of_the_decision_testcase_and_go_is_clean():
    xml = _render(report({"test_ok": "passed"}), report({"test_ok": "passed"}, dataset_sha="other"))
    error = _cases(xml)[("evalkit", "decision")].find("error")
    assert error is not None and error.get("message", "").startswith("INCOMPARABLE: ")
    go = _render(report({"test_ok": "passed"}), report({"test_ok": "passed"}))
    assert not any(c.find("failure") is not None or c.find("error") is not None for c in _cases(go).values())


def test_hostile_messages_stay_well_formed_xml():
    # \x0b and \x0c end a line for str.splitlines, so they come last (messages keep their first line)
    hostile = ("]]></failure><script>alert(1)</script> & \"quotes\" 'x' \x00\x07\x1b[31m \ud800 \ufffe"
               " \u202eRTL বাংলা \x0b\x0c")
    assert xml_safe("a\x00b\x1bc\ud800\tok\n") == "a\\x00b\\x1bc\\ud800\tok\n"
    base = report({"test_reg": "passed"})
    cand = report({"test_reg": "failed"})
    cand["tests"][0]["call"] = {"outcome": "failed", "crash": {"message": hostile}}
    cand["tests"][0]["nodeid"] = "test_triage.py::test_reg"
    xml = _render(base, cand)
    xml.encode("utf-8")  # no lone surrogate survives
    failure = _cases(xml)[("test_triage", "test_reg")].find("failure")
    assert failure is not None
    message = failure.get("message", "")
    assert "<script>alert(1)</script>" in message and "\\x00\\x07\\x1b[31m" in message and "\\ud800" in message
    assert "বাংলা" in message and "\x00" not in message


def test_junitparser_reads_it(tmp_path: Path):
    base = report({"test_ok": "passed", "test_reg": "passed"})
    cand = report({"test_ok": "passed", "test_reg": "failed"})
    path = tmp_path / "decision.xml"
    path.write_text(_render(base, cand), encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1 and suites[0].tests == 3 and suites[0].failures == 2
    results = {case.name: [type(r).__name__ for r in case.result] for case in suites[0]}
    assert results == {"test_ok": [], "test_reg": ["Failure"], "decision": ["Failure"]}


def test_gate_out_writes_decision_xml_beside_decision_json(tmp_path: Path):
    base = write_json(tmp_path / "base.json", report({"test_ok": "passed", "test_reg": "passed"}))
    cand = write_json(tmp_path / "cand.json", report({"test_ok": "passed", "test_reg": "failed"}))
    done = evalkit_cli("evalkit.cli.main", "gate", str(base), str(cand), "--out", str(tmp_path / "decision.json"))
    assert done.returncode == 1, done.stderr
    assert json.loads((tmp_path / "decision.json").read_text())["decision"] == "block"
    assert _cases((tmp_path / "decision.xml").read_text())[("test_triage", "test_reg")].find("failure") is not None


def test_gate_refuses_an_out_path_ending_in_xml_and_a_junit_path_that_is_an_input(tmp_path: Path):
    base = write_json(tmp_path / "base.json", report({"test_ok": "passed"}))
    cand = write_json(tmp_path / "cand.json", report({"test_ok": "passed"}))
    done = evalkit_cli("evalkit.cli.main", "gate", str(base), str(cand), "--out", str(tmp_path / "d.xml"))
    assert done.returncode == 3 and "name a .json file" in done.stderr
    # --out base.out would put its XML over base.xml ... here: the candidate itself named cand.xml
    xml_input = write_json(tmp_path / "c.xml", report({"test_ok": "passed"}))
    done = evalkit_cli("evalkit.cli.main", "gate", str(base), str(xml_input), "--out", str(tmp_path / "c.json"))
    assert done.returncode == 3 and "never overwrites its inputs" in done.stderr, done.stderr
    assert not (tmp_path / "c.json").exists()


def test_a_run_writes_decision_xml_in_its_folder(run_evalkit, tmp_path: Path):
    done = run_evalkit("model=gemma4")
    assert done.returncode == 1, done.stderr
    xml = (tmp_path / "job" / "decision.xml").read_text(encoding="utf-8")
    cases = _cases(xml)
    failure = cases[("test_triage", "test_priority[import-drops-tasks]")].find("failure")
    assert failure is not None and failure.get("type") == "critical" and "assert 'p1' == 'p0'" in failure.get("message", "")
    regressed = cases[("test_triage", "test_summary_is_short_and_specific[where-is-data]")].find("failure")
    assert regressed is not None and regressed.get("type") == "regression"


def test_test_ids_are_escaped_on_the_fast_and_the_careful_path():
    plain = ["test_plain[1]", "test_plain[বাংলা]"]  # nothing to escape: written directly
    tricky = ["test_x[a&b]", 'test_x["q"]', "test_x[<i>]", "test_x[tab\there]"]  # one of them sends all the careful way
    for ids in (plain, [*plain, *tricky, "Test::test_y[a::b]"]):
        outcomes = dict.fromkeys(ids, "passed")
        cases = _cases(_render(report(outcomes), report(outcomes)))
        expected = {("test_triage", i) for i in ids if "::" not in i} | {("evalkit", "decision")}
        if "Test::test_y[a::b]" in ids:
            expected.add(("test_triage.Test", "test_y[a::b]"))
        assert set(cases) == expected


def test_many_passing_tests_from_several_files_are_named_as_junit_names_names_them():
    files = ["a.py", "sub/a.py", "sub/b_test.py"]
    few = {f"{files[i % 3]}::test_x[{i}]": ("failed" if i == 150 else "passed") for i in range(300)}
    many = {f"dir/t{i}.py::test_y[{i}]": "passed" for i in range(300)}
    for outcomes in (few, many):
        data = {"eval": {"suite": "s"}, "tests": [{"nodeid": n, "outcome": o} for n, o in outcomes.items()]}
        xml = _render(data, data)
        got = [k for k in _cases(xml) if k[0] != "evalkit"]
        assert got == [junit_names(nodeid) for nodeid in outcomes]
        # one line per testcase, indented like the rest (the decision's included)
        assert sum(line.startswith("    <testcase ") for line in xml.splitlines()) == len(outcomes) + 1


def test_runs_of_passing_tests_are_written_as_one_id_at_a_time_would_be(monkeypatch):
    """Passing tests are written in bulk per run between the others; files in and out of order, classes, doctest
    ids and more files than one bulk pass takes must come out as junit_names splits each id, in order."""
    import evalkit.render.junit as junit

    ids = [f"suites/a/test_a.py::test_x[{i}]" for i in range(5)] + ["suites/b/test_b.py::test_y[0]",
           "suites/a/test_a.py::test_x[late]", "suites/a/test_a.py::TestK::test_z[p::q]", "docs/guide.txt"]
    ids += [f"f{i}.py::test_w" for i in range(junit._MAX_FILES_IN_BULK + 3)] + ["suites/b/test_b.py::test_y[9]"]
    outcomes = {nodeid: "passed" for nodeid in ids} | {"suites/a/test_a.py::test_x[2]": "failed"}
    cand = {"eval": report({})["eval"], "tests": [{"nodeid": n, "outcome": o} for n, o in outcomes.items()]}
    xml = _render(cand, cand, Policy())
    written = [(c.get("classname"), c.get("name")) for c in ET.fromstring(xml.encode()).iter("testcase")]
    assert written == [junit_names(nodeid) for nodeid in ids] + [("evalkit", "decision")]

    split: list[str] = []  # the ids written one at a time
    monkeypatch.setattr(junit, "junit_names", lambda nodeid, modules=None: split.append(nodeid) or
                        junit_names(nodeid, modules))
    plain = {f"suites/a/test_a.py::test_x[{i}]": "passed" for i in range(1000)} | {"suites/a/test_a.py::t[f]": "failed"}
    cand = {"eval": report({})["eval"], "tests": [{"nodeid": n, "outcome": o} for n, o in plain.items()]}
    written = [(c.get("classname"), c.get("name")) for c in ET.fromstring(_render(cand, cand, Policy())).iter("testcase")]
    assert written == [("suites.a.test_a", nodeid.split("::")[1]) for nodeid in plain] + [("evalkit", "decision")]
    assert split == ["suites/a/test_a.py::t[f]"]  # the thousand passing ones in bulk
