"""`evalkit.plugins`: one public module for the extension points, and one registry that finds evalkit's built-ins
exactly as it finds a third party's (entry points), with no second list of them in the code."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from conftest import evalkit_env, report
from helpers.wheel import install_offline

import evalkit.plugins
from evalkit.core import registry
from evalkit.core.errors import ConfigError
from evalkit.core.policy import Policy, policy_sha256

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["entry-points"]


def _typed_names() -> set[str]:
    tree = ast.parse(Path(evalkit.plugins.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_every_name_of_the_plugin_face_is_typed_listed_and_resolves() -> None:
    assert set(evalkit.plugins.__all__) == _typed_names()
    for name in evalkit.plugins.__all__:
        assert getattr(evalkit.plugins, name) is not None, name
    with pytest.raises(AttributeError, match="has no attribute 'provider_specs'"):
        getattr(evalkit.plugins, "provider_specs")  # noqa: B009


def test_importing_the_plugin_face_imports_nothing_else_of_evalkit() -> None:
    code = "import sys, evalkit.plugins; print(sorted(m for m in sys.modules if m.startswith('evalkit.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "['evalkit.plugins']"


@pytest.mark.parametrize("kind", [evalkit.plugins.PROVIDERS, evalkit.plugins.SOURCES, evalkit.plugins.CHECK_KINDS],
                         ids=lambda k: k.group)
def test_a_source_tree_without_installed_metadata_still_finds_every_builtin(installed_entry_points: list[EntryPoint],
                                                                           kind: registry.Kind[object]) -> None:
    # nothing installed at all: the entries come from evalkit's own pyproject.toml, the one declaration of them
    found = registry.entries(kind)
    assert {name: entry.target for name, entry in found.items()} == ENTRY_POINTS[kind.group]
    assert {entry.owner for entry in found.values()} == {"evalkit"}
    for name in found:
        assert kind.name_of(registry.load(kind, name)) == name


def test_a_third_party_source_is_a_peer_of_the_builtins(installed_entry_points: list[EntryPoint]) -> None:
    installed = installed_entry_points
    installed.append(EntryPoint("junit-again", "evalkit.adapt.junit:SOURCE", evalkit.plugins.SOURCES.group))
    with pytest.raises(ConfigError, match=r"source 'junit-again' \(from a third party\): evalkit.adapt.junit:SOURCE "
                                          r"is not a Source named 'junit-again'"):
        registry.load(evalkit.plugins.SOURCES, "junit-again")
    installed.append(EntryPoint("junit", "somewhere.else:SOURCE", evalkit.plugins.SOURCES.group))
    registry.forget()  # entries are read once per process; a test that installs one reads them again
    with pytest.raises(ConfigError, match=r"source 'junit' is registered twice, by evalkit "
                                          r"\(evalkit.adapt.junit:SOURCE\) and by a third party"):
        registry.entries(evalkit.plugins.SOURCES)


def test_an_unknown_name_lists_what_is_installed() -> None:
    with pytest.raises(ConfigError, match=r"provider 'nope' is not installed \(installed: anthropic, azure, "):
        registry.load(evalkit.plugins.PROVIDERS, "nope")


# -- a real third-party gate rule, installed with pip ------------------------------------------------------------

TOY_RULE = PROJECT_ROOT / "tests" / "helpers" / "plugins" / "evalkit-toy-rule"


def _gate(tmp_path: Path, policy: str, site: Path | None) -> subprocess.CompletedProcess[str]:
    """`evalkit gate` of two authored reports (one test fails on both sides: no regression) under a policy file."""
    reports = {}
    for side in ("baseline", "candidate"):
        reports[side] = tmp_path / f"{side}.json"
        reports[side].write_text(json.dumps(report({"test_a": "passed", "test_b": "failed"})), encoding="utf-8")
    (tmp_path / "policy.yaml").write_text(policy, encoding="utf-8")
    env = {**evalkit_env(), **({"PYTHONPATH": str(site)} if site else {})}
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "gate", str(reports["baseline"]),
                           str(reports["candidate"]), "--policy", str(tmp_path / "policy.yaml")],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_a_gate_rule_from_another_package_decides_only_where_a_policy_names_it(tmp_path: Path) -> None:
    site = install_offline(TOY_RULE, tmp_path)
    named = "name: with-toy\nrules:\n  toy_max_failed: {max_failed: 0}\n"

    blocked = _gate(tmp_path, named, site)
    assert blocked.returncode == 1, blocked.stderr
    assert "1 failed test(s); the toy rule allows 0" in blocked.stdout

    # installed, but the policy does not name it: evalkit's own rules alone (no regression: GO)
    unnamed = _gate(tmp_path, "name: without-toy\n", site)
    assert unnamed.returncode == 0 and unnamed.stdout.startswith("decision: GO"), unnamed.stdout + unnamed.stderr

    # options the rule's own model refuses, and a policy naming a rule nobody installed: one line, exit 3
    bad = _gate(tmp_path, "rules:\n  toy_max_failed: {max_fails: 0}\n", site)
    assert bad.returncode == 3 and "policy rules.toy_max_failed" in bad.stderr and "max_fails" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    missing = _gate(tmp_path, named, None)
    assert missing.returncode == 3, missing.stdout + missing.stderr
    assert "gate rule 'toy_max_failed' is not installed" in missing.stderr


def test_a_policy_that_names_no_plugin_rule_keeps_its_identity() -> None:
    # `rules:` came after policies were first fingerprinted: left at its default, it leaves the identity alone
    assert policy_sha256(Policy(name="p")) == policy_sha256(Policy(name="p", rules={}))
    assert policy_sha256(Policy(name="p")) != policy_sha256(Policy(name="p", rules={"x": {}}))
