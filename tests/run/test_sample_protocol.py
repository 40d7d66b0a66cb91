"""The repeated-sample protocol is the one place that uses pytest's and pytest-json-report's private parts, and it
is pinned to the versions it was written against: an upgrade outside them fails here, loudly, rather than as wrong
repeat counts (the protocol's behaviour is tested end to end in tests/run/test_run_repeats.py)."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

import evalkit
from evalkit.run.sample_protocol import SUPPORTED, shown_sample

PACKAGE = Path(evalkit.__file__).parent
PROTOCOL = PACKAGE / "run" / "sample_protocol.py"
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def _major_minor(text: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", text).groups()  # type: ignore[union-attr]
    return int(major), int(minor)


@pytest.mark.parametrize("distribution", sorted(SUPPORTED))
def test_the_installed_version_is_one_the_protocol_supports(distribution):
    low, high = SUPPORTED[distribution]
    installed = _major_minor(version(distribution))
    assert low <= installed < high, (f"{distribution} {version(distribution)} is outside what "
                                     f"evalkit/run/sample_protocol.py was written against ({low} to below {high}): "
                                     "check its private uses, then widen SUPPORTED and pyproject's bounds")


@pytest.mark.parametrize("distribution", sorted(SUPPORTED))
def test_pyproject_bounds_the_dependency_as_supported_says(distribution):
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    spec = next(d for d in declared if re.match(rf"{re.escape(distribution)}\s*[<>=]", d))
    low, high = SUPPORTED[distribution]
    assert f">={low[0]}.{low[1]}" in spec and f"<{high[0]}" in spec, spec


PRIVATE_ATTRIBUTES = ("_json_report", "_get_teardown_reports")
"""Private attributes of pytest-json-report's items and of pytest's terminal reporter that evalkit touches."""


def _private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("_pytest",
                                                                                                "pytest_jsonreport"):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in ("_pytest", "pytest_jsonreport")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith(PRIVATE_ATTRIBUTES):
            found.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(
                PRIVATE_ATTRIBUTES):
            found.append(node.value)
    return found


def test_no_module_but_the_protocol_uses_a_private_name_of_pytest_or_pytest_json_report():
    assert _private_uses(PROTOCOL)  # the check sees what the protocol uses
    elsewhere = {str(p.relative_to(PACKAGE)): uses for p in PACKAGE.rglob("*.py")
                 if p != PROTOCOL and (uses := _private_uses(p))}
    assert elsewhere == {}


def test_the_private_names_the_protocol_uses_exist_in_the_installed_versions():
    from _pytest.runner import runtestprotocol

    assert callable(runtestprotocol)
    import pytest_jsonreport.plugin as json_report

    assert "_json_report_extra" in Path(json_report.__file__).read_text(encoding="utf-8")
    from _pytest.terminal import TerminalReporter

    assert callable(TerminalReporter._get_teardown_reports)  # the lookup index_teardown_reports replaces


@pytest.mark.parametrize("outcomes, shown", [(["passed", "passed"], 0), (["passed", "skipped", "failed"], 2),
                                             (["passed", "skipped"], 1), (["error", "failed"], 0),
                                             (["xpassed", "passed"], 0)])
def test_the_shown_sample_is_the_first_failing_else_the_first_not_passing(outcomes, shown):
    assert shown_sample(outcomes) == shown
