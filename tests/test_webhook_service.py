"""POST /webhook, /healthz and /metrics over real HTTP, with no worker running: what gets queued."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.standin import GitHubStandIn, app_key_pair
from tests.test_app_harness import APP_ID, SECRET, start_app
from webhooks.app import signature_is_valid
from webhooks.jobs import job_from_json
from webhooks.queue import Submitted, open_queue
from webhooks.settings import InvalidSetting, MissingSetting, load_settings

OPENED = {
    "action": "opened",
    "number": 9,
    "repository": {"name": "executorch", "owner": {"login": "pytorch"}},
    "installation": {"id": 1},
    "pull_request": {
        "number": 9,
        "draft": False,
        "updated_at": "2026-08-01T10:00:00Z",
        "head": {"sha": "a" * 40, "ref": "f"},
        "base": {"sha": "b" * 40, "ref": "main"},
    },
}


@pytest.fixture()
def app(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    running = start_app(standin, tmp_path / "app")
    try:
        yield running
    finally:
        running.stop()
        standin.stop()


def _queued(app) -> int:
    return app.queue.huey.pending_count()


def test_signature_check_matches_githubs_documented_vector():
    secret, body = b"It's a Secret to Everybody", b"Hello, World!"
    good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_is_valid(secret, body, good)
    assert not signature_is_valid(secret, body + b" ", good)
    assert not signature_is_valid(secret, body, good.replace("sha256=", "sha1="))
    assert not signature_is_valid(secret, body, None)


def test_a_bad_or_missing_signature_is_refused_and_nothing_is_queued(app):
    assert app.deliver("pull_request", OPENED, secret=b"not the secret").status_code == 401
    body = json.dumps(OPENED).encode()
    missing = app.client.post(
        f"{app.url}/webhook",
        content=body,
        headers={"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4())},
    )
    assert missing.status_code == 401
    assert _queued(app) == 0 and app.queue.store.keys("active") == []


def test_malformed_json_and_missing_headers_are_400(app):
    assert app.deliver("pull_request", b"{not json").status_code == 400
    assert app.deliver("pull_request", b"[1, 2]").status_code == 400
    body = json.dumps(OPENED).encode()
    from tests.standin import sign_webhook

    no_event = app.client.post(
        f"{app.url}/webhook",
        content=body,
        headers={"X-Hub-Signature-256": sign_webhook(SECRET, body), "X-GitHub-Delivery": str(uuid.uuid4())},
    )
    assert no_event.status_code == 400
    assert _queued(app) == 0


def test_the_same_delivery_twice_is_one_job_even_across_a_restart(app):
    delivery = str(uuid.uuid4())
    first = app.deliver("pull_request", OPENED, delivery_id=delivery)
    second = app.deliver("pull_request", OPENED, delivery_id=delivery)
    assert (first.status_code, first.json()["outcome"]) == (202, "accepted")
    assert (second.status_code, second.json()["outcome"]) == (202, "duplicate")
    assert _queued(app) == 1
    # A new process over the same data directory still knows the delivery.
    reopened = open_queue(app.queue_url)
    assert reopened.submit(delivery, job_from_json(reopened.record(delivery).job)) == Submitted.DUPLICATE
    assert reopened.huey.pending_count() == 1


def test_events_that_need_no_work_are_acknowledged_and_dropped(app):
    on_an_issue = {
        "action": "created",
        "issue": {"number": 1},
        "comment": {"id": 5, "body": "/pr-check"},
        "repository": OPENED["repository"],
        "sender": {"login": "alice", "type": "User"},
    }
    for event, payload in (
        ("ping", {"zen": "Keep it logically awesome.", "hook_id": 1}),
        ("issue_comment", on_an_issue),
        ("installation", {"action": "created", "installation": {"id": 1}}),
        ("pull_request", {**OPENED, "action": "closed"}),
    ):
        response = app.deliver(event, payload)
        assert (response.status_code, response.json()["outcome"]) == (202, "ignored"), event
    assert _queued(app) == 0


def test_health_and_metrics(app):
    assert app.client.get(f"{app.url}/healthz").json() == {
        "status": "ok",
        "workers_alive": 0,
        "jobs_active": 0,
        "oldest_job_age_s": 0.0,
    }
    app.deliver("pull_request", OPENED)
    app.deliver("pull_request", OPENED, secret=b"wrong")
    text = app.client.get(f"{app.url}/metrics").text
    assert 'pr_check_webhook_deliveries_total{event="pull_request",outcome="accepted"} 1.0' in text
    # An unsigned delivery's event header never becomes a label: anyone can send one.
    assert 'pr_check_webhook_deliveries_total{event="unverified",outcome="bad_signature"} 1.0' in text
    assert "pr_check_webhook_ack_seconds_bucket" in text
    # Workers' counts come from the shared store.
    from webhooks.metrics import WorkerMetrics

    WorkerMetrics(app.queue.store).job_finished("PullRequestPushed", "reviewed", 0.3)
    WorkerMetrics(app.queue.store).github_call("create review", "ok")
    text = app.client.get(f"{app.url}/metrics").text
    assert 'pr_check_jobs_total{kind="PullRequestPushed",outcome="reviewed"} 1.0' in text
    assert 'pr_check_job_duration_seconds_bucket{kind="PullRequestPushed",le="0.5"} 1.0' in text
    assert 'pr_check_github_calls_total{operation="create review",status="ok"} 1.0' in text
    assert SECRET.decode() not in text


def test_settings_are_validated_with_named_errors(tmp_path):
    key = tmp_path / "app.pem"
    key.write_bytes(app_key_pair().private_pem)
    base = {
        "PR_CHECK_WEBHOOK_SECRET": "s",
        "PR_CHECK_APP_ID": "1",
        "PR_CHECK_PRIVATE_KEY_FILE": str(key),
        "PR_CHECK_DATA_DIR": str(tmp_path),
    }
    settings = load_settings(base)
    assert settings.github_api_url == "https://api.github.com"
    assert settings.queue_url == f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    assert "webhook_secret" not in repr(settings) and "PRIVATE KEY" not in repr(settings)
    with pytest.raises(MissingSetting, match="PR_CHECK_WEBHOOK_SECRET"):
        load_settings({k: v for k, v in base.items() if k != "PR_CHECK_WEBHOOK_SECRET"})
    with pytest.raises(InvalidSetting, match="PR_CHECK_QUEUE"):
        load_settings({**base, "PR_CHECK_QUEUE": "amqp://x"})
    with pytest.raises(InvalidSetting, match="PR_CHECK_PRIVATE_KEY_FILE"):
        load_settings({**base, "PR_CHECK_PRIVATE_KEY_FILE": str(tmp_path / "missing.pem")})
    with pytest.raises(InvalidSetting, match="PR_CHECK_SMOKE_TIMEOUT_S"):
        load_settings({**base, "PR_CHECK_SMOKE_TIMEOUT_S": "soon"})


def test_fix_pushing_is_off_unless_turned_on(tmp_path):
    key = tmp_path / "app.pem"
    key.write_bytes(app_key_pair().private_pem)
    base = {
        "PR_CHECK_WEBHOOK_SECRET": "s",
        "PR_CHECK_APP_ID": "1",
        "PR_CHECK_PRIVATE_KEY_FILE": str(key),
        "PR_CHECK_DATA_DIR": str(tmp_path),
    }
    assert load_settings(base).fix_push is False
    assert load_settings({**base, "PR_CHECK_FIX_PUSH": "1"}).fix_push is True
    assert load_settings({**base, "PR_CHECK_FIX_PUSH": "off"}).fix_push is False
    with pytest.raises(InvalidSetting, match="PR_CHECK_FIX_PUSH"):
        load_settings({**base, "PR_CHECK_FIX_PUSH": "maybe"})
