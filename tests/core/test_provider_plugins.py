"""The provider extension point: specs found through the `evalkit.providers` entry points, evalkit's own included,
and a third-party package installed from a local folder and used from config like any built-in provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from evalkit.core import provider_specs as registry
from evalkit.core import registry as plugins_registry
from evalkit.core.config import ModelConfig
from evalkit.core.errors import ConfigError
from evalkit.core.provider_specs import ProviderSpec, provider_specs
from evalkit.live.contract import StopKind, known_stop_reasons

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PLUGIN = PROJECT_ROOT / "tests" / "helpers" / "plugins" / "evalkit-toy-provider"


BUILTIN = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["evalkit.providers"]
"""evalkit's own providers: registered in its pyproject.toml exactly as a third party registers one, and nowhere
else (the registry reads that table in a source tree, and the installed metadata otherwise)."""


def test_the_builtin_providers_are_those_pyproject_registers() -> None:
    assert set(BUILTIN) == {"anthropic", "azure", "bedrock", "gemini", "llamacpp", "ollama", "openai"}
    assert {name: plugins_registry.entries(registry.PROVIDERS)[name].target for name in BUILTIN} == BUILTIN


def test_every_builtin_spec_is_consistent() -> None:
    specs = provider_specs()
    assert set(BUILTIN) <= set(specs)
    for name in BUILTIN:
        spec = specs[name]
        assert spec.name == name and callable(spec.factory)
        # a provider whose client is another package names the extra that installs it; Ollama's is evalkit's own
        # (evalkit.live.providers.jsonhttp), so it needs none
        assert (spec.extra is not None and spec.requirements) or (name == "ollama" and not spec.requirements)
        assert set(spec.stop_reasons.values()) <= {k.value for k in StopKind}
    # the contract's vocabulary is the union of the specs', nothing more
    assert set(known_stop_reasons()) == {r for s in specs.values() for r in s.stop_reasons}


@pytest.fixture
def entry_points(installed_entry_points: list[EntryPoint]) -> list[EntryPoint]:
    """The installed `evalkit.providers` entry points, as the registry reads them, replaced by a list the test fills."""
    return installed_entry_points


TOY = ProviderSpec(name="toy", factory=lambda config: None, stop_reasons={"toy_done": "finished"})
CLASH = ProviderSpec(name="clash", factory=lambda config: None, stop_reasons={"length": "finished"})
WRONG_NAME = ProviderSpec(name="not-me", factory=lambda config: None)


def test_an_entry_point_adds_a_provider_and_its_stop_reasons(entry_points: list[EntryPoint]) -> None:
    entry_points.append(EntryPoint("toy", f"{__name__}:TOY", registry.GROUP))
    assert provider_specs()["toy"] is TOY
    assert set(BUILTIN) < set(provider_specs())


@pytest.mark.parametrize(("name", "target", "message"), [
    ("openai", f"{__name__}:TOY", r"provider 'openai' is registered twice, by evalkit .* and by a third party"),
    ("ghost", "no_such_module_anywhere:SPEC", r"provider 'ghost' .*no_such_module_anywhere:SPEC cannot be loaded"),
    ("wrong", f"{__name__}:WRONG_NAME", r"is not a ProviderSpec named 'wrong'"),
    ("clash", f"{__name__}:CLASH", r"stop reason 'length' is 'truncated' for provider '\w+' but 'finished' for "
                                   r"provider 'clash'"),
])
def test_a_broken_or_clashing_plugin_is_refused_in_one_line(entry_points: list[EntryPoint], name: str, target: str,
                                                            message: str) -> None:
    entry_points.append(EntryPoint(name, target, registry.GROUP))
    with pytest.raises(ConfigError, match=message) as raised:
        provider_specs()
    assert "\n" not in str(raised.value)


class LooseOptions(BaseModel):
    model_config = ConfigDict(extra="allow")


class ToyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n_threads: int | None = None
    region: str | None = None


LOOSE = ProviderSpec(name="loose", factory=lambda config: None, options=LooseOptions)
STRICT = ProviderSpec(name="strict", factory=lambda config: None, options=ToyOptions)


def test_a_provider_options_model_that_takes_any_key_is_refused(entry_points: list[EntryPoint]) -> None:
    entry_points.append(EntryPoint("loose", f"{__name__}:LOOSE", registry.GROUP))
    with pytest.raises(ConfigError, match=r"provider 'loose': its options model LooseOptions must set "
                                          r"model_config = ConfigDict\(extra='forbid'\)"):
        provider_specs()


def test_a_providers_own_options_model_checks_model_options(entry_points: list[EntryPoint]) -> None:
    entry_points.append(EntryPoint("strict", f"{__name__}:STRICT", registry.GROUP))
    # a setting only this provider has is validated by its own model, with no field of it in core/config.py
    assert ModelConfig(name="m", provider="strict", options={"n_threads": 2, "region": "eu"}).options == {
        "n_threads": 2, "region": "eu"}
    with pytest.raises(ValidationError, match=r"not an option of the strict provider: unknown key "
                                              r"'options.n_thread' \(did you mean 'n_threads'\?; allowed: n_threads, "
                                              r"region\)"):
        ModelConfig(name="m", provider="strict", options={"n_thread": 2})
    with pytest.raises(ValidationError, match=r"the strict provider's options: options.n_threads: Input should be"):
        ModelConfig(name="m", provider="strict", options={"n_threads": "many"})


def test_gemini_options_are_checked_when_the_config_is_read_and_kept_as_written() -> None:
    with pytest.raises(ValidationError, match=r"unknown key 'options.max_tokens' \(did you mean 'max_output_tokens'"):
        ModelConfig(name="g", provider="gemini", options={"max_tokens": 10})
    written = {"temperature": 0, "thinking_level": "low"}
    assert ModelConfig(name="g", provider="gemini", options=written).options == written  # the key reads these
    # a provider without an options model passes its options on (an OpenAI-compatible server's extra body)
    assert ModelConfig(name="m", provider="ollama", options={"think": False}).options == {"think": False}


def test_the_architecture_names_every_legacy_provider_setting_and_each_providers_options_model() -> None:
    """New provider settings go to a provider's options model; the top-level ones that predate it are listed as
    kept for compatibility, so a new top-level one (or a provider's new options model) cannot go unexplained."""
    text = (PROJECT_ROOT / "docs" / "explanation" / "architecture.md").read_text()
    paragraph = next(" ".join(p.split()) for p in text.split("\n\n")
                     if p.startswith("A provider's own settings go to its options model"))
    assert "legacy, kept for compatibility" in paragraph
    assert all(f"`{name}`" in paragraph for name in registry.PROVIDER_SETTINGS), registry.PROVIDER_SETTINGS
    specs = provider_specs()
    assert all(f"`{spec.options.__name__}`" in paragraph for spec in specs.values() if spec.options is not None)
    # the built-ins without one are each said to pass options on or check them otherwise
    assert all(f"`{name}`" in paragraph for name in BUILTIN if specs[name].options is None)


# -- a real third-party package, installed with pip ------------------------------------------------------------


def _evalkit(tmp_path: Path, *overrides: str, site: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDRA_FULL_ERROR", "PYTEST_ADDOPTS")}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    command = [sys.executable, "-m", "evalkit", f"hydra.searchpath=['file://{tmp_path / 'conf'}']",
               f"run.recordings={tmp_path / 'rec'}", "baseline=none", *overrides]
    return subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.slow
def test_a_provider_from_another_package_is_installed_and_used_from_config(tmp_path: Path) -> None:
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(PLUGIN)], capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    assert (site / "evalkit_toy_provider-0.1.0.dist-info" / "entry_points.txt").is_file()
    for group in ("model", "judge"):
        (tmp_path / "conf" / group).mkdir(parents=True)
        (tmp_path / "conf" / group / "toy.yaml").write_text(f"name: toy-{group}\nprovider: toy\n", encoding="utf-8")

    done = _evalkit(tmp_path, "mode=live", "model=toy", "judge=toy", f"hydra.run.dir={tmp_path / 'job'}", site=site)
    assert done.returncode == 0, done.stderr
    recording: dict[str, Any] = json.loads(
        next((tmp_path / "rec" / "issue_triage").glob("toy-model-*.json")).read_text(encoding="utf-8"))
    assert recording["provenance"]["producer"]["model"] == {"provider": "toy", "model": "toy-model"}
    replies = [entry["reply"] for entry in recording["calls"].values()]
    assert len(replies) == 15 and {r["stop_reason"] for r in replies} == {"toy_done"}
    # the plugin's own stop reason joins the reply contract: no call has a contract problem
    run_input = json.loads((tmp_path / "job" / "run-input.json").read_text(encoding="utf-8"))
    assert [call["contract"] for call in run_input["calls"].values()] == [[]] * 15

    # the same config where the package is not installed: refused when composed, naming what is installed
    missing = _evalkit(tmp_path, "mode=live", "model=toy", "judge=toy", f"hydra.run.dir={tmp_path / 'job2'}",
                       site=None)
    assert missing.returncode == 3
    assert "provider 'toy' is not installed (installed: anthropic, azure, bedrock, gemini, llamacpp, ollama, " \
           "openai)" in missing.stderr
