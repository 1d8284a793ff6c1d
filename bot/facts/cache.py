"""The one fact cache: derived facts are pure functions of content, so they are kept by content.

Two layers, one key: (fact name, content digests of its inputs: blob ids, graph digests).
- The review memo (`FactCache`) serves one review: base and head ask with the same keys, so
  what the change left alone is derived once for both, whatever order the checks run in.
- The store (`DiskStore`) serves later reviews: one file per fact, content-addressed, written
  atomically under a unique temporary name, safe for threads and processes, and bounded: the
  least recently used files go when it outgrows its bound. Values above a few kilobytes are
  stored compressed (zlib, fastest level): pickled graphs shrink about 7x, so a busy day's
  commits fit the bound, for about 15 ms per MB read back.

A fact computed while a blob could not be read (a partial clone, a fetch still under way) is a
fact about the missing blob, not the content: it is neither stored nor remembered, so a later
review that has the blob sees it (`bot/tree.py` counts such reads per thread).

Code asks through `fact`/`peek`/`many`, which use the review's cache (`reviewing`) or, outside
a review (tests, examples), a bounded process-wide memo without a store.
"""

from __future__ import annotations

import contextlib
import contextvars
import copyreg
import hashlib
import os
import pickle
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from bot import tree as tree_module

T = TypeVar("T")


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
_MISS = object()


@dataclass(frozen=True, slots=True)
class Unread:
    """What `many`'s compute returns for a key whose blob it could not read (a partial clone):
    handed to the caller, never kept. Marking it lets the batch's other keys be kept."""

    value: Any


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
            return _MISS
        except Exception:  # noqa: BLE001 - a damaged entry is treated as absent
            return _MISS

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


