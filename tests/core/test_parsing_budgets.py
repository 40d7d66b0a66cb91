"""Configuration files under a budget (issue 35): a YAML alias bomb of a few hundred bytes, fed to every reader of
a config file, is refused in one line at once (exit 3), never walked; a refused value is described in a line built
in bounded time; a date that does not exist is named as one, and so is a candidate program that is a device."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.bounded import evalkit_bounded, python_bounded

from evalkit.core.config import check_price_files
from evalkit.core.errors import InputError, brief
from evalkit.core.parsing import MAX_ALIAS_VALUES, parse_yaml
from evalkit.core.prices import check_price_file
from evalkit.judging.rubric import load_rubric


def bomb(levels: int = 9, width: int = 9, key: str = "max_regressions") -> str:
    """A "billion laughs" YAML: `levels` lists of `width` aliases of the one before, under `key` (width**levels)."""
    parts = [f"&a0 [{','.join(['x'] * width)}]"]
    parts += [f"&a{i} [{','.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return f"{key}: [{','.join(parts)}]\n"


REPORT = {"eval": {"suite": "s", "model": "m"}, "tests": [{"nodeid": "t.py::test_a", "outcome": "passed"}]}
BOUNDED_S = 30.0  # the refusal takes well under a second; the bomb, unrefused, grows for minutes


def one_line_refusal(done: object, name: str) -> str:
    code, err = done.returncode, done.stderr  # type: ignore[attr-defined]
    assert code == 3, (code, err[-500:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "Traceback" not in err, err[-500:]
    return str(lines[0])


def test_the_bomb_is_small() -> None:
    assert len(bomb()) < 450 and 9 ** 9 > MAX_ALIAS_VALUES


@pytest.mark.slow
def test_gate_refuses_an_alias_bomb_policy_at_once(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(bomb(), encoding="utf-8")
    (tmp_path / "r.json").write_text(json.dumps(REPORT), encoding="utf-8")
    done = evalkit_bounded("gate", "r.json", "r.json", "--policy", "bomb.yaml", cwd=tmp_path, timeout_s=BOUNDED_S)
    assert "aliases" in one_line_refusal(done, "bomb.yaml")


@pytest.mark.slow
def test_policy_diff_refuses_an_alias_bomb_policy_at_once(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(bomb(), encoding="utf-8")
    (tmp_path / "ok.yaml").write_text("max_regressions: 0\n", encoding="utf-8")
    (tmp_path / "r.json").write_text(json.dumps(REPORT), encoding="utf-8")
    done = evalkit_bounded("policy-diff", "ok.yaml", "bomb.yaml", "--run", "r.json", cwd=tmp_path,
                           timeout_s=BOUNDED_S)
    assert "aliases" in one_line_refusal(done, "bomb.yaml")


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["evalkit.judging.check_spec:parse_checks", "evalkit.core.policy:load_policy",
                                    "evalkit.judging.rubric:load_rubric"])
def test_every_config_reader_refuses_an_alias_bomb_at_once(reader: str, tmp_path: Path) -> None:
    """checks.yaml, a policy and a rubric, each read in a bounded child: refused with the file named."""
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(key="checks" if "check_spec" in reader else "criteria"), encoding="utf-8")
    module, function = reader.split(":")
    call = f"{function}(p.read_text(), str(p))" if function == "parse_checks" else f"{function}(p)"
    done = python_bounded(textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from evalkit.core.errors import InputError
        from {module} import {function}
        p = Path({str(path)!r})
        try:
            {call}
        except InputError as error:
            print(error, file=sys.stderr)
            sys.exit(3)
        """), timeout_s=BOUNDED_S)
    assert "aliases" in one_line_refusal(done, "bomb.yaml")


def test_aliases_that_stand_for_few_values_are_read() -> None:
    text = "defaults: &d {min_pass_rate: 0.9, critical: [a, b]}\nstrict: *d\nloose: *d\n"
    data = parse_yaml(text, "p.yaml")
    assert data["strict"] == data["loose"] == {"min_pass_rate": 0.9, "critical": ["a", "b"]}


