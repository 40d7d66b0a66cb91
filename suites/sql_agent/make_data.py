"""Write the sql_agent suite's dataset: three authored questions over one authored shop database (shop.sql),
their references, and the manifest pinning both. Run it after editing the cases: the manifest's hashes follow."""

import hashlib
import json
import pathlib

shop = """CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL);
INSERT INTO customers VALUES (1, 'Alice', 'Lyon'), (2, 'Bob', 'Porto'), (3, 'Carol', 'Gdansk');
INSERT INTO orders VALUES (1, 1, 12.5), (2, 1, 30.0), (3, 2, 7.25), (4, 1, 3.0), (5, 3, 99.0), (6, 2, 10.0);
"""
cases = [
 ("alice-orders", "How many orders did Alice place?", "3"),
 ("bob-total", "What is the total Bob spent?", "17.25"),
 ("carol-city", "Which city does Carol live in?", "Gdansk"),
]
samples = [{"id": i, "split": "acceptance", "group": i, "origin": "authored-synthetic-v1", "question": q,
            "files": {"shop.sql": shop}} for i, q, _ in cases]
answers = {i: {"answer": a} for i, _, a in cases}
d = pathlib.Path(__file__).parent / "data"
(d/"samples.json").write_text(json.dumps(samples, indent=1, sort_keys=True) + "\n")
(d/"answers.json").write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
manifest = {"version": "sql-agent-v1", "synthetic": True,
            "purpose": "Show a team's own agent code gated through evalkit's endpoint, not any model's ability",
            "splits": {"acceptance": {"samples": 3, "groups": 3}},
            "sha256": {n: hashlib.sha256((d/n).read_bytes()).hexdigest() for n in ("samples.json", "answers.json")}}
(d/"manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
