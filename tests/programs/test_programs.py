"""evalkit/programs/candidate.py: the budget and the case-level refusals around each candidate run."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.core.config import ProgramSpec
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.live.budget import UnitBudget
from evalkit.programs.candidate import CandidateConfig, public_task, run_programs

PROGRAM = 'import json\nopen("response.json", "w").write(json.dumps({"message": "ok"}))\n'


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "candidate.py"
    path.write_text(PROGRAM)
    return path


def test_each_case_reserves_then_settles_what_it_used(program: Path) -> None:
    cases = [Case("a", {"files": {}}), Case("b", {"files": {}})]
    candidate = CandidateConfig(program=str(program), change="none", max_response_bytes=100)
    budget = UnitBudget(None)
    results = run_programs(cases, ProgramSpec(), candidate, program, budget)
    used = [len(public_task(c, ProgramSpec())) + results[c.id]["output_bytes"] for c in cases]
    assert [results[c.id]["units"] for c in cases] == used
    assert budget.summary()["spent_units"] == sum(used) and budget.summary()["unknown_reservations"] == 0


def test_denied_cases_are_not_run_and_keep_their_place(program: Path) -> None:
    cases = [Case("a", {}), Case("b", {})]
    candidate = CandidateConfig(program=str(program), change="none", max_response_bytes=100)
    first = len(public_task(cases[0], ProgramSpec())) + 100
    results = run_programs(cases, ProgramSpec(), candidate, program, UnitBudget(first))
    assert list(results) == ["a", "b"]
    assert results["a"]["status"] == "finished"
    assert (results["b"]["status"], results["b"]["usage_state"], results["b"]["visible_files"]) == (
        "budget_denied", "not_started", [])


@pytest.mark.parametrize(("fields", "message"), [
    ({"files": ["service.cfg"]}, "case a: field 'files' must map file names to their text"),
    ({"files": {"../escape": "x"}}, "case a: candidate file '../escape'"),
])
def test_bad_case_files_name_the_case(program: Path, fields: dict[str, object], message: str) -> None:
    candidate = CandidateConfig(program=str(program), change="none")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(".", r"\.")):
        run_programs([Case("a", fields)], ProgramSpec(), candidate, program, UnitBudget(None))
