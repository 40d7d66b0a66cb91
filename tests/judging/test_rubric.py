"""Rubrics: observable anchors for levels 0, 1, 2, refused at load when vague or incomplete; ratings as metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalkit.core.errors import ConfigError, InputError
from evalkit.judging.rubric import Criterion, Rubric, load_rubric, metric_name, rubric_from_mapping

RELEVANCE = {
    0: "The answer is about something other than the question.",
    1: "The answer touches the topic but leaves the exact question open.",
    2: "The answer states the specific fact asked for, in the customer's language.",
}
SEED_RATINGS = {"relevance": 2, "evidence_use": 1, "format": 2}


def rubric_yaml(levels: str, name: str = "relevance") -> str:
    return f"name: r\nversion: 1\ncriteria:\n  - name: {name}\n    levels:\n{levels}"


LEVELS_YAML = "".join(f"      {k}: {v}\n" for k, v in RELEVANCE.items())


def write(tmp_path, body: str, suffix: str = ".yaml"):
    path = tmp_path / f"rubric{suffix}"
    path.write_text(body, encoding="utf-8")
    return path


# --- the shipped rubric and its printed examples ---

def test_every_shipped_rubric_loads():
    names = [p.stem for p in (Path(__file__).resolve().parents[2] / "conf" / "rubric").glob("*.yaml")]
    assert "evidencedesk" in names
    for name in names:
        assert isinstance(load_rubric(name), Rubric)


def test_evidencedesk_rubric_has_the_seed_criteria_and_anchors():
    rubric = load_rubric("evidencedesk")
    assert (rubric.name, rubric.version) == ("evidencedesk-answer-rubric", 1)
    assert [c.name for c in rubric.criteria] == ["relevance", "evidence_use", "format"]
    assert rubric.criteria[0].levels == RELEVANCE
    assert rubric.criteria[1].levels[0] == "A claim has no citation, or the cited source does not contain it."
    assert rubric.criteria[2].levels[1] == "The JSON parses, but a rule is broken (status answered with no cited ids)."


def test_score_reports_one_metric_per_criterion():
    rubric = load_rubric("evidencedesk")
    assert rubric.score(SEED_RATINGS) == {"rubric.relevance": 2, "rubric.evidence_use": 1, "rubric.format": 2}
    assert rubric.metric_names() == ("rubric.relevance", "rubric.evidence_use", "rubric.format")
    assert metric_name("tone") == "rubric.tone"


def test_explain_reproduces_the_seed_lines():
    rubric = load_rubric("evidencedesk")
    assert rubric.explain(SEED_RATINGS) == [
        "relevance=2: The answer states the specific fact asked for, in the customer's language.",
        "evidence_use=1: Cited sources exist, but a number or condition is not in the cited text.",
        "format=2: The JSON parses, has all fields and obeys every rule of the contract.",
    ]
    assert rubric.explain({"relevance": 2, "evidence_use": 0, "format": 2})[1] == (
        "evidence_use=0: A claim has no citation, or the cited source does not contain it.")


def test_explain_follows_rubric_order_not_ratings_order():
    rubric = load_rubric("evidencedesk")
    lines = rubric.explain({"format": 0, "relevance": 1, "evidence_use": 2})
    assert [line.split("=")[0] for line in lines] == ["relevance", "evidence_use", "format"]


def test_json_schema_export_describes_the_file():
    schema = Rubric.model_json_schema()
    assert set(schema["properties"]) == {"name", "version", "criteria"}
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Criterion"]["additionalProperties"] is False


def test_load_by_json_path(tmp_path):
    data = {"name": "r", "version": 2, "criteria": [{"name": "relevance", "levels": {str(k): v for k, v in RELEVANCE.items()}}]}
    rubric = load_rubric(write(tmp_path, json.dumps(data), ".json"))
    assert rubric.version == 2 and rubric.criteria[0].levels == RELEVANCE


# --- anchors: each rule alone ---

def test_the_seed_vague_criterion_is_rejected():
    with pytest.raises(ValidationError, match=r"criterion relevance level 0: anchor 'Not on topic at all\.' is 20 characters"):
        Criterion(name="relevance", levels={0: "Not on topic at all.", 1: "Partly on the topic.", 2: "The answer sounds good."})


@pytest.mark.parametrize("word", ["good", "nice", "great", "sounds", "better", "appropriate", "quality"])
def test_each_vague_word_is_refused_naming_criterion_and_level(word):
    levels = {**RELEVANCE, 1: f"The answer touches the topic and is {word} for the customer."}
    with pytest.raises(ValidationError, match=rf"criterion relevance level 1: vague word '{word}' in the anchor"):
        Criterion(name="relevance", levels=levels)


def test_a_vague_word_inside_another_word_is_not_vague():
    levels = {**RELEVANCE, 1: "The answer mentions goodwill refunds but not the exact period."}
    assert Criterion(name="relevance", levels=levels).levels[1].startswith("The answer mentions goodwill")


def test_vague_words_are_found_whatever_their_case():
    levels = {**RELEVANCE, 2: "The answer is GREAT and states the fact that was asked for."}
    with pytest.raises(ValidationError, match=r"level 2: vague word 'great'"):
        Criterion(name="relevance", levels=levels)


def test_a_short_anchor_is_refused():
    with pytest.raises(ValidationError, match=r"criterion relevance level 2: anchor 'States the fact\.' is 16 characters; .* at least 25"):
        Criterion(name="relevance", levels={**RELEVANCE, 2: "States the fact."})


def test_an_anchor_of_exactly_the_minimum_length_is_accepted():
    anchor = "The reply cites one page."  # 25 characters
    assert len(anchor) == 25
    assert Criterion(name="relevance", levels={**RELEVANCE, 1: anchor}).levels[1] == anchor


def test_a_missing_level_is_refused():
    levels = {0: RELEVANCE[0], 2: RELEVANCE[2]}
    with pytest.raises(ValidationError, match=r"criterion relevance: missing level 1 \(each criterion needs levels 0, 1 and 2\)"):
        Criterion(name="relevance", levels=levels)


def test_a_level_that_does_not_exist_is_refused():
    levels = {**RELEVANCE, 3: "The answer quotes the policy page word for word."}
    with pytest.raises(ValidationError, match=r"criterion relevance: level 3 does not exist"):
        Criterion(name="relevance", levels=levels)


def test_the_same_anchor_on_two_levels_is_refused():
    levels = {**RELEVANCE, 2: "  the answer is about something OTHER than the question. "}
    with pytest.raises(ValidationError, match=r"criterion relevance: levels 0 and 2 have the same anchor"):
        Criterion(name="relevance", levels=levels)


def test_a_criterion_defined_twice_is_refused():
    criterion = Criterion(name="relevance", levels=RELEVANCE)
    with pytest.raises(ValidationError, match=r"rubric r: criterion relevance is defined more than once"):
        Rubric(name="r", version=1, criteria=(criterion, criterion))


def test_a_rubric_needs_a_criterion():
    with pytest.raises(ValidationError, match=r"criteria"):
        Rubric(name="r", version=1, criteria=())


def test_models_are_frozen():
    criterion = Criterion(name="relevance", levels=RELEVANCE)
    with pytest.raises(ValidationError, match="frozen"):
        criterion.name = "other"  # type: ignore[misc]


# --- the same rules at load: one line naming file, criterion and level ---

@pytest.mark.parametrize("levels, message", [
    (LEVELS_YAML.replace("The answer touches the topic but leaves the exact question open.",
                         "The answer sounds about right to a reader."),
     r"rubric\.yaml: criterion relevance level 1: vague word 'sounds' in the anchor"),
    (LEVELS_YAML.replace("      1: The answer touches the topic but leaves the exact question open.\n", ""),
     r"rubric\.yaml: criterion relevance: missing level 1"),
    (LEVELS_YAML.replace("The answer states the specific fact asked for, in the customer's language.",
                         "The answer is about something other than the question."),
     r"rubric\.yaml: criterion relevance: levels 0 and 2 have the same anchor"),
    (LEVELS_YAML + "      1: The answer names the topic and nothing more than that.\n",
     r"rubric\.yaml: criterion relevance: level 1 is given twice; each level needs exactly one anchor"),
    (LEVELS_YAML.replace("2: The answer states the specific fact asked for, in the customer's language.", "2: 42"),
     r"rubric\.yaml: criterion relevance level 2: Input should be a valid string \(got 42\)$"),
    (LEVELS_YAML.replace("      2: The answer", "      two: The answer"),
     r"rubric\.yaml: criterion relevance level two: Input should be a valid integer"),
])
def test_bad_anchors_are_refused_at_load_in_one_line(tmp_path, levels, message):
    with pytest.raises(ConfigError, match=message) as caught:
        load_rubric(write(tmp_path, rubric_yaml(levels)))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("body, message", [
    (rubric_yaml(LEVELS_YAML) + "    weight: 2\n",
     r"rubric\.yaml: criterion relevance: unknown key 'weight' \(allowed: levels, name\)"),
    (rubric_yaml(LEVELS_YAML) + "owner: me\n", r"rubric\.yaml: unknown key 'owner' \(allowed: criteria, name, version\)"),
    (rubric_yaml(LEVELS_YAML).replace("version: 1", "version: first"),
     r"rubric\.yaml: 'version': Input should be a valid integer"),
    (rubric_yaml(LEVELS_YAML).replace("version: 1\n", ""), r"rubric\.yaml: missing key 'version'"),
    (rubric_yaml(LEVELS_YAML, name="Evidence Use"), r"rubric\.yaml: criterion Evidence Use: 'name': String should match pattern"),
    (rubric_yaml("      - just a list\n"), r"rubric\.yaml: criterion relevance: 'levels': Input should be a valid dictionary"),
    (rubric_yaml(LEVELS_YAML).replace("version: 1\n", "version: 1\nversion: 2\n"), r"rubric\.yaml: key 'version' is given twice"),
    ("- a list\n", r"rubric\.yaml: a rubric must be a mapping"),
])
def test_bad_rubric_files_are_refused_in_one_line(tmp_path, body, message):
    with pytest.raises(ConfigError, match=message) as caught:
        load_rubric(write(tmp_path, body))
    assert "\n" not in str(caught.value)


def test_a_level_given_twice_in_json_is_refused(tmp_path):
    levels = ", ".join(json.dumps(str(k)) + ": " + json.dumps(v)
                       for k, v in [(0, RELEVANCE[0]), (1, RELEVANCE[1]), (1, RELEVANCE[1] + " Twice."), (2, RELEVANCE[2])])
    body = '{"name": "r", "version": 1, "criteria": [{"name": "format", "levels": {' + levels + '}}]}'
    with pytest.raises(ConfigError, match=r"rubric\.json: criterion format: level 1 is given twice"):
        load_rubric(write(tmp_path, body, ".json"))


@pytest.mark.parametrize("body, suffix, message", [
    ('{"name": ', ".json", r"rubric\.json: not valid JSON \(line 1, column"),
    ("name: [unclosed\n", ".yaml", r"rubric\.yaml: not valid YAML: .*\(line \d+\)"),
])
def test_malformed_files_are_refused_in_one_line(tmp_path, body, suffix, message):
    with pytest.raises(InputError, match=message) as caught:
        load_rubric(write(tmp_path, body, suffix))
    assert "\n" not in str(caught.value)


def test_every_problem_is_listed(tmp_path):
    levels = LEVELS_YAML.replace("      1: The answer touches the topic but leaves the exact question open.\n", "")
    body = rubric_yaml(levels) + "  - name: format\n    levels:\n      0: Nice.\n      1: x\n      2: y\n"
    with pytest.raises(ConfigError) as caught:
        load_rubric(write(tmp_path, body))
    message = str(caught.value)
    assert "criterion relevance: missing level 1" in message
    assert "criterion format level 0: vague word 'nice'" in message
    assert "criterion format level 1: anchor 'x' is 1 characters" in message


def test_unknown_rubric_name_lists_the_available_ones():
    with pytest.raises(InputError, match=r"rubric 'strictest': no such rubric .*\(available: .*evidencedesk"):
        load_rubric("strictest")


def test_missing_rubric_file(tmp_path):
    with pytest.raises(InputError, match=r"nope\.yaml: rubric file not found"):
        load_rubric(tmp_path / "nope.yaml")


def test_composed_rubric_data_is_validated_like_a_file():
    data = {"name": "r", "version": 1, "criteria": [{"name": "relevance", "levels": {0: RELEVANCE[0], 2: RELEVANCE[2]}}]}
    with pytest.raises(ConfigError, match=r"conf/rubric/r\.yaml: criterion relevance: missing level 1"):
        rubric_from_mapping(data, "conf/rubric/r.yaml")


# --- ratings ---

@pytest.mark.parametrize("ratings, message", [
    ({"relevance": 2, "evidence_use": 1}, r"ratings miss criterion 'format' of rubric evidencedesk-answer-rubric; rate every criterion \(relevance, evidence_use, format\)"),
    ({**SEED_RATINGS, "tone": 1}, r"ratings name criterion 'tone', which rubric evidencedesk-answer-rubric does not have \(criteria: relevance, evidence_use, format\)"),
    ({**SEED_RATINGS, "relevance": 3}, r"rating 3 for criterion 'relevance' is not a level \(levels: 0, 1, 2\)"),
    ({**SEED_RATINGS, "format": -1}, r"rating -1 for criterion 'format' is not a level"),
    ({**SEED_RATINGS, "format": 1.0}, r"rating 1\.0 for criterion 'format' is not a level"),
    ({**SEED_RATINGS, "format": "2"}, r"rating '2' for criterion 'format' is not a level"),
    ({**SEED_RATINGS, "format": True}, r"rating True for criterion 'format' is not a level"),
])
@pytest.mark.parametrize("method", ["score", "explain"])
def test_bad_ratings_are_refused_naming_the_criterion(ratings, message, method):
    rubric = load_rubric("evidencedesk")
    with pytest.raises(InputError, match=message):
        getattr(rubric, method)(ratings)
