"""Renderers: each turns a value into a string and does nothing else."""

from evalkit.render.text import render_decision

__all__ = ["render_decision"]
