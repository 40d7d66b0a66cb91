"""Credentials never reach what evalkit writes."""

from __future__ import annotations

import json

from evalkit.live.redact import MASK, Redactor

FAKE_KEY = "evalkit-fake-key-0123456789abcdef"


def test_values_of_the_named_variables_are_masked(monkeypatch):
    monkeypatch.setenv("EVALKIT_TEST_KEY", FAKE_KEY)
    redact = Redactor(["EVALKIT_TEST_KEY", None, "UNSET_VARIABLE_XYZ"])
    assert redact(f"calling with {FAKE_KEY} now") == f"calling with {MASK} now"


def test_credential_shapes_are_masked_without_breaking_json():
    redact = Redactor()
    text = json.dumps({"error": "401 for Authorization: Bearer abc.def-123 at https://x/y?key=AIzaSy1234&alt=json",
                       "echo": "sk-proj-ABCDEFGHIJKLMNOPQRSTUV"})
    out = redact(text)
    data = json.loads(out)
    assert "abc.def-123" not in out and "AIzaSy1234" not in out and "ABCDEFGHIJKLMNOP" not in out
    assert data["error"].startswith("401 for Authorization: [REDACTED]")


def test_short_values_are_not_treated_as_secrets(monkeypatch):
    monkeypatch.setenv("EVALKIT_TEST_KEY", "abc")
    assert Redactor(["EVALKIT_TEST_KEY"])("abc abc") == "abc abc"


def test_extra_patterns():
    assert Redactor(patterns=[r"tok_[0-9]+"])("id tok_12345 end") == f"id {MASK} end"


# -- every encoding of a key value --------------------------------------------------------------------------------

import base64  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402

import pytest  # noqa: E402

from evalkit.core.errors import ConfigError  # noqa: E402
from evalkit.live.redact import override_credential, secret_variants  # noqa: E402

ODD_KEY = 'k3y/with+odd"chars\\and=end?'  # characters that every encoding writes differently


def encodings(key: str) -> dict[str, str]:
    raw = key.encode()
    return {
        "as is": key, "upper": key.upper(), "lower": key.lower(),
        "url": urllib.parse.quote(key, safe=""), "url (path)": urllib.parse.quote(key),
        "url (form)": urllib.parse.quote_plus(key), "url (lower hex)": urllib.parse.quote(key, safe="").lower(),
        "json": json.dumps(key)[1:-1], "hex": raw.hex(), "HEX": raw.hex().upper(),
        "base64": base64.b64encode(raw).decode(), "base64url": base64.urlsafe_b64encode(raw).decode(),
        "basic": base64.b64encode(b"user:" + raw).decode(), "basic (1)": base64.b64encode(b"u:" + raw).decode(),
        "basic (2)": base64.b64encode(b"me:" + raw).decode(),
        "base64 of json": base64.b64encode(json.dumps({"api_key": key}).encode()).decode(),
    }


@pytest.mark.parametrize("key", [FAKE_KEY, ODD_KEY, "12345678"])
def test_every_encoding_of_the_key_is_masked(monkeypatch, key):
    monkeypatch.setenv("EVALKIT_TEST_KEY", key)
    redact = Redactor(["EVALKIT_TEST_KEY"])
    for name, form in encodings(key).items():
        text = f"before {form} after"
        out = redact.values(text)
        assert MASK in out, f"{name} form survived: {out}"
        # what is left of a base64 text around the key cannot hold six bits of it
        assert form not in out and key not in out and key.upper() not in out


def test_the_base64_forms_keep_only_characters_of_the_key_alone():
    loose, exact = secret_variants(FAKE_KEY)
    assert FAKE_KEY in loose and len(exact) >= 3
    # none of them would match the base64 of text that merely shares a prefix with the key
    other = base64.b64encode(b"user:" + FAKE_KEY[:-4].encode() + b"XXXX").decode()
    assert not any(variant in other for variant in exact if len(variant) > len(other) - 2)


def test_short_keys_are_named_so_a_live_run_can_refuse_them(monkeypatch):
    monkeypatch.setenv("EVALKIT_TEST_KEY", "abc")
    monkeypatch.setenv("EVALKIT_LONG_KEY", FAKE_KEY)
    redact = Redactor(["EVALKIT_TEST_KEY", "EVALKIT_LONG_KEY", "UNSET_VARIABLE_XYZ"])
    assert redact.short_keys == ["EVALKIT_TEST_KEY"]
    assert redact("abc abc") == "abc abc"  # documented: never masked, so live runs refuse them (test_live_safety)


# -- what is measured is never changed ----------------------------------------------------------------------------

