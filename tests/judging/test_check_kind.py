"""Check kinds as plugins (evalkit.judging.check_kind): evalkit's own kinds are found through the `evalkit.check_kinds`
entry points exactly as a third party's, and a third party's kind is read from checks.yaml, judges replies, refuses
a typo in its options with its own keys, and is listed in the generated reference."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from conftest import evalkit_env
from helpers.suites import make_suite
from helpers.wheel import install_offline
from pydantic import BaseModel, ConfigDict

from evalkit.core import registry
from evalkit.core.dataset import Case
from evalkit.core.errors import ConfigError, InputError
from evalkit.judging.check_kind import CHECK_KINDS, CheckKind, Verdict, reference
from evalkit.judging.checks import judge, parse_checks
from evalkit.judging.ready_judges import CONVERSATION_KINDS

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOY = PROJECT_ROOT / "tests" / "helpers" / "plugins" / "evalkit-toy-check"
BUILTIN = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["entry-points"][CHECK_KINDS.group]
CASE = Case("c1", {})


@pytest.fixture
def toy(installed_entry_points: list[EntryPoint], monkeypatch: pytest.MonkeyPatch) -> list[EntryPoint]:
    """The toy package importable and its entry point installed, as `pip install evalkit-toy-check` would."""
    monkeypatch.syspath_prepend(str(TOY))
    installed_entry_points.append(EntryPoint("word-count", "evalkit_toy_check:WORD_COUNT", CHECK_KINDS.group))
    registry.forget()
    return installed_entry_points


def test_every_builtin_kind_comes_from_the_entry_points(installed_entry_points: list[EntryPoint]) -> None:
    found = registry.entries(CHECK_KINDS)
    assert {name: entry.target for name, entry in found.items()} == BUILTIN and len(BUILTIN) >= 21
    assert all(registry.load(CHECK_KINDS, name).name == name for name in found)
    # a kind the entry points do not name is no kind: the file's format has no list of its own
    with pytest.raises(InputError, match="names none"):
        parse_checks("checks:\n  - {name: a, word-count: {max: 3}}", "suite/checks.yaml")


MAINS_KINDS = ("equals", "one-of", "contains", "regex", "is-json", "json-schema", "number", "length", "classification",
               "python", "llm-rubric", "faithfulness", "answer-relevancy", "g-eval", "pairwise", "trajectory-goal",
               "tool-called", "tool-not-called", "tool-sequence", "tool-args", "steps", "no-tool-errors")
"""Every kind checks.yaml took before kinds were plugins (check_spec.KINDS at 229bd2f), written out here so that a
kind dropped from the entry points fails this test rather than vanishing from the reference."""


def test_every_kind_checks_yaml_took_before_is_registered(installed_entry_points: list[EntryPoint]) -> None:
    assert set(MAINS_KINDS) <= set(registry.entries(CHECK_KINDS))
    reads = {name: (kind.reads, kind.shown) for name, kind in registry.load_all(CHECK_KINDS).items()}
    assert reads["trajectory-goal"] == ("judge", "trajectory") and reads["g-eval"] == ("judge", "reply")
    assert {name for name, (read, _) in reads.items() if read == "trajectory"} == set(MAINS_KINDS[-6:])


def test_the_conversation_judges_are_kinds_whose_judge_is_shown_the_conversation(
        installed_entry_points: list[EntryPoint]) -> None:
    judged = {name: kind for name, kind in registry.load_all(CHECK_KINDS).items() if kind.reads == "judge"}
    shown = {name: kind.shown for name, kind in judged.items()}
    assert {name for name, what in shown.items() if what == "conversation"} == set(CONVERSATION_KINDS)
    assert {name for name, what in shown.items() if what == "trajectory"} == {"trajectory-goal"}
    assert all(judged[name].metric_names == ("score",) for name in CONVERSATION_KINDS)
    table = reference()
    assert all(f"| `{name}` | judge (of the conversation) | evalkit |" in table for name in CONVERSATION_KINDS)
    # one property says a judge is planned from the recorded trajectory, whichever of the two it is shown
    entries = {"trajectory-goal": "{goal: goal}", "knowledge-retention": "{}", "g-eval": "{criteria: c}"}
    planned_later = {name: parse_checks(f"checks:\n  - {{name: c, {name}: {entry}}}\n", "f").checks[0]
                     .judges_trajectory for name, entry in entries.items()}
    assert planned_later == {"trajectory-goal": True, "knowledge-retention": True, "g-eval": False}


def test_the_shipped_checks_files_read_as_before() -> None:
    shipped = [*PROJECT_ROOT.glob("suites/*/checks.yaml"), *PROJECT_ROOT.glob("evalkit/project/templates/*/checks.yaml.tmpl")]
    assert len(shipped) >= 3
    for path in shipped:
        parsed = parse_checks(path.read_text(encoding="utf-8"), str(path))
        assert all(spec.kind in BUILTIN for spec in parsed.checks), path


def test_a_third_party_kind_is_read_from_checks_yaml_and_judges(toy: list[EntryPoint]) -> None:
    checks = parse_checks("checks:\n  - {name: short, word-count: {max: 3}, critical: true}\n", "suite/checks.yaml")
    spec = checks.checks[0]
    assert (spec.kind, spec.call, checks.critical) == ("word-count", "task", ("short",))
    assert judge(spec, "two words", CASE).passed
    failed = judge(spec, "one two three four", CASE)
    assert not failed.passed and failed.message == "expected 0 to 3 words, came 4"
    # with `field`, the kind reads the value there, as evalkit's own kinds do
    on_field = parse_checks("checks:\n  - {name: s, field: a, word-count: {max: 1}}\n", "f").checks[0]
    assert judge(on_field, '{"a": "x y"}', CASE).message == "expected 0 to 1 words, came 2"


def test_a_third_party_reply_kind_takes_turn_as_every_reply_kind_does(toy: list[EntryPoint]) -> None:
    from evalkit.judging.turns import judge_turns

    spec = parse_checks("checks:\n  - {name: short, word-count: {max: 2}, turn: every}\n", "f").checks[0]
    turns = {"steps": [{"kind": "assistant_turn", "turn": n, "text": text}
                       for n, text in enumerate(["ok then", "a far longer reply", "bye"], 1)]}
    failed = judge_turns(spec.turn, turns, lambda text: judge(spec, text, CASE))
    assert (spec.turn, failed.passed, failed.message) == ("every", False, "turn 2 of 3: expected 0 to 2 words, came 4")
    # a judged or trajectory kind takes no turn: the key belongs to the kinds that read the reply
    for entry in ("trajectory-goal: {goal: goal}", "tool-called: lookup", "llm-rubric: polite",
                  "knowledge-retention: {fact: order}", "refusal-holds: {}"):
        with pytest.raises(InputError, match="`turn` chooses the reply a reply check reads"):
            parse_checks(f"checks:\n  - {{name: c, {entry}, turn: 1}}\n", "f")


def test_a_typo_in_a_third_party_kinds_options_names_its_own_keys(toy: list[EntryPoint]) -> None:
    with pytest.raises(InputError) as error:
        parse_checks("checks:\n  - {name: a, word-count: {maxx: 3}}\n", "suite/checks.yaml")
    line = str(error.value)
    assert line.startswith("suite/checks.yaml: ") and "\n" not in line
    assert "'checks.0.word-count.maxx': unknown key (did you mean 'max'?; allowed: max, min) (got 3)" in line
    assert "missing key 'checks.0.word-count.max'" in line


def test_a_third_party_kind_is_in_the_generated_reference(toy: list[EntryPoint]) -> None:
    table = reference()
    assert "| `word-count` | reply | a third party | the reply has between `min` and `max` words |" in table
    assert "| `regex` | reply | evalkit |" in table and "| `pairwise` | judge (of the reply) | evalkit |" in table
    assert "| `trajectory-goal` | judge (of the trajectory) | evalkit |" in table
    assert "| `tool-sequence` | trajectory | evalkit |" in table


def test_a_kind_named_like_an_entrys_own_key_is_refused(installed_entry_points: list[EntryPoint]) -> None:
    installed_entry_points.append(EntryPoint("field", "evalkit_toy_check:WORD_COUNT", CHECK_KINDS.group))
    registry.forget()
    with pytest.raises(ConfigError, match=r"check kind\(s\) field are registered under a name every checks.yaml"):
        parse_checks("checks:\n  - {name: a, equals: x}\n", "f")


def test_an_options_model_that_accepts_any_key_is_refused() -> None:
    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")

    def verdict(*_: object) -> Verdict:
        return Verdict(True)

    with pytest.raises(TypeError, match="its options model Loose must set model_config = ConfigDict"):
        CheckKind("loose", Loose, verdict, "anything")
    # only evalkit's planner can show a judge a trajectory, and only for a kind that reads the judge's answer
    with pytest.raises(TypeError, match="only a judged kind"):
        CheckKind("odd", str, verdict, "anything", shown="trajectory")
    with pytest.raises(TypeError, match="only a judged kind"):
        CheckKind("odd", str, verdict, "anything", shown="conversation")


@pytest.mark.slow
def test_a_check_kind_installed_with_pip_gates_a_run(tmp_path: Path) -> None:
    site = install_offline(TOY, tmp_path)
    conf, rec = tmp_path / "conf", tmp_path / "rec"
    (conf / "suite").mkdir(parents=True)
    make_suite(tmp_path, conf, rec, "a")  # replies `reply-a-c1`: one word each
    (tmp_path / "leak_a" / "checks.yaml").write_text(
        "checks:\n  - {name: one_word, word-count: {max: 1}}\n  - {name: no_words, word-count: {max: 0}}\n")
    env = evalkit_env()
    env["PYTHONPATH"] = f"{site}:{env.get('PYTHONPATH', PROJECT_ROOT)}"
    done = subprocess.run([sys.executable, "-m", "evalkit", "suite=leak_a", f"hydra.searchpath=[file://{conf}]",
                           f"run.recordings={rec}", "baseline=none", f"hydra.run.dir={tmp_path / 'out'}"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert (tmp_path / "out" / "report.json").exists(), done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in report["tests"] if "checks.yaml" in t["nodeid"]}
    assert outcomes == {"one_word[c1]": "passed", "one_word[c2]": "passed", "no_words[c1]": "failed",
                        "no_words[c2]": "failed"}, done.stdout + done.stderr
