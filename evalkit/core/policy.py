"""The gate's rules: a Policy is a reviewed file in conf/policy/, validated strictly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from evalkit.core.errors import ConfigError, describe_validation
from evalkit.core.files import read_text
from evalkit.core.isolation import Layer
from evalkit.core.parsing import parse_json, parse_yaml

__all__ = ["STRICT_DEFAULT", "PairedRule", "Policy", "RepeatsRule", "load_policy", "policy_from_mapping",
           "policy_schema", "policy_sha256"]



MAX_RESAMPLES = 20_000
"""The most bootstrap resamples a policy may ask for; the interval's Monte Carlo error is negligible long before."""
MAX_NAME_CHARS = 200
"""The longest policy name or version, and the longest critical test prefix or case id a policy may list."""


class PairedRule(BaseModel):
    """A paired cluster bootstrap of candidate-minus-baseline task success (evalkit.gate.stats) and its margin."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    margin: float = Field(-0.05, ge=-1.0, le=1.0)
    """Non-inferiority margin, fixed before the run: the interval's lower bound must not fall below it."""
    seed: int = Field(17, ge=0, le=2**32 - 1)
    """Seed of the bootstrap's random generator (0 to 2**32 - 1); the same seed and reports give the same
    interval."""
    resamples: int = Field(2000, ge=1, le=MAX_RESAMPLES)
    """How many times the groups are resampled (at most 20,000, ten times the default: the draws are held in memory)."""
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    """Nominal coverage of the percentile interval."""


class RepeatsRule(BaseModel):
    """How the gate decides when both reports sampled each test several times (evalkit.gate.repeats)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    """The whole decision's false-block rate on an unchanged system: half goes to the per-test Fisher tests
    (Holm-corrected), half to the suite's paired bootstrap of per-case pass fractions."""
    min_repeats: int = Field(2, ge=1)
    """The fewest samples per test either side must have for the statistics to decide; fewer is
    `insufficient_data`."""
    unreliable_baseline: Literal["block", "review", "ignore"] = "review"
    """What tests flaky on the baseline (0 < k < N passes) lead to: they are listed, and by default reviewed."""
    insufficient_data: Literal["block", "review", "ignore"] = "review"
    """What sample sizes too small for any outcome to reach `alpha` (or below `min_repeats`) lead to."""
    too_small_to_tell: Literal["block", "review", "ignore"] = "review"
    """What a test that passed every sample on the baseline and fails some on the candidate leads to when its drop
    is not significant (the Fisher test above its Holm step): at these sample sizes the run cannot tell a
    regression from chance, so by default the test is named for review rather than let through as go."""
    seed: int = Field(17, ge=0, le=2**32 - 1)
    """Seed of the suite bootstrap's random generator."""
    resamples: int = Field(2000, ge=1, le=MAX_RESAMPLES)
    """Bootstrap resamples of the suite guard."""


