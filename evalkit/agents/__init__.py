"""Agents declared in config: the tools a suite offers its model (evalkit.agents.tools), the worker that runs a
Python tool under a deadline (evalkit.agents.worker), and the pure steps of the loop that turn a model's tool calls
into the tool results it reads next (evalkit.agents.loop). evalkit.run.execute drives the loop, so every model step
goes through the same call path (budget, retries, concurrency, outage rules, recording and replay) as a single call.
"""
