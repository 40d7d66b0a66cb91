"""The process that runs llama-cpp-python for the `llamacpp` provider (started by it: `main`).

llama.cpp is native code: a build made for another CPU model can die of a signal (SIGSEGV, SIGILL) where Python
cannot catch it. Run here, such a crash ends this process only; the provider that started it (evalkit.live.
providers.supervisor) sees its pipe close and ends the run as an outage with one line.

The protocol is JSON lines. The first line in is `{"model_path": ..., "settings": {...}}` (the load options);
the answer is `{"loaded": true, "chat_parameters": [...]}` or `{"error": ..., "kind": "load"}`. Every later
line in is one chat call, `{"messages": [...], "arguments": {...}}`, answered by `{"completion": {...},
"latency_ms": ...}` or `{"error": ..., "kind": "refused" | "failed"}`. The worker ends when its input closes.
Only this module imports llama_cpp, so evalkit's own process never loads the native library.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import sys
import time
from typing import IO, Any

__all__ = ["main"]


def _send(replies: IO[str], message: dict[str, Any]) -> None:
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def main() -> int:
    # Ctrl-C in a terminal reaches the whole process group: the parent handles it and closes our input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The replies get their own copy of stdout; descriptor 1 then points at stderr, so nothing the native
    # library prints can land inside a reply line.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import llama_cpp

    chat_parameters = sorted(inspect.signature(llama_cpp.Llama.create_chat_completion).parameters)
    first = sys.stdin.readline()
    if not first:
        return 0
    load = json.loads(first)
    try:
        model = llama_cpp.Llama(model_path=load["model_path"], verbose=False, **load["settings"])
    except (ValueError, RuntimeError, OSError) as error:  # not a GGUF, or too little memory
        _send(replies, {"error": str(error), "kind": "load"})
        return 0
    _send(replies, {"loaded": True, "chat_parameters": chat_parameters})
    try:
        for line in sys.stdin:
            call = json.loads(line)
            started = time.perf_counter()
            # Forget the previous prompt: llama-cpp-python would evaluate only what follows the common prefix, and
            # batches of another shape can change a greedy reply, making it depend on the call before it.
            model.reset()
            try:
                completion = model.create_chat_completion(messages=call["messages"], **call["arguments"])
            except ValueError as error:  # e.g. the prompt does not fit the context
                _send(replies, {"error": str(error), "kind": "refused"})
                continue
            except Exception as error:  # outside llama-cpp-python's contract: the call could not be made
                _send(replies, {"error": f"{type(error).__name__}: {error}", "kind": "failed"})
                continue
            latency_ms = round((time.perf_counter() - started) * 1000, 1)
            _send(replies, {"completion": completion, "latency_ms": latency_ms})
    finally:
        model.close()  # while the interpreter still can: llama_cpp's own finaliser runs too late at exit
    return 0


if __name__ == "__main__":
    sys.exit(main())
