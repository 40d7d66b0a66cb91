"""Structured-output dialects: the ways an OpenAI-style chat API can be asked for a reply that follows a schema.

Servers disagree. OpenAI, vLLM and llama.cpp's own `llama-server` take `response_format: {type: json_schema}`;
llama-cpp-python (its server and its in-process `Llama`) takes only `{type: json_object, schema: ...}` and
answers HTTP 500 to `json_schema`; some servers constrain nothing, and then the schema can only be asked for
in the prompt. A model's `structured_output` setting picks one (evalkit.core.config.ModelConfig).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["PROMPT_DIALECT", "response_format", "schema_message", "schema_name"]

PROMPT_DIALECT = "Answer with one JSON object only, no other text, following this JSON schema: "


def response_format(dialect: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The `response_format` of a schema in a dialect that sends one: a strict `json_schema`, or `json_object`
    with the schema beside it (llama-cpp-python's extension)."""
    if dialect == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": schema_name(schema), "schema": schema, "strict": True}}


def schema_message(schema: dict[str, Any]) -> dict[str, str]:
    """The `prompt` dialect: a last system message asking for JSON that follows the schema. Nothing enforces
    it; a reply that does not follow it fails its case's schema check, like any other reply."""
    return {"role": "system", "content": PROMPT_DIALECT + json.dumps(schema, sort_keys=True)}


def schema_name(schema: dict[str, Any]) -> str:
    """The `json_schema.name` the API requires (a-z, A-Z, 0-9, _ and -, at most 64): the schema's title."""
    title = schema.get("title")
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_")[:64] if isinstance(title, str) else ""
    return name or "response"
