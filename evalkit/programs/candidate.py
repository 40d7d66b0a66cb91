"""Run a suite's candidate program over the cases of a run: the program-suite counterpart of evalkit.run.execute.

For each case, in dataset order: reserve the budget (public task bytes + the largest allowed response), run
the program in its own temporary directory (evalkit.programs.sandbox), settle the budget on a valid response or keep
the reservation as unknown. A denied case is not run and stays in the results as `budget_denied`, so it keeps
its place in every denominator. Private fields and references never enter the program's directory.

A program that calls a model gets evalkit's endpoint for its case (evalkit.programs.endpoint): its calls are answered
by `answer` (the run's replay or live calls), and its result lists the call ids it was served (`model_calls`), the
call it was not (`unserved`) and any request turned away (`rejected`). Once `ended` says the run can measure nothing
more (a refused replay, an outage), no further case is started.

A case with a `conversation` (scripted user turns, or a simulated user's brief) is run once per turn through the
turn protocol (evalkit.programs.turns): each turn reserves and settles its own budget, and one endpoint serves the whole
conversation, so its call ids run on from turn to turn.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalkit.core.config import ProgramSpec
from evalkit.core.dataset import Case
from evalkit.core.errors import ConfigError, InputError, describe_validation
from evalkit.live.budget import UnitBudget
from evalkit.programs.endpoint import Answer, Endpoint
from evalkit.programs.endpoint.mcp_proxy import McpBackend
from evalkit.programs.sandbox import check_python_env, run_program
from evalkit.programs.turns import UserSide, converse, user_side

__all__ = ["CandidateConfig", "ModelAccess", "candidate_config", "is_scorable", "public_task", "run_programs"]


@dataclass(frozen=True)
class ModelAccess:
    """What a program that calls a model is given: the run's answer to each call, the model's name, a virtual
    environment with its packages, and whether the run has ended (no further case is started)."""

    answer: Answer
    model: str
    python_env: Path | None = None
    ended: Callable[[], bool] = lambda: False
    mcp: McpBackend | None = None
    """The suite's proxied MCP servers (evalkit.programs.endpoint.mcp_proxy), if it routes any."""


class CandidateConfig(BaseModel):
    """One option of a program suite's candidate group (`conf/candidate/*.yaml`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    program: str = Field(min_length=1)
    """The Python program to run (relative paths are relative to the project root); copied alone into the
    case's temporary directory."""
    args: tuple[str, ...] = ()
    """Command-line arguments after the program."""
    change: str = Field(min_length=1)
    """What this candidate changes, in a word a reviewer can search for (shown in the report)."""
    timeout_s: float = Field(1.0, gt=0)
    """The program and its children are killed after this; the case is then unscored (`timeout`)."""
    max_response_bytes: int = Field(4096, ge=1, le=64 * 1024 * 1024)
    """A larger `response.json` is refused unread; also the response part of each budget reservation (at most
    64 MiB)."""


def candidate_config(settings: Mapping[str, Any], option: str, group: str) -> CandidateConfig:
    """Validate the composed candidate settings; errors name the option file."""
    try:
        return CandidateConfig.model_validate(dict(settings))
    except ValidationError as error:
        raise ConfigError(describe_validation(error, CandidateConfig, f"conf/{group}/{option}.yaml")) from None


def public_task(case: Case, spec: ProgramSpec) -> bytes:
    """The bytes of `task.json`: the case id and its public fields, keys sorted, so the units are stable."""
    return json.dumps(_public(case, spec), sort_keys=True).encode()


