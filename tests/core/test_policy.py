"""Policies: a reviewed file, validated strictly, loadable by name or path."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.core.errors import ConfigError, InputError
from evalkit.core.policy import Policy
from evalkit.core.policy import load_policy as load_policy_file
from evalkit.project.options import find_option

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # this repository: the examples project

POLICY_DIR = PROJECT_ROOT / "conf" / "policy"
SCHEMA_PATH = POLICY_DIR / "policy.schema.json"


def load_policy(spec):
    return load_policy_file(find_option("policy", spec))


def test_every_shipped_policy_loads():
    names = [p.stem for p in POLICY_DIR.glob("*.yaml")]
    assert names, "conf/policy/ ships no policy"
    for name in names:
        assert isinstance(load_policy(name), Policy)


def test_triage_policy_is_the_seed_policy():
    policy = load_policy("triage")
    assert policy == Policy(max_regressions=0, min_pass_rate=0.9,
                            critical=("test_priority", "test_reply_matches_schema"))


def test_policy_by_json_and_yaml_path(tmp_path):
    (tmp_path / "p.json").write_text('{"max_regressions": 2, "min_pass_rate": 0.5, "critical": []}')
    (tmp_path / "p.yaml").write_text("max_regressions: 1\n")
    assert load_policy(str(tmp_path / "p.json")).max_regressions == 2
    assert load_policy(tmp_path / "p.yaml").max_regressions == 1


@pytest.mark.parametrize("body, message", [
    ("max_regresions: 0\n", r"p\.yaml: unknown key 'max_regresions' \(allowed: block_below, block_on_drop, block_on_quality_regression, block_on_review, block_on_safety, block_on_task_regression, critical, critical_cases, judge_flips, max_detectable_drop, max_regressions, min_judge_kappa, min_pass_rate, min_ran_pass_rate, name, new_failing, on_budget_denied, on_incomparable, paired, power, regressions, repeats, require_complete_pairs, require_isolation, require_split, review_below, review_fails, review_on_drop, rules, tool_changes, version\)"),
    ("max_regressions: many\n", r"p\.yaml: 'max_regressions': Input should be a valid integer"),
    ("min_pass_rate: 1.2\n", r"'min_pass_rate': Input should be less than or equal to 1"),
    ("min_pass_rate: -0.1\n", r"'min_pass_rate': Input should be greater than or equal to 0"),
    ("max_regressions: -1\n", r"'max_regressions': Input should be greater than or equal to 0"),
    ("- a list\n", r"p\.yaml: a policy must be a mapping"),
])
def test_bad_policies_are_refused_in_one_line(tmp_path, body, message):
    path = tmp_path / "p.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message) as caught:
        load_policy(path)
    assert "\n" not in str(caught.value)


def test_unknown_policy_name_lists_the_available_ones():
    with pytest.raises(InputError, match=r"policy 'strictest': no such policy .*\(available: .*triage"):
        load_policy("strictest")


def test_malformed_policy_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"max_regressions": ')
    with pytest.raises(InputError, match=r"p\.json: not valid JSON"):
        load_policy(path)


def test_the_shipped_json_schema_is_current():
    from evalkit.core.policy import policy_schema

    assert SCHEMA_PATH.read_text() == policy_schema(), "refresh it: python -c 'from evalkit.core.policy import policy_schema; print(policy_schema(), end="")' > conf/policy/policy.schema.json"


def test_schema_documents_every_field():
    import json

    from evalkit.core.policy import policy_schema

    properties = json.loads(policy_schema())["properties"]
    assert set(properties) == set(Policy.model_fields)
    assert all(p.get("description") for p in properties.values())


@pytest.mark.parametrize(("written", "read"), [("1", "1"), ("2.5", "2.5"), ('"2026-11"', "2026-11")])
def test_a_version_may_be_a_number(tmp_path, written, read):
    path = tmp_path / "p.yaml"
    path.write_text(f"version: {written}\n")
    assert load_policy_file(path).version == read


def test_the_schema_lets_an_editor_accept_a_numeric_version():
    import json

    from jsonschema import validate
    from jsonschema.exceptions import ValidationError

    from evalkit.core.policy import policy_schema

    schema = json.loads(policy_schema())
    validate({"version": 1}, schema)
    validate({"version": "2026-11"}, schema)
    with pytest.raises(ValidationError):
        validate({"version": [1]}, schema)
