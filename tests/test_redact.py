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
