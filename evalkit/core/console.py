"""Printing to the terminal what evalkit did not write itself: every line shown as the terminal sanitiser shows
untrusted text, and a reader that went away never a crash. Every command and the sweep callback print through it."""

from __future__ import annotations

import os
import sys

from evalkit.core.untrusted import terminal

__all__ = ["say"]


def say(text: str, *, machine: bool = False) -> None:
    """Print to stdout, each line shown as the terminal sanitiser shows untrusted text (control characters
    visible, long lines cut); `machine` output (JSON, whose encoder escapes control characters itself) is printed
    whole. A reader that went away (`| head`) must not turn a decision into a crash."""
    try:
        print(text if machine else "\n".join(terminal(line) for line in text.split("\n")), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