class FactCache:
    """One review's memo over an optional store; `limit` bounds the memo (the process-wide one)."""

    def __init__(self, store: DiskStore | None = None, limit: int | None = None) -> None:
        self.store = store
        self._limit = limit
        self._memo: dict[tuple[str | tuple, Any], Any] = {}
        self._lock = threading.RLock()

    def peek(self, name: str, inputs: Any) -> Any:
        """The remembered fact, or None: for callers that can skip reading its inputs."""
        return self._memo.get((name, inputs))

    def fact(self, name: str | tuple, inputs: Any, compute: Callable[[], T], *, persist: bool = False) -> T:
        """`compute()`, kept under (name, inputs); `persist` also keeps it in the store."""
        key = (name, inputs)
        value = self._memo.get(key, _MISS)
        if value is not _MISS:
            return value
        if persist and self.store is not None:
            value = self.store.get(_store_key(name, inputs))
            if value is not _MISS:
                self._remember(key, value)
                return value
        missing_before = tree_module.missing_reads()
        value = compute()
        if tree_module.missing_reads() != missing_before:
            # Derived from an unreadable blob: never stored. A review's own memo keeps it (the
            # blob does not come back within one review, and every check asking again would
            # pay the whole computation again); the process-wide memo does not.
            if self._limit is None:
                self._remember(key, value)
            return value
        self._remember(key, value)
        if persist and self.store is not None:
            self.store.put(_store_key(name, inputs), value)
        return value

    def many(
        self,
        name: str,
        keys: Iterable[Any],
        compute: Callable[[list[Any]], Mapping[Any, Any]],
        *,
        persist: bool = False,
    ) -> dict[Any, Any]:
        """Facts for many inputs of one kind; the missing ones computed in one call (one batch
        read of their blobs). A persisted batch is also stored in shards (`_shards`), each
        under the digest of its keys: the same revisions
        again read a few files instead of one per key, and a tree that differs from one seen
        before in a few files reads every shard it shares and writes only the shards of the
        keys that changed, not the whole batch again. A key `compute` marks `Unread` is left out
        of its shard (and asked for again by the next review); the others are kept."""
        wanted = list(dict.fromkeys(keys))
        store = self.store if persist else None
        found: dict[Any, Any] = {}
        batched: set[Any] = set()  # keys of shards read whole: not asked for one by one
        unwritten: set[int] = set()  # shards the store lacks
        shards = _shards(wanted) if store is not None and len(wanted) > 1 else []
        for index, shard in enumerate(shards):
            if all((name, key) in self._memo for key in shard):
                continue  # the other revision of this review read or derived the same shard
            batch = store.get(_batch_key(name, shard)) if store is not None else _MISS
            if isinstance(batch, dict):
                for key, value in batch.items():
                    self._remember((name, key), value)
                found.update(batch)
                batched.update(shard)
            else:
                unwritten.add(index)
        missing = []
        for key in wanted:
            if key in found:
                continue
            value = self._memo.get((name, key), _MISS)
            if value is _MISS and store is not None and key not in batched:
                value = store.get(_store_key(name, key))
                if value is not _MISS:
                    self._remember((name, key), value)
            if value is _MISS:
                missing.append(key)
            else:
                found[key] = value
        computed: dict[Any, Any] = {}
        unread: set[Any] = set()
        if missing:
            missing_before = tree_module.missing_reads()
            computed = dict(compute(missing))
            unread = {key for key, value in computed.items() if isinstance(value, Unread)}
            for key in unread:
                found[key] = computed.pop(key).value
            found.update(computed)
            if tree_module.missing_reads() != missing_before and not unread:
                return found  # derived while a blob was missing, and compute could not say which: kept for nobody
            for key, value in computed.items():
                self._remember((name, key), value)
                if store is not None:
                    store.put(_store_key(name, key), value)
        if store is not None:
            for index, shard in enumerate(shards):  # new shards, and those holding a key read only now
                if index in unwritten or any(key in computed for key in shard):
                    store.put(_batch_key(name, shard), {k: found[k] for k in shard if k in found and k not in unread})
        return found

    def load(self, name: str, inputs: Any, *, keep: bool = True) -> Any:
        """A fact from this review or the store, or None: for facts kept as a table that the
        caller extends (`save`) with what it had to compute. `keep=False` reads the store
        without remembering the value (a container whose parts the caller keeps instead)."""
        value = self._memo.get((name, inputs), _MISS)
        if value is _MISS and self.store is not None:
            value = self.store.get(_store_key(name, inputs))
            if value is not _MISS and keep:
                self._remember((name, inputs), value)
        return None if value is _MISS else value

    def save(self, name: str, inputs: Any, value: Any, *, complete: bool = True) -> None:
        """Keep `value` in this review and the store; `complete` is False when it was derived
        while a blob was missing (then it is kept for nobody)."""
        if not complete:
            return
        self._remember((name, inputs), value)
        if self.store is not None:
            self.store.put(_store_key(name, inputs), value)

    def forget(self, name: str) -> None:
        """Drop every remembered fact called `name` (benchmarks measure cold runs with it)."""
        with self._lock:
            for key in [k for k in self._memo if k[0] == name]:
                del self._memo[key]

    def _remember(self, key: tuple[str | tuple, Any], value: Any) -> None:
        with self._lock:
            self._memo[key] = value
            if self._limit is not None and len(self._memo) > self._limit:
                for old in list(self._memo)[: len(self._memo) // 4]:  # oldest first (insertion order)
                    self._memo.pop(old, None)


def _store_key(name: str | tuple, inputs: Any) -> str:
    return f"{name}\0{inputs!r}"


_SHARD_KEYS = 64  # keys to a shard of a stored batch, on average


def _shards(keys: list[Any]) -> list[list[Any]]:
    """`keys` split into shards for the store: sorted by where they lie (a tuple key by its last
    part first: the path of a `(blob, path)` key), and cut after each key whose digest is 0
    modulo `_SHARD_KEYS`. A cut is chosen by the key itself, so a key added or removed changes
    its own shard only, and the files a commit changes, which sit together in a few directories,
    fall in few shards. One shard below 128 keys."""
    if len(keys) < 2 * _SHARD_KEYS:
        return [keys]
    shards: list[list[Any]] = [[]]
    for key in sorted(keys, key=_locality):
        shards[-1].append(key)
        if int(hashlib.blake2b(repr(key).encode(), digest_size=4).hexdigest(), 16) % _SHARD_KEYS == 0:
            shards.append([])
    return [shard for shard in shards if shard]


def _locality(key: Any) -> str:
    return repr(key[::-1]) if isinstance(key, tuple) else repr(key)


def _batch_key(name: str, shard: list[Any]) -> str:
    return _store_key(f"{name}\0batch", digest(*sorted(map(repr, shard))))


_AMBIENT = FactCache(None, limit=50_000)
_CURRENT: contextvars.ContextVar[FactCache | None] = contextvars.ContextVar("pr_check_fact_cache", default=None)


def current() -> FactCache:
    """The review's cache, or the process-wide memo outside a review."""
    return _CURRENT.get() or _AMBIENT


@contextlib.contextmanager
def reviewing(cache: FactCache) -> Iterator[FactCache]:
    """Make `cache` the one every fact of this thread's review goes through."""
    token = _CURRENT.set(cache)
    try:
        yield cache
    finally:
        _CURRENT.reset(token)


def fact(name: str | tuple, inputs: Any, compute: Callable[[], T], *, persist: bool = False) -> T:
    """`compute()` kept under (name, content digests of its inputs) in the current cache."""
    return current().fact(name, inputs, compute, persist=persist)


def peek(name: str, inputs: Any) -> Any:
    """The current cache's fact, or None."""
    return current().peek(name, inputs)


def many(name: str, keys: Iterable[Any], compute, *, persist: bool = False) -> dict[Any, Any]:
    """`FactCache.many` on the current cache."""
    return current().many(name, keys, compute, persist=persist)


class Answerable(Protocol):
    """What a fact computed by reading a tree recorded of it (bot/cmake/reads.py's `Reads`)."""

    @property
    def digest(self) -> str: ...

    def hold_for(self, tree: Any) -> bool: ...


_READ_VARIANTS = 8  # stored variants of one fact's reads: the base and heads of a few pull requests


def by_reads(name: str, inputs: Any, tree: Any, compute: Callable[[], tuple[T, Answerable]]) -> T:
    """A fact whose inputs are known only once it is computed: the parts of `tree` it read.

    `compute()` returns the value and what it read (`Answerable`); both are stored, and a later
    tree that answers every read the same way is served the stored value, whatever else differs
    (a CMake model does not change when only Buck files do). Up to `_READ_VARIANTS` variants are
    kept per (name, inputs), the most recent first. Without a store, this is `compute()`'s value."""
    store = current().store
    if store is None:
        return compute()[0]
    variants_key = _store_key((name, "variants"), inputs)
    variants = store.get(variants_key)
    if not isinstance(variants, list):
        variants = []
    for reads, value_key in variants:
        if reads.hold_for(tree):
            value = store.get(value_key)
            if value is not _MISS:
                return value
    missing_before = tree_module.missing_reads()
    value, reads = compute()
    if tree_module.missing_reads() != missing_before:
        return value  # derived while a blob was missing: not a fact about the content
    value_key = _store_key((name, "value"), (inputs, reads.digest))
    store.put(value_key, value)
    kept = [(old, key) for old, key in variants if key != value_key][: _READ_VARIANTS - 1]
    store.put(variants_key, [(reads, value_key), *kept])
    return value


def digest(*parts: Any) -> str:
    """A content digest of values whose `repr` is deterministic (strings, tuples of strings)."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()
