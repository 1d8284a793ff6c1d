"""Facts derived from one blob (its includes, say), kept on disk across reviews.

A blob's content never changes, so a fact computed from it is valid forever: the store is
keyed by (kind, blob id). SQLite, because thousands of small facts are read per review and
one SELECT is cheaper than thousands of files.
"""

from __future__ import annotations

import pickle
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping


class FactStore:
    """(kind, blob) -> fact; `None` directory keeps facts in memory only."""

    def __init__(self, directory: Path | None) -> None:
        self._memory: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(directory / "facts.sqlite3", check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS facts (kind TEXT, blob TEXT, value BLOB, PRIMARY KEY (kind, blob))")

    def get_many(
        self, kind: str, blobs: Iterable[str], compute: Callable[[list[str]], Mapping[str, Any]]
    ) -> dict[str, Any]:
        """Facts for every blob; the missing ones computed in one call and stored."""
        wanted = list(dict.fromkeys(blobs))
        found = {b: self._memory[(kind, b)] for b in wanted if (kind, b) in self._memory}
        missing = [b for b in wanted if b not in found]
        if missing and self._db is not None:
            with self._lock:
                for start in range(0, len(missing), 500):
                    chunk = missing[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        f"SELECT blob, value FROM facts WHERE kind = ? AND blob IN ({marks})", [kind, *chunk]
                    ).fetchall()
                    for blob, value in rows:
                        found[blob] = pickle.loads(value)
            missing = [b for b in missing if b not in found]
        if missing:
            computed = dict(compute(missing))
            found.update(computed)
            if self._db is not None:
                with self._lock, self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO facts VALUES (?, ?, ?)",
                        [(kind, b, pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)) for b, v in computed.items()],
                    )
        for blob in wanted:
            if blob in found:
                self._memory[(kind, blob)] = found[blob]
        return found
