"""evalkit/core/parsing.py: strict JSON, whether json's scanner bounds the nesting or the parsed value is walked."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from evalkit.core.errors import InputError
from evalkit.core.parsing import MAX_DEPTH, parse_json


@pytest.fixture(params=["scanner", "walk"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """`walk`: another thread runs, so the process-wide recursion limit is left alone and the value is walked."""
    if request.param == "scanner":
        yield request.param
        return
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        yield request.param
    finally:
        stop.set()
        other.join()


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def test_nesting_within_the_limit_is_read(mode: str) -> None:
    assert parse_json(nested(MAX_DEPTH - 5), "f") is not None


@pytest.mark.parametrize("depth", [MAX_DEPTH + 20, 5_000, 200_000])
def test_deeper_nesting_is_refused_in_one_line(mode: str, depth: int) -> None:
    with pytest.raises(InputError, match=r"^f: the file nests objects or lists more than 100 levels deep"):
        parse_json(nested(depth), "f")


@pytest.mark.parametrize("text", ['{"a": 1e999}', '[-1e999]', "[1" + "0" * 400 + ".0]"])
def test_numbers_that_overflow_to_infinity_are_refused(mode: str, text: str) -> None:
    with pytest.raises(InputError, match="is too large for a number"):
        parse_json(text, "f")


@pytest.mark.parametrize(("text", "message"), [
    ('{"a": 1, "a": 2}', "key 'a' appears twice"),
    ('[NaN]', "NaN is not a JSON number"),
    ('{"a": Infinity}', "Infinity is not a JSON number"),
])
def test_what_json_would_silently_accept_is_refused(mode: str, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_json(text, "f")


def test_the_recursion_limit_is_restored() -> None:
    import sys

    before = sys.getrecursionlimit()
    with pytest.raises(InputError):
        parse_json(nested(5_000), "f")
    parse_json("[1]", "f")
    assert sys.getrecursionlimit() == before
