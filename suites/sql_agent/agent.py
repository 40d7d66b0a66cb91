"""A small SQL agent: the kind of code a team ships, gated by evalkit as a candidate program.

It answers one question about a shop's SQLite database with the `openai` SDK's chat completions client and a plain
tool loop: the model calls `list_tables` and `run_sql` (read-only queries over a real SQLite database built from the
case's `shop.sql`), reads their results and calls again, until it answers. It knows nothing of evalkit: it finds the
model through OPENAI_BASE_URL and OPENAI_API_KEY, as it would in production.

Reads task.json (`question`), writes response.json (`answer`, the `tools` it called, `steps`).
"""

from __future__ import annotations

import json
import sqlite3

import openai

SYSTEM = ("You answer questions about a shop's database. Call list_tables to see the schema, run_sql to query it, "
          "and answer with the value alone.")
MAX_STEPS = 8
TOOLS = [
    {"type": "function", "function": {
        "name": "list_tables", "description": "The database's tables and their columns.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "run_sql", "description": "Run one read-only SQLite query and return its rows as JSON.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
]


def list_tables(db: sqlite3.Connection) -> str:
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return json.dumps({table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")] for table in tables})


def run_sql(db: sqlite3.Connection, query: str) -> str:
    try:
        return json.dumps(db.execute(query).fetchall())
    except sqlite3.Error as error:
        return json.dumps({"error": str(error)})


def main() -> None:
    task = json.load(open("task.json", encoding="utf-8"))
    db = sqlite3.connect(":memory:")
    db.executescript(open("shop.sql", encoding="utf-8").read())
    db.execute("PRAGMA query_only = ON")  # the model may read, never write
    client = openai.OpenAI()
    messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task["question"]}]
    called = []
    for step in range(1, MAX_STEPS + 1):
        reply = client.chat.completions.create(model="shop-agent", messages=messages, tools=TOOLS, temperature=0)
        message = reply.choices[0].message
        if not message.tool_calls:
            json.dump({"answer": message.content, "tools": called, "steps": step}, open("response.json", "w"))
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments or "{}")
            called.append({"tool": call.function.name, "arguments": arguments})
            if call.function.name == "list_tables":
                result = list_tables(db)
            elif call.function.name == "run_sql":
                result = run_sql(db, str(arguments.get("query", "")))
            else:
                result = json.dumps({"error": f"no tool {call.function.name}"})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    json.dump({"answer": None, "tools": called, "steps": MAX_STEPS, "error": "max steps"}, open("response.json", "w"))


if __name__ == "__main__":
    main()
