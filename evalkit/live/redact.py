"""Keep credentials out of everything evalkit writes and shows: recordings, journals, reports, logs, messages.

Two layers, so that redaction changes what is written and shown, never what is measured:

- **values**: the values of the run's key variables (`api_key_env` of the model and the judge) in their common
  encodings (as is in any letter case, URL-encoded, JSON-escaped, hex, base64 and base64url at any byte offset —
  which covers `Authorization: Basic base64(user:key)` — and with any of its characters percent-encoded or written
  as a numeric HTML character reference, `%73%6b` or `&#115;&#x6b;`, one level deep). They are replaced
  everywhere, model replies included, at the moment a reply arrives, so the recording, the checks of the live run
  and the checks of its replay all read the same text.
- **shapes**: credential-shaped text (bearer tokens, `key=` query parameters, `x-goog-api-key` headers, Google and
  OpenAI key shapes) and `run.secret_patterns`. They are replaced in messages only (error texts, failure reasons,
  logs, `pytest.log`, stdout and stderr, and the message fields of written JSON), never in a reply the checks grade.

Structured files are redacted value by value before they are serialised (`scrub`), so no pattern can break a JSON or
YAML file. Key values shorter than `MIN_SECRET` characters cannot be told from ordinary words: `short_keys` names
them, and live runs refuse them.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from evalkit.core.errors import ConfigError
from evalkit.core.patterns import PatternError, budget_s, compile_pattern
from evalkit.core.untrusted import markdown, visible

__all__ = ["Redactor", "DEFAULT_PATTERNS", "MASK", "MIN_SECRET", "MESSAGE_KEYS", "secret_variants",
           "override_credential", "credential_name", "config_credential"]

MASK = "[REDACTED]"
MIN_SECRET = 8  # shorter key values would redact ordinary words
# Shapes of credentials that turn up in error texts. A bearer token needs 8 characters of token alphabet, so
# "the Bearer token" in a message stays as written.
DEFAULT_PATTERNS = (
    r"(?i:\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}",
    r"(?<=[?&](?i:key)=)[^&\s\"\\]+",
    r"(?<=(?i:x-goog-api-key): )[^\s\"\\]+",
    r"\bAIza[0-9A-Za-z_-]{35}\b",
    r"\bsk-[A-Za-z0-9_-]{16,}\b",
)
# Every default pattern contains one of these (lower-cased); text without any skips the regex scan.
_MARKERS = ("bearer", "key=", "x-goog-api-key", "aiza", "sk-")
# Fields of written JSON whose strings are messages (never graded): shapes and patterns are redacted there too.
MESSAGE_KEYS = frozenset({"reason", "error", "message", "messages", "longrepr", "note", "recording_note",
                          "problems", "stdout", "stderr"})


def _autoescaped(value: str) -> str:
    """`value` as Jinja2's autoescape writes it."""
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            .replace("'", "&#39;"))


