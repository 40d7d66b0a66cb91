"""Benchmark: the CPU evalkit's endpoint (evalkit.programs.endpoint) adds to a model call, over a direct call.

A fake OpenAI-compatible server (tests/fakes/serve.py) runs as its own process, so its CPU is not counted. In this
process, evalkit's `openai` provider calls it:

  direct:   N calls of `provider.complete(request)`, as a model suite's call makes them;
  endpoint: N calls a client process (a candidate program's stand-in, keep-alive HTTP over the endpoint's Unix socket,
            the bytes an SDK sends) makes to the endpoint, which reads each body into a Request, hands it to the same
            provider and answers in the chat completions format.

The CPU time is this process's (every thread: `time.process_time()`) over each phase, divided by N; the client's own
CPU is its process's, not counted, as the program's is not evalkit's. The issue's bound: the endpoint adds at most
1 ms of CPU per call. The relay inside the sandbox (the launcher's, evalkit.programs.launcher) is not measured: it is
a byte copy in the sandbox's process. Three rounds, the median of each side judged.

With `--wire responses` the client speaks the OpenAI Responses API (`POST /v1/responses`, the same conversation as
`instructions` and `input`) and the endpoint answers in its format; the last line then starts with `wire=responses`.

Last line: `endpoint_cpu_ms_per_call=<x> direct_cpu_ms_per_call=<y> overhead_ms=<x-y> within_1ms=<true|false>`.
Run from the project root:  .venv/bin/python benchmarks/endpoint.py [--wire responses]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalkit.core.config import ModelConfig  # noqa: E402
from evalkit.live.providers import make_provider  # noqa: E402
from evalkit.programs.endpoint import Endpoint  # noqa: E402
from evalkit.records.call import Message, Reply, Request  # noqa: E402

CALLS, ROUNDS = 300, 3
BODY = {"model": "m", "messages": [{"role": "system", "content": "You answer questions about a shop's database."},
                                   {"role": "user", "content": "How many orders did Alice place?"}],
        "temperature": 0}
RESPONSES_BODY = {"model": "m", "instructions": BODY["messages"][0]["content"],  # type: ignore[index]
                  "input": BODY["messages"][1]["content"], "temperature": 0}  # type: ignore[index]
CLIENT = """
import http.client, json, socket, sys
class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sys.argv[1])
body = sys.argv[2].encode()
conn = Unix("endpoint")
for _ in range(int(sys.argv[3])):
    conn.request("POST", sys.argv[4], body, {"Content-Type": "application/json"})
    answer = conn.getresponse()
    assert answer.status == 200, answer.read()
    answer.read()
"""


def _fake_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port_file = folder / "port"
    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.serve", "--protocol", "openai", "--port-file",
                               str(port_file)], cwd=ROOT)
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the fake server did not start")
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port_file.read_text().strip()}/v1"


def main(wire: str) -> None:
    path, body = ("/v1/responses", RESPONSES_BODY) if wire == "responses" else ("/v1/chat/completions", BODY)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server, base_url = _fake_server(folder)
        try:
            provider = make_provider(ModelConfig(name="m", provider="openai", base_url=base_url, api_key_env=None))
            request = Request(model="m", messages=tuple(Message(role=m["role"], content=m["content"])
                                                        for m in BODY["messages"]), options={"temperature": 0})

            def answer(call_id: str, asked: Request) -> Reply:
                return provider.complete(asked)

            for _ in range(20):  # warm the connection pool and the interpreter
                provider.complete(request)
            direct, endpoint = [], []
            for round_ in range(ROUNDS):
                started = time.process_time()
                for _ in range(CALLS):
                    provider.complete(request)
                direct.append((time.process_time() - started) * 1000 / CALLS)
                with Endpoint(folder / f"e{round_}.sock", f"case{round_}", "m", answer) as served:
                    started = time.process_time()
                    subprocess.run([sys.executable, "-c", CLIENT, str(folder / f"e{round_}.sock"), json.dumps(body),
                                    str(CALLS), path], check=True)
                    endpoint.append((time.process_time() - started) * 1000 / CALLS)
                    assert len(served.calls) == CALLS
                print(f"round {round_ + 1}: direct {direct[-1]:.3f} ms/call, endpoint {endpoint[-1]:.3f} ms/call",
                      flush=True)
        finally:
            server.terminate()
            server.wait(10)
    x, y = statistics.median(endpoint), statistics.median(direct)
    print(f"{'wire=responses ' if wire == 'responses' else ''}endpoint_cpu_ms_per_call={x:.3f} "
          f"direct_cpu_ms_per_call={y:.3f} overhead_ms={x - y:.3f} within_1ms={'true' if x - y <= 1.0 else 'false'}")


if __name__ == "__main__":
    os.environ.pop("OPENAI_BASE_URL", None)
    main("responses" if sys.argv[1:] == ["--wire", "responses"] else "chat")