def test_a_reply_that_mentions_a_bearer_token_keeps_its_words(monkeypatch):
    monkeypatch.setenv("EVALKIT_TEST_KEY", FAKE_KEY)
    redact = Redactor(["EVALKIT_TEST_KEY"], [r"tok_[0-9]+"])
    reply = "Send the Bearer token in the header; Bearer abcdefghijklmn is an example; tok_12345"
    run_input = {"calls": {"task/a": {"text": reply, "reason": None}}}
    assert redact.scrub(run_input, messages=False) == run_input  # what the checks read
    assert redact.values(reply) == reply
    assert redact.scrub({"output": reply})["output"] == reply  # the report's copy of the answer, too
    assert redact(f"the Bearer token {FAKE_KEY}") == f"the Bearer token {MASK}"  # a message: only real tokens
    assert redact("401: Bearer abcdefghijklmn") == f"401: {MASK}"


def test_patterns_apply_to_message_fields_only_and_never_break_the_json():
    redact = Redactor(patterns=["passed", '"', "\\\\", "e"])
    report = {"tests": [{"nodeid": "t.py::test_x[case]", "outcome": "passed",
                         "call": {"outcome": "failed", "longrepr": 'assert "passed" == x', "crash": {"message": "e"}}}],
              "eval": {"cases": [{"id": "case", "output": "passed", "problems": ['"quoted" problem']}]},
              "messages": {"t.py::test_x[case]": "the reason"}}
    scrubbed = redact.scrub(report)
    json.loads(json.dumps(scrubbed))  # still JSON
    assert scrubbed["tests"][0]["outcome"] == "passed" and scrubbed["tests"][0]["nodeid"] == "t.py::test_x[case]"
    assert scrubbed["eval"]["cases"][0]["output"] == "passed"
    assert "passed" not in scrubbed["tests"][0]["call"]["longrepr"]
    assert scrubbed["tests"][0]["call"]["crash"]["message"] == MASK
    assert '"' not in scrubbed["eval"]["cases"][0]["problems"][0]
    assert scrubbed["messages"]["t.py::test_x[case]"] == f"th{MASK} r{MASK}ason"


def test_a_request_named_messages_is_not_a_message_field():
    redact = Redactor(patterns=["user"])
    entry = {"request": {"messages": [{"role": "user", "content": "user text"}]}}
    assert redact.scrub(entry) == entry


@pytest.mark.parametrize("pattern", ["", "a*", "(x)?", "|x", "^"])
def test_patterns_that_match_nothing_are_refused(pattern):
    with pytest.raises(ConfigError, match="run.secret_patterns"):
        Redactor(patterns=[pattern])


@pytest.mark.parametrize("pattern", ["(?=x)|tok", "\\b|tok"])
def test_a_zero_width_match_inserts_no_mask(pattern):
    assert Redactor(patterns=[pattern])("axb tok") == f"axb {MASK}"


def test_a_catastrophic_pattern_runs_out_of_time_and_masks_the_whole_text():
    redact = Redactor(patterns=["(a+)+b"])
    started = time.monotonic()
    assert redact("a" * 5000 + "!") == MASK  # fail closed
    assert time.monotonic() - started < 5
    assert redact("aab") == MASK and redact("xyz") == "xyz"


def test_invalid_patterns_are_refused():
    with pytest.raises(ConfigError, match="not a regular expression"):
        Redactor(patterns=["(unclosed"])


# -- command-line overrides -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("override", [
    'model.base_url=http://h/v1?key=abcdef123456',
    'model.base_url=http://h/v1?x=1&api_key=abcdef123456',
    'model.base_url=https://u:s3cretpw@h/v1',
    '+model.options.auth=Bearer abcdefghijklmnop',
    'judge.base_url=http://h/?access_token=xyz',
    f'+model.options.k=AIza{"x" * 35}',
    '+model.options.k=sk-proj-ABCDEFGHIJKLMNOPQ',
])
def test_credential_shaped_overrides_are_found(override):
    assert override_credential(override, environ={}) is not None


def test_the_value_of_a_credential_variable_is_found_in_any_encoding():
    env = {"GEMINI_API_KEY": FAKE_KEY, "HOME": "/home/someone-long"}
    for form in encodings(FAKE_KEY).values():
        assert override_credential(f"+model.options.x={form}", environ=env) == "the value of $GEMINI_API_KEY"
    assert override_credential("run.out=/home/someone-long/x", environ=env) is None


