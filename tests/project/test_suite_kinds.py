"""evalkit/project/suite_kinds.py and `evalkit new suite --kind`: each kind's files read, compose and load without a
model, a right reply passes every check and a wrong one fails the check that names its fault; the kinds are entry
points of evalkit's registry (another package's kind is one more entry), an unknown kind or a misplaced --labels is
one line and exit 3, and the classification kind writes what the scaffold wrote before kinds existed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from evalkit.core import registry
from evalkit.core.config import ModelConfig, validate_config
from evalkit.core.dataset import Case, load_dataset
from evalkit.core.errors import ConfigError, InputError
from evalkit.judging.checks import judge
from evalkit.project.scaffold import project_files, set_default_suite, suite_files, write_new
from evalkit.project.suite_kinds import SUITE_KINDS, SuiteKind, kind_names, suite_kind
from evalkit.run.declared import read_checks

KINDS = ("classification", "extraction", "retrieval-qa")  # the default first, then by name
REPO = Path(__file__).resolve().parents[2]


def scaffold(root: Path, kind: str, name: str = "s1") -> dict[Path, str]:
    write_new(project_files(root))
    files = suite_files(root, name, kind=kind)
    write_new(files)
    config = root / "conf/config.yaml"
    config.write_text(set_default_suite(config.read_text(), name) or "")  # as `evalkit new suite` does
    return files


def composed(root: Path, *overrides: str) -> Any:
    """The project's config composed in process as `evalkit run` composes it, validated into a RunConfig."""
    with initialize_config_dir(config_dir=str(root / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["run.out=/tmp/evalkit-test-out", *overrides], return_hydra_config=False)
        data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    return validate_config({str(k): v for k, v in data.items()}, {"policy": "s1"})


def task_module(suite: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"task_{suite.name}_{id(suite)}", suite / "task.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cwd_free(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("EVALKIT_PROJECT", raising=False)
    yield


def test_the_registry_lists_the_kinds_classification_first() -> None:
    assert kind_names() == KINDS
    assert suite_kind("classification").takes_labels and not suite_kind("extraction").takes_labels


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_reads_composes_and_loads_without_a_model(kind: str, tmp_path: Path, cwd_free: None) -> None:
    files = scaffold(tmp_path, kind)
    suite = tmp_path / "suites/s1"
    config = composed(tmp_path)  # the project's default suite is s1, with every option the suite picks
    assert config.suite.name == "s1" and config.policy.max_regressions == 0
    dataset = load_dataset(suite / "datasets/v1.json")
    assert dataset.label == "s1@1" and len(dataset.cases) >= 5
    checks = read_checks(suite, dataset.cases)  # every case field a check names is there; every where: matches
    assert checks is not None and checks.checks
    # the metrics a policy may floor are the ones the checks record
    recorded = {f"{spec.name}.{metric}" for spec in checks.checks for metric in spec.metric_names}
    assert set(config.suite.metrics) <= recorded | {"accuracy", "macro_f1"} | {
        m for m in config.suite.metrics if m.startswith(("precision.", "recall.", "f1."))}
    task = task_module(suite)
    model = ModelConfig(name="a-model", provider="openai", options={"temperature": 0})
    for case in dataset.cases:
        request = task.build_task(case, (suite / "prompts/v1.txt").read_text(), model)
        assert request.model == "a-model" and request.messages[0].role == "system"
    if kind != "classification":  # the README says what each written file is
        readme = (suite / "README.md").read_text()
        for path in files:
            if path.name != "README.md":
                where = path.relative_to(suite) if suite in path.parents else f"../../{path.relative_to(tmp_path)}"
                assert f"`{where}`" in readme, (kind, where)


def test_retrieval_qa_has_traps_facts_and_the_judged_checks(tmp_path: Path, cwd_free: None) -> None:
    scaffold(tmp_path, "retrieval-qa")
    suite = tmp_path / "suites/s1"
    cases = load_dataset(suite / "datasets/v1.json").cases
    checks = {spec.name: spec for spec in read_checks(suite, cases).checks}  # type: ignore[union-attr]
    traps = [c.id for c in cases if c.get("answerable") is False]
    assert len(traps) == 3 and all("facts" not in c.fields for c in cases if c.id in traps)
    assert [c.id for c in cases if checks["says_it_does_not_know"].applies_to(c)] == traps
    assert not any(checks["has_facts"].applies_to(c) or checks["relevant"].applies_to(c) for c in cases
                   if c.id in traps)
    assert checks["faithful"].kind == "faithfulness" and checks["relevant"].kind == "answer-relevancy"
    config = composed(tmp_path)
    assert config.judge is not None  # a judged check needs a pinned judge
    assert config.suite.metric_scales["faithful.score"] == (1.0, 5.0)
    trap, answerable = next(c for c in cases if c.id in traps), next(c for c in cases if c.id not in traps)
    for reply in ("I don't know.", "The passages do not say."):
        assert judge(checks["says_it_does_not_know"], reply, trap).passed, reply
    invented = judge(checks["says_it_does_not_know"], "Yes, gift wrapping costs 2 pounds.", trap)
    assert not invented.passed and "expected a match" in invented.message
    right = f"You have {' and '.join(answerable.fields['facts'])}."
    assert judge(checks["has_facts"], right, answerable).passed
    wrong = judge(checks["has_facts"], "You have a while.", answerable)
    assert not wrong.passed and answerable.fields["facts"][0] in wrong.message
    verdict = json.dumps({"reason": "every claim is in passage 1", "score": 5})
    assert judge(checks["faithful"], verdict, answerable).passed


def test_extraction_checks_each_field_against_the_case(tmp_path: Path, cwd_free: None) -> None:
    scaffold(tmp_path, "extraction")
    suite = tmp_path / "suites/s1"
    cases = load_dataset(suite / "datasets/v1.json").cases
    parsed = read_checks(suite, cases)
    assert parsed is not None and parsed.critical == ("reply_is_json",)
    checks = {spec.name: spec for spec in parsed.checks}
    assert [spec.kind for spec in parsed.checks] == ["json-schema", "equals", "equals", "number", "equals"]
    # the task asks for the schema the critical check holds the reply to
    task_schema = task_module(suite).ORDER_SCHEMA
    assert set(task_schema["required"]) == set(checks["reply_is_json"].options["required"])

    def reply(case: Case, **changed: Any) -> str:
        fields = {k: case.fields[k] for k in ("order_id", "email", "total", "currency")}
        return json.dumps(fields | changed)

    for case in cases:  # the expected values are a right reply: every check passes on it
        assert all(judge(spec, reply(case), case).passed for spec in parsed.checks), case.id
    case = cases[0]
    off = {"total_matches": {"total": case.fields["total"] + 1}, "email_matches": {"email": "x@example.org"},
           "order_id_matches": {"order_id": "A-00000"}, "currency_matches": {"currency": "USD"
                                                                             if case.fields["currency"] != "USD"
                                                                             else "EUR"}}
    for name, changed in off.items():  # one wrong field fails that field's check, and only it
        failed = [spec.name for spec in parsed.checks if not judge(spec, reply(case, **changed), case).passed]
        assert failed == [name], (name, failed)
    assert not judge(checks["reply_is_json"], json.dumps({"order_id": "A-10422"}), case).passed


def test_the_default_kind_is_classification_unchanged(tmp_path: Path) -> None:
    assert suite_files(tmp_path, "reviews") == suite_files(tmp_path, "reviews", kind="classification")
    labelled = suite_files(tmp_path, "reviews", ["a", "b"], kind="classification")
    assert labelled == suite_files(tmp_path, "reviews", ["a", "b"])
    assert not any(path.name == "README.md" for path in labelled)  # classification wrote no README before kinds


AGENT = SuiteKind(name="agent", summary="an agent's trajectory",
                  plan=lambda root, name, labels: {root / f"suites/{name}/checks.yaml": "checks: []\n"},
                  next_steps=lambda name: f"next: evalkit run suite={name}")
"""A kind another package registers: `agent = "tests.test_suite_kinds:AGENT"` in its entry points."""


def test_a_kind_from_another_package_is_a_peer_of_the_builtins(installed_entry_points: list[EntryPoint],
                                                               tmp_path: Path) -> None:
    installed_entry_points.append(EntryPoint("agent", "test_suite_kinds:AGENT", SUITE_KINDS.group))
    registry.forget()
    assert kind_names() == ("classification", "agent", "extraction", "retrieval-qa") and suite_kind("agent") is AGENT
    assert suite_files(tmp_path, "bot", kind="agent") == {tmp_path / "suites/bot/checks.yaml": "checks: []\n"}
    installed_entry_points.append(EntryPoint("extraction", "test_suite_kinds:AGENT", SUITE_KINDS.group))
    registry.forget()  # a name taken twice is refused, never resolved by install order
    with pytest.raises(ConfigError, match="suite kind 'extraction' is registered twice"):
        suite_kind("extraction")


def test_evalkits_kinds_are_registered_as_entry_points() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][SUITE_KINDS.group]
    assert sorted(declared) == sorted(KINDS)
    assert all(suite_kind(name).name == name for name in declared)


@pytest.mark.parametrize(("kind", "labels", "message"), [
    ("nope", None, "--kind 'nope': not a suite kind; the kinds are classification, extraction, retrieval-qa"),
    ("retrieval-qa", ("a", "b"), "--labels: the retrieval-qa kind has no labels; --labels applies to --kind "
                                 "classification"),
])
def test_refusals_in_the_planner(tmp_path: Path, kind: str, labels: tuple[str, ...] | None, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("-", r"\-").replace("(", r"\(")):
        suite_files(tmp_path, "s1", labels, kind=kind)


def new(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALKIT_PROJECT"}
    return subprocess.run([sys.executable, "-m", "evalkit.cli.main", "new", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_command_writes_each_kind_and_refuses_an_unknown_one_in_one_line(tmp_path: Path) -> None:
    assert new(tmp_path, "project").returncode == 0
    unknown = new(tmp_path, "suite", "bot", "--kind", "agent")
    assert unknown.returncode == 3 and unknown.stdout == ""
    assert unknown.stderr == ("error: --kind 'agent': not a suite kind; the kinds are classification, extraction, "
                              "retrieval-qa\n")
    assert not (tmp_path / "suites/bot").exists()
    labelled = new(tmp_path, "suite", "bot", "--kind", "extraction", "--labels", "a,b")
    assert labelled.returncode == 3 and "--labels: the extraction kind has no labels" in labelled.stderr
    done = new(tmp_path, "suite", "support", "--kind", "retrieval-qa")
    assert done.returncode == 0, done.stderr
    assert "  suites/support/README.md" in done.stdout and "conf/config.yaml now picks suite support" in done.stdout
    assert "evalkit run suite=support mode=live model=smollm2 judge=smollm2 baseline=none" in done.stdout
    classified = new(tmp_path, "suite", "reviews")  # the default kind prints what it printed before kinds
    assert classified.returncode == 0 and "conf/model/served.yaml" in classified.stdout
    assert not (tmp_path / "suites/reviews/README.md").exists()
    helped = new(tmp_path, "suite", "--help")
    assert helped.returncode == 0
    flat = " ".join(helped.stdout.split())  # wrapped to the terminal's width
    for name in KINDS:
        assert f"{name}: {' '.join(suite_kind(name).summary.split())}" in flat


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["retrieval-qa", "extraction"])
def test_each_kinds_task_passes_mypy_strict(kind: str, tmp_path: Path) -> None:
    """What a kind's task.py imports from evalkit is typed, as tests/product/test_public_api.py holds for classification's."""
    scaffold(tmp_path, kind)
    suite = tmp_path / "suites/s1"
    env = {k: v for k, v in os.environ.items() if k not in ("EVALKIT_PROJECT", "MYPYPATH")}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
                           "--cache-dir", str(tmp_path / ".mypy_cache"), "task.py"], cwd=suite,
                          env={**env, "MYPYPATH": str(REPO)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and ": error:" not in done.stdout, done.stdout + done.stderr
