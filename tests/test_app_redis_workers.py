"""Redis mode: two worker processes, 20 deliveries over 5 pull requests arriving out of order."""

from __future__ import annotations

import random
import uuid

import pytest

from tests.standin import GitHubStandIn, app_key_pair
from tests.test_app_harness import APP_ID, BUCK_DEFECT, OWNER, make_repo, start_app, wait_for
from webhooks.queue import JobRecord

pytestmark = pytest.mark.redis
REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture()
def redis_prefix():
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    prefix = f"prc-test-{uuid.uuid4().hex[:12]}"
    try:
        yield prefix
    finally:
        # The state store's keys, and huey's (huey strips the name to letters and digits).
        for pattern in (f"{prefix}:*", f"*{prefix.replace('-', '')}*"):
            for key in client.scan_iter(match=pattern, count=500):
                client.delete(key)
        client.close()


def test_every_pull_request_is_reviewed_once_at_its_latest_head(tmp_path, redis_prefix):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app", queue_url=f"{REDIS_URL}?prefix={redis_prefix}")
    try:
        repo = make_repo(standin, tmp_path, "fleet")
        deliveries = []
        latest = {}
        for number in range(1, 6):
            head = repo.open_pull(number, {"BUCK": BUCK_DEFECT, f"notes/{number}.txt": "v1\n"})
            deliveries.append(standin.pull_request_payload(OWNER, "fleet", number, "opened"))
            for version in range(2, 5):
                head, payload = repo.push(number, {f"notes/{number}.txt": f"v{version}\n"}, parent=head)
                deliveries.append(payload)
            latest[number] = head
        assert len(deliveries) == 20
        random.Random(7).shuffle(deliveries)

        app.start_worker()
        app.start_worker()
        for payload in deliveries:
            assert app.deliver("pull_request", payload).status_code == 202

        def all_reviewed():
            return all(standin.reviews(OWNER, "fleet", n) for n in latest)

        wait_for(all_reviewed, timeout=40, what="every pull request to be reviewed")
        wait_for(lambda: app.queue.store.keys("active") == [], timeout=20, what="the queue to drain")
        for number, head in latest.items():
            reviews = standin.reviews(OWNER, "fleet", number)
            assert [r["commit_id"] for r in reviews] == [head], number
            assert [(r["head_sha"], r["status"]) for r in standin.check_runs(OWNER, "fleet", head)] == [
                (head, "completed")
            ]
            assert len(standin.review_comments(OWNER, "fleet", number)) == 1
        # Older heads were dropped before any work: no check run exists for them.
        assert {r["head_sha"] for r in standin.check_runs(OWNER, "fleet")} == set(latest.values())
        outcomes = sorted(JobRecord.from_json(text).outcome for text in app.queue.store.items("job").values())
        assert outcomes == ["reviewed"] * 5 + ["superseded"] * 15
        log = app.worker_log()
        assert "Traceback" not in log, log[-3000:]
    finally:
        app.stop()
        standin.stop()