def secret_variants(value: str) -> tuple[list[str], list[str]]:
    """The forms a key value takes in text: (matched in any letter case, matched exactly).

    Base64 at byte offsets 0, 1 and 2 keeps only the characters that depend on the key's bytes alone, so the key is
    found inside any longer base64 text (`user:key`, a JSON body) whatever precedes it."""
    caseless = {value, quote(value, safe=""), quote(value), quote_plus(value), value.encode("utf-8").hex(),
                json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
                # as each output kind escapes it: a key holding `&`, `<` or `"` is still found once escaped
                html.escape(value), html.escape(value, quote=False), markdown(value, len(value) * 8),
                _autoescaped(value), visible(value),
                # JSON shown on a page (a tool call's arguments, a case's input): JSON-escaped, then autoescaped
                _autoescaped(json.dumps(value)[1:-1]), _autoescaped(json.dumps(value, ensure_ascii=False)[1:-1])}
    exact: set[str] = set()
    # base64 of the key as is, and as written inside JSON or a URL that was then encoded (a Basic header, a body)
    for form in {value, json.dumps(value)[1:-1], quote(value, safe="")}:
        data = form.encode("utf-8")
        for offset in range(3):
            encoded = base64.b64encode(bytes(offset) + data).decode("ascii")
            first = -(-8 * offset // 6)  # the first character whose six bits are all the key's
            last = 8 * (offset + len(data)) // 6  # one past the last such character
            inner = encoded[first:last]
            if len(inner) >= MIN_SECRET:
                exact |= {inner, inner.replace("+", "-").replace("/", "_")}
    return sorted(caseless, key=len, reverse=True), sorted(exact - caseless, key=len, reverse=True)


class Redactor:
    """Replaces the values of the run's credential variables (everywhere) and credential shapes (in messages)."""

    def __init__(self, env_names: Iterable[str | None] = (), patterns: Iterable[str] = (),
                 environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        named = {name: env.get(name, "") for name in env_names if name}
        self.short_keys = sorted(name for name, value in named.items() if 0 < len(value) < MIN_SECRET)
        """Variables whose values are too short to redact (a live run refuses them)."""
        caseless: set[str] = set()
        exact: set[str] = set()
        for value in named.values():
            if len(value) >= MIN_SECRET:
                loose, strict = secret_variants(value)
                caseless |= set(loose)
                exact |= set(strict)
        alternatives = [f"(?i:{re.escape(v)})" for v in sorted(caseless, key=len, reverse=True)]
        alternatives += [re.escape(v) for v in sorted(exact, key=len, reverse=True)]
        self._values = re.compile("|".join(alternatives)) if alternatives else None
        # The same forms as JSON text writes them (a `"` or `\` escaped): what `leaves` scans a written file for.
        escaped = [f"(?i:{re.escape(_json_escaped(v))})" for v in caseless if _json_escaped(v) != v]
        escaped += [re.escape(_json_escaped(v)) for v in exact if _json_escaped(v) != v]
        self._in_json = re.compile("|".join(alternatives + escaped)) if alternatives else None
        # Every journal line passes through here: one scan for all defaults, and none without a marker.
        self._defaults = re.compile("|".join(f"(?:{p})" for p in DEFAULT_PATTERNS))
        self._patterns = [_user_pattern(p) for p in patterns]

    def values(self, text: str) -> str:
        """The text with the key values (in every encoding) masked: what a reply the checks grade may lose. A key
        written with fullwidth letters or joined by zero-width characters reads the same on screen: it is found
        in the text's NFKC form without format characters, and masked where it stands."""
        if self._values is None:
            return text
        text = self._values.sub(MASK, text)
        if "%" in text or "&#" in text:
            text = self._decoded(text)
        return text if text.isascii() else self._normalised(text)

    def _decoded(self, text: str) -> str:
        """`text` with each key value masked that its percent escapes and numeric character references spell once
        decoded (a key written `%73%6b%2d...` or `&#115;&#107;...`, in full or in part)."""
        assert self._values is not None
        parts: list[str] = []
        origin: list[tuple[int, int]] = []  # the span in `text` of each character of the decoded text
        last = 0
        for escape in _ESCAPE.finditer(text):
            parts.append(text[last:escape.start()])
            origin += [(index, index + 1) for index in range(last, escape.start())]
            parts.append(_unescaped(escape.group()))
            origin.append(escape.span())
            last = escape.end()
        if last == 0:
            return text
        parts.append(text[last:])
        origin += [(index, index + 1) for index in range(last, len(text))]
        spans = [(origin[m.start()][0], origin[m.end() - 1][1]) for m in self._values.finditer("".join(parts))
                 if m.end() > m.start()]
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], MASK]
            last = end
        return "".join(out) + text[last:]

    def _normalised(self, text: str) -> str:
        assert self._values is not None
        parts: list[str] = []
        origin: list[int] = []  # the index in `text` of each character of the normalised text
        for index, char in enumerate(text):
            if unicodedata.category(char) == "Cf":  # zero-width space and joiners, word joiner, BOM, soft hyphen
                continue
            form = unicodedata.normalize("NFKC", char)
            parts.append(form)
            origin += [index] * len(form)
        spans = [(origin[m.start()], origin[m.end() - 1] + 1) for m in self._values.finditer("".join(parts))
                 if m.end() > m.start()]
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], MASK]
            last = end
        return "".join(out) + text[last:]

    def __call__(self, text: str) -> str:
        """A message with the key values, credential shapes and `run.secret_patterns` masked."""
        text = self.values(text)
        lowered = text.lower()
        if any(marker in lowered for marker in _MARKERS):
            text = self._defaults.sub(MASK, text)
        for pattern in self._patterns:
            try:
                # a pattern that can match nothing at some position would insert a mask between characters
                text = pattern.sub(lambda m: MASK if m.group(0) else "", text, timeout=budget_s(text))
            except TimeoutError:  # past its budget (evalkit.core.patterns)
                return MASK  # fail closed: the text could hold what the pattern was written to hide
        return text

    def scrub(self, data: Any, messages: bool = True) -> Any:
        """A copy of JSON-like data with the key values masked in every string and key, and, with `messages`,
        the shapes and patterns too in the strings under MESSAGE_KEYS. Applied before serialising, so the file
        keeps its format whatever a pattern matches."""
        return self._scrub(data, messages, False)

    def leaves(self, text: str, messages: bool = True) -> bool:
        """Whether `scrub(data, messages)` would change no string of the data that `text` was written from (by
        json.dumps with ensure_ascii=False): one scan of the text about to be written, where scrub walks every
        value. False (then scrub) where a key value in any encoding, or with `messages` a credential shape,
        may be in it, where the text is not ASCII and key values are masked (their normalised forms are found
        string by string), and where `run.secret_patterns` are set (each is tried string by string)."""
        # a percent escape or character reference may spell a key in part: the walk decodes string by string (a
        # key that JSON escapes, with a `"` in it, spells differently in the written text than in its string)
        if self._in_json is not None and (not text.isascii() or self._in_json.search(text)
                                          or (("%" in text or "&#" in text) and _ESCAPE.search(text))):
            return False
        if not messages:
            return True
        lowered = text.lower()  # once: the text may be a whole report
        return not (self._patterns or any(marker in lowered for marker in _MARKERS))

    def masked(self, data: Any, dump: Callable[[Any], str], messages: bool = True) -> tuple[Any, str]:
        """`data` as `scrub(data, messages)` leaves it, and its text as `dump` writes it (json.dumps or
        compact_json, ensure_ascii=False): one scan of the text where nothing may be masked (`leaves`), the walk
        only where something may."""
        text = dump(data)
        if self.leaves(text, messages):
            return data, text
        data = self.scrub(data, messages)
        return data, dump(data)

    def _scrub(self, data: Any, messages: bool, message: bool) -> Any:
        # `message`: this value is a message field, or a line of one (a list or mapping of strings under its key)
        if isinstance(data, str):
            return self(data) if message else self.values(data)
        if isinstance(data, Mapping):
            return {self.values(k) if isinstance(k, str) else k:
                    self._scrub(v, messages, message or (messages and k in MESSAGE_KEYS and _flat(v)))
                    for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self._scrub(v, messages, message) for v in data]
        return data

    def install_log_filter(self) -> None:
        """Redact every record that reaches the root logger's handlers (Hydra's console and file log)."""
        redactor = self

        class _Filter(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                record.msg = redactor(record.getMessage())
                record.args = None
                return True

        for handler in logging.getLogger().handlers:
            handler.addFilter(_Filter())


# One escaped character: a percent escape, or a decimal or hexadecimal HTML character reference.
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|&#[0-9]{1,7};|&#[xX][0-9A-Fa-f]{1,6};")


def _unescaped(escape: str) -> str:
    """The one character an _ESCAPE match stands for (a percent escape as a byte's Latin-1 character: keys are
    ASCII); a reference past Unicode's range stands for nothing a key holds."""
    if escape[0] == "%":
        return chr(int(escape[1:], 16))
    code = int(escape[3:-1], 16) if escape[2] in "xX" else int(escape[2:-1])
    return chr(code) if code <= 0x10FFFF else "\ufffd"


def _json_escaped(text: str) -> str:
    """`text` as it stands inside a JSON string that json.dumps wrote with ensure_ascii=False."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _flat(value: Any) -> bool:
    """A string, or a list or mapping of strings: a message field (`reason`, `problems`, decision.json's
    `messages`), as opposed to a structure that merely has a message-like name (a request's `messages`)."""
    if isinstance(value, str):
        return True
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list | tuple) else None
    return items is not None and all(isinstance(item, str) for item in items)


def _user_pattern(pattern: str) -> Any:
    """A `run.secret_patterns` entry, refused when it would mask nothing useful or everything."""
    if not pattern:
        raise ConfigError("run.secret_patterns: an empty pattern would match between every two characters; "
                          "remove it")
    try:
        compiled = compile_pattern(pattern)
    except PatternError as error:
        raise ConfigError(f"run.secret_patterns: {pattern!r} is not a regular expression ({error})") from None
    if compiled.fullmatch("") is not None or compiled.search("") is not None:
        raise ConfigError(f"run.secret_patterns: {pattern!r} matches the empty string, so it would mask between "
                          "characters; make it require at least one character (e.g. + instead of *)")
    return compiled


# Credentials a command-line override may carry. Overrides are written by Hydra (.hydra/, multirun.yaml) and by
# evalkit (job.json, sweep summaries) and shown on the terminal, so they are refused, not redacted.
_OVERRIDE_SHAPES = (
    ("a bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    ("a key, token, secret or password query parameter",
     r"(?i)[?&;][\w.-]*(?:key|token|secret|password|passwd|signature|sig|auth)=[^&\s]"),
    ("a password in a URL", r"://[^/\s:@]+:[^/\s@]+@"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("an API key (sk-...)", r"\bsk-[A-Za-z0-9_-]{16,}\b"),
)
# Names of environment variables that hold credentials by convention (GEMINI_API_KEY, HF_TOKEN, DB_PASSWORD ...).
_CREDENTIAL_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)", re.I)


def override_credential(override: str, environ: Mapping[str, str] | None = None) -> str | None:
    """What credential a command-line override carries (a shape, or the value of a credential variable in any
    encoding), or None. Never returns the value itself."""
    for what, shape in _OVERRIDE_SHAPES:
        if re.search(shape, override):
            return what
    env = os.environ if environ is None else environ
    names = sorted(n for n, v in env.items() if _CREDENTIAL_NAME.search(n) and len(v) >= MIN_SECRET
                   and not v.startswith("/"))  # a path in a variable named *_KEY (a key file) is no secret
    for name in names:
        if Redactor([name], environ=env).values(override) != override:
            return f"the value of ${name}"
    return None


def credential_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (HF_TOKEN, GEMINI_API_KEY ...)."""
    return _CREDENTIAL_NAME.search(name) is not None


def config_credential(data: Any, environ: Mapping[str, str] | None = None) -> str | None:
    """Where a resolved config value holds a credential and which (`model.name: the value of $HF_TOKEN`), or
    None. The override check reads only what was typed; `${oc.env:HF_TOKEN}` becomes the key only here."""
    env = os.environ if environ is None else environ
    names = sorted(n for n, v in env.items() if _CREDENTIAL_NAME.search(n) and len(v) >= MIN_SECRET
                   and not v.startswith("/"))
    each = [(name, Redactor([name], environ=env)) for name in names]
    shapes = [(what, re.compile(shape)) for what, shape in _OVERRIDE_SHAPES]

    def walk(value: Any, where: str) -> str | None:
        if isinstance(value, str):
            found = next((what for what, shape in shapes if shape.search(value)), None)
            found = found or next((f"the value of ${name}" for name, redactor in each
                                   if redactor.values(value) != value), None)
            return f"{where or '(top level)'}: {found}" if found else None
        items = (value.items() if isinstance(value, Mapping)
                 else enumerate(value) if isinstance(value, list | tuple) else ())
        for key, item in items:
            found = walk(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None

    return walk(data, "")
