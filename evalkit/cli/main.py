"""`evalkit COMMAND [ARGS]`: the one command-line entry point (the `evalkit` console script).

Each subcommand is the `main` of one module of evalkit.cli, imported only when chosen so that `evalkit gate`
never pays for Hydra. `evalkit run` is the Hydra app that `python -m evalkit` has always been; the other
subcommands take the arguments their `python -m evalkit.X` forms took.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from evalkit.cli.guard import command
from evalkit.gate.decision import ExitCode

__all__ = ["SUBCOMMANDS", "Subcommand", "epilog", "main", "usage"]


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: the module whose `main` runs it, what it is for, and the old `python -m` form."""

    module: str
    summary: str
    example: str
    """One command line that works, shown at the end of the subcommand's `--help`."""


_REPORT = "outputs/2026-12-01/10-00-00.000000/report.json"

SUBCOMMANDS: dict[str, Subcommand] = {
    "run": Subcommand("evalkit.cli.run", "compose a run with Hydra, replay or call the model, check, and gate it "
                      "(`-m` for sweeps)", "evalkit run model=gemma4 prompt=v2"),
    "gate": Subcommand("evalkit.cli.gate", "gate a candidate run report against a baseline under a policy",
                       f"evalkit gate suites/issue_triage/runs/baseline.json {_REPORT} --out decision.json"),
    "compare": Subcommand("evalkit.cli.compare", "compare two run reports case by case, with no policy",
                          f"evalkit compare suites/issue_triage/runs/baseline.json {_REPORT}"),
    "adapt": Subcommand("evalkit.cli.adapt", "gate what other eval tools wrote (Inspect, promptfoo, DeepEval, "
                        "lm-eval, JUnit, pytest)",
                        "evalkit adapt inspect logs/main/ logs/pr/ --out decision.json"),
    "history": Subcommand("evalkit.cli.history", "one suite over many runs, as a table and an HTML page",
                          "evalkit history outputs/ --suite issue_triage --html history.html"),
    "view": Subcommand("evalkit.cli.view", "many runs as one folder of static files: a grid of cases x runs, "
                       "filters, outputs side by side, labels and a review queue",
                       f"evalkit view suites/issue_triage/runs/baseline.json {_REPORT} --out explorer"),
    "policy-diff": Subcommand("evalkit.cli.policy_diff", "decide stored pairs under an old and a new policy and "
                              "show what changes",
                              "evalkit policy-diff git:origin/main:conf/policy/issue_triage.yaml "
                              "conf/policy/issue_triage.yaml"),
    "merge": Subcommand("evalkit.cli.merge", "join the shard files of a run made on several machines into one "
                        "report", "evalkit merge shards/shard-*-of-4.json --out report.json"),
    "plan": Subcommand("evalkit.cli.plan", "the cases x repeats a run needs to detect a given drop, and their "
                       "cost", "evalkit plan suites/issue_triage/runs/baseline.json --detect 0.05"),
    "bless": Subcommand("evalkit.cli.bless", "make a run report its suite's baseline",
                        f"evalkit bless {_REPORT}"),
    "review": Subcommand("evalkit.cli.review", "apply human review to a run report: decisions on presentation, or "
                         "labels exported from the run explorer",
                         "evalkit review --report report.json --decisions decisions.json --out reviewed.json"),
    "calibrate": Subcommand("evalkit.cli.calibrate", "run a suite's graders on its authored counterexamples, or "
                            "set its judged checks against people's labels",
                            "evalkit calibrate suite=quality_lab"),
    "migrate": Subcommand("evalkit.cli.migrate", "convert recordings of an older format to the current one",
                          "evalkit migrate recordings/issue_triage/*.json"),
    "new": Subcommand("evalkit.cli.new", "scaffold a project or a suite",
                      "evalkit new project my-app && cd my-app && evalkit new suite support"),
    "setup": Subcommand("evalkit.cli.setup", "install the local model (llama-cpp-python built portably, once, "
                        "then SmolLM2)", "evalkit setup local"),
}

_EXITS = ("exit codes: 0 go (and review), 1 block, 2 incomparable, 3 input or usage error, 4 internal error, "
          "5 outage (a run that could not be completed)")


def _version() -> str:
    try:
        return version("evalkit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def epilog(name: str) -> str:
    """The last line of `evalkit NAME --help`: an example that runs as shown."""
    return f"example: {SUBCOMMANDS[name].example}"


def usage() -> str:
    """The top-level help: every subcommand with what it is for, then an example and the exit codes."""
    width = max(map(len, SUBCOMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {sub.summary}" for name, sub in SUBCOMMANDS.items())
    return (f"usage: evalkit [--version] COMMAND [ARGS]\n\n"
            f"Turn a change to an LLM application into a release decision.\n\ncommands:\n{rows}\n\n"
            f"`evalkit COMMAND --help` describes one command.\n{_EXITS}\n\n"
            f"example:\n  evalkit run prompt=v2        # replay the suite with prompt v2 and gate it against main\n")


def _entry(name: str) -> Callable[..., int]:
    module = importlib.import_module(SUBCOMMANDS[name].module)
    entry: Callable[..., int] = module.main
    return entry


@command
def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch `evalkit COMMAND ARGS` to the command's module; usage errors exit 3, never a decision's code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return ExitCode.GO if args else ExitCode.INPUT_ERROR
    if args[0] in ("-V", "--version"):
        print(f"evalkit {_version()}")
        return ExitCode.GO
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(f"evalkit: error: unknown command {name[:80]!r}; choose one of: {', '.join(SUBCOMMANDS)} "
              f"(evalkit --help)", file=sys.stderr)
        return ExitCode.INPUT_ERROR
    if name == "run":
        # Hydra reads its overrides from sys.argv; the program name it shows stays the command the user typed.
        sys.argv = [f"{sys.argv[0]} run", *rest]
        return _entry(name)()
    return _entry(name)(rest)


if __name__ == "__main__":
    sys.exit(main())
