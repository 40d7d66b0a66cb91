"""Hydra's and OmegaConf's composition errors as one line that names the key or option and what exists there."""

from __future__ import annotations

import re
import sys
from typing import Any

from evalkit.core.errors import one_line

__all__ = ["config_error", "missing_option", "output_dir_error"]


def output_dir_error(error: OSError) -> str:
    if error.filename is None:  # Hydra names no path for some failures: say which setting to look at
        return one_line(f"cannot write Hydra's run or sweep folder (hydra.run.dir / hydra.sweep.dir): "
                        f"{error.strerror or error}; free space or name folders that can be created (not files)")
    return one_line(f"cannot create the run folder {error.filename} ({error.strerror or error}); hydra.run.dir and "
                    "hydra.sweep.dir must name folders that can be created (not files)")


# Launchers Hydra's plugins bring (`hydra/launcher=NAME`), and the extra that installs them.
LAUNCHER_PLUGINS = {"joblib": "hydra-joblib-launcher", "submitit_local": "hydra-submitit-launcher",
                    "submitit_slurm": "hydra-submitit-launcher"}


def missing_option(error: Any) -> str:
    message = str(error).splitlines()[0]
    options = getattr(error, "options", None)
    launcher = re.search(r"Could not find 'hydra/launcher/(\w+)'", message)
    if launcher and launcher.group(1) in LAUNCHER_PLUGINS and launcher.group(1) not in (options or ()):
        name = launcher.group(1)
        return (f"hydra/launcher={name}: the {name} launcher is not installed; install evalkit's launchers extra "
                f"(pip install 'evalkit[launchers]', which brings {LAUNCHER_PLUGINS[name]}) and run the sweep again")
    if options:
        return f"{message.strip()} (available: {', '.join(sorted(options))})"
    if "Could not load 'evalkit'" in message:  # the project's config.yaml does not reach the package's configs
        return (f"{message.strip()}: evalkit's base settings ship in the package; add `hydra: {{searchpath: "
                "[pkg://evalkit.conf]}` to the project's conf/config.yaml (evalkit new project writes it)")
    return message


def config_error(error: BaseException) -> str:
    """One line for a composition error; an unknown key lists the keys that exist there."""
    from evalkit.core.config import RunConfig
    from evalkit.core.errors import fields_at

    cause = error.__cause__ or error
    full_key = getattr(cause, "full_key", None)
    first = str(error).splitlines()[0]
    overridden = re.match(r"Could not override '([\w/]+)'\. No match in the defaults list", first)
    if overridden:  # the group exists, but the chosen suite's defaults do not compose it
        group = overridden.group(1)
        given = next((a for a in sys.argv[1:] if a.lstrip("+~").split("=")[0] == group), f"{group}=...")
        return (f"command line {given}: the suite composes no {group} to choose (a suite that evaluates a "
                f"candidate program has no model or prompt; its option in conf/suite/ lists the groups it uses)")
    parse = re.match(r"(?:Error parsing override '(.*)'|\w*(?:Lexer|Parse|Parser)\w*Exception: (.*))$", first)
    if parse or "LexerNoViableAltException" in str(error):
        given = (parse.group(1) or parse.group(2)) if parse else first
        name, _, value = given.partition("=")
        return (f"command line: cannot parse the override {given!r}: values with characters other than letters, "
                f"digits and _-./: need quotes, e.g. {name}='\"{value}\"' (single quotes for the shell, "
                "double quotes for Hydra)")
    if full_key and "not in struct" in str(cause):
        parts = tuple(str(full_key).split("."))
        allowed = fields_at(RunConfig, parts[:-1])
        if parts[-1] in allowed:  # a setting the chosen option's file leaves out: Hydra adds it only with `+`
            return (f"command line: '{full_key}' is not given in the chosen {parts[0]} option's file, so Hydra "
                    f"cannot override it; add it with +{full_key}=VALUE, or write it in that file")
        hint = f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""
        return f"command line: unknown key '{full_key}'{hint}"
    return f"config: {first}"