class Policy(BaseModel):
    """What a candidate must satisfy, relative to the baseline and on its own."""

    # attribute docstrings become the schema's descriptions, so editors show them while completing
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: str | None = Field(None, max_length=MAX_NAME_CHARS)
    """The policy's own name, shown in decisions; without it a decision names the option or file it came from."""

    version: str | None = Field(None, max_length=MAX_NAME_CHARS, json_schema_extra={"anyOf": [
        {"type": "string", "maxLength": MAX_NAME_CHARS}, {"type": "number"}, {"type": "null"}]})
    """A version the policy's authors give it (`3`, `"2026-11"`), shown in decisions beside its SHA-256; a number
    is read as its text (`version: 1` is version "1")."""

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        # YAML reads `version: 1` as a number; a version is a name, so its text is what the policy means
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value

    max_regressions: int = Field(0, ge=0)
    """How many tests that pass on the baseline may stop passing on the candidate."""

    min_pass_rate: float = Field(0.0, ge=0.0, le=1.0)
    """Floor on the candidate's own pass rate (passed / all tests), whatever the baseline did."""

    min_ran_pass_rate: float = Field(0.0, ge=0.0, le=1.0)
    """Floor on the candidate's pass rate over the tests that ran and were expected to pass (passing /
    (passing + failed + error)): known skips and xfails do not count against it, so a suite with skips can still
    require 1.0 here. A run in which no such test ran is below any floor above 0."""

    critical: tuple[str, ...] = ()
    """Test-name prefixes (`test_priority` matches `test_priority[any-case]`), or single tests by their id with
    parameters (`has_key_facts[refund-window]`: one check on one case), that must pass on the candidate even when
    the baseline fails them, and may not disappear from it."""

    critical_cases: tuple[str, ...] = ()
    """Case ids that must pass every check on the candidate; a failure (naming the failed checks) or
    an absence blocks."""

    block_below: dict[str, float] = Field(default_factory=dict)
    """Absolute floors: a metric below its floor on the candidate (or no longer measurable) blocks."""

    review_below: dict[str, float] = Field(default_factory=dict)
    """Absolute floors that call for review instead of blocking."""

    block_on_drop: tuple[str, ...] | dict[str, float] = ()
    """Metrics that may not fall below the baseline's value (a drop to not-measurable is a drop); as a mapping,
    the drop each may take (`{recall.billing: 0.05}`: a fall of more than 0.05 blocks)."""

    review_on_drop: tuple[str, ...] | dict[str, float] = ()
    """Metrics whose drop below the baseline calls for review; as a mapping, the drop each may take."""

    @field_validator("block_on_drop", "review_on_drop")
    @classmethod
    def _tolerances(cls, value: tuple[str, ...] | dict[str, float]) -> tuple[str, ...] | dict[str, float]:
        if isinstance(value, dict) and any(not 0 <= allowed < 1e300 for allowed in value.values()):
            raise ValueError("the drop a metric may take is a number of at least 0")
        return value

    def allowed_drop(self, name: str, rule: tuple[str, ...] | dict[str, float]) -> float:
        """How far metric `name` may fall under a drop rule before it counts (0: any fall)."""
        return rule.get(name, 0.0) if isinstance(rule, dict) else 0.0

    regressions: Literal["block", "review", "ignore"] = "block"
    """What more regressed tests than `max_regressions` lead to (critical tests always block); `ignore` lists them
    without a reason, for suites whose grade rules (`block_on_task_regression`...) already decide on them."""

    new_failing: Literal["block", "review", "ignore"] = "review"
    """What tests that do not pass on the candidate and are absent from the baseline lead to (a new check that
    fails, a new test that errors): `review` (default), `block`, or `ignore` (listed without a reason)."""

    on_incomparable: Literal["incomparable", "review", "block"] = "incomparable"
    """What a baseline that cannot be compared (another dataset or judge, or an agent's other tools) leads to."""

    tool_changes: tuple[str, ...] = ()
    """An agent suite's tools whose change this policy declares (`*`: any): a baseline made with another
    implementation or schema of these, or without them, is compared, the change shown as `tools.<name>`. A tool
    changed and not declared makes the runs incomparable: its results were not those the baseline's model read.
    A program suite's MCP servers (`suite.program.mcp`) are named `<server>.<tool>` here."""

    on_budget_denied: Literal["block", "review"] = "block"
    """What a candidate run cut short by its budget (cases whose calls `budget.*` denied) leads to: the run is
    incomplete, named once with the budget, and the denied cases' tests are never counted as regressions."""

    review_fails: bool = False
    """Make `review` fail the job (exit code 1, like block) instead of passing it (exit code 0)."""

    # Release evidence: rules over graded cases (task / quality / safety / review), paired with the baseline's.
    require_split: str | None = None
    """Only a run on this dataset split may pass (`acceptance`): any other split blocks (not_acceptance_split),
    whatever the baseline."""

    require_complete_pairs: bool = False
    """Every case must be scored on both sides; a missing, denied or unscored side blocks."""

    block_on_safety: bool = False
    """A candidate case failing safety, or graded without a safety verdict, blocks (nothing averages it away)."""

    block_on_review: bool = False
    """A candidate case still pending a person's review blocks until `evalkit review` resolves it."""

    block_on_task_regression: bool = False
    """A case whose task passes on the baseline and fails on the candidate blocks."""

    block_on_quality_regression: bool = False
    """A case whose quality passes on the baseline and fails on the candidate blocks."""

    paired: PairedRule | None = None
    """Estimate the task-success difference with a paired cluster bootstrap over the suite's groups and block
    when the interval's lower bound is below `margin`."""

    require_isolation: tuple[Layer, ...] = ()
    """Isolation layers (filesystem, network, pid, user, limits) every candidate program of both runs must have
    had: a program run whose `provenance.isolation` does not state one of them held is refused (exit code 3), never
    decided. Runs that call models run no candidate program and are not concerned."""

    repeats: RepeatsRule = Field(default_factory=RepeatsRule)
    """When both reports carry repeated samples per test: the significance level and what flaky baselines and
    too few samples lead to. `critical` and `critical_cases` still demand every sample pass."""

    power: float = Field(0.8, ge=0.5, lt=1.0)
    """The power at which a decision states the smallest drop it could have detected (evalkit.gate.detectable):
    a drop of that size or more is caught at least this often, at the suite guard's level (`repeats.alpha` / 2;
    with `paired`, its interval's one-sided level)."""

    max_detectable_drop: float | None = Field(None, gt=0.0, le=1.0)
    """The largest smallest-detectable drop a decision may have (0.05: 5 points of the suite's headline metric):
    a decision that could not have seen such a drop is reviewed (`detectable_drop`), naming how many cases or
    repeats would reach it. None: the figure is stated and never decides."""

    judge_flips: Literal["review", "block", "ignore"] = "review"
    """What a judged check's test leads to when its judge both passed and failed one reply over its own repeats
    (`judge.repeats=K`, the report's `judges` block): `review` (default) names the check and case and takes the
    test out of `regression` (a flip is the judge's noise, never a regression on its own); `block` the same, but
    blocking; `ignore` gates the test on its majority verdict like any other."""

    min_judge_kappa: float | dict[str, float] | None = Field(None, json_schema_extra={"anyOf": [
        {"type": "number", "minimum": -1, "maximum": 1},
        {"type": "object", "additionalProperties": {"type": "number", "minimum": -1, "maximum": 1}},
        {"type": "null"}]})
    """The kappa against people a judged check's calibration must reach (`judge_calibration.json` beside the
    baseline, bound to the judge's fingerprint: evalkit.records.calibration): one value for every judged check, or
    a floor per check (`{faithful: 0.6}`). A check without a calibration, with one below its floor, or with one
    made for another judge fingerprint (another judge model, options or `judge.repeats`) cannot block: its findings
    are capped at review, and `judge_calibration` says which of the three and why. None: judges are not asked to
    be calibrated."""

    @field_validator("min_judge_kappa")
    @classmethod
    def _kappas(cls, value: float | dict[str, float] | None) -> float | dict[str, float] | None:
        floors = value.values() if isinstance(value, dict) else () if value is None else (value,)
        if any(not -1.0 <= floor <= 1.0 for floor in floors):
            raise ValueError("a kappa floor is a number from -1 to 1")
        return value

    def kappa_floor(self, check: str) -> float | None:
        """The kappa floor `min_judge_kappa` sets for judged check `check` (None: none)."""
        floor = self.min_judge_kappa
        return floor.get(check) if isinstance(floor, dict) else floor

    rules: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)
    """Gate rules of other installed packages (the `evalkit.rules` entry points, evalkit.plugins) that this policy
    turns on, by rule id, each with its options (checked by the rule's own options model before it runs). A rule
    that is installed but not named here never runs, so installing a package never changes a decision by itself;
    one named here that is not installed is refused (exit 3). evalkit's own rules are turned on by the fields
    above."""


