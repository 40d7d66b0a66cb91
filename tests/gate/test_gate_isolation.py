"""A policy can require isolation layers: a candidate-program run whose isolation fell short is refused (exit code 3),
never decided; runs that ran no program are not concerned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import evalkit_cli

from evalkit.core.errors import ConfigError, InputError
from evalkit.core.isolation import Layer, isolation_label, layers_held
from evalkit.core.policy import Policy, policy_from_mapping
from evalkit.gate.isolation import refuse_short_isolation
from evalkit.records.report_reader import RunReport

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LAB_BASELINE = PROJECT_ROOT / "suites" / "quality_lab" / "runs" / "baseline.json"
TRIAGE_BASELINE = PROJECT_ROOT / "suites" / "issue_triage" / "runs" / "baseline.json"
ALL_FOUR = (Layer.FILESYSTEM, Layer.NETWORK, Layer.PID, Layer.LIMITS)


def program_report(**held: bool) -> RunReport:
    """A hand-built program-run report whose isolation states each layer held unless `held` says otherwise."""
    layers = {layer.value: {"held": held.get(layer.value, True), "detail": "authored"} for layer in Layer}
    return RunReport(eval={}, outcomes={}, provenance={"isolation": {"layers": layers, "label": "authored"}},
                     candidate={"option": "baseline"})


def test_every_layer_held_passes() -> None:
    refuse_short_isolation(Policy(require_isolation=ALL_FOUR), {"baseline": program_report(),
                                                                "candidate": program_report()})


@pytest.mark.parametrize("layer", ["filesystem", "network", "pid", "limits"])
def test_a_layer_not_held_is_refused_naming_it_and_the_side(layer: str) -> None:
    reports = {"baseline": program_report(), "candidate": program_report(**{layer: False})}
    with pytest.raises(InputError, match=f"^candidate run report: isolation {layer} not held, and the policy requires "
                                         "filesystem, network, pid, limits"):
        refuse_short_isolation(Policy(require_isolation=ALL_FOUR), reports)


def test_the_baseline_is_held_to_the_same_layers() -> None:
    reports = {"baseline": program_report(pid=False, network=False), "candidate": program_report()}
    with pytest.raises(InputError, match="^baseline run report: isolation network, pid not held"):
        refuse_short_isolation(Policy(require_isolation=ALL_FOUR), reports)


def test_a_layer_the_policy_does_not_require_may_be_missing() -> None:
    refuse_short_isolation(Policy(require_isolation=(Layer.NETWORK,)),
                           {"candidate": program_report(filesystem=False, user=False, limits=False)})
    refuse_short_isolation(Policy(), {"candidate": program_report(filesystem=False)})


def test_a_program_report_that_names_no_layers_is_refused() -> None:
    old = RunReport(eval={}, outcomes={}, provenance={"isolation": "cooperative subprocess: ..."},
                    candidate={"option": "baseline"})
    assert layers_held(old.provenance) is None and isolation_label(old.provenance["isolation"]) == (
        "cooperative subprocess: ...")
    with pytest.raises(InputError, match="candidate run report: its provenance.isolation names no layers"):
        refuse_short_isolation(Policy(require_isolation=(Layer.PID,)), {"candidate": old})


def test_runs_without_a_candidate_program_are_not_concerned() -> None:
    refuse_short_isolation(Policy(require_isolation=ALL_FOUR), {"candidate": RunReport(eval={}, outcomes={})})


def test_an_unknown_layer_is_refused_listing_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"require_isolation.*'filesystem', 'network', 'pid', 'user' or 'limits'"):
        policy_from_mapping({"require_isolation": ["filesytem"]}, "p.yaml")


def test_the_quality_lab_policy_requires_all_four() -> None:
    from evalkit.core.policy import load_policy

    policy = load_policy(PROJECT_ROOT / "conf" / "policy" / "quality_lab.yaml")
    assert policy.require_isolation == ALL_FOUR


def write_report(path: Path, source: Path, **held: bool) -> Path:
    data: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    for layer, value in held.items():
        data["provenance"]["isolation"]["layers"][layer]["held"] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_gate_refuses_a_run_whose_isolation_fell_short(tmp_path: Path) -> None:
    short = write_report(tmp_path / "candidate.json", LAB_BASELINE, filesystem=False)
    done = evalkit_cli("evalkit.cli.main", "gate", str(LAB_BASELINE), str(short), "--policy", "quality_lab")
    assert done.returncode == 3, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "candidate run report: isolation filesystem not held" in lines[0], done.stderr
    held = write_report(tmp_path / "held.json", LAB_BASELINE)
    decided = evalkit_cli("evalkit.cli.main", "gate", str(LAB_BASELINE), str(held), "--policy", "quality_lab")
    assert decided.returncode in (0, 1), decided.stdout + decided.stderr  # the same report, every layer held


def test_the_gate_decides_model_runs_under_a_policy_requiring_isolation(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("require_isolation: [filesystem, network, pid, limits]\n", encoding="utf-8")
    done = evalkit_cli("evalkit.cli.main", "gate", str(TRIAGE_BASELINE), str(TRIAGE_BASELINE), "--policy", str(policy))
    assert done.returncode == 0, done.stdout + done.stderr
