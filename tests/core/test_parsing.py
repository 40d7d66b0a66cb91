"""evalkit/core/parsing.py: strict JSON, whether json's scanner bounds the nesting or the parsed value is walked."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from evalkit.core import parsing
from evalkit.core.errors import InputError
from evalkit.core.parsing import MAX_DEPTH, check_json, check_json_aside, parse_json, parse_yaml


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


# -- check_json_aside: the strict check in a child process -------------------------------------------------------


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The processes check_json_aside forks, counted on the parent's side."""
    import os

    forked: list[int] = []
    real = os.fork

    def fork() -> int:
        forked.append(1)
        return real()

    monkeypatch.setattr(parsing.os, "fork", fork)
    return forked


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="a platform without fork checks in-process")
def test_a_refusal_in_the_child_is_raised_in_the_parent_in_the_same_words(forks: list[int]) -> None:
    text = '{"tests": [{"nodeid": "t", "outcome": "passed", "outcome": "failed"}]}'
    with pytest.raises(InputError) as inline:
        check_json(text, "r.json", "report")
    wait = check_json_aside(text.encode(), "r.json", "report")
    assert forks == [1]
    with pytest.raises(InputError) as aside:
        wait()
    assert str(aside.value) == str(inline.value) == ("r.json: key 'outcome' appears twice in one JSON object; each "
                                                      "key may appear once")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="a platform without fork checks in-process")
def test_a_valid_text_passes_aside(forks: list[int]) -> None:
    wait = check_json_aside(b'{"tests": [{"nodeid": "t", "outcome": "passed"}]}', "r.json", "report")
    assert wait() is True and wait() is True  # asked twice, answered once
    assert forks == [1]


def test_with_another_thread_running_the_check_runs_here(forks: list[int]) -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        # as check_json itself: with another thread, json's scanner cannot bound the nesting, so nothing is read
        # and False tells the caller to parse_json instead
        assert check_json_aside(b'{"x": NaN}', "r.json", "report")() is False
    finally:
        stop.set()
        other.join()
    assert forks == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="a platform without fork checks in-process")
def test_a_child_that_dies_without_an_answer_is_replaced_by_the_check_here(monkeypatch: pytest.MonkeyPatch,
                                                                           forks: list[int]) -> None:
    import os

    parent = os.getpid()
    real = parsing.check_json
    ran_here: list[int] = []

    def dies_in_the_child(text: str, where: str, what: str = "file") -> bool:
        if os.getpid() != parent:
            os._exit(9)  # as a child killed for memory: no answer
        ran_here.append(1)
        return real(text, where, what)

    monkeypatch.setattr(parsing, "check_json", dies_in_the_child)
    with pytest.raises(InputError, match="Infinity is not a JSON number"):
        check_json_aside(b'{"x": Infinity}', "r.json", "report")()
    assert forks == [1] and ran_here == [1]


def test_a_yaml_error_names_the_line_of_what_was_left_open_not_only_where_pyyaml_noticed() -> None:
    # the bracket opened on line 2 is never closed: PyYAML notices on line 3, where the next key begins
    with pytest.raises(InputError, match=r"conf\.yaml: not valid YAML: expected ',' or '\]', but got ':' \(line 3; "
                                         r"while parsing a flow sequence that starts on line 2\)$"):
        parse_yaml("a: 1\nb: [1, 2\nc: 3\n", "conf.yaml")
    with pytest.raises(InputError, match=r"\(line 3; while scanning a quoted scalar that starts on line 2\)$"):
        parse_yaml('a: 1\nb: "open\n', "conf.yaml")
