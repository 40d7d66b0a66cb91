"""`evalkit run --help`: the config groups of the project and of evalkit together, and examples from the project.

Hydra's own help lists the groups of the primary config folder only (the `hydra.searchpath` a config adds is
applied after the help's listing is made), so in a project with a `conf/model/` of its own, evalkit's presets
vanished from it though they still work; and its examples were evalkit's example suites, which a project does not
have. This help reads every folder Hydra searches, in its order (the project's conf/, folders added with
`hydra.searchpath=[file://...]`, evalkit's own), marks the project's own options, and builds its examples from the
project's suites.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from evalkit.core.errors import InputError
from evalkit.core.files import read_text
from evalkit.core.parsing import AliasBoundedLoader
from evalkit.project.conf_files import searchpath_folders

__all__ = ["run_help"]

_HIDDEN = {"hydra"}  # Hydra's own groups: `--hydra-help` lists them
_EXITS = "Exit codes: 0 go (or review), 1 block, 2 incomparable, 3 input or usage error, 4 internal error, 5 outage."
_SETTINGS = ("Settings: mode=replay|live|record-missing, baseline=default|PATH|git:REF:PATH|none,\n"
             "          run.save_report=PATH, run.recordings=DIR, run.repeats=N, split=train|dev|acceptance")


def run_help(project_conf: Path | None, package_conf: Path, argv: list[str]) -> str:
    """The help text for a project whose conf/ is `project_conf` (None outside any project)."""
    extra = searchpath_folders(argv)
    own = [d for d in (project_conf, *extra) if d is not None]
    groups: dict[str, dict[str, bool]] = {}  # group -> option -> whether the project (or an extra folder) has it
    for folder, is_own in [*((d, True) for d in own), (package_conf, False)]:
        for group, option in _options(folder):
            groups.setdefault(group, {})
            groups[group][option] = groups[group].get(option, False) or is_own
    lines = ["evalkit: turn a change to an LLM application into a release decision.", "",
             "Usage: evalkit run [GROUP=OPTION ...] [key=value ...]     "
             "(-m to sweep: model=a,b; `python -m evalkit` is the same)",
             "A sweep prints one line per job, then its summary table; -v prints each job's full blocks.", _EXITS, "",
             "Config groups (choose one option of each; * marks this project's own options, the others ship "
             "with evalkit):"]
    for group in sorted(groups):
        shown = ", ".join(f"{o}*" if mine else o for o, mine in sorted(groups[group].items()))
        lines += textwrap.wrap(f"{group}: {shown}", 110, initial_indent="  ", subsequent_indent="    ")
    lines += ["", "Examples:" if project_conf is None else "Examples (this project):"]
    lines += [f"  {command:<44} {what}" for command, what in _examples(project_conf, groups)]
    lines += [_SETTINGS, "A served model: name it in a project preset, conf/model/NAME.yaml, rather than with",
              "model.name= on every command line (docs: how-to/live-runs)."]
    return "\n".join(lines) + "\n"


def _options(folder: Path) -> list[tuple[str, str]]:
    """(group, option) for each config file in a group folder under `folder` (nested groups as `a/b`)."""
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.rglob("*.yaml")):
        relative = path.relative_to(folder)
        if len(relative.parts) < 2 or relative.parts[0] in _HIDDEN:
            continue
        out.append(("/".join(relative.parts[:-1]), relative.stem))
    return out


def _default_of(path: Path, group: str) -> str | None:
    """The option of `group` that the config file at `path` picks in its defaults list, if it names one."""
    try:
        data = yaml.load(read_text(path, "config"), Loader=AliasBoundedLoader)  # noqa: S506 - a SafeLoader
    except (InputError, yaml.YAMLError, RecursionError):  # an alias bomb too (TooManyAliases): no example
        return None
    defaults = data.get("defaults") if isinstance(data, dict) else None
    for entry in defaults if isinstance(defaults, list) else []:
        if isinstance(entry, dict):
            for key, value in entry.items():
                if str(key).lstrip("/") == group and isinstance(value, str):
                    return value
    return None


def _examples(project_conf: Path | None, groups: dict[str, dict[str, bool]]) -> list[tuple[str, str]]:
    suites = sorted(groups.get("suite", {}))
    default = _default_of(project_conf / "config.yaml", "suite") if project_conf is not None else None
    if default is None:
        first = [("evalkit new suite NAME", "create a suite (run it inside the project)")] if project_conf else [
            ("evalkit new project DIR", "start a project: evalkit runs inside one")]
        return [*first, ("evalkit --help", "the other commands: gate, compare, adapt, history, bless ...")]
    assert project_conf is not None
    # the suite's own model, then the project's presets: the ones its recordings are likely to be for
    suite_model = _default_of(project_conf / "suite" / f"{default}.yaml", "model")
    own_models = sorted(o for o, mine in groups.get("model", {}).items() if mine)
    models = list(dict.fromkeys([m for m in (suite_model, *own_models) if m is not None]))
    prompts = sorted(o for o in groups.get("prompt", {}) if o != "v1")
    other_suite = next((s for s in suites if s != default), None)
    out = [("evalkit run", f"replay suite {default} and gate it against its baseline")]
    if prompts:
        out.append((f"evalkit run prompt={prompts[0]}", "gate a prompt change"))
    if len(models) >= 2:
        out.append((f"evalkit run -m model={models[0]},{models[1]}", "sweep two models, one decision each"))
    elif prompts:
        out.append((f"evalkit run -m prompt=v1,{prompts[0]}", "sweep two prompts, one decision each"))
    out += [("evalkit run mode=live baseline=none", "call the suite's model for real and record its replies"),
            ("evalkit run --cfg job -p policy", "print the composed policy")]
    if other_suite is not None:
        out.append((f"evalkit run suite={other_suite}", "another suite of this project"))
    out.append(("evalkit --help", "the other commands: gate, compare, adapt, history, bless ..."))
    return out
