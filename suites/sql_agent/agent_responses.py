"""The SQL agent of agent.py written against the OpenAI Responses API (`client.responses.create`): the same two tools
over SQLite, the same task.json and response.json, a different wire format. Gated through evalkit's endpoint in the
same way (`agent_code.program=suites/sql_agent/agent_responses.py`).

The conversation is sent whole on every call (`store=False`, no `previous_response_id`): the agent keeps its own
input list, appending the model's output items and a `function_call_output` item for each call.
"""

from __future__ import annotations

import json
import sqlite3

import openai

SYSTEM = ("You answer questions about a shop's database. Call list_tables to see the schema, run_sql to query it, "
          "and answer with the value alone.")
MAX_STEPS = 8
TOOLS = [
    {"type": "function", "name": "list_tables", "description": "The database's tables and their columns.",
     "parameters": {"type": "object", "properties": {}}},
    {"type": "function", "name": "run_sql",
     "description": "Run one read-only SQLite query and return its rows as JSON.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
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
    items: list[dict] = [{"role": "user", "content": task["question"]}]
    called = []
    for step in range(1, MAX_STEPS + 1):
        response = client.responses.create(model="shop-agent", instructions=SYSTEM, input=items, tools=TOOLS,
                                           temperature=0, store=False)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            json.dump({"answer": response.output_text, "tools": called, "steps": step}, open("response.json", "w"))
            return
        items += [item.model_dump(exclude_none=True) for item in response.output]
        for call in calls:
            arguments = json.loads(call.arguments or "{}")
            called.append({"tool": call.name, "arguments": arguments})
            if call.name == "list_tables":
                result = list_tables(db)
            elif call.name == "run_sql":
                result = run_sql(db, str(arguments.get("query", "")))
            else:
                result = json.dumps({"error": f"no tool {call.name}"})
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": result})
    json.dump({"answer": None, "tools": called, "steps": MAX_STEPS, "error": "max steps"}, open("response.json", "w"))


if __name__ == "__main__":
    main()
