"""tests/helpers/no_hidden_skips.py: under CI=true a skipped test fails the run; locally it stays a skip."""

from __future__ import annotations

import pytest

SUITE = """
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="tool X is not installed")
def test_needs_a_tool():
    pass

def test_skips_itself():
    pytest.skip("no GPU here")

@pytest.mark.xfail(reason="known bug", strict=True)
def test_known_bug():
    assert False
"""


@pytest.mark.parametrize(("ci", "expected"), [("true", {"passed": 1, "errors": 1, "failed": 1, "xfailed": 1}),
                                               ("", {"passed": 1, "skipped": 2, "xfailed": 1})])
def test_a_skip_fails_only_in_ci(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str,
                                 expected: dict[str, int]) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest('pytest_plugins = ["helpers.no_hidden_skips"]\n')
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(**expected)
    if ci:
        result.stdout.fnmatch_lines(["*skipped under CI=true, where every test must run: *tool X is not installed*",
                                     "*skipped under CI=true, where every test must run: *no GPU here*"])
