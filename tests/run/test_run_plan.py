"""evalkit.run.run_plan: one run's plan, built once from the composed config, and the one entry point that reads it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from helpers.compose import composed

import evalkit.run.runner as runner
from evalkit.core.config import Mode, RunConfig, validate_config
from evalkit.run.run_plan import RunPlan, plan_run


def _config(*overrides: str) -> RunConfig:
    return validate_config(composed(*overrides), {})


def test_a_model_suite_plans_its_calls_from_the_config(hydra_conf) -> None:
    config = _config("suite=issue_triage", "run.repeats=3", "judge.repeats=2")
    plan = plan_run(config)
    assert plan.kind == "model" and plan.config is config
    calls = plan.calls
    assert calls is not None
    assert (calls.mode, calls.model, calls.judge, calls.simulator) == (Mode.REPLAY, config.model, config.judge, None)
    assert (calls.repeats, calls.judge_repeats) == (3, 2)
    assert calls.prices == config.prices


def test_a_run_sampled_in_rounds_plans_the_most_samples_a_case_may_take(hydra_conf) -> None:
    config = _config("suite=issue_triage", "run.repeats=auto", "run.max_repeats=6")
    plan = plan_run(config)
    assert plan.calls is not None and plan.calls.repeats == config.run.most_samples >= 6


def test_a_program_suite_plans_model_calls_only_where_its_program_calls_the_endpoint(hydra_conf) -> None:
    fixtures = plan_run(_config("suite=quality_lab"))
    assert fixtures.kind == "program" and fixtures.calls is None
    agent = plan_run(_config("suite=sql_agent"))
    assert agent.kind == "program" and agent.calls is not None
    assert agent.calls.model == agent.config.model


def test_the_plan_carries_the_baseline_and_is_frozen(hydra_conf) -> None:
    plan = plan_run(_config(), None, "main")
    assert plan.baseline is None and plan.baseline_name == "main"
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.kind = "program"  # type: ignore[misc]


def test_run_checks_the_destinations_first_then_hands_the_plan_to_its_kinds_runner(
        hydra_conf, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, Any]] = []
    monkeypatch.setattr(runner, "check_run_destinations", lambda config: seen.append(("destinations", config)))
    monkeypatch.setattr(runner, "run_model_suite", lambda plan: seen.append(("model", plan)) or "model run")
    monkeypatch.setattr(runner, "run_program_suite", lambda plan: seen.append(("program", plan)) or "program run")
    model, program = plan_run(_config("suite=issue_triage")), plan_run(_config("suite=quality_lab"))
    assert runner.run(model) == "model run"
    assert runner.run(program) == "program run"
    assert seen == [("destinations", model.config), ("model", model), ("destinations", program.config),
                    ("program", program)]


def test_run_suite_runs_the_plan_of_its_config(hydra_conf, monkeypatch: pytest.MonkeyPatch) -> None:
    planned: list[RunPlan] = []
    monkeypatch.setattr(runner, "run", lambda plan: planned.append(plan) or "ran")
    config = _config()
    assert runner.run_suite(config, None, "main") == "ran"
    assert planned == [plan_run(config, None, "main")]
