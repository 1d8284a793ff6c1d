"""The App's durable state, kept next to the queue: SQLite for one machine, Redis for many.

What lives here: the job ledger (delivery id -> job and its state), the latest push per pull
request, leases (per-PR locks with expiry), "already posted" records and smoke-run records. The
store is a small namespaced key-value interface so that both back ends stay obviously equivalent.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlparse

from bot.errors import PrCheckError

DEFAULT_PREFIX = "pr-check"


class StoreUnavailable(PrCheckError):
    """The store (or the queue beside it) cannot be reached or written now: Redis away, a full disk.

    Raised without the driver's exception chained: str() is one line saying why, which is all a
    log needs (the service answers 503 meanwhile, and a worker waits for it to come back).
    """


def unavailable_reason(error: BaseException) -> str | None:
    """Why `error` means the store or queue is unavailable (one line), or None for any other error.

    Covers what the SQLite and Redis drivers raise, from our store and from huey's storage alike.
    """
    if isinstance(error, StoreUnavailable):
        return str(error)
    if isinstance(error, sqlite3.OperationalError):
        return f"SQLite: {error}"
    module = type(error).__module__
    if module.startswith("redis"):
        import redis

        if isinstance(error, (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError)):
            return f"Redis: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
        if isinstance(error, redis.ResponseError) and str(error).startswith("MISCONF"):
            return f"Redis: {str(error).splitlines()[0]}"  # it cannot persist (its disk is full): writes refused
    return None


@contextmanager
def store_failures() -> Iterator[None]:
    """Turn the driver errors that mean "unavailable" into StoreUnavailable, chain dropped."""
    try:
        yield
    except StoreUnavailable:
        raise
    except Exception as error:
        reason = unavailable_reason(error)
        if reason is None:
            raise
        raise StoreUnavailable(reason) from None


class StateStore(Protocol):
    """Namespaced strings with optional expiry, compare-and-set helpers and leases."""

    def put(
        self, namespace: str, key: str, value: str, *, only_if_absent: bool = False, ttl_s: float | None = None
    ) -> bool:
        """Store a value; with only_if_absent, False (and nothing written) when the key exists."""
        ...

    def get(self, namespace: str, key: str) -> str | None:
        """The value, or None when absent or expired."""
        ...

    def delete(self, namespace: str, key: str) -> None:
        """Remove a key."""
        ...

    def keys(self, namespace: str) -> list[str]:
        """Every live key of a namespace."""
        ...

    def items(self, namespace: str) -> dict[str, str]:
        """Every live key of a namespace with its value."""
        ...

    def add(self, namespace: str, amounts: dict[str, float]) -> None:
        """Add to numeric values (missing ones count as 0), all in one round trip."""
        ...

    def put_if_newer(self, namespace: str, key: str, order: float, value: str) -> bool:
        """Store `value` when `order` is greater than the stored one's; True when stored."""
        ...

    def get_ordered(self, namespace: str, key: str) -> tuple[float, str] | None:
        """The (order, value) stored by put_if_newer."""
        ...

    def acquire_lease(self, name: str, owner: str, ttl_s: float) -> bool:
        """Take a lease that expires unless renewed; False when someone else holds it."""
        ...

    def renew_lease(self, name: str, owner: str, ttl_s: float) -> bool:
        """Extend a lease this owner holds; False when it was lost."""
        ...

    def release_lease(self, name: str, owner: str) -> None:
        """Give a lease back, if this owner still holds it."""
        ...

    def drop_expired(self) -> int:
        """Delete what has expired (Redis does this itself); returns how many entries went."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def open_store(queue_url: str) -> StateStore:
    """The store that goes with a PR_CHECK_QUEUE URL (the SQLite one sits beside the queue file)."""
    parsed = urlparse(queue_url)
    if parsed.scheme == "sqlite":
        queue_file = Path(parsed.path)
        return SqliteStateStore(queue_file.with_name(queue_file.stem + "-state.sqlite3"))
    return RedisStateStore(queue_url, prefix=queue_prefix(queue_url))


def queue_prefix(queue_url: str) -> str:
    """The key prefix of a Redis queue URL (`?prefix=`), so that deployments can share a database."""
    values = parse_qs(urlparse(queue_url).query).get("prefix")
    return values[0] if values else DEFAULT_PREFIX


class SqliteStateStore:
    """State in one SQLite file (WAL), one connection per thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with store_failures(), self._connection() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS state (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
                " ordering REAL, expires REAL, PRIMARY KEY (namespace, key)) WITHOUT ROWID"
            )

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def _write(self, sql: str, args: tuple) -> int:
        """Run one write; args start with (namespace, key), whose expired row is dropped first so
        that an expired key counts as absent."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "DELETE FROM state WHERE expires IS NOT NULL AND expires < ? AND namespace = ? AND key = ?",
                (time.time(), args[0], args[1]),
            )
            changed = db.execute(sql, args).rowcount
            db.execute("COMMIT")
            return changed
        except BaseException:
            self._roll_back(db)
            raise

    def _roll_back(self, db: sqlite3.Connection) -> None:
        """End a failed transaction. SQLite rolls back by itself on some errors (a full disk): a
        ROLLBACK then fails with "no transaction is active" on top of the real error."""
        if not db.in_transaction:
            return
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            self.close()  # a connection that cannot roll back is not used again

    def put(self, namespace, key, value, *, only_if_absent=False, ttl_s=None):
        with store_failures():
            expires = time.time() + ttl_s if ttl_s else None
            verb = "INSERT OR IGNORE" if only_if_absent else "INSERT OR REPLACE"
            return (
                self._write(
                    f"{verb} INTO state (namespace, key, value, expires) VALUES (?, ?, ?, ?)",
                    (namespace, key, value, expires),
                )
                > 0
            )

    def get(self, namespace, key):
        with store_failures():
            row = (
                self._connection()
                .execute(
                    "SELECT value FROM state WHERE namespace = ? AND key = ? AND (expires IS NULL OR expires >= ?)",
                    (namespace, key, time.time()),
                )
                .fetchone()
            )
            return row[0] if row else None

    def delete(self, namespace, key):
        with store_failures():
            self._connection().execute("DELETE FROM state WHERE namespace = ? AND key = ?", (namespace, key))

    def keys(self, namespace):
        with store_failures():
            rows = (
                self._connection()
                .execute(
                    "SELECT key FROM state WHERE namespace = ? AND (expires IS NULL OR expires >= ?)",
                    (namespace, time.time()),
                )
                .fetchall()
            )
            return [row[0] for row in rows]

    def items(self, namespace):
        with store_failures():
            rows = (
                self._connection()
                .execute(
                    "SELECT key, value FROM state WHERE namespace = ? AND (expires IS NULL OR expires >= ?)",
                    (namespace, time.time()),
                )
                .fetchall()
            )
            return dict(rows)

    def add(self, namespace, amounts):
        with store_failures():
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                for key, amount in amounts.items():
                    db.execute(
                        "INSERT INTO state (namespace, key, value) VALUES (?, ?, ?) ON CONFLICT (namespace, key)"
                        " DO UPDATE SET value = CAST(CAST(state.value AS REAL) + CAST(excluded.value AS REAL) AS TEXT)",
                        (namespace, key, repr(float(amount))),
                    )
                db.execute("COMMIT")
            except BaseException:
                self._roll_back(db)
                raise

    def put_if_newer(self, namespace, key, order, value):
        with store_failures():
            return (
                self._write(
                    "INSERT INTO state (namespace, key, value, ordering) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key)"
                    " DO UPDATE SET value = excluded.value, ordering = excluded.ordering"
                    " WHERE state.ordering IS NULL OR excluded.ordering > state.ordering",
                    (namespace, key, value, order),
                )
                > 0
            )

    def get_ordered(self, namespace, key):
        with store_failures():
            row = (
                self._connection()
                .execute("SELECT ordering, value FROM state WHERE namespace = ? AND key = ?", (namespace, key))
                .fetchone()
            )
            return (row[0], row[1]) if row else None

    def acquire_lease(self, name, owner, ttl_s):
        with store_failures():
            return (
                self._write(
                    "INSERT INTO state (namespace, key, value, expires) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key)"
                    " DO UPDATE SET value = excluded.value, expires = excluded.expires WHERE state.value = excluded.value",
                    ("lease", name, owner, time.time() + ttl_s),
                )
                > 0
            )

    def renew_lease(self, name, owner, ttl_s):
        with store_failures():
            now = time.time()
            cursor = self._connection().execute(
                "UPDATE state SET expires = ? WHERE namespace = 'lease' AND key = ? AND value = ? AND expires >= ?",
                (now + ttl_s, name, owner, now),
            )
            return cursor.rowcount > 0

    def release_lease(self, name, owner):
        with store_failures():
            self._connection().execute(
                "DELETE FROM state WHERE namespace = 'lease' AND key = ? AND value = ?", (name, owner)
            )

    def drop_expired(self):
        with store_failures():
            return (
                self._connection()
                .execute("DELETE FROM state WHERE expires IS NOT NULL AND expires < ?", (time.time(),))
                .rowcount
            )

    def close(self):
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


# Lua keeps compare-and-set atomic on the Redis side.
_PUT_IF_NEWER = """
local current = redis.call('HGET', KEYS[1], 'order')
if current and tonumber(current) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'order', ARGV[1], 'value', ARGV[2])
return 1
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisStateStore:
    """State in Redis under one key prefix; a set per namespace indexes its keys."""

    def __init__(self, url: str, prefix: str = DEFAULT_PREFIX) -> None:
        import redis

        parsed = urlparse(url)
        # Connect and answer timeouts: a Redis that went away must fail a call, not hang it.
        # decode_responses: every reply is a str, which redis-py's annotations (bytes | str) cannot say.
        self._redis: Any = redis.Redis.from_url(
            parsed._replace(query="").geturl(), decode_responses=True, socket_connect_timeout=5, socket_timeout=30
        )
        self.prefix = prefix
        self._put_if_newer = self._redis.register_script(_PUT_IF_NEWER)
        self._renew = self._redis.register_script(_RENEW)
        self._release = self._redis.register_script(_RELEASE)

    def _key(self, namespace: str, key: str) -> str:
        return f"{self.prefix}:state:{namespace}:{key}"

    def _index(self, namespace: str) -> str:
        return f"{self.prefix}:index:{namespace}"

    def put(self, namespace, key, value, *, only_if_absent=False, ttl_s=None):
        with store_failures():
            pipe = self._redis.pipeline()
            pipe.set(self._key(namespace, key), value, nx=only_if_absent, px=int(ttl_s * 1000) if ttl_s else None)
            pipe.sadd(self._index(namespace), key)
            stored, _ = pipe.execute()
            return bool(stored)

    def get(self, namespace, key):
        with store_failures():
            return self._redis.get(self._key(namespace, key))

    def delete(self, namespace, key):
        with store_failures():
            pipe = self._redis.pipeline()
            pipe.delete(self._key(namespace, key))
            pipe.srem(self._index(namespace), key)
            pipe.execute()

    def keys(self, namespace):
        with store_failures():
            members = sorted(self._redis.smembers(self._index(namespace)))
            if not members:
                return []
            values = self._redis.mget([self._key(namespace, member) for member in members])
            gone = [member for member, value in zip(members, values, strict=True) if value is None]
            if gone:
                self._redis.srem(self._index(namespace), *gone)
            return [member for member, value in zip(members, values, strict=True) if value is not None]

    def items(self, namespace):
        with store_failures():
            members = sorted(self._redis.smembers(self._index(namespace)))
            if not members:
                return {}
            values = self._redis.mget([self._key(namespace, member) for member in members])
            return {member: value for member, value in zip(members, values, strict=True) if value is not None}

    def add(self, namespace, amounts):
        with store_failures():
            pipe = self._redis.pipeline()
            for key, amount in amounts.items():
                pipe.incrbyfloat(self._key(namespace, key), float(amount))
                pipe.sadd(self._index(namespace), key)
            pipe.execute()

    def put_if_newer(self, namespace, key, order, value):
        with store_failures():
            return bool(
                self._put_if_newer(keys=[self._key(namespace, key) + ":ordered"], args=[repr(float(order)), value])
            )

    def get_ordered(self, namespace, key):
        with store_failures():
            found = self._redis.hmget(self._key(namespace, key) + ":ordered", "order", "value")
            if found[0] is None:
                return None
            return float(found[0]), found[1]

    def acquire_lease(self, name, owner, ttl_s):
        with store_failures():
            key = self._key("lease", name)
            if self._redis.set(key, owner, nx=True, px=int(ttl_s * 1000)):
                return True
            return self.renew_lease(name, owner, ttl_s)

    def renew_lease(self, name, owner, ttl_s):
        with store_failures():
            return bool(self._renew(keys=[self._key("lease", name)], args=[owner, int(ttl_s * 1000)]))

    def release_lease(self, name, owner):
        with store_failures():
            self._release(keys=[self._key("lease", name)], args=[owner])

    def drop_expired(self):
        with store_failures():
            return 0

    def close(self):
        self._redis.close()

    def purge(self) -> None:
        """Delete every key under this store's prefix (for tests and decommissioning)."""
        for key in self._redis.scan_iter(match=f"{self.prefix}:*", count=500):
            self._redis.delete(key)
