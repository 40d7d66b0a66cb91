"""evalkit.core.json_text: the same bytes as json.dumps with an indent, whatever the data."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.core.json_text import indented_json, json_value

_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text())
_KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
                    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(data=JSON, indent=st.sampled_from((1, 2, 4)), ensure_ascii=st.booleans())
def test_same_text_as_json_dumps(data: Any, indent: int, ensure_ascii: bool) -> None:
    expected = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii, allow_nan=False)
    assert indented_json(data, indent, ensure_ascii=ensure_ascii) == expected


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\u2028\x00\x1f\x7f\"\\/", "é😀"])
@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_escapes_and_lone_surrogates_as_json_writes_them(text: str, ensure_ascii: bool) -> None:
    data = {text: [text, {"k": text}], "n": 1e-07, "big": 10**25, "neg": -0.0, "empty": [{}, []]}
    assert indented_json(data, ensure_ascii=ensure_ascii) == json.dumps(data, indent=1, ensure_ascii=ensure_ascii)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_is_refused_as_json_refuses_it(value: float) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        indented_json({"x": [value]})


@settings(max_examples=200, deadline=None)
@given(data=JSON)
def test_json_value_reads_what_json_loads_reads(data: Any) -> None:
    for text in (json.dumps(data, ensure_ascii=False), json.dumps(data)):
        assert json_value(text) == json.loads(text)


def test_json_value_of_a_lone_surrogate() -> None:
    text = json.dumps({"a": "x\ud800"}, ensure_ascii=False)
    assert json_value(text) == {"a": "x\ud800"}
