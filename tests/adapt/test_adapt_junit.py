"""The JUnit source: real JUnit XML from pytest 9.2.0 and Maven surefire 3.2.5 (tests/corpus/adapt/junit/, see its
README), gated through the real command; bad inputs derived from those files in the tests; both producers run
again (Maven where installed) and their new files checked to map to the same tests and decisions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli, evalkit_env
from helpers.corpus import WHERE_TO_GET, corpus_root

from evalkit.adapt.framework import gate_runs
from evalkit.adapt.junit import read_junit
from evalkit.core.errors import InputError
from evalkit.core.policy import STRICT_DEFAULT
from evalkit.gate.decision import Verdict

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project
JUNIT = PROJECT_ROOT / "tests/corpus/adapt/junit"
PYTEST = JUNIT / "pytest"
SUREFIRE = JUNIT / "surefire"


def gate(baseline: Path, candidate: Path) -> Any:
    return gate_runs(STRICT_DEFAULT, read_junit(baseline), read_junit(candidate))


def refused(tmp_path: Path, text: bytes | str, name: str = "bad.xml") -> str:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(InputError) as error:
        read_junit(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def test_pytest_outcomes_map_as_the_readme_says() -> None:
    outcomes = {t.nodeid: t.outcome for t in read_junit(PYTEST / "candidate.xml").tests}
    assert outcomes == {
        "arith_checks::test_add": "passed", "arith_checks::test_subtract": "failed",
        "arith_checks::test_divide": "passed", "arith_checks::test_square[2]": "passed",
        "arith_checks::test_square[3]": "passed", "arith_checks::test_power": "skipped",
        "arith_checks::test_float_sum": "skipped", "arith_checks.TestModulo::test_modulo": "error"}


def test_a_regression_a_setup_error_and_a_fix_from_pytest() -> None:
    result = gate(PYTEST / "baseline.xml", PYTEST / "candidate.xml")
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("arith_checks.TestModulo::test_modulo", "arith_checks::test_subtract")
    assert result.decision.fixed == ("arith_checks::test_divide",)
    assert result.decision.messages["arith_checks::test_subtract"].startswith("assert 17 == 3")
    assert result.candidate["eval"]["suite"] == "junit:arith"
    assert result.candidate["eval"]["model"] == "unrecorded"
    assert any("records no model" in warning for warning in result.decision.warnings)
    assert any("records no dataset" in warning for warning in result.decision.warnings)


def test_a_regression_an_error_and_a_fix_from_maven_surefire() -> None:
    result = gate(SUREFIRE / "baseline", SUREFIRE / "candidate")
    assert result.decision.decision is Verdict.BLOCK
    assert result.decision.regressed == ("evalkit.fixtures.ArithTest::modulo", "evalkit.fixtures.ArithTest::subtract")
    assert result.decision.fixed == ("evalkit.fixtures.ArithTest::divide",)
    assert result.decision.messages["evalkit.fixtures.ArithTest::subtract"] == "expected: <3> but was: <17>"
    assert result.decision.outcomes == {"error": 1, "failed": 1, "passed": 2, "skipped": 1}
    assert read_junit(SUREFIRE / "candidate").tool == "JUnit XML (Maven surefire)"


def test_a_surefire_folder_and_its_file_read_alike() -> None:
    folder = read_junit(SUREFIRE / "candidate")
    file = read_junit(SUREFIRE / "candidate/TEST-evalkit.fixtures.ArithTest.xml")
    assert folder.tests == file.tests and folder.key == file.key


def test_runs_of_different_suites_are_incomparable_naming_the_task() -> None:
    result = gate(PYTEST / "baseline.xml", SUREFIRE / "candidate")
    assert result.decision.decision is Verdict.INCOMPARABLE
    assert result.decision.reasons[0].startswith("task: baseline ran task 'arith', candidate task "
                                                 "'evalkit.fixtures.ArithTest'")


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    data = (PYTEST / "candidate.xml").read_bytes()
    assert "not well-formed XML" in refused(tmp_path, data[: len(data) // 2])


def test_a_passed_test_written_twice_is_two_tests_told_apart_by_position(tmp_path: Path) -> None:
    text = (PYTEST / "candidate.xml").read_text()
    start = text.index('<testcase classname="arith_checks" name="test_add"')
    case = text[start:text.index("/>", start) + 2]
    (tmp_path / "twice.xml").write_text(text.replace(case, case + case))
    run = read_junit(tmp_path / "twice.xml")
    ids = [t.nodeid for t in run.tests]
    assert ids.count("arith_checks::test_add") == 1 and ids.count("arith_checks::test_add (#2)") == 1
    assert any("2 distinct tests share the id 'arith_checks::test_add'" in note for note in run.notes)


def test_two_suites_of_one_name_holding_one_title_keep_both_tests(tmp_path: Path) -> None:
    suite = '<testsuite name="s"><testcase classname="c" name="t"/></testsuite>'
    path = tmp_path / "twice.xml"
    path.write_text(f"<testsuites>{suite}{suite}</testsuites>")
    assert [t.nodeid for t in read_junit(path).tests] == ["c::t", "c::t (#2)"]


@pytest.mark.parametrize(("text", "expected"), [
    ("<html><body/></html>", "the root element is <html>"),
    ('<testsuites name="x"><testsuite name="s"/></testsuites>', "holds no <testcase>"),
    ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite name="s"><testcase name="t"/></testsuite>',
     "document type declaration"),
    ('<testsuite name="s"><testcase classname="c"/></testsuite>', "has no name attribute"),
])
def test_what_is_not_junit_xml_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in refused(tmp_path, text)


def test_an_empty_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no .xml files"):
        read_junit(tmp_path)


@pytest.mark.parametrize(("baseline", "candidate", "code"), [
    (PYTEST / "baseline.xml", PYTEST / "candidate.xml", 1),
    (PYTEST / "candidate.xml", PYTEST / "candidate.xml", 0),
    (PYTEST / "baseline.xml", SUREFIRE / "candidate", 2),
    (PYTEST / "baseline.xml", PYTEST / "missing.xml", 3),
])
def test_the_command_exit_codes(baseline: Path, candidate: Path, code: int) -> None:
    done = evalkit_cli("evalkit.cli.main", "adapt", "junit", str(baseline), str(candidate))
    assert done.returncode == code, done.stderr
    if code == 3:
        assert len(done.stderr.strip().splitlines()) == 1 and "missing.xml" in done.stderr


@pytest.mark.slow
def test_pytest_regenerates_files_that_map_alike(tmp_path: Path) -> None:
    shutil.copy(PYTEST / "arith_checks.py", tmp_path)
    for variant in ("baseline", "candidate"):
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir=.", "-c",
                        "/dev/null", "arith_checks.py", f"--junitxml={variant}.xml", "-o", "junit_suite_name=arith"],
                       cwd=tmp_path, env={**evalkit_env(), "ARITH_VARIANT": variant}, capture_output=True,
                       timeout=300)
        assert read_junit(tmp_path / f"{variant}.xml").tests == read_junit(PYTEST / f"{variant}.xml").tests
    fresh, kept = (gate(tmp_path / "baseline.xml", tmp_path / "candidate.xml"),
                   gate(PYTEST / "baseline.xml", PYTEST / "candidate.xml"))
    assert fresh.decision.record() == kept.decision.record()


@pytest.mark.slow
@pytest.mark.external
@pytest.mark.skipif(shutil.which("mvn") is None, reason="Maven (mvn) is not installed (Debian: apt-get install maven)")
def test_maven_surefire_regenerates_files_that_map_alike(tmp_path: Path) -> None:
    project = tmp_path / "maven"
    shutil.copytree(JUNIT / "maven", project, ignore=shutil.ignore_patterns("target"))
    for variant in ("baseline", "candidate"):
        done = subprocess.run(["mvn", "-q", "-o", "test", f"-Dvariant={variant}"], cwd=project, capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0 and "offline mode" in done.stdout:  # a machine whose Maven cache lacks a plugin
            done = subprocess.run(["mvn", "-q", "test", f"-Dvariant={variant}"], cwd=project, capture_output=True,
                                  text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:]
        shutil.move(project / "target/surefire-reports", tmp_path / variant)
        shutil.rmtree(project / "target")
        assert read_junit(tmp_path / variant).tests == read_junit(SUREFIRE / variant).tests
    fresh, kept = gate(tmp_path / "baseline", tmp_path / "candidate"), gate(SUREFIRE / "baseline",
                                                                            SUREFIRE / "candidate")
    assert fresh.decision.record() == kept.decision.record()


WILD = corpus_root() / "wild/junit"  # the shared corpus (tests/helpers/corpus.py)


@pytest.fixture
def wild() -> None:
    if not WILD.is_dir():
        pytest.skip(f"no shared corpus at {WILD.parent.parent}: {WHERE_TO_GET}")


@pytest.mark.usefixtures("wild")
def test_nested_suites_under_a_root_testsuite_are_all_read() -> None:
    # EnricoMi's testsuite-root.xml: five tests, four of them in suites nested under the root <testsuite>
    run = read_junit(WILD / "enricomi/testsuite-root.xml")
    assert len(run.tests) == 5


@pytest.mark.usefixtures("wild")
def test_disabled_and_not_run_tests_are_skipped_not_passed() -> None:
    tst = Counter(t.outcome for t in read_junit(WILD / "enricomi/tst__disabled.xml").tests)
    assert tst["skipped"] == 5  # tst's status="disabled", no child element
    disabled = read_junit(WILD / "mikepenz/issues__testDisabled.xml")
    assert Counter(t.outcome for t in disabled.tests)["skipped"] == 10
    assert any(t.message == "not run (status='disabled')" for t in disabled.tests)


def test_a_disabled_candidate_test_blocks_like_a_skipped_one(tmp_path: Path) -> None:
    text = (PYTEST / "baseline.xml").read_text()
    start = text.index('<testcase classname="arith_checks" name="test_add"')
    case = text[start:text.index("/>", start) + 2]
    for variant, replacement in (("notrun", case.replace("<testcase ", '<testcase status="notrun" '
                                                                      'result="suppressed" ')),
                                 ("skipped", case[:-2] + "><skipped/></testcase>")):
        (tmp_path / f"{variant}.xml").write_text(text.replace(case, replacement))
        decision = gate(PYTEST / "baseline.xml", tmp_path / f"{variant}.xml").decision
        assert decision.decision is Verdict.BLOCK and "arith_checks::test_add" in decision.regressed


@pytest.mark.usefixtures("wild")
def test_gotestsum_reruns_are_one_test_and_jest_same_titles_stay_apart() -> None:
    reruns = read_junit(WILD / "mikepenz/junit-server-test__report.xml")
    ids = [t.nodeid for t in reruns.tests]
    assert ids.count("github.com/example/example/server/v8/channels/api4::TestWebSocketReconnectRace") == 1
    mocha = read_junit(WILD / "enricomi/mocha__latex-utensils.xml")
    assert any(" (#2)" in t.nodeid for t in mocha.tests)
    assert any("kept apart by their position" in note for note in mocha.notes)


@pytest.mark.usefixtures("wild")
def test_declared_totals_the_cases_contradict_are_warnings() -> None:
    run = read_junit(WILD / "enricomi/xunit__xunit.xml")
    decision = gate_runs(STRICT_DEFAULT, run, run).decision
    assert any("declares tests=173 but holds 2" in warning for warning in decision.warnings)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_dtd_is_refused_in_any_encoding(tmp_path: Path, encoding: str) -> None:
    text = (f'<?xml version="1.0" encoding="{encoding.upper()}"?><!DOCTYPE testsuite [<!ATTLIST testcase name CDATA "invented">]>'
            '<testsuite name="s"><testcase classname="c"/></testsuite>')
    assert "document type declaration" in refused(tmp_path, text.encode(encoding))


def test_xml_declared_as_utf7_is_refused_in_one_line(tmp_path: Path) -> None:
    text = '<?xml version="1.0" encoding="UTF-7"?>+ADw-!DOCTYPE x+AD4-<testsuite name="s"/>'
    assert "an encoding no test runner writes" in refused(tmp_path, text.encode())
