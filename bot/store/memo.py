"""The one fact cache: derived facts are pure functions of content, so they are kept by content.

Two layers, one key: (fact name, content digests of its inputs: blob ids, graph digests).
- The review memo (`FactCache`) serves one review: base and head ask with the same keys, so
  what the change left alone is derived once for both, whatever order the checks run in.
- The disk store (bot/store/disk.py) serves later reviews.

A fact computed while a blob could not be read (a partial clone, a fetch still under way) is a
fact about the missing blob, not the content: it is neither stored nor remembered, so a later
review that has the blob sees it (`bot/tree.py` counts such reads per thread).

Code asks through `fact`/`peek`/`many`, which use the review's cache (`reviewing`) or, outside
a review (tests, examples), a bounded process-wide memo without a store.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from bot import tree as tree_module
from bot.store.disk import MISS as _MISS
from bot.store.disk import DiskStore, entry_key

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unread:
    """What `many`'s compute returns for a key whose blob it could not read (a partial clone):
    handed to the caller, never kept. Marking it lets the batch's other keys be kept."""

    value: Any


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
            value = self.store.get(entry_key(name, inputs))
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
            self.store.put(entry_key(name, inputs), value)
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
                value = store.get(entry_key(name, key))
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
                    store.put(entry_key(name, key), value)
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
            value = self.store.get(entry_key(name, inputs))
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
            self.store.put(entry_key(name, inputs), value)

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
    return entry_key(f"{name}\0batch", digest(*sorted(map(repr, shard))))


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
    variants_key = entry_key((name, "variants"), inputs)
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
    value_key = entry_key((name, "value"), (inputs, reads.digest))
    store.put(value_key, value)
    kept = [(old, key) for old, key in variants if key != value_key][: _READ_VARIANTS - 1]
    store.put(variants_key, [(reads, value_key), *kept])
    return value


def digest(*parts: Any) -> str:
    """A content digest of values whose `repr` is deterministic (strings, tuples of strings)."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()
