"""The commands: each reads its inputs, calls the pure parts, renders, and maps the outcome to an exit code.

`python -m evalkit` is evalkit.cli.run; `evalkit gate`, `.adapt`, `.review`, `.calibrate` are thin
names for the modules here.
"""
