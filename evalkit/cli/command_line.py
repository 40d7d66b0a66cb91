"""What `python -m evalkit` does with its command line before Hydra sees it.

Hydra's argparse would exit 2 (the incomparable code) on an unknown flag, and would write a credential given in an
override into .hydra/ before any job could refuse it; and which conf/ is the primary config depends on where the
user's project is. So flags are checked, credential-shaped overrides refused, evalkit's own configs kept on the
search path, and the project's conf/ chosen here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.core.errors import EvalkitError

if TYPE_CHECKING:
    from evalkit.core.config import RunConfig

__all__ = ["PACKAGE_SEARCHPATH", "check_flags", "keep_package_conf", "primary_config", "refuse_credentials",
           "refuse_resolved_credentials"]


# Hydra's own flags (hydra/_internal/utils.py get_args_parser); any other `-x` is refused before Hydra sees it
_FLAGS = {"--help", "-h", "--hydra-help", "--version", "--cfg", "-c", "--resolve", "--package", "-p", "--run",
          "-r", "--multirun", "-m", "--shell-completion", "-sc", "--config-path", "-cp", "--config-name", "-cn",
          "--config-dir", "-cd", "--experimental-rerun", "--info", "-i"}


# Hydra's flags that take a value: given last, without one, its argparse would exit 2 (incomparable)
_VALUED = {"--package", "-p", "--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd",
           "--experimental-rerun"}


_INFO = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")  # Hydra's --info choices


def check_flags(argv: list[str]) -> None:
    """Refuse an unknown `--flag` in one line (Hydra's argparse would print its usage and exit 2: incomparable)."""
    for index, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if flag in ("--cfg", "-c"):
            value = value if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            if value not in ("job", "hydra", "all"):
                raise EvalkitError(f"command line: {flag} takes job, hydra or all (got {value[:40]!r})")
        if flag in _VALUED and not eq and (index + 1 >= len(argv) or argv[index + 1].startswith("-")):
            raise EvalkitError(f"command line: {flag} takes a value (e.g. {flag}=VALUE or {flag} VALUE), and none "
                               "was given")
        if flag in ("--info", "-i"):  # an optional value: the next argument, unless it is another flag
            following = argv[index + 1] if index + 1 < len(argv) else None
            value = value if eq else following if following is not None and not following.startswith("-") else ""
            if value and value not in _INFO:
                raise EvalkitError(f"command line: {flag} takes nothing or one of {', '.join(_INFO)} "
                                   f"(got {value[:40]!r})")
        if arg.startswith("-") and arg.split("=", 1)[0] not in _FLAGS and not arg.lstrip("-")[:1].isdigit():
            shown_arg = arg if len(arg) <= 60 else arg[:57] + "..."
            raise EvalkitError(f"command line: unknown option {shown_arg!r}; evalkit takes overrides (key=value, "
                               "e.g. model=gemma4) and Hydra's flags (-m, --cfg job, --help)")


def refuse_credentials(argv: list[str]) -> None:
    """Refuse an override that carries a credential before Hydra writes it into .hydra/, multirun.yaml, job.json,
    the sweep summary and the terminal; the one way in for a key is an environment variable named by api_key_env."""
    from evalkit.core.errors import InputError
    from evalkit.live.redact import override_credential

    for arg in argv:
        found = override_credential(arg)
        if found:
            where = arg.split("=", 1)[0] if "=" in arg else "an argument"
            raise InputError(f"command line {where}=...: the value holds {found}; overrides are written to .hydra/, "
                             "job.json and sweep summaries and shown, so evalkit refuses credentials there: put the "
                             "key in an environment variable and name it with model.api_key_env (or "
                             "judge.api_key_env)")


def refuse_resolved_credentials(config: RunConfig) -> None:
    """Refuse a composed config whose resolved values hold a credential (`model.name=${oc.env:HF_TOKEN}`): the
    value would reach the eval key, the recording's name, the reports and the terminal, none of which may hold it.
    Checked after interpolation, since the text typed holds only the variable's name."""
    from evalkit.core.errors import InputError
    from evalkit.live.redact import config_credential

    found = config_credential(config.model_dump(mode="json", exclude={"env_read"}))
    if found:
        raise InputError(f"config {found} once resolved; config values are written to reports, recordings and "
                         "the terminal, so evalkit refuses credentials there: name the key's variable with "
                         "model.api_key_env (or judge.api_key_env) instead")


_HELP_FLAGS = ("--help", "-h", "--hydra-help")


PACKAGE_SEARCHPATH = "pkg://evalkit.conf"


def keep_package_conf(arg: str) -> str:
    """`hydra.searchpath=[file://extra]` replaces the project's list; evalkit's own configs stay searched, last."""
    name, sep, value = arg.partition("=")
    if name != "hydra.searchpath" or not sep or PACKAGE_SEARCHPATH in value:
        return arg
    inner = value.strip()
    inner = inner[1:-1].strip() if inner.startswith("[") and inner.endswith("]") else inner
    return f"hydra.searchpath=[{inner + ',' if inner else ''}{PACKAGE_SEARCHPATH}]"


def primary_config(argv: list[str]) -> tuple[Path, str]:
    """The project's conf/ and its config.yaml; outside any project, `--help` still shows evalkit's own."""
    from omegaconf import OmegaConf

    from evalkit.project.paths import PACKAGE_CONF, find_project, project_root

    root = find_project()
    if root is None and any(arg in _HELP_FLAGS for arg in argv):
        OmegaConf.register_new_resolver("evalkit_project", lambda: str(Path.cwd()), replace=True)
        return PACKAGE_CONF, "evalkit"
    root = project_root()  # no project (or a wrong EVALKIT_PROJECT) is one line saying how to make one
    # job folders go under the project root, wherever evalkit is started from (evalkit/conf/evalkit.yaml)
    OmegaConf.register_new_resolver("evalkit_project", lambda: str(root), replace=True)
    return root / "conf", "config"
