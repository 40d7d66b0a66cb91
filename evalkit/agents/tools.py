"""A suite's tools: what the model is offered (records.call.Tool), what identifies each implementation, and how a call
of one is answered.

One protocol for every kind of tool (`ToolImpl`): its `Tool` (name, description, JSON Schema of the arguments), its
`fingerprint`, and `invoke(arguments, timeout)`. A suite's Python functions (`tools.py` beside task.py) are tools
today: the schema comes from the signature through pydantic, the description from the docstring, and the
fingerprint covers the function's source, the sources of the functions of its module it calls (so an edited helper
is a changed tool, not a stale result served as fresh), the bytes of the files the module's TOOL_DATA names (the
data the tools read) and its schema.

`ToolBox.invoke` never raises for the model's mistakes or the tool's: an unknown tool, arguments that fail the
schema, a tool that raises or passes its deadline each become an error result, which the model reads and the
trajectory records.
"""

from __future__ import annotations

import inspect
import textwrap
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from evalkit.agents.worker import ToolWorkers, load_tools_module, tool_functions
from evalkit.core.errors import InputError, one_line
from evalkit.core.fingerprint import fingerprint
from evalkit.records.call import TOOL_NAME, Tool

TOOL_DATA = "TOOL_DATA"
"""A tools module's list of the files its tools read (a database, a fixture): part of every tool's fingerprint."""

__all__ = ["TOOL_DATA", "PythonTool", "ToolBox", "ToolImpl", "ToolOutcome", "arguments_model", "failed",
           "load_python_tools", "validation_problem"]


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call gave the model: its text, or that it failed and why (then `content` says so too)."""

    content: str
    error: bool = False
    error_message: str | None = None


class ToolImpl(Protocol):
    """A tool implementation: what the model is offered, what identifies it, and how to call it."""

    @property
    def tool(self) -> Tool: ...

    @property
    def fingerprint(self) -> str: ...

    def invoke(self, arguments: Any, timeout: float) -> ToolOutcome: ...


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def arguments_model(function: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model of a function's keyword arguments: its typed parameters, with their defaults."""
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function, eval_str=True).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise TypeError(f"tool {function.__name__}: parameter {name} must be a plain or keyword parameter")
        annotation = Any if parameter.annotation is parameter.empty else parameter.annotation
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (annotation, default)
    model: type[BaseModel] = create_model(f"{function.__name__}_arguments", __base__=_Arguments, **fields)
    return model


def validation_problem(error: Exception) -> str:
    """A schema failure as one line the model can act on: each field and what is wrong with it."""
    if isinstance(error, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()[:5]]
        return "arguments do not match the tool's schema: " + "; ".join(parts)
    return f"arguments do not match the tool's schema: {error}"


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _sources(function: Callable[..., Any]) -> list[str]:
    """The function's source, then those of the functions of its module it calls, transitively, by name."""
    module = inspect.getmodule(function)
    seen: dict[str, str] = {}
    todo = [function]
    while todo:
        current = todo.pop()
        name = getattr(current, "__qualname__", repr(current))
        if name in seen:
            continue
        try:
            seen[name] = textwrap.dedent(inspect.getsource(current))
        except (OSError, TypeError):
            seen[name] = name
        code = getattr(current, "__code__", None)
        for called in (code.co_names if code is not None else ()):
            value = vars(module).get(called) if module is not None else None
            if isinstance(value, types.FunctionType) and value.__module__ == current.__module__:
                todo.append(value)
    return [seen[name] for name in sorted(seen)]


class PythonTool:
    """A suite's Python function as a tool, called in a worker process (evalkit.agents.worker)."""

    def __init__(self, function: Callable[..., Any], workers: ToolWorkers,
                 data: Mapping[str, str] | None = None) -> None:
        self.function = function
        self.model = arguments_model(function)
        description = inspect.getdoc(function) or ""
        self._tool = Tool(name=function.__name__, description=description, parameters=_schema(self.model))
        self._fingerprint = fingerprint({"kind": "python", "source": _sources(function), "data": dict(data or {}),
                                         "schema": self._tool.model_dump(mode="json")})
        self.workers = workers

    @property
    def tool(self) -> Tool:
        return self._tool

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def invoke(self, arguments: Any, timeout: float) -> ToolOutcome:
        try:
            self.model.model_validate(arguments)
        except ValidationError as error:
            return failed(validation_problem(error))
        status, text = self.workers.call(self.tool.name, arguments, timeout)
        return ToolOutcome(text) if status == "ok" else failed(text)


