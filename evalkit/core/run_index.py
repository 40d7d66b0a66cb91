"""The run index: what `evalkit history` reads of each run report, kept beside the runs in one SQLite file, so
that a thousand runs are read in seconds rather than parsed again every time.

It is a cache, never evidence: every entry is keyed by the report's SHA-256 and rebuilt from the report whenever
the file may have changed. A file may have changed when its stat signature (device, inode, size, modification and
status-change times) is not the one indexed; then its bytes are hashed again, and a different SHA-256 means the
report is read again and its entry replaced (a file only touched keeps its entry under its new signature). The
status-change time is the reason the signature can be trusted to skip the hash: every write to a file sets it,
and no unprivileged call can set it back. An index that cannot be read (another schema version, a damaged file)
is replaced by an empty one and filled again from the reports.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

__all__ = ["INDEX_NAME", "SCHEMA", "RunIndex", "opened", "signature"]

INDEX_NAME = ".evalkit-runs.sqlite"
SCHEMA = 1
"""The index's own format; an index of another is rebuilt, never read."""

_TABLE = ("CREATE TABLE IF NOT EXISTS runs (path TEXT PRIMARY KEY, signature TEXT NOT NULL, sha256 TEXT NOT NULL, "
          "summary TEXT NOT NULL)")


def signature(info: os.stat_result) -> str:
    """What says a file was not written since it was indexed (see the module's docstring)."""
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


class RunIndex:
    """One index file: per report path, the signature and SHA-256 it was indexed under and its summary (a JSON
    object the caller chose). Writes are batched until `close` (or the end of `opened`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rebuilt = False
        """Whether an unreadable index was replaced by an empty one when opened."""
        try:
            self._db = self._connect()
        except sqlite3.OperationalError:
            raise  # locked, or not writable: not the index's fault, so never a reason to remove it
        except sqlite3.DatabaseError:
            # another schema or a damaged file: the reports are the truth, so start again from them
            path.unlink(missing_ok=True)
            self._db = self._connect()
            self.rebuilt = True

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            if tables and version != SCHEMA:
                raise sqlite3.DatabaseError(f"schema {version}, not {SCHEMA}")
            db.execute(_TABLE)
            db.execute(f"PRAGMA user_version = {SCHEMA}")
            db.commit()
        except BaseException:
            db.close()
            raise
        return db

    def get(self, path: Path, stat: str) -> dict[str, Any] | None:
        """The summary indexed for `path` under this stat signature; None when the file may have changed."""
        row = self._db.execute("SELECT summary FROM runs WHERE path = ? AND signature = ?",
                               (_key(path), stat)).fetchone()
        return _summary(row)

    def get_by_sha256(self, path: Path, sha256: str) -> dict[str, Any] | None:
        """The summary indexed for `path` when it held exactly these bytes (a file touched, not changed)."""
        row = self._db.execute("SELECT summary FROM runs WHERE path = ? AND sha256 = ?",
                               (_key(path), sha256)).fetchone()
        return _summary(row)

    def put(self, path: Path, stat: str, sha256: str, summary: Mapping[str, Any]) -> None:
        self._db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)",
                         (_key(path), stat, sha256, json.dumps(summary, allow_nan=False, separators=(",", ":"))))

    def close(self) -> None:
        try:
            self._db.commit()
        finally:
            self._db.close()


@contextmanager
def opened(path: Path) -> Iterator[RunIndex]:
    """The index at `path` (made when missing), committed and closed at the end."""
    index = RunIndex(path)
    with closing(index):
        yield index


def _key(path: Path) -> str:
    return str(path.resolve())


def _summary(row: tuple[str] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    try:
        value = json.loads(row[0])
    except ValueError:
        return None  # a damaged entry reads as none: the report is read again
    return value if isinstance(value, dict) else None
