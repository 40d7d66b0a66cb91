"""The configuration reference: every option of a config model as a Markdown table, from the models themselves.

The docs site's reference pages are generated from the pydantic models' field docstrings (as the policy's JSON
schema is), so a new option is documented where it is declared and the reference cannot go stale.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = ["options_table", "option_rows"]


def option_rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) for every option of `model`, nested models flattened as `a.b`."""
    rows: list[tuple[str, str, str, str]] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        nested = _model_of(field.annotation)
        description = " ".join((field.description or "").split())
        if nested is not None:
            if description:
                rows.append((key, _type_name(field.annotation), _default(field), description))
            rows.extend(option_rows(nested, f"{key}."))
            continue
        rows.append((key, _type_name(field.annotation), _default(field), description))
    return rows


def options_table(model: type[BaseModel], prefix: str = "") -> str:
    """The Markdown table of `option_rows`, cells escaped for Markdown tables."""
    lines = ["| option | type | default | what it is |", "|---|---|---|---|"]
    for key, kind, default, description in option_rows(model, prefix):
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_cell(description) or '-'} |")
    return "\n".join(lines) + "\n"


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The config model an annotation holds (`X`, `X | None`), None for anything else."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return models[0] if len(models) == 1 else None
    return None


_QUALIFIED = re.compile(r"\b(?:\w+\.)+(\w+)")


def _type_name(annotation: Any) -> str:
    """A type as a reader of config files needs it: `ProgramSpec | None`, not its module path."""
    if isinstance(annotation, type):
        return annotation.__name__
    return _QUALIFIED.sub(r"\1", str(annotation)).replace("NoneType", "None")


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        return "required" if field.default_factory is None else "(empty)"
    if isinstance(field.default, BaseModel):
        return "(see below)"
    value = getattr(field.default, "value", field.default)  # an enum's value, as config files spell it
    return "null" if value is None else f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
