"""A Redis queue must survive a Redis restart (issue 12, point 6): without the append-only file a
killed Redis loses acknowledged deliveries, so the queue refuses to start on one unless told to."""

from __future__ import annotations

import shutil
import socket
import subprocess
import uuid

import pytest

from tests.test_app_harness import wait_for
from webhooks.queue import QueueNotDurable, open_queue

pytestmark = pytest.mark.redis


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture()
def private_redis(tmp_path):
    """A Redis of our own on a free port, so that its persistence settings are ours to choose."""
    server = shutil.which("redis-server")
    redis = pytest.importorskip("redis")
    if server is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()

    def start(*options: str) -> str:
        process = subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path), "--save", "", *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        client = redis.Redis(port=port, socket_connect_timeout=0.2)

        def answers() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(answers, timeout=10, what="redis-server to answer")
        client.close()
        return f"redis://127.0.0.1:{port}/0?prefix=prc-{uuid.uuid4().hex[:8]}"

    started: list[subprocess.Popen] = []
    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=10)


def test_a_redis_without_appendonly_is_refused_with_the_fix_in_the_message(private_redis):
    url = private_redis("--appendonly", "no")
    with pytest.raises(QueueNotDurable, match="appendonly yes") as refused:
        open_queue(url)
    assert "PR_CHECK_ALLOW_VOLATILE_REDIS" in str(refused.value)
    open_queue(url, allow_volatile_redis=True).store.close()  # the explicit override is honoured


def test_a_redis_with_appendonly_is_accepted(private_redis):
    queue = open_queue(private_redis("--appendonly", "yes"))
    assert queue.store.put("probe", "key", "value")
    queue.store.close()
