"""A chat assistant that remembers the user's name: a candidate program speaking evalkit's turn protocol
(docs/reference/turn-protocol.md), the example of docs/how-to/gate-a-chat-program.md.

evalkit runs it once per user turn. It reads task.json (`message`, the user's turn; `state`, what it returned last
turn, null on the first), asks the model through OPENAI_BASE_URL (in a run: evalkit's endpoint, which records the
call live and replays it offline), and writes response.json: `reply`, and `state` for the next turn (the name it
heard, and the conversation so far). Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request

SYSTEM = "You are a friendly, concise assistant."
NAME = re.compile(r"\bmy name is ([A-Z][a-z]+)")


def ask(messages: list[dict[str, str]]) -> str:
    body = json.dumps({"model": "chat", "messages": messages, "temperature": 0}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                     {"Content-Type": "application/json",
                                      "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(json.load(answer)["choices"][0]["message"]["content"])


def main() -> None:
    with open("task.json", encoding="utf-8") as f:
        task = json.load(f)
    state = task["state"] or {"name": None, "history": []}
    found = NAME.search(task["message"])
    if found:
        state["name"] = found.group(1)
    system = SYSTEM + (f" The user's name is {state['name']}." if state["name"] else "")
    history = [*state["history"], {"role": "user", "content": task["message"]}]
    reply = ask([{"role": "system", "content": system}, *history])
    state["history"] = [*history, {"role": "assistant", "content": reply}]
    with open("response.json", "w", encoding="utf-8") as f:
        json.dump({"reply": reply, "state": state}, f)


if __name__ == "__main__":
    main()
