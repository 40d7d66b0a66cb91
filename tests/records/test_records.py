"""evalkit.records: one typed model per file evalkit writes. Their public fields name what they hold (no mapping of
`Any`), the records import nothing above evalkit.core, and decision.json is written through its model with its
fields in the order the file has always had."""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import json
import typing
from pathlib import Path

import msgspec
import pytest
from conftest import report
from pydantic import BaseModel

import evalkit
from evalkit.core.policy import Policy
from evalkit.gate.decide import decide
from evalkit.records.decision import DecisionFile, Evidence, FindingEntry, PolicyIdentity, ReportIdentity
from evalkit.records.report import Execution
from evalkit.records.report_reader import CaseHead, RunReport, report_from_mapping

RECORDS = Path(evalkit.__file__).parent / "records"
FORMAT_MODULES = ("decision", "recording", "journal", "run_input", "report")
"""The records modules of the files evalkit writes that the check below holds (the others follow as they move in)."""


def _models(module_name: str) -> list[type]:
    module = __import__(f"evalkit.records.{module_name}", fromlist=["*"])
    return [value for name in module.__all__ if isinstance(value := getattr(module, name), type)
            and issubclass(value, BaseModel | msgspec.Struct)]


def _any_mappings(annotation: object, where: str) -> list[str]:
    """Where `annotation` holds a mapping (or a sequence of mappings) whose values may be `Any`."""
    found = []
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (dict, collections.abc.Mapping) and args and args[-1] is typing.Any:
        found.append(where)
    for arg in args:
        found += _any_mappings(arg, where)
    if typing.get_origin(annotation) is typing.Annotated:
        found += _any_mappings(args[0], where)
    return found


def _public_fields(model: type) -> dict[str, object]:
    hints = typing.get_type_hints(model, include_extras=True)
    if issubclass(model, BaseModel):
        return {name: hints[name] for name in model.model_fields}
    return {name: hints[name] for name in model.__struct_fields__}


@pytest.mark.parametrize("module_name", FORMAT_MODULES)
def test_no_record_field_is_a_mapping_of_any(module_name):
    models = _models(module_name)
    assert models, module_name
    found = [spot for model in models for name, hint in _public_fields(model).items()
             for spot in _any_mappings(hint, f"{model.__name__}.{name}")]
    assert found == []


def test_the_run_reports_fields_hold_no_any():
    """Every public field of the gate's RunReport (evalkit.records.report_reader) names what it holds: JSON blocks
    as Json, which their readers narrow (json_object, json_list), never Any, nor a mapping of it."""
    hints = typing.get_type_hints(RunReport, include_extras=True)
    fields = [field.name for field in dataclasses.fields(RunReport)]
    found = [spot for name in fields for spot in _any_mappings(hints[name], f"RunReport.{name}")]
    assert found == [] and [name for name in fields if hints[name] is typing.Any] == []
    assert {"cases", "slices", "dataset", "candidate", "classification", "texts", "trajectories", "media"} <= set(fields)
    assert hints["execution"] is Execution
    heads = typing.get_type_hints(CaseHead)  # the few fields of a case the gate pairs, read from the case's text
    assert [name for name in CaseHead.__struct_fields__ if heads[name] is typing.Any] == []


def test_the_any_check_can_fail():
    class Loose(BaseModel):
        figures: dict[str, typing.Any] = {}
        nested: list[dict[str, typing.Any]] = []
        fine: dict[str, int] = {}

    found = [spot for name, hint in _public_fields(Loose).items() for spot in _any_mappings(hint, name)]
    assert found == ["figures", "nested"]


def test_records_import_nothing_above_core():
    above = []
    for path in RECORDS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else
                       [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            above += [f"{path.name}: {m}" for m in modules
                      if m.startswith("evalkit.") and m.split(".")[1] not in ("core", "records", "conf")]
    assert above == []


def _decided() -> tuple[DecisionFile, Evidence]:
    base = report_from_mapping(report({"test_a": "passed", "test_b": "passed"}), "base")
    cand = report_from_mapping(report({"test_a": "passed", "test_b": "failed"}), "cand")
    side = ReportIdentity(path="r.json", sha256="0" * 64, eval={"model": "m"})
    facts = Evidence(policy=PolicyIdentity(name="p", version=None, source="p.yaml", overrides=[], chosen_by="--policy",
                                           sha256="1" * 64), baseline=side, candidate=side, evalkit_version="0")
    return decide(Policy(), base, cand).record(baseline="main", evidence=facts), facts


def test_decision_json_is_written_in_the_order_it_always_had():
    written, _ = _decided()
    data = written.data()
    assert list(data) == ["baseline", "format", "decision", "reasons", "changed", "pass_rate", "regressed", "fixed",
                          "critical_failures", "missing_critical", "tests", "passed", "review_reasons", "metrics",
                          "statistics", "failures", "warnings", "outcomes", "ran_pass_rate", "new_failing",
                          "messages", "findings", "detectable", "evidence"]
    assert list(data["findings"][0]) == ["rule", "effect", "message", "tests", "figures"]  # no subject: left out
    assert list(data["evidence"]) == ["policy", "baseline", "candidate", "evalkit_version"]  # no sources
    assert data["decision"] == "block" and data["regressed"] == ["test_triage.py::test_b"]


def test_a_decision_printed_on_its_own_leaves_out_what_only_a_command_knows():
    written, _ = _decided()
    alone = written.model_copy(update={"baseline": None, "evidence": None, "detectable": None}).data()
    assert {"baseline", "evidence", "detectable"}.isdisjoint(alone) and "repeats" not in alone


def test_decision_json_reads_back_into_the_same_record():
    written, facts = _decided()
    text = json.dumps(written.data(), indent=2)
    read = DecisionFile.model_validate_json(text)
    assert read == written and read.evidence == facts
    assert FindingEntry.model_validate({"rule": "r", "effect": "warn", "message": "m", "subject": "s"}).subject == "s"


def test_the_gate_figures_are_json_in_the_record():
    finding = FindingEntry(rule="r", effect="warn", message="m", figures={"pair": ("a", 1), "deep": {"x": (1.5,)}})
    assert finding.figures == {"pair": ["a", 1], "deep": {"x": [1.5]}}
    with pytest.raises(ValueError, match="figures"):
        FindingEntry(rule="r", effect="warn", message="m", figures={"path": Path("x")})


def test_the_records_names_are_importable_from_evalkit_records():
    import evalkit.records

    missing = [name for name in evalkit.records.__all__ if getattr(evalkit.records, name, None) is None]
    assert missing == [] and {"DecisionFile", "Recording", "JournalLine", "RunInput"} <= set(evalkit.records.__all__)


@pytest.mark.parametrize("module_name, model", [("decision", "decision_schema"), ("recording", "Recording"),
                                                ("journal", "JournalLine")])
def test_each_format_module_publishes_its_schema(module_name, model):
    page = (RECORDS.parents[1] / "docs/reference/schemas.md").read_text(encoding="utf-8")
    assert f"<!-- evalkit:schema evalkit.records.{module_name}:{model} -->" in page
    target = getattr(__import__(f"evalkit.records.{module_name}", fromlist=["*"]), model)
    schema = target() if not isinstance(target, type) else target.model_json_schema()
    assert schema["properties"] and "$defs" in schema
