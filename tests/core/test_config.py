"""Hydra composition and validation: every shipped option validates; typos are refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.compose import composed

from evalkit.core.config import Mode, RunConfig, validate_config
from evalkit.core.errors import ConfigError
from evalkit.project.paths import PACKAGE_CONF

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

CONF = PROJECT_ROOT / "conf"
GROUPS = ["suite", "model", "prompt", "dataset", "judge", "policy", "retriever", "reply_format", "candidate",
          "agent_code", "simulator"]
# Options that belong to one suite validate with it: a suite's components exist only in that suite, and a
# policy may only name metrics its suite produces.
SUITE_OF = {"retriever": "evidencedesk", "reply_format": "evidencedesk",
            "policy/evidencedesk": "evidencedesk", "policy/evidencedesk-strict": "evidencedesk",
            "candidate": "quality_lab", "dataset/quality_lab": "quality_lab", "policy/quality_lab": "quality_lab",
            "agent_code": "sql_agent", "dataset/sql_agent": "sql_agent", "policy/sql_agent": "sql_agent",
            "model/shop-agent": "sql_agent", "policy/order_agent": "order_agent",
            "simulator": "support_chat", "policy/support_chat": "support_chat",
            "dataset/receipts": "receipts", "policy/receipts": "receipts"}




def options() -> list[tuple[str, str]]:
    return [(group, path.stem) for group in GROUPS for folder in (CONF, PACKAGE_CONF)
            for path in sorted((folder / group).glob("*.yaml"))]


@pytest.mark.parametrize("group, option", options())
def test_every_option_of_every_group_validates(hydra_conf, group, option):
    suite = SUITE_OF.get(f"{group}/{option}", SUITE_OF.get(group))
    config = validate_config(composed(*([f"suite={suite}"] if suite else []), f"{group}={option}"), {group: option})
    assert isinstance(config, RunConfig)


def test_a_program_calling_a_model_through_the_endpoint_needs_the_model_and_may_record(hydra_conf):
    live = validate_config(composed("suite=sql_agent", "mode=live"), {})
    assert live.suite.program is not None and live.suite.program.endpoint and live.model is not None
    with pytest.raises(ConfigError, match="program holds its own prompts"):
        validate_config(composed("suite=sql_agent", "+prompt=v1"), {}, ("+prompt=v1",))
    with pytest.raises(ConfigError, match="runs a candidate program on every run and records no model calls"):
        validate_config(composed("suite=quality_lab", "mode=live"), {})  # a program without the endpoint: as before


def test_defaults_compose_the_issue_triage_suite(hydra_conf):
    config = validate_config(composed(), {})
    assert config.suite.name == "issue_triage" and config.mode is Mode.REPLAY
    assert config.model.name == "gemini-3.8-flash" and config.judge is not None
    assert config.prompt.file == "suites/issue_triage/prompts/v1.txt"
    assert config.baseline == "default"


def test_the_judge_does_not_follow_the_model(hydra_conf):
    config = validate_config(composed("model=gemma4"), {})
    assert config.model.name == "gemma4:e2b" and config.judge is not None
    assert config.judge.name == "gemini-3.8-flash"


def test_command_line_choices_replace_the_suites_defaults(hydra_conf):
    config = validate_config(composed("prompt=v2", "dataset=v2"), {})
    assert config.prompt.version == "v2" and config.dataset.file.endswith("datasets/v2.json")


@pytest.mark.parametrize("override, message", [
    ("+policy.max_regresions=0", r"unknown key 'policy\.max_regresions' \(allowed: block_below, block_on_drop, block_on_quality_regression, block_on_review, block_on_safety, block_on_task_regression, critical, critical_cases, judge_flips, max_detectable_drop, max_regressions, min_judge_kappa, min_pass_rate, min_ran_pass_rate, name, new_failing, on_budget_denied, on_incomparable, paired, power, regressions, repeats, require_complete_pairs, require_isolation, require_split, review_below, review_fails, review_on_drop, rules, tool_changes, version\)"),
    ("+model.temprature=0", r"unknown key 'model\.temprature' \(allowed: api_key_env, api_version, base_url, deployment, max_reply_bytes, model_file, name, options, price, provider, region, structured_output, timeout_s, token_env\)"),
    ("model.provider=antropic", r"'model\.provider': Value error, provider 'antropic' is not installed \(installed: anthropic, azure, bedrock, gemini, llamacpp, ollama, openai\)"),
    ("+model.deployment=prod", r"deployment: not a setting of the gemini provider \(it takes none of them\)"),
    ("+model.structured_output=json_object", r"structured_output 'json_object' is not something the gemini provider sends \(sends schemas its own way; remove the setting\)"),
    ("mode=fast", r"'mode': Input should be 'replay', 'live' or 'record-missing'"),
    ("policy.min_pass_rate=2", r"'policy\.min_pass_rate': Input should be less than or equal to 1"),
    ("policy.max_regressions=few", r"'policy\.max_regressions': Input should be a valid integer"),
])
def test_invalid_settings_are_one_line_errors_naming_the_source(hydra_conf, override, message):
    with pytest.raises(ConfigError, match=message) as caught:
        validate_config(composed(override), {"policy": "triage", "model": "gemini-flash"}, (override,))
    assert "\n" not in str(caught.value)
    assert "command line" in str(caught.value)


def test_baseline_none_disables_the_gate(hydra_conf):
    assert validate_config(composed("baseline=none"), {}).baseline is None


def test_suite_declared_components_join_the_config(hydra_conf):
    data = composed() | {"retriever": {"k": 3}}
    data["suite"] = dict(data["suite"], components=["retriever"])
    config = validate_config(data, {"retriever": "default"})
    assert config.components == {"retriever": {"k": 3}}


def test_undeclared_top_level_group_is_refused(hydra_conf):
    with pytest.raises(ConfigError, match=r"unknown key 'retriever'"):
        validate_config(composed() | {"retriever": {"k": 3}}, {})


def test_max_cost_needs_a_price_table(hydra_conf):
    with pytest.raises(ConfigError, match=r"budget\.max_cost needs a price table .* for gemini-3\.8-flash"):
        validate_config(composed("budget.max_cost=1.5"), {})
    priced = composed("budget.max_cost=1.5", "+model.price={input_per_mtok: 0.3, output_per_mtok: 2.5}",
                      "+judge.price={input_per_mtok: 0.3, output_per_mtok: 2.5}")
    assert validate_config(priced, {}).budget.max_cost == 1.5


def test_the_composed_price_table_holds_evalkits_entries_by_exact_model_name(hydra_conf):
    config = validate_config(composed("model=claude"), {})
    entry = config.prices["claude-sonnet-4-6"]
    assert (entry.input, entry.output, entry.cached_input, entry.cache_write) == (3.0, 15.0, 0.3, 3.75)
    assert entry.source.startswith("https://") and str(entry.as_of) == "2026-12-02"
    assert "gemini-3.8-flash" not in config.prices  # the example suites' model: no published price known


def test_max_usd_needs_an_entry_for_the_model_and_the_judge(hydra_conf):
    with pytest.raises(ConfigError, match=r"^budget\.max_usd=2 needs a price for gemini-3\.8-flash, gemini-3\.8-flash: "
                                          r"no entry of that exact name in the price table \(conf/prices/\*\.yaml\)"):
        validate_config(composed("budget.max_usd=2"), {})
    with pytest.raises(ConfigError, match=r"needs a price for gemini-3\.8-flash: "):  # the model is priced, the judge not
        validate_config(composed("budget.max_usd=2", "model=claude"), {})
    priced = validate_config(composed("budget.max_usd=2", "model=claude", "judge.name=claude-sonnet-4-6"), {})
    assert priced.budget.max_usd == 2


def test_a_bad_entry_in_the_composed_table_names_the_price_table(hydra_conf):
    data = composed()
    data["prices"]["gpt-4o"] = {**data["prices"]["gpt-4o"], "input": "a lot"}
    with pytest.raises(ConfigError, match=r"^the price table \(conf/prices/\*\.yaml\): 'prices\.gpt-4o\.input': "
                                          r"Input should be a valid number"):
        validate_config(data, {})


@pytest.mark.parametrize("override, message", [
    ("run.concurrency=0", r"'run\.concurrency': Input should be greater than or equal to 1"),
    ("budget.max_calls=-1", r"'budget\.max_calls': Input should be greater than or equal to 0"),
    ("run.progress=sometimes", r"'run\.progress': Input should be 'auto', 'on' or 'off'"),
    ("+run.resum=true", r"unknown key 'run\.resum'"),
    ("+suite.pytest_plugins=[no:anyio]", r"'suite\.pytest_plugins': Value error, 'no:anyio' is not a plugin name as "
                                          r"`pytest -p NAME` takes it"),
    ("++model.timeout_s=inf", r"'model\.timeout_s': Input should be a finite number"),
    ("++model.timeout_s=0", r"'model\.timeout_s': Input should be greater than 0"),
    ("++model.timeout_s=1e9", r"'model\.timeout_s': Input should be less than or equal to 86400"),
    ("++judge.timeout_s=nan", r"'judge\.timeout_s': Input should be a finite number"),
    ("++model.max_reply_bytes=100", r"'model\.max_reply_bytes': Input should be greater than or equal to 1024"),
    ("++model.max_reply_bytes=1e30", r"'model\.max_reply_bytes': Unable to parse input string as an integer"),
    ("++model.max_reply_bytes=4294967296", r"'model\.max_reply_bytes': Input should be less than or equal to "
                                           r"2147483648"),
])
def test_live_settings_are_validated(hydra_conf, override, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(composed(override), {})


def test_bad_secret_pattern_is_refused(hydra_conf):
    with pytest.raises(ConfigError, match=r"run\.secret_patterns: '\(' is not a regular expression"):
        validate_config(composed("run.secret_patterns=['(']"), {})


@pytest.mark.parametrize("override, message", [
    ("+policy.block_below={citation_validity: 1.5}", r"block_below\.citation_validity=1\.5 is outside \[0, 1\], the range of citation_validity \(a rate\)"),
    ("+policy.review_below={case_pass_rate: -0.1}", r"review_below\.case_pass_rate=-0\.1 is outside \[0, 1\]"),
    ("+policy.review_below={rubric.relevance: 3}", r"review_below\.rubric\.relevance=3\.0 is outside \[0, 2\]"),
    ("+policy.block_on_drop=[citation_validty]", r"unknown metric\(s\) citation_validty; suite evidencedesk produces .*citation_validity"),
])
def test_policy_floors_and_metric_names_are_checked_against_the_suite(hydra_conf, override, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(composed("suite=evidencedesk", "policy=triage", override), {"policy": "triage"})


def test_a_floor_inside_a_rubric_scale_is_accepted(hydra_conf):
    config = validate_config(composed("suite=evidencedesk", "policy=triage",
                                      "+policy.review_below={rubric.relevance: 1.5}"), {})
    assert config.policy.review_below == {"rubric.relevance": 1.5}


def test_a_model_suite_refuses_a_manifest_dataset(hydra_conf):
    with pytest.raises(ConfigError, match="suite issue_triage calls a model and reads a dataset file"):
        validate_config(composed("dataset=quality_lab"), {"dataset": "quality_lab"})
