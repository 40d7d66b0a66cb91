"""The documentation site builds with `mkdocs build --strict`, and its reference pages are generated from evalkit."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from evalkit.cli.main import SUBCOMMANDS
from evalkit.core.config import RunConfig
from evalkit.core.policy import Policy
from evalkit.render.reference import option_rows

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_every_configuration_option_is_in_the_reference(site):
    text = _text(site / "reference" / "configuration" / "index.html")
    missing = [key for key, *_ in option_rows(RunConfig) if key not in text]
    assert not missing and len(option_rows(RunConfig)) > 50


def test_every_policy_key_is_in_the_reference(site):
    text = _text(site / "reference" / "policy" / "index.html")
    assert all(key in text for key, *_ in option_rows(Policy))
    assert '"additionalProperties": false' in text  # the schema a project's editor checks policies with


def test_every_rule_is_in_the_policy_reference(site):
    from evalkit.gate.rules import RULES

    text = _text(site / "reference" / "policy" / "index.html")
    # the summaries' inline code loses its backticks on the page
    assert len(RULES) > 20 and all(rule.id in text and rule.summary.replace("`", "") in text for rule in RULES)


def test_every_check_kind_is_in_the_checks_reference(site):
    from evalkit.core.registry import entries
    from evalkit.judging.check_kind import CHECK_KINDS, check_kind

    text = " ".join(_text(site / "reference" / "checks" / "index.html").split())
    kinds = entries(CHECK_KINDS)
    assert len(kinds) > 20
    reads = {name: check_kind(name).reads for name in kinds}
    reads |= {name: f"judge (of the {check_kind(name).shown})" for name, read in reads.items() if read == "judge"}
    assert all(f"{name} {read} evalkit" in text for name, read in reads.items())
    assert "trajectory-goal judge (of the trajectory) evalkit" in text and "steps trajectory evalkit" in text
    assert "knowledge-retention judge (of the conversation) evalkit" in text


def test_every_public_name_is_in_the_api_reference(site):
    import evalkit

    text = _text(site / "reference" / "api" / "index.html")
    assert all(name in text for name in evalkit.__all__)


def test_every_subcommand_help_is_in_the_reference(site):
    text = _text(site / "reference" / "commands" / "index.html")
    for name in SUBCOMMANDS:
        if name != "run":
            assert f"usage: evalkit {name} " in text and f"example: {SUBCOMMANDS[name].example}" in " ".join(
                text.split()), name


def test_option_rows_flatten_nested_models_and_say_defaults():
    rows = {key: (kind, default) for key, kind, default, _ in option_rows(RunConfig)}
    assert rows["mode"][1] == "`'replay'`" and rows["policy_from"] == ("str | None", "null")
    assert "run.concurrency" in rows and "model.name" in rows and rows["suite.name"][1] == "required"


def test_every_docs_page_is_in_the_navigation():
    from helpers.docs_text import pages

    listed = {page.relative_to(PROJECT_ROOT / "docs") for page in pages()[1:]}
    on_disk = {page.relative_to(PROJECT_ROOT / "docs") for page in (PROJECT_ROOT / "docs").rglob("*.md")}
    assert listed == on_disk


def test_the_readme_stays_short_and_links_every_guide():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300
    linked = set(re.findall(r"\]\((docs/[^)]+\.md)\)", readme))
    guides = {f"docs/{p.relative_to(PROJECT_ROOT / 'docs').as_posix()}" for p in (PROJECT_ROOT / "docs").rglob("*.md")
              if p.name != "index.md"}
    assert guides <= linked, sorted(guides - linked)
