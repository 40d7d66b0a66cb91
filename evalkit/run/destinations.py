"""Where a run may write: its run folder, its recording (live modes), `run.save_report` and `run.otel_export`,
nothing else.

- The run folder (`run.out`, by default Hydra's `hydra.run.dir`) may not be the project root, nor lie inside
  the project's or evalkit's `conf/`, the `suites/` folder, the run's own suite folder or its recordings
  folder: the files a run writes there (`pytest.ini`, `report.json`, `pytest.log` ...) would shadow or replace
  the project's own.
- A saved run report (`run.save_report=PATH`, `evalkit bless --to PATH`) is a baseline to keep, so it
  may only replace a run report: the path must end in `.json`, may not be a symbolic link, may not lie inside a
  `conf/` folder, may not be one of the command's inputs (the baseline the run is gated against, the report
  being blessed), and a file already there must parse as a run report (never a dataset, recording or config).
- A trace export (`run.otel_export=PATH`) may not be a symbolic link, one of the run's inputs, or lie inside a
  `conf/` folder; a file already there is replaced whole (evalkit.run.otel_export).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalkit.core.config import RunConfig
from evalkit.core.errors import InputError
from evalkit.core.files import read_text
from evalkit.core.outputs import refuse_input, refuse_link, same_file
from evalkit.project.git import GIT
from evalkit.project.paths import conf_dirs, project_path, project_root
from evalkit.records.report_reader import parse_report
from evalkit.run.baseline import DEFAULT

__all__ = ["check_run_destinations", "check_saved_report"]


def check_run_destinations(config: RunConfig) -> None:
    """Refuse, before anything is called or written, a run folder or `run.save_report` this run may not write."""
    out = Path(config.run.out).expanduser()
    root = project_root()
    protected = {f"the config folder {c}": c for c in conf_dirs()}
    protected |= {"the project's suites folder": root / "suites", "the suite's folder": project_path(config.suite.path),
                  "the recordings folder": project_path(config.run.recordings)}
    if same_file(out, root):
        raise InputError(f"run.out={config.run.out}: the run folder is the project root {root}, where the files a run "
                         "writes (pytest.ini, report.json ...) would shadow the project's own; point run.out (or "
                         "hydra.run.dir) at a folder of its own, e.g. outputs/NAME")
    for name, folder in protected.items():
        if _inside(out, folder):
            raise InputError(f"run.out={config.run.out}: the run folder lies in {name} ({folder}), which a run "
                             "never writes; point run.out (or hydra.run.dir) at a folder of its own, e.g. "
                             "outputs/NAME")
    if config.run.save_report:
        check_saved_report(Path(config.run.save_report).expanduser(), "run.save_report", _run_inputs(config))
    if config.run.otel_export:
        _check_trace_export(Path(config.run.otel_export).expanduser(), _run_inputs(config))


def _check_trace_export(path: Path, inputs: Mapping[str, Path]) -> None:
    """`run.otel_export` may not be a link, an input of the run or lie in a config folder, and needs the SDK."""
    from evalkit.run.otel_export import require_sdk  # the SDK is imported only by a run that exports

    refuse_link(path, "trace export")
    refuse_input(path, inputs, "trace export")
    for folder in conf_dirs():
        if _inside(path, folder):
            raise InputError(f"run.otel_export={path}: lies in the config folder {folder}, which evalkit never "
                             "writes; write the trace elsewhere (e.g. outputs/calls.otlp.json)")
    require_sdk()


def check_saved_report(path: Path, setting: str, inputs: Mapping[str, Path]) -> None:
    """Refuse a place a saved run report (a baseline to keep) may not be written; see the module's rules."""
    where = f"{setting}={path}"
    if path.suffix != ".json":
        raise InputError(f"{where}: a saved run report is JSON; name a .json file")
    refuse_link(path, "saved run report")
    refuse_input(path, inputs, "saved run report")
    for folder in conf_dirs():
        if _inside(path, folder):
            raise InputError(f"{where}: lies in the config folder {folder}, which evalkit never writes; save the "
                             "report elsewhere (a suite's runs/ folder for a baseline)")
    if path.is_dir():
        raise InputError(f"{where}: is a folder; name a .json file")
    if path.exists():
        try:
            parse_report(read_text(path, "saved run report"), str(path))
        except InputError as error:
            raise InputError(f"{where}: a file is there that is not a run report ({error}); a saved report only "
                             "replaces a run report: choose another path") from None


def _run_inputs(config: RunConfig) -> dict[str, Path]:
    """The files a run reads that are run reports: the baseline it is gated against (a `git:` baseline is read
    from git, not from a file)."""
    if not config.baseline or config.baseline.startswith(GIT):
        return {}
    if config.baseline == DEFAULT:
        if not config.suite.baseline:
            return {}
        return {"the baseline this run is gated against (regenerate a baseline with baseline=none)":
                project_path(config.suite.baseline)}
    return {"the baseline this run is gated against (baseline=PATH; regenerate a baseline with baseline=none)":
            Path(config.baseline).expanduser()}


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies under it, following links in both."""
    try:
        resolved, top = path.resolve(), folder.resolve()
    except (OSError, RuntimeError):
        return False
    return resolved == top or top in resolved.parents