@pytest.mark.parametrize("override", [
    "model=gemma4", "model.base_url=http://localhost:11434/v1", "model.api_key_env=GEMINI_API_KEY",
    "run.secret_patterns=['[?&]key=\\w+','Bearer \\S+']", "hydra.run.dir=/tmp/key=x", "-m", "prompt=v2,v3",
    "model.base_url=http://h/v1?monkey_count=3",
])
def test_ordinary_overrides_pass(override):
    assert override_credential(override, environ={"SOME_TOKEN": "short"}) is None


# `leaves`: the one scan of a file's text that lets a writer skip the walk. It may say False where scrub would
# change nothing (the walk then runs), never True where scrub would change something.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from evalkit.live.redact import MESSAGE_KEYS  # noqa: E402

_QUOTED_KEY = 'AbC"de\\fGh1234567'  # a quote and a backslash: its JSON-escaped forms differ from its own
_FRAGMENTS = sorted({piece for form in secret_variants(_QUOTED_KEY) for variant in form
                     for piece in (variant, variant.upper(), variant.lower(), variant[:6])}
                    | {"Bearer abcdefgh1234", "bearer", "?key=zz", "x-goog-api-key: v", "sk-", "\n", '"', "\\",
                       "é", "\uff21", "\u200b", "passed"})
_STRINGS = st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=4), max_size=4).map("".join)
_DATA = st.recursive(_STRINGS | st.integers() | st.none(),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(sorted(MESSAGE_KEYS)) | _STRINGS, inner, max_size=3),
                     max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(data=_DATA, messages=st.booleans(), keyed=st.booleans(), patterned=st.booleans())
def test_leaves_never_passes_text_that_scrub_would_change(data, messages, keyed, patterned):
    redact = Redactor(["K"] if keyed else [], ["zz"] if patterned else [], environ={"K": _QUOTED_KEY})
    if redact.leaves(json.dumps(data, ensure_ascii=False), messages):
        assert redact.scrub(data, messages) == data


def test_leaves_passes_ordinary_text_and_stops_at_a_key_or_a_shape():
    redact = Redactor(["K"], environ={"K": _QUOTED_KEY})
    report = {"tests": [{"nodeid": "t.py::test_x[c1]", "outcome": "failed", "call": {"longrepr": "assert 1 == 2"}}]}
    assert redact.leaves(json.dumps(report, ensure_ascii=False))
    for planted in (_QUOTED_KEY, _QUOTED_KEY.upper(), base64.b64encode(f"u:{_QUOTED_KEY}".encode()).decode(),
                    "Authorization: Bearer abcdefgh1234"):
        text = json.dumps({**report, "note": planted}, ensure_ascii=False)
        assert not redact.leaves(text)
        assert redact.scrub(json.loads(text))["note"] != planted
    assert redact.leaves(json.dumps({"output": "Bearer abcdefgh1234"}), messages=False)  # a reply keeps shapes
    assert not Redactor(patterns=["x"]).leaves("{}")  # user patterns are tried string by string


def _percent(text: str) -> str:
    return "".join(f"%{ord(c):02X}" for c in text)


@pytest.mark.parametrize("form", [
    _percent, lambda key: _percent(key).lower(),
    lambda key: "".join(f"&#{ord(c)};" for c in key), lambda key: "".join(f"&#x{ord(c):x};" for c in key),
    lambda key: key[:5] + _percent(key[5:9]) + f"&#{ord(key[9])};" + key[10:],  # in part, mixed
])
def test_a_key_percent_encoded_or_written_as_character_references_is_masked(form, tmp_path):
    """Issue 35: fully percent-encoded and HTML-entity forms of a key reached disk (documented as not covered)."""
    from test_recording import recording

    from evalkit.run.recording import save_recording
    redact = Redactor(["K"], environ={"K": FAKE_KEY})
    written = form(FAKE_KEY)
    assert redact(f"GET /v1?x={written}&y=50%25 done") == f"GET /v1?x={MASK}&y=50%25 done"
    assert redact.values(f"<p>{written}</p> 100% &#38;") == f"<p>{MASK}</p> 100% &#38;"
    assert not redact.leaves(json.dumps({"output": written}))
    record = recording()
    call, entry = next(iter(record.calls.items()))
    assert entry.reply is not None
    entry = entry.model_copy(update={"reply": entry.reply.model_copy(update={"text": f"echo {written}"})})
    save_recording(record.model_copy(update={"calls": {call: entry}}), tmp_path / "rec.json", redact)
    text = (tmp_path / "rec.json").read_text(encoding="utf-8")
    assert written not in text and f"echo {MASK}" in text


def test_ordinary_escapes_are_kept(monkeypatch):
    redact = Redactor(["K"], environ={"K": FAKE_KEY})
    text = "a%20b &#233;t&#xe9; 100% %zz &#99999999;"
    assert redact.values(text) == text
