"""Untrusted text made safe for each kind of output: one function per output kind, used by every renderer.

Strings that come from a report, a policy or an adapted file (a model name, a metric name, a policy's name and
version, a test id, a reason quoting them) are data, never markup or terminal control. Each function here turns
such a string into text that reads as itself in one output kind:

- `terminal`: control characters (ESC, NUL, line breaks, DEL, C1) and invisible format characters (zero-width,
  bidirectional overrides) shown as visible escapes (`\\x1b`, `\\u202e`), and the line cut to `MAX_LINE_CHARS`;
- `markdown`: the same, then HTML's `<` and `&` as character references and Markdown's link, emphasis,
  code and table punctuation backslash-escaped, so no tag, image, link or table cell can be opened;
- `html`: the same visible escapes, then HTML-escaped (for HTML built outside the autoescaping templates);
- `pre_text`: a `<pre>` block's text (a reply): line breaks and tabs kept, controls and bidirectional overrides
  as escapes, HTML-escaped; the report page's templates show every value so;
- `xml`: the same visible escapes (which also removes every character XML 1.0 cannot hold), then XML-escaped;
- `annotation`: a GitHub Actions workflow command's message or property (`::error title=...::message`), with
  the characters the runner decodes (`%`, CR, LF, and in a property `:` and `,`) percent-encoded.

Secrets are masked before any of these run (evalkit.live.redact): the redactor also knows each secret's escaped
forms, so escaping cannot hide one from it.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["MAX_LINE_CHARS", "MAX_VALUE_CHARS", "visible", "cut", "squeezed", "terminal", "markdown", "html_text",
           "pre_text", "xml_text", "annotation"]

MAX_LINE_CHARS = 2000
"""The longest terminal line evalkit prints from report data; longer lines are cut with a marker."""
MAX_VALUE_CHARS = 300
"""The longest single value (a model name, a metric name, a policy version) shown in a heading or table cell."""

# Markdown punctuation that can open a link, an image, emphasis, code or a table cell (GitHub Flavored Markdown).
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*\[\]|~!])")


def _escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _hidden(char: str) -> bool:
    """A character that moves the cursor, changes the terminal, or does not show: control (Cc), format (Cf:
    zero-width, bidirectional overrides), surrogate (Cs), line and paragraph separators (Zl, Zp)."""
    return unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def visible(text: str, keep: str = "", controls_only: bool = False) -> str:
    """`text` with every hidden character written as a visible escape (`\\x1b`, `\\n`, `\\u200b`), but those in
    `keep` (a page's `<pre>` keeps its line breaks and tabs); with `controls_only`, only control characters and
    surrogates and the bidirectional embeddings, overrides and isolates (a page shows right-to-left text as
    written, and marks no secret: the redactor normalises)."""
    if text.isprintable():
        return text
    hidden = _control if controls_only else _hidden
    return "".join(("\\n" if char == "\n" else "\\r" if char == "\r" else "\\t" if char == "\t"
                    else _escape_char(char)) if hidden(char) and char not in keep else char for char in text)


# Embeddings, overrides and isolates reorder the text around them ("Trojan Source"): a page shows them as escapes
# too, while the marks (U+200E, U+200F) and joiners that right-to-left and emoji text need are kept as written.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cs") or char in _BIDI_CONTROLS


def pre_text(text: str) -> str:
    """Untrusted text inside a `<pre>` block of HTML or of Markdown's inline HTML (a reply in decision.md): as a
    page shows it (line breaks and tabs kept; controls and bidirectional overrides as escapes), HTML-escaped."""
    return html.escape(visible(text, keep="\n\r\t", controls_only=True), quote=False)


def cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """`text` cut to `limit` characters, with a marker saying how long it was."""
    if len(text) <= limit:
        return text
    marker = f"... ({len(text):,} characters)"
    return text[:max(0, limit - len(marker))] + marker


def squeezed(text: str, limit: int) -> str:
    """`text` on one line, each run of whitespace as one space, cut to `limit` characters ending in "...": how a
    judge's answer or a reply is quoted inside a one-line message."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:max(0, limit - 3)] + "..."


def terminal(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """One terminal line holding untrusted text: nothing in it can move the cursor, clear the screen, colour the
    output or start another line."""
    return cut(visible(text), limit)


def markdown(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Untrusted text inside Markdown (a pull-request comment, a job summary): shown as itself, never a tag, an
    image (a remote fetch whenever the comment is viewed), a link, emphasis, code or a table cell."""
    # `<` opens every tag and autolink, `&` every character reference; a lone `>` opens nothing mid-line
    escaped = terminal(text, limit).replace("&", "&amp;").replace("<", "&lt;")
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", escaped)


def html_text(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Untrusted text inside HTML built outside the autoescaping templates."""
    return html.escape(terminal(text, limit), quote=True)


def xml_text(text: str, limit: int | None = None) -> str:
    """Untrusted text inside XML (JUnit): characters XML 1.0 cannot hold become visible escapes, then escaped."""
    shown = visible(text) if limit is None else terminal(text, limit)
    return html.escape(shown, quote=True)


def annotation(text: str, prop: bool = False, limit: int = MAX_LINE_CHARS) -> str:
    """Untrusted text in a GitHub Actions workflow command (`::error title=PROP::MESSAGE`): the runner decodes
    `%0A` into a line break, so line breaks are shown visibly first and what it decodes is encoded."""
    shown = terminal(text, limit).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return shown.replace(":", "%3A").replace(",", "%2C") if prop else shown
