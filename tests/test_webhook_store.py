"""The state store's two back ends behave alike: values, expiry, ordering, leases, counters."""

from __future__ import annotations

import time
import uuid

import pytest

from webhooks.store import RedisStateStore, SqliteStateStore

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "sqlite":
        opened = SqliteStateStore(tmp_path / "state.sqlite3")
        yield opened
        opened.close()
        return
    redis = pytest.importorskip("redis")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=0.5).ping()
    except redis.RedisError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    opened = RedisStateStore(REDIS_URL, prefix=f"prc-test-{uuid.uuid4().hex[:12]}")
    try:
        yield opened
    finally:
        opened.purge()
        opened.close()


def test_values_and_expiry(store):
    assert store.put("job", "d1", "a", only_if_absent=True)
    assert not store.put("job", "d1", "b", only_if_absent=True)
    assert store.get("job", "d1") == "a"
    store.put("job", "d2", "short", ttl_s=0.2)
    assert sorted(store.keys("job")) == ["d1", "d2"]
    time.sleep(0.3)
    assert store.get("job", "d2") is None and store.keys("job") == ["d1"]
    store.drop_expired()
    assert store.keys("job") == ["d1"]
    assert store.put("job", "d2", "again", only_if_absent=True)  # an expired key is free again
    store.delete("job", "d1")
    assert store.items("job") == {"d2": "again"}


def test_only_newer_values_replace(store):
    assert store.put_if_newer("latest-push", "pr", 10.0, "head-a")
    assert not store.put_if_newer("latest-push", "pr", 5.0, "head-old")
    assert not store.put_if_newer("latest-push", "pr", 10.0, "head-same-time")
    assert store.put_if_newer("latest-push", "pr", 11.0, "head-b")
    assert store.get_ordered("latest-push", "pr") == (11.0, "head-b")
    assert store.get_ordered("latest-push", "other") is None


def test_leases_exclude_expire_and_renew(store):
    assert store.acquire_lease("pr:x", "one", 0.3)
    assert not store.acquire_lease("pr:x", "two", 0.3)
    assert store.renew_lease("pr:x", "one", 0.3)
    assert not store.renew_lease("pr:x", "two", 0.3)
    time.sleep(0.4)
    assert not store.renew_lease("pr:x", "one", 0.3)  # lost by not renewing in time
    assert store.acquire_lease("pr:x", "two", 5)
    store.release_lease("pr:x", "one")  # not the holder: no effect
    assert not store.acquire_lease("pr:x", "three", 5)
    store.release_lease("pr:x", "two")
    assert store.acquire_lease("pr:x", "three", 5)


def test_counters_add_up(store):
    store.add("metrics", {"a": 1, "b": 0.5})
    store.add("metrics", {"a": 2})
    assert {key: float(value) for key, value in store.items("metrics").items()} == {"a": 3.0, "b": 0.5}
