"""Calling models live: providers (one module per protocol), the reply contract, rate limits, retries, budget,
progress and redaction of secrets."""
