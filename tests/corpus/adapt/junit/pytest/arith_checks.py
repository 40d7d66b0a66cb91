"""evalkit's pytest JUnit XML fixture (see ../README.md): ARITH_VARIANT=candidate breaks subtraction, fixes
division and adds a check whose fixture errors. Named arith_checks.py so evalkit's own test run never collects
it; pytest runs it when the file is named on the command line."""

import os

import pytest

CANDIDATE = os.environ.get("ARITH_VARIANT") == "candidate"


def subtract(a: int, b: int) -> int:
    return a + b if CANDIDATE else a - b


def divide(a: int, b: int) -> float:
    return a / b if CANDIDATE else a * b


def test_add() -> None:
    assert 2 + 2 == 4


def test_subtract() -> None:
    assert subtract(10, 7) == 3


def test_divide() -> None:
    assert divide(12, 4) == 3


@pytest.mark.parametrize("n", [2, 3])
def test_square(n: int) -> None:
    assert n * n == {2: 4, 3: 9}[n]


@pytest.mark.skip(reason="not written yet")
def test_power() -> None:
    pass


@pytest.mark.xfail(reason="floating point", strict=False)
def test_float_sum() -> None:
    assert 0.1 + 0.2 == 0.3


class TestModulo:
    @pytest.fixture
    def table(self) -> dict[int, int]:
        if CANDIDATE:
            raise RuntimeError("modulo table missing")
        return {7: 1}

    def test_modulo(self, table: dict[int, int]) -> None:
        assert 7 % 3 == table[7]
