"""The disk store under every store of pr-check: key -> pickled value, one file per key.

The fact store (bot/store/memo.py), the evaluation store (bot/store/evaluations.py) and the
review-results store (bot/store/reviews.py) keep their entries here, under one naming scheme:
an entry's key is `entry_key(kind, inputs)` (the kind of value, such as "includes" or
"buck-result", and the content digests of its inputs), and its file is named by the digest of
the store's format, the code digest and that key. One file per entry, content-addressed,
written atomically under a unique temporary name, safe for threads and processes, and bounded:
the least recently used files go when the store outgrows its bound. Values above a few
kilobytes are stored compressed (zlib, fastest level): pickled graphs shrink about 7x, so a busy
day's commits fit the bound, for about 15 ms per MB read back.
"""

from __future__ import annotations

import contextlib
import copyreg
import hashlib
import os
import pickle
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any


def _read_only(contents: dict) -> MappingProxyType:
    return MappingProxyType(contents)


# Models expose read-only mappings (MappingProxyType); stored facts come back read-only.
copyreg.pickle(MappingProxyType, lambda proxy: (_read_only, (dict(proxy),)))
FORMAT = "facts-3"  # bump when the store's layout changes: old entries are never read
_COMPRESS_ABOVE = 4096  # bytes; a smaller file takes one disk block whatever its size
_ZLIB = b"\x78"  # the first byte of a zlib stream; a pickle (protocol 2+) starts with 0x80


def _code_digest() -> str:
    """A digest of the code that computes facts (bot/ and checks/): stored facts are valid only
    for the code that derived them, so an upgrade never serves an old verdict."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for package in ("bot", "checks"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


CODE_DIGEST = _code_digest()
DEFAULT_BOUND = 512 << 20
_LOW_WATER = 0.8  # eviction frees down to this fraction of the bound, so it runs rarely
_STALE_TEMPORARY = 3600.0  # seconds after which a temporary file is an abandoned write
MISS = object()  # what `DiskStore.get` returns for a key it does not hold


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """What `pr-check cache info` shows."""

    directory: str
    entries: int
    bytes: int
    bound: int


class DiskStore:
    """key -> pickled value, one file per key under `directory`, at most about `bound` bytes."""

    def __init__(self, directory: Path, bound: int = DEFAULT_BOUND) -> None:
        self.directory = Path(directory)
        self.bound = bound
        self._lock = threading.Lock()
        self._estimate: int | None = None  # bytes on disk as this process last counted, plus its writes

    @classmethod
    def at(cls, directory: Path, bound: int = DEFAULT_BOUND) -> DiskStore:
        """The process's store for `directory`: its size is counted once per process, not once
        per review (counting walks every entry)."""
        key = (str(Path(directory).resolve()), bound)
        with _STORES_LOCK:
            if key not in _STORES:
                _STORES[key] = cls(directory, bound)
            return _STORES[key]

    def _path(self, key: str) -> Path:
        # A key names paths; one that is not UTF-8 hashes as its bytes (bot/tree.py).
        digest = hashlib.sha256(f"{FORMAT}\0{CODE_DIGEST}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()
        return self.directory / digest[:2] / f"{digest}.pickle"

    def get(self, key: str) -> Any:
        """The stored value, or `MISS`; a torn or foreign file is a miss, never a failure."""
        path = self._path(key)
        try:
            data = path.read_bytes()
            os.utime(path)  # recency for eviction
            return pickle.loads(zlib.decompress(data) if data[:1] == _ZLIB else data)
        except FileNotFoundError:
            return MISS
        except Exception:  # noqa: BLE001 - a damaged entry is treated as absent
            return MISS

    def has(self, key: str) -> bool:
        """Is there an entry for `key`? (One stat: no read, no recency update.)"""
        return self._path(key).is_file()

    def put(self, key: str, value: Any) -> None:
        """Store atomically: a unique temporary file in the same directory, then a rename.
        A value that cannot be pickled (it holds a function) is simply not stored."""
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return
        if len(data) > _COMPRESS_ABOVE:
            data = zlib.compress(data, 1)
        if len(data) > self.bound * (1 - _LOW_WATER):
            return  # one value that would evict most of the store is not worth keeping
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem[:16] + ".", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        with self._lock:
            if self._estimate is None:
                self._estimate = self._count()[1]
            else:
                self._estimate += len(data)
            over = self._estimate > self.bound
        if over:
            self.evict()

    def _files(self) -> Iterator[os.DirEntry]:
        if not self.directory.is_dir():
            return
        for shard in os.scandir(self.directory):
            if shard.is_dir() and len(shard.name) == 2:
                with contextlib.suppress(FileNotFoundError):
                    yield from os.scandir(shard.path)

    def _count(self) -> tuple[int, int]:
        entries = size = 0
        for entry in self._files():
            with contextlib.suppress(FileNotFoundError):
                size += entry.stat().st_size
                entries += entry.name.endswith(".pickle")
        return entries, size

    def evict(self) -> None:
        """Remove the least recently used entries until the store is under its low-water mark;
        abandoned temporary files go too. Other processes may evict at the same time: a file
        already gone is simply skipped."""
        with self._lock:
            now = time.time()
            files = []
            for entry in self._files():
                try:
                    stat = entry.stat()
                except FileNotFoundError:
                    continue
                if entry.name.endswith(".tmp"):
                    if now - stat.st_mtime > _STALE_TEMPORARY:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.path)
                    continue
                files.append((stat.st_mtime, stat.st_size, entry.path))
            total = sum(size for _mtime, size, _path in files)
            files.sort()
            target = self.bound * _LOW_WATER
            for _mtime, size, path in files:
                if total <= target:
                    break
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                total -= size
            self._estimate = total

    def info(self) -> StoreInfo:
        entries, size = self._count()
        return StoreInfo(str(self.directory), entries, size, self.bound)

    def clean(self) -> None:
        """Remove every entry (and abandoned temporary file)."""
        with self._lock:
            for entry in list(self._files()):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
            self._estimate = 0


_STORES: dict[tuple[str, int], DiskStore] = {}
_STORES_LOCK = threading.Lock()


def entry_key(kind: str | tuple, inputs: Any) -> str:
    """The one naming scheme of every store's entries: the kind of value and its inputs."""
    return f"{kind}\0{inputs!r}"