def test_an_alias_bomb_is_refused_when_parsed() -> None:
    with pytest.raises(InputError, match=r"^p\.yaml: its aliases \(\*name\) stand for more than 100,000 values"):
        parse_yaml(bomb(levels=7), "p.yaml")  # 4.8 million values


def test_a_recursive_alias_is_refused_not_counted_forever() -> None:
    with pytest.raises(InputError, match=r"^p\.yaml: not valid YAML: found unconstructable recursive node \(line 1\)"):
        parse_yaml("a: &a [1, *a]\n", "p.yaml")
    value: list[object] = [1]
    value.append(value)
    assert brief(value, 30) == "[1, [1, [1, [1, [1, [1, [1,..."


def test_brief_describes_a_huge_shared_value_in_a_short_line() -> None:
    value: object = ["x"] * 9
    probe: object = value
    for _ in range(12):  # 9**13 items as a tree, 13 small lists in memory
        value, probe = [value] * 9, [probe] * 2  # the probe begins alike and has a repr of 300 kB
    assert brief(value) == repr(probe)[:77] + "..."


def test_brief_names_what_it_cannot_show_in_full() -> None:
    assert brief(10 ** 5000) == "<an integer of about 5,000 digits>"  # repr() of it raises ValueError
    assert brief("y" * 10 ** 7, 20) == "'yyyyyyyyyyyyyyyy..."
    assert brief({"k": (1, None, 2.5)}) == "{'k': (1, None, 2.5)}"
    assert brief(object()) == "<object>"


@pytest.mark.parametrize(("value", "reason"), [("2026-13-45", "month must be in 1..12"),
                                               ("2026-02-30 10:00:00", "day is out of range for month")])
