"""Fingerprints: short SHA-256 digests of bytes, text, or a value's canonical JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["SHA_LENGTH", "canonical_json", "fingerprint", "sha256"]

SHA_LENGTH = 12  # short enough to read in a key; 48 bits tell versions of one file apart


def canonical_json(value: Any) -> str:
    """One spelling per value, so equal values always fingerprint alike."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(data: bytes) -> str:
    """The full SHA-256 (hex) of bytes: what manifests, artefact hashes and review bindings record."""
    return hashlib.sha256(data).hexdigest()


def fingerprint(value: Any) -> str:
    """Digest of bytes as they are, of a string's UTF-8, or of any other value's canonical JSON."""
    if isinstance(value, bytes):
        data = value
    else:
        data = (value if isinstance(value, str) else canonical_json(value)).encode("utf-8")
    return sha256(data)[:SHA_LENGTH]
