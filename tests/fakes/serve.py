"""Run a fake model server as its own process, so a benchmark's clients do not share its GIL.

    python -m tests.fakes.serve --protocol ollama --latency-ms 50 --fault-rate 0.2 --seed 1 --port-file F

Binds 127.0.0.1 on a free port and writes the port number to F (atomically) once it is listening;
the client's base URL is http://127.0.0.1:PORT, plus /v1 for the openai protocol. It runs until
SIGTERM or SIGINT; with --stats-file it then writes the number of calls and of each fault injected.
Requests are not recorded, to keep memory flat over long runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from .faults import Fault, Faults
from .protocols import PROTOCOLS
from .server import FakeServer

DEFAULT_REPLY = '{"label": "bug", "priority": "p2", "summary": "Fake reply from the benchmark server."}'


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", required=True, choices=sorted(PROTOCOLS))
    parser.add_argument("--latency-ms", type=float, default=0.0, help="added to every call (model time)")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="probability that a call gets a fault")
    parser.add_argument("--faults", default=",".join(f.value for f in Fault),
                        help=f"fault kinds to draw from, comma-separated (default: all: "
                             f"{', '.join(f.value for f in Fault)})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slow-ms", type=float, default=500.0, help="extra delay of a 'slow' fault")
    parser.add_argument("--hang-ms", type=float, default=5000.0,
                        help="how long a 'timeout' fault holds the call (make it longer than the client's timeout)")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on a 429; <0: no header")
    parser.add_argument("--reply", default=DEFAULT_REPLY, help="the content of every reply")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    parser.add_argument("--stats-file", type=Path, help="write call and fault counts here on exit (JSON)")
    args = parser.parse_args(argv)
    try:
        args.fault_kinds = tuple(Fault(kind.strip()) for kind in args.faults.split(",") if kind.strip())
    except ValueError as error:
        parser.error(f"--faults: {error} (valid: {', '.join(f.value for f in Fault)})")
    return args


def write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    faults = Faults(rate=args.fault_rate, kinds=args.fault_kinds, seed=args.seed, slow_ms=args.slow_ms,
                    hang_s=args.hang_ms / 1000, retry_after_s=args.retry_after if args.retry_after >= 0 else None)
    content: str = args.reply
    server = FakeServer(args.protocol, lambda body: content, faults=faults, latency_ms=args.latency_ms,
                        record=False)
    done = threading.Event()

    def stop(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with server:
        if args.port_file is not None:
            write_atomically(args.port_file, f"{server.port}\n")
        while not done.wait(0.5):
            pass
    if args.stats_file is not None:
        stats = {"protocol": args.protocol, "calls": server.calls, "faults": dict(sorted(server.injected.items()))}
        write_atomically(args.stats_file, json.dumps(stats, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