def test_a_date_that_does_not_exist_is_named_as_one(value: str, reason: str) -> None:
    text = f"claude-x:\n  input: 3\n  as_of: {value}\n"
    with pytest.raises(InputError, match=rf"^team\.yaml: '{value}' \(line 3\) is not a real date \({reason}\); "
                                         r"write a day that exists, as YYYY-MM-DD$"):
        check_price_file(parse_yaml(text, "team.yaml"), "team.yaml")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_rubric_nested_past_the_stack_is_refused_in_one_line(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"deep{suffix}"
    opened = "criteria: " if suffix == ".yaml" else '{"criteria": '
    path.write_text(opened + "[" * 20_000 + "]" * 20_000 + ("" if suffix == ".yaml" else "}"), encoding="utf-8")
    with pytest.raises(InputError, match=r"deep\.(yaml|json): the rubric nests mappings or lists too deeply to read"):
        load_rubric(path)


def test_a_price_file_is_read_under_the_input_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """conf/prices/*.yaml of a project: a file over EVALKIT_MAX_INPUT_BYTES is refused before it is read."""
    (tmp_path / "prices").mkdir()
    (tmp_path / "prices" / "team.yaml").write_text("# " + "x" * 5000 + "\n", encoding="utf-8")
    monkeypatch.setenv("EVALKIT_MAX_INPUT_BYTES", "1000")
    source = SimpleNamespace(schema="file", path=str(tmp_path))
    with pytest.raises(InputError, match=r"team\.yaml.*EVALKIT_MAX_INPUT_BYTES"):
        check_price_files([source])


@pytest.mark.slow
@pytest.mark.parametrize(("program", "message"), [
    ("/dev/zero", r"^error: conf/candidate/baseline\.yaml: program /dev/zero is not a regular file \(a device, a FIFO "
                  r"or a folder\); name a script file$"),
    ("/nonexistent/candidate.py", r"^error: conf/candidate/baseline\.yaml: program /nonexistent/candidate\.py not "
                                  r"found$")])
def test_a_candidate_program_that_is_not_a_file_is_named_for_what_it_is(program: str, message: str,
                                                                       tmp_path: Path) -> None:
    """Issue 35: `candidate.program=/dev/zero` said "not found"."""
    import re

    done = evalkit_bounded("run", "suite=quality_lab", f"candidate.program={program}",
                           f"hydra.run.dir={tmp_path}/hydra", f"run.out={tmp_path}/run", timeout_s=BOUNDED_S)
    line = one_line_refusal(done, program)
    assert re.match(message, line), line


# --- YAML read outside the strict readers: Hydra's composition of conf/, run --help, the .hydra files -------------

MODEL_BOMB = "name: m\nprovider: ollama\n" + bomb(key="stop")  # a model option whose stop list is the bomb


@pytest.mark.slow
def test_run_refuses_an_alias_bomb_in_a_searchpath_folder_before_hydra_composes_it(tmp_path: Path) -> None:
    """Hydra's own YAML loader has no alias bound: unrefused, `python -m evalkit model=bomb` grew for minutes."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "bomb.yaml").write_text(MODEL_BOMB, encoding="utf-8")
    done = evalkit_bounded("run", f"hydra.searchpath=['file://{tmp_path / 'conf'}']", "model=bomb", "baseline=none",
                           f"hydra.run.dir={tmp_path}/job", timeout_s=BOUNDED_S)
    line = one_line_refusal(done, str(tmp_path / "conf" / "model" / "bomb.yaml"))
    assert "aliases (*name) stand for more than 100,000 values (line 3)" in line


def bombed_project(root: Path) -> Path:
    """A project whose conf/config.yaml is fine and whose conf/policy/unused.yaml, chosen by no one, is a bomb;
    and a second one whose config.yaml itself is."""
    (root / "conf" / "policy").mkdir(parents=True)
    (root / "conf" / "config.yaml").write_text("defaults:\n  - /suite: issue_triage\n", encoding="utf-8")
    (root / "conf" / "policy" / "unused.yaml").write_text(bomb(), encoding="utf-8")
    return root


@pytest.mark.slow
def test_run_refuses_an_alias_bomb_anywhere_in_the_projects_conf(tmp_path: Path) -> None:
    project = bombed_project(tmp_path / "p")
    done = evalkit_bounded("run", f"hydra.run.dir={tmp_path}/job", cwd=project, timeout_s=BOUNDED_S,
                           env={**os.environ, "EVALKIT_PROJECT": str(project)})
    assert "aliases" in one_line_refusal(done, str(project / "conf" / "policy" / "unused.yaml"))


def test_the_conf_folders_are_the_projects_the_command_lines_and_the_configs_searchpath(tmp_path: Path) -> None:
    from evalkit.project.conf_files import conf_folders

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text("hydra:\n  searchpath: [file://extra, 'pkg://evalkit.conf']\n",
                                      encoding="utf-8")
    argv = ["hydra.searchpath=['file:///a/b', 'file:///c']", "--config-dir", "/d", "-cd=/e"]
    assert conf_folders(conf, argv) == [conf, Path("/a/b"), Path("/c"), Path("/d"), Path("/e"), tmp_path / "extra"]


def test_the_hydra_files_are_rescanned_with_aliases_bounded(tmp_path: Path) -> None:
    """`.hydra/*.yaml` are re-read to mask a key value: with the bounded loader, a bomb there is one line, not a walk
    over millions of values (in a bounded child)."""
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(bomb(key="secret_patterns"), encoding="utf-8")
    done = python_bounded(textwrap.dedent(f"""
        import sys
        from types import SimpleNamespace
        from evalkit.cli.masked import scrub_hydra_files
        from evalkit.core.errors import InputError
        from evalkit.live.redact import Redactor
        cfg = SimpleNamespace(runtime=SimpleNamespace(output_dir={str(tmp_path)!r}), output_subdir=".hydra")
        try:
            scrub_hydra_files(cfg, False, Redactor())
        except InputError as error:
            print(error, file=sys.stderr)
            sys.exit(3)
        """), timeout_s=BOUNDED_S)
    assert "aliases" in one_line_refusal(done, str(tmp_path / ".hydra" / "config.yaml"))
