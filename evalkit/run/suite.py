"""A suite's task module (`suites/<name>/task.py`): how each case becomes model calls.

The module must define `build_task(case, prompt, model) -> Request`; it may define
`build_judge(case, output_text, judge) -> {metric: Request}` for judged checks. Either may take a
keyword parameter `components`: the composed settings of the suite's declared components
(`{"retriever": {"k": 3, ...}}`), for suites whose requests depend on them; `build_judge` may take
`baseline_replies` (case id -> the baseline run's reply text), for pairwise judging against it. It is loaded
fresh for every run and removed from `sys.modules` afterwards, so jobs of one sweep never share
a stale copy.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import itertools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from evalkit.core.config import ModelConfig
from evalkit.core.dataset import Case
from evalkit.core.errors import InputError
from evalkit.records.call import Request
from evalkit.records.trajectory import Trajectory

__all__ = ["SuiteTask", "TrajectoryJudge", "load_module", "load_task"]

_counter = itertools.count()


class TrajectoryJudge(Protocol):
    """Plans the judge calls of one case's trajectory: `task_request` is the request build_task made for the case
    (what the model was given before its first step or turn: a conversation judge shows its system prompt)."""

    def __call__(self, case: Case, trajectory: Trajectory, judge: ModelConfig,
                 task_request: Request | None = None) -> Mapping[str, Request]: ...


@dataclass(frozen=True)
class SuiteTask:
    build_task: Callable[[Case, str, ModelConfig], Request]
    build_judge: Callable[[Case, str, ModelConfig], Mapping[str, Request]] | None
    build_trajectory_judge: TrajectoryJudge | None = None
    """The judge calls that read an agent case's trajectory rather than its reply (checks.yaml's trajectory-goal,
    and the conversation judges), by judge metric: planned once the agent's loop or the conversation has ended,
    for each case that has a trajectory."""

    @property
    def judged(self) -> bool:
        """Whether the task plans any judge call (of the reply or of the trajectory)."""
        return self.build_judge is not None or self.build_trajectory_judge is not None


def load_module(suite_dir: Path, filename: str, hint: str) -> Any:
    """Import a suite's module (`task.py`, `calibration.py`) under a unique name, with the suite's folder on
    sys.path for its siblings, then forget it and them: jobs of one sweep never share a stale copy."""
    path = suite_dir / filename
    if not path.is_file():
        raise InputError(f"{path}: not found; {hint}")
    name = f"_evalkit_suite_{path.stem}_{next(_counter)}"
    before = set(sys.modules)
    sys.path.insert(0, str(suite_dir))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(suite_dir))
        for added in set(sys.modules) - before:
            origin = getattr(sys.modules[added], "__file__", None) or ""
            if added == name or Path(origin).resolve().is_relative_to(suite_dir.resolve()):
                del sys.modules[added]
    return module


def load_task(suite_dir: Path, components: Mapping[str, Any] | None = None,
              baseline_replies: Mapping[str, str] | None = None) -> SuiteTask:
    """Load `task.py` of a suite and bind the keyword arguments its functions ask for."""
    path = suite_dir / "task.py"
    module = load_module(suite_dir, "task.py", "a suite needs a task.py defining build_task(case, prompt, model)")
    build_task: Any = getattr(module, "build_task", None)
    if not callable(build_task):
        raise InputError(f"{path}: defines no build_task(case, prompt, model) function")
    build_judge: Any = getattr(module, "build_judge", None)
    build_judge = build_judge if callable(build_judge) else None
    available = {"components": dict(components or {}), "baseline_replies": dict(baseline_replies or {})}
    return SuiteTask(_bind(build_task, available), _bind(build_judge, available))


def _bind(function: Any, available: Mapping[str, Any]) -> Any:
    """Pass each of `available` that a suite function asks for by name; leave the others out."""
    if function is None:
        return None
    wanted = {name: value for name, value in available.items() if name in inspect.signature(function).parameters}
    return functools.partial(function, **wanted) if wanted else function
