"""Helpers shared by evalkit's own test modules (no test module imports from another)."""
