"""evalkit.records.report's Execution: the run report's execution section as one typed model. Every shipped report's
section reads through it and writes back to the same JSON (the writer still writes plain dicts, so report.json's
bytes are the writer's), a section of the wrong shape is refused in one line naming the field, and the readers
read it by attribute."""

from __future__ import annotations

import json
import subprocess

import msgspec
import pytest
from conftest import PROJECT_ROOT, report

from evalkit.core.errors import InputError
from evalkit.records.report import Cost, Execution, Latency, read_execution
from evalkit.records.report_reader import load_report, report_from_mapping

SHIPPED = [PROJECT_ROOT / name for name in subprocess.run(
    ["git", "ls-files", "suites/*/runs/*.json"], cwd=PROJECT_ROOT, capture_output=True, text=True,
    check=True).stdout.split()]


def test_the_shipped_reports_were_found():
    assert len(SHIPPED) >= 5


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(PROJECT_ROOT).as_posix())
def test_every_shipped_execution_section_reads_and_writes_back_as_it_was(path):
    section = json.loads(path.read_text(encoding="utf-8"))["execution"]
    typed = load_report(path).execution
    assert isinstance(typed, Execution)
    assert msgspec.to_builtins(typed) == section
    # what the readers see is what the file says, by attribute
    if "cost" in section:
        assert typed.cost is not None and typed.cost.input_tokens == section["cost"]["input_tokens"]
    if "programs" in section:
        assert typed.programs == section["programs"]


def test_a_model_suites_sections_are_typed():
    typed = read_execution({"calls": {"replayed": 4}, "cost": {"model_calls": 4, "input_tokens": 40,
                                                              "output_tokens": 8, "estimated_calls": {"input_tokens": 1}},
                            "latency": {"measured_calls": 4, "mean_ms": 12.5, "p95_ms": 20, "recorded_calls": 4,
                                        "pace": {"calls": 4, "seconds": 0.2, "concurrency": 2, "ms_per_call": 50.0,
                                                 "in_flight_mean": 1.1}},
                            "live": {"sent": 4, "retried": 1, "seconds": 0.2, "cpu_seconds": 0.01,
                                     "budget": {"calls": 4}, "denied": {"calls": 1, "first": "budget_denied: x"}}})
    assert typed.cost == Cost(model_calls=4, input_tokens=40, output_tokens=8, estimated_calls={"input_tokens": 1})
    assert isinstance(typed.latency, Latency) and typed.latency.p95_ms == 20 and isinstance(typed.latency.p95_ms, int)
    assert typed.latency.pace is not None and typed.latency.pace.concurrency == 2
    assert typed.live is not None and typed.live.denied is not None and typed.live.denied.calls == 1
    assert typed.money is None and typed.agent is None  # absent sections are None, never an empty figure


def test_an_absent_section_is_an_empty_one_whose_figures_are_unknown():
    empty = report_from_mapping(report({"t::a": "passed"}), "r.json").execution
    assert empty == Execution() and empty.cost is None and empty.latency is None and empty.calls == {}
    assert msgspec.to_builtins(empty) == {}


@pytest.mark.parametrize("section, field", [({"cost": {"input_tokens": "many"}}, "execution.cost.input_tokens"),
                                            ({"latency": []}, "execution.latency"),
                                            ({"live": {"denied": {"calls": 1}}}, "execution.live.denied")])
def test_a_section_of_the_wrong_shape_is_refused_in_one_line_naming_the_field(section, field):
    with pytest.raises(InputError) as refused:
        report_from_mapping(report({"t::a": "passed"}) | {"execution": section}, "r.json")
    message = str(refused.value)
    assert message.startswith("r.json: ") and f"`{field}`" in message and "\n" not in message