def failed(why: str) -> ToolOutcome:
    """An error result: what the model reads (`error: WHY`) and the one line the trajectory keeps."""
    line = one_line(why, 500)
    return ToolOutcome(f"error: {line}", error=True, error_message=line)


def load_python_tools(path: Path) -> tuple[list[PythonTool], ToolWorkers]:
    """The tools a suite's tools file defines, and the workers that will run them; refused in one line when the
    file cannot be imported or a tool has no usable signature."""
    try:
        module = load_tools_module(path)
        functions = tool_functions(module)
    except Exception as error:  # noqa: BLE001 - the suite's code: one line naming the file
        raise InputError(one_line(f"{path}: cannot import the suite's tools: {type(error).__name__}: {error}",
                                  600)) from None
    if not functions:
        raise InputError(f"{path}: defines no tools (public functions, or a TOOLS list of them)")
    data = _data_files(path, getattr(module, TOOL_DATA, ()))
    workers = ToolWorkers(path)
    tools = []
    for name, function in functions.items():
        if not TOOL_NAME.match(name):
            raise InputError(f"{path}: tool {name!r} has a name no provider accepts; rename the function")
        try:
            tools.append(PythonTool(function, workers, data))
        except Exception as error:  # noqa: BLE001 - an annotation pydantic cannot turn into a schema
            raise InputError(one_line(f"{path}: tool {name}: no JSON Schema from its signature "
                                      f"({type(error).__name__}: {error}); annotate its parameters with JSON types",
                                      600)) from None
    return tools, workers


def _data_files(path: Path, names: Any) -> dict[str, str]:
    """name -> fingerprint of each file the tools module's TOOL_DATA names (relative to its folder): the data the
    tools read, so an edited database is a changed tool."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InputError(f"{path}: {TOOL_DATA} must be a list of file names relative to its folder")
    out = {}
    for name in names:
        file = path.parent / str(name)
        if not file.resolve().is_relative_to(path.parent.resolve()) or not file.is_file():
            raise InputError(f"{path}: {TOOL_DATA} names {name!r}, which is not a file in {path.parent}")
        out[str(name)] = fingerprint(file.read_bytes())
    return out


class ToolBox:
    """The tools of one run by name, and how each call of one is answered (never an exception)."""

    def __init__(self, tools: Sequence[ToolImpl], timeout_s: float, close: Callable[[], None] = lambda: None) -> None:
        self.by_name: dict[str, ToolImpl] = {}
        for tool in tools:
            if tool.tool.name in self.by_name:
                raise InputError(f"two tools are named {tool.tool.name}; rename one")
            self.by_name[tool.tool.name] = tool
        self.timeout_s = timeout_s
        self._close = close

    @property
    def tools(self) -> tuple[Tool, ...]:
        """What the model is offered, by name."""
        return tuple(self.by_name[name].tool for name in sorted(self.by_name))

    def identity(self) -> dict[str, dict[str, Any]]:
        """By tool name: its fingerprint and schema, as the eval key's `tools` component holds them."""
        return {name: {"fingerprint": impl.fingerprint, "description_sha": fingerprint(impl.tool.description),
                       "parameters": impl.tool.parameters}
                for name, impl in sorted(self.by_name.items())}

    def fingerprint_of(self, name: str) -> str | None:
        impl = self.by_name.get(name)
        return impl.fingerprint if impl is not None else None

    def invoke(self, name: str, arguments: Any) -> ToolOutcome:
        impl = self.by_name.get(name)
        if impl is None:
            offered = ", ".join(sorted(self.by_name)) or "none"
            return failed(f"no tool named {name!r} (the tools offered: {offered})")
        if not isinstance(arguments, Mapping):
            return failed(f"arguments must be a JSON object, got {type(arguments).__name__}: "
                           f"{str(arguments)[:200]!r}")
        try:
            return impl.invoke(arguments, self.timeout_s)
        except Exception as error:  # noqa: BLE001 - a broken implementation is the tool's error, not a crash
            return failed(f"{type(error).__name__}: {error}")

    def close(self) -> None:
        self._close()