# What `evalkit gate` applies when neither --policy nor the candidate's suite names a policy (a plain
# pytest-json-report): no test that passes on the baseline may stop passing or vanish (block), and a run with
# unscored cases blocks as always. No pass-rate floor and no critical tests, because it cannot know them: a suite
# with known failures or skips gated against itself goes.
STRICT_DEFAULT = Policy(name="strict-default", version="1", max_regressions=0, regressions="block",
                        on_incomparable="incomparable")


_LATER = ("power", "max_detectable_drop", "rules", "judge_flips", "min_judge_kappa", "on_budget_denied",
          "tool_changes")
"""Keys added to the policy after its identity was first taken: left out of it while they hold their default."""
_LATER_REPEATS = ("too_small_to_tell",)
"""Keys added to `repeats` after its identity was first taken: left out of it while they hold their default."""


def policy_sha256(policy: Policy) -> str:
    """The policy's content identity: SHA-256 of the validated policy as canonical JSON (sorted keys, no spaces,
    defaults filled in), so a file, a composed config option and an equivalent policy hash alike."""
    data = policy.model_dump(mode="json")
    if policy.repeats == RepeatsRule():  # added later: a policy that leaves it alone keeps its earlier identity
        del data["repeats"]
    else:  # the same for the keys added to it later
        for name in _LATER_REPEATS:
            if data["repeats"][name] == RepeatsRule.model_fields[name].default:
                del data["repeats"][name]
    for name in _LATER:  # the same for the keys added after it
        default = Policy.model_fields[name].get_default(call_default_factory=True)
        if data[name] == (list(default) if isinstance(default, tuple) else default):  # as JSON holds it
            del data[name]
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def policy_from_mapping(data: Any, where: str) -> Policy:
    """Validate already-parsed policy data; `where` names its source in the error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a policy must be a mapping of keys to values, got {type(data).__name__}")
    try:
        return Policy.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe_validation(error, Policy, where)) from None


def load_policy(path: Path) -> Policy:
    """Load a policy file (YAML or JSON); names of options are found by evalkit.project.options."""
    text = read_text(path, "policy")
    data = parse_json(text, str(path), "policy") if path.suffix == ".json" else parse_yaml(text, str(path), "policy")
    return policy_from_mapping(data, str(path))


def policy_schema(model: type[Policy] = Policy) -> str:
    """The JSON schema of policy files, as shipped in conf/policy/policy.schema.json; `model` is a policy with
    fields of its own (a rule added outside evalkit), whose schema then lists them too."""
    return json.dumps(model.model_json_schema(), indent=2) + "\n"