def run_programs(cases: Sequence[Case], spec: ProgramSpec, candidate: CandidateConfig, program: Path,
                 budget: UnitBudget, access: ModelAccess | None = None, where: str = "the dataset",
                 simulate: Callable[[Case], UserSide] | None = None) -> dict[str, dict[str, Any]]:
    """case id -> what the run produced, in case order: the sandbox's ProgramRun fields (or a `budget_denied`
    stand-in with the same keys) plus `units` spent and `usage_state` (known, unknown, not_started); with `access`,
    the endpoint's `model_calls`, `unserved` and `rejected`. A case with a `conversation` (its scripted user turns)
    is driven turn by turn through the turn protocol (evalkit.programs.turns) and adds its transcript, `turns`;
    `where` names the dataset in a refusal of one; `simulate` plays a case's simulated user (the run's simulator)."""
    results: dict[str, dict[str, Any]] = {}
    if access is not None and access.python_env is not None:
        check_python_env(access.python_env)  # one line before any case, not the same failure in every case
    for case in cases:
        if access is not None and access.ended():
            break
        files = case.get(spec.files_field, {}) if spec.files_field else {}
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise InputError(f"case {case.id}: field {spec.files_field!r} must map file names to their text")
        turns = user_side(case, where, simulate)
        try:
            with _endpoint(case, access) as socket_path:
                run_turn = functools.partial(_run_once, files=files, spec=spec, candidate=candidate,
                                             program=program, budget=budget, access=access, socket_path=socket_path)
                if turns is None:
                    result = run_turn(1, public_task(case, spec))
                else:
                    result = converse(_public(case, spec), turns, run_turn)
        except InputError as error:
            raise InputError(f"case {case.id}: {error}") from None
        if socket_path is not None and "model_calls" in result:
            # read once the endpoint has stopped: a call in flight when the program was killed has settled by now
            result.update(_endpoint_calls(socket_path.endpoint))
        results[case.id] = result
    return results


def _endpoint_calls(endpoint: Endpoint, since: int = 0) -> dict[str, Any]:
    """What the case's endpoint served (from call `since` on), turned away, and the first call it did not serve."""
    unserved = endpoint.unserved
    calls = {"model_calls": list(endpoint.calls[since:]), "rejected": list(endpoint.rejected),
             "unserved": None if unserved is None else {"kind": unserved.kind, "reason": unserved.reason}}
    if endpoint.mcp is not None and since == 0:  # only where the suite routes MCP servers: the case's, whole
        calls["mcp_calls"] = list(endpoint.mcp.calls)
    return calls


def _public(case: Case, spec: ProgramSpec) -> dict[str, Any]:
    """The case id and its public fields: what the program may read."""
    return {"id": case.id, **{k: v for k, v in case.fields.items() if k not in spec.private_fields}}


def _run_once(turn: int, task: bytes, *, files: Mapping[str, str], spec: ProgramSpec, candidate: CandidateConfig,
              program: Path, budget: UnitBudget, access: ModelAccess | None,
              socket_path: _Socket | None) -> dict[str, Any]:
    """One sandbox run (a case, or a conversation's turn `turn`): its budget reserved, then settled on a valid
    response or kept as unknown; with an endpoint, the calls it made on it."""
    reserved = len(task) + candidate.max_response_bytes
    denial = budget.reserve(reserved)
    if denial is not None:
        return _denied(denial, len(task))
    before = 0 if socket_path is None else len(socket_path.endpoint.calls)
    run = run_program(program, candidate.args, task, files, spec.watch, timeout_s=candidate.timeout_s,
                      max_response_bytes=candidate.max_response_bytes, limits=spec.limits,
                      endpoint=None if socket_path is None else socket_path.path,
                      python_env=None if access is None else access.python_env,
                      mcp=tuple(access.mcp.servers()) if access is not None and access.mcp is not None else ())
    units: int | None = None
    usage = "unknown"  # the program may have done (and billed) the work: keep the reservation
    if run.finished and run.output_bytes is not None:
        units, usage = len(task) + run.output_bytes, "known"
        budget.settle(reserved, units)
    calls = {} if socket_path is None else _endpoint_calls(socket_path.endpoint, before)  # this turn's
    return {**run.to_json(), "units": units, "usage_state": usage, **calls}


@dataclass(frozen=True)
class _Socket:
    path: Path
    endpoint: Endpoint


@contextmanager
def _endpoint(case: Case, access: ModelAccess | None) -> Iterator[_Socket | None]:
    """The case's endpoint socket, in a folder only the sandbox's user may reach into; one for a conversation's
    every turn, so its call ids run on from turn to turn. None without model access."""
    if access is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="evalkit-endpoint-") as folder:
        os.chmod(folder, 0o755)
        socket_path = Path(folder) / "endpoint.sock"
        with Endpoint(socket_path, case.id, access.model, access.answer, mcp=access.mcp) as endpoint:
            yield _Socket(socket_path, endpoint)


def _denied(reason: str, input_bytes: int) -> dict[str, Any]:
    return {"status": "budget_denied", "reason": reason, "response": None, "artifacts": {}, "artifact_sha256": {},
            "visible_files": [], "input_bytes": input_bytes, "output_bytes": None, "wall_ms": None,
            "isolation": None, "units": 0, "usage_state": "not_started"}


def is_scorable(result: Mapping[str, Any]) -> bool:
    return result.get("status") == "finished"

