"""The gate's rules: a Policy is a reviewed file in conf/policy/, validated strictly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalkit.errors import ConfigError, InputError, describe_validation
from evalkit.paths import PROJECT_ROOT

__all__ = ["Policy", "load_policy", "policy_from_mapping"]

POLICY_DIR = PROJECT_ROOT / "conf" / "policy"


class Policy(BaseModel):
    """What a candidate must satisfy, relative to the baseline and on its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_regressions: int = Field(0, ge=0)
    """How many tests that pass on the baseline may stop passing on the candidate."""

    min_pass_rate: float = Field(0.0, ge=0.0, le=1.0)
    """Floor on the candidate's own pass rate (passed / all tests), whatever the baseline did."""

    critical: tuple[str, ...] = ()
    """Test-name prefixes (`test_priority` matches `test_priority[any-case]`) that must pass on the
    candidate even when the baseline fails them, and may not disappear from it."""


def policy_from_mapping(data: Any, where: str) -> Policy:
    """Validate already-parsed policy data; `where` names its source in the error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a policy must be a mapping of keys to values, got {type(data).__name__}")
    try:
        return Policy.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe_validation(error, Policy, where)) from None


def load_policy(spec: str | Path) -> Policy:
    """Load a policy by name (an option of conf/policy/) or by path to a YAML or JSON file."""
    path = Path(spec)
    if path.suffix not in (".yaml", ".yml", ".json"):
        path = POLICY_DIR / f"{spec}.yaml"
        if not path.is_file():
            names = ", ".join(sorted(p.stem for p in POLICY_DIR.glob("*.yaml")))
            raise InputError(f"policy '{spec}': no such policy in {POLICY_DIR} (available: {names}) "
                             "and not a .yaml/.json path")
    if not path.is_file():
        raise InputError(f"{path}: policy file not found")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        first = str(error).splitlines()[0]
        raise InputError(f"{path}: not valid {path.suffix[1:].upper()}: {first}") from None
    return policy_from_mapping(data, str(path))
