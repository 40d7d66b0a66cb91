"""The process a suite's Python tools run in, and the pool of them a run keeps.

A tool is the suite's own code, trusted like its task.py, but it may hang (a lock, a network call, a loop): a
thread cannot be stopped, so each tool call runs in a worker process that is killed when the call passes its
deadline (`agent.tool_timeout_s`), and a fresh one takes its place. Workers are started with `spawn` (never `fork`
from a process whose other threads are in the middle of model calls) and load the tools file themselves, by path,
so nothing unpicklable crosses the pipe: a call sends the tool's name and its arguments as JSON values, and gets
back `("ok", text)` or `("error", one line)`.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import multiprocessing
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["ToolWorkers", "load_tools_module", "tool_functions"]

_counter = itertools.count()
STARTUP_S = 120
"""How long a worker may take to start (an interpreter on a busy machine); never counted as a tool's time."""
TOOLS_LIST = "TOOLS"
"""A tools module may name its tools in a list of this name; without one, every public function defined in it is a
tool."""


def load_tools_module(path: Path) -> ModuleType:
    """Import a suite's tools file under a unique name, with its folder on sys.path for its siblings."""
    name = f"_evalkit_tools_{path.stem}_{next(_counter)}"
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # pydantic resolves the functions' annotations through sys.modules
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def tool_functions(module: ModuleType) -> dict[str, Callable[..., Any]]:
    """The module's tools by name: those its TOOLS list names, or every public function defined in it."""
    listed = getattr(module, TOOLS_LIST, None)
    if listed is not None:
        return {function.__name__: function for function in listed if callable(function)}
    return {name: value for name, value in vars(module).items()
            if callable(value) and not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
            and not isinstance(value, type)}


def as_text(value: Any) -> str:
    """A tool's return value as the text the model reads: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def _serve(path: str, conn: Connection) -> None:  # pragma: no cover - runs in the worker process
    from evalkit.agents.tools import arguments_model, validation_problem

    try:
        functions = tool_functions(load_tools_module(Path(path)))
        models = {name: arguments_model(function) for name, function in functions.items()}
    except Exception as error:  # noqa: BLE001 - said to the parent, which refuses the run
        conn.send(("broken", f"{type(error).__name__}: {error}"[:500]))
        return
    conn.send(("ready", ""))
    while True:
        try:
            name, arguments = conn.recv()
        except (EOFError, OSError):
            return
        try:
            model = models[name]
            try:
                parsed = model.model_validate(arguments)
            except Exception as error:  # noqa: BLE001 - a ValidationError, said as the parent says it
                conn.send(("error", validation_problem(error)))
                continue
            value = functions[name](**{field: getattr(parsed, field) for field in type(parsed).model_fields})
            conn.send(("ok", as_text(value)))
        except Exception as error:  # noqa: BLE001 - a tool that raises is a result the model reads
            conn.send(("error", f"{type(error).__name__}: {error}"[:500]))


class _Worker:
    def __init__(self, path: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(str(path), child), daemon=True,
                                       name=f"evalkit-tools-{path.parent.name}")
        self.process.start()
        child.close()
        # the start (an interpreter, evalkit's imports, the tools file) is not the tool's time: wait for it apart
        self.broken: str | None = None
        if not self.conn.poll(STARTUP_S):
            self.broken = f"the tools' worker did not start within {STARTUP_S}s"
        else:
            try:
                status, text = self.conn.recv()
            except (EOFError, OSError):
                status, text = "broken", "the tools' worker ended while starting"
            if status != "ready":
                self.broken = f"the tools file could not be loaded in its worker: {text}"


    def call(self, name: str, arguments: Any, timeout: float) -> tuple[str, str]:
        if self.broken is not None:
            self.kill()
            return "error", self.broken
        self.conn.send((name, arguments))
        if not self.conn.poll(timeout):
            self.kill()
            return "error", f"timed out after {timeout:g}s (agent.tool_timeout_s); the tool was stopped"
        try:
            status, text = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(1)
            return "error", f"the tool's process ended (exit code {self.process.exitcode}) before it answered"
        return str(status), str(text)

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class ToolWorkers:
    """Worker processes for one tools file, started as calls need them and reused; one per call in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._lock = threading.Lock()

    def call(self, name: str, arguments: Any, timeout: float) -> tuple[str, str]:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self.path)
            with self._lock:
                self._all.append(worker)
        try:
            return worker.call(name, arguments, timeout)
        finally:
            with self._lock:
                if worker.alive:
                    self._idle.append(worker)
                else:
                    self._all.remove(worker)

    def close(self) -> None:
        with self._lock:
            workers, self._all, self._idle = self._all, [], []
        for worker in workers:
            worker.kill()
