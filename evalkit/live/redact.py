"""Keep credentials out of everything evalkit writes: recordings, journals, reports, logs, messages."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable

__all__ = ["Redactor", "DEFAULT_PATTERNS", "MASK"]

MASK = "[REDACTED]"
# Shapes of credentials that can turn up in error texts and echoed replies. None of them matches a
# double quote or a backslash, so redacting serialized JSON keeps it valid JSON.
DEFAULT_PATTERNS = (
    r"(?i:\bbearer\s+)[^\s\"\\]+",
    r"(?<=[?&](?i:key)=)[^&\s\"\\]+",
    r"(?<=(?i:x-goog-api-key): )[^\s\"\\]+",
    r"\bAIza[0-9A-Za-z_-]{35}\b",
    r"\bsk-[A-Za-z0-9_-]{16,}\b",
)
# Every default pattern contains one of these (lower-cased); text without any skips the regex scan.
_MARKERS = ("bearer", "key=", "x-goog-api-key", "aiza", "sk-")
_MIN_SECRET = 8  # shorter environment values would redact ordinary words


class Redactor:
    """Replaces the values of the credential variables a run uses, and credential-shaped text."""

    def __init__(self, env_names: Iterable[str | None] = (), patterns: Iterable[str] = ()) -> None:
        values = {os.environ.get(name, "") for name in env_names if name}
        self._values = sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True)
        # Every journal line passes through here: one scan for all defaults, and none without a marker.
        self._defaults = re.compile("|".join(f"(?:{p})" for p in DEFAULT_PATTERNS))
        self._patterns = [re.compile(p) for p in patterns]

    def __call__(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, MASK)
        lowered = text.lower()
        if any(marker in lowered for marker in _MARKERS):
            text = self._defaults.sub(MASK, text)
        for pattern in self._patterns:
            text = pattern.sub(MASK, text)
        return text

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
