"""A reader run in a confined child (evalkit.core.confined): its output, or one line for each way it can end
badly (refused, out of memory, out of time, killed by a signal), and a bug in evalkit's own code as the bug it is."""

from __future__ import annotations

import pytest

from evalkit.core.confined import run_confined
from evalkit.core.errors import InputError

READER = '''
import os, signal, sys, time
from evalkit.core.confined import serve
from evalkit.core.errors import InputError

def main(args):
    def produce():
        if args[0] == "refuse":
            raise InputError("x.bin: refused here")
        if args[0] == "bug":
            raise KeyError("oops")
        if args[0] == "hang":
            time.sleep(3600)
        if args[0] == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if args[0] == "grow":
            blocks = []
            while True:
                blocks.append(bytearray(32 << 20))
        yield b"fine\\n"
        yield args[0].encode()
    serve(produce)
'''


@pytest.fixture
def reader(tmp_path, monkeypatch):
    (tmp_path / "a_reader.py").write_text(READER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the child finds the module there (its own evalkit it is given)

    def run(what: str, memory_mb: int = 512, timeout_s: float = 60.0) -> bytes:
        return run_confined("a_reader", [what], where="x.bin", memory_bytes=memory_mb << 20, timeout_s=timeout_s,
                            memory_setting="the.memory", timeout_setting="the.time")

    return run


def test_the_childs_output_comes_back(reader):
    assert reader("ok") == b"fine\nok"


def test_a_refusal_is_the_childs_own_line(reader):
    with pytest.raises(InputError, match=r"^x\.bin: refused here$"):
        reader("refuse")


def test_running_out_of_memory_names_the_limit_and_its_setting(reader):
    with pytest.raises(InputError, match=r"^x\.bin: reading it needs more than 300 MiB of memory \(data that expand "
                                         r"when decoded\); check that it is the right file, or raise the\.memory$"):
        reader("grow", memory_mb=300)


def test_a_hang_is_stopped_and_names_its_setting(reader):
    with pytest.raises(InputError, match=r"^x\.bin: still being read after 2 s, and stopped; check that it is the "
                                         r"right file, or raise the\.time$"):
        reader("hang", timeout_s=2)


def test_a_crash_of_native_code_is_one_line(reader):
    with pytest.raises(InputError, match=r"^x\.bin: the reader stopped with signal SIGSEGV \(.*\): a file it cannot "
                                         r"read within 512 MiB, or a malformed one"):
        reader("crash")


def test_a_bug_in_the_child_is_an_internal_error_not_a_refusal(reader):
    with pytest.raises(RuntimeError, match=r"x\.bin: the reader failed \(KeyError: 'oops'\); its traceback:\n"
                                           r"(.|\n)*Traceback"):
        reader("bug")
