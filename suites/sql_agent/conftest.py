"""Fixtures of the SQL agent's checks: `case`, `program_run`, `reference` and `record_metric` come from evalkit's
plugin; the checks run in evalkit's process, never in the agent's sandbox."""
