-- The order agent's database (suites/order_agent/tools.py builds it in memory from this file; its bytes are part
-- of every tool's fingerprint, so an edited row makes a changed tool, never a stale recorded result).
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers (id),
                     status TEXT NOT NULL, total_usd REAL NOT NULL);
INSERT INTO customers VALUES (1, 'Ada Lovelace', 'ada@example.com');
INSERT INTO customers VALUES (2, 'Grace Hopper', 'grace@example.com');
INSERT INTO customers VALUES (3, 'Alan Turing', 'alan@example.com');
INSERT INTO orders VALUES (1001, 1, 'shipped', 120.00);
INSERT INTO orders VALUES (1002, 2, 'delivered', 15.99);
INSERT INTO orders VALUES (1003, 2, 'processing', 230.10);
INSERT INTO orders VALUES (1004, 3, 'cancelled', 42.50);
