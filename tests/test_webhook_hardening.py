"""What an unauthenticated sender, or a signed but malformed delivery, can make the service do (issue
12, point 5): nothing costly before the signature check, no metric series per header value, and a
4xx (never a 500) for any payload shape. Real uvicorn over loopback HTTP.
"""

from __future__ import annotations

import json
import socket
import uuid

import httpx
import pytest

from tests.standin import GitHubStandIn, app_key_pair, sign_webhook, webhook_headers
from tests.test_app_harness import APP_ID, SECRET, start_app
from webhooks.app import MAX_BODY_BYTES


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    running = start_app(standin, tmp_path_factory.mktemp("app"))
    try:
        yield running
    finally:
        running.stop()
        standin.stop()


def _chunks(total: int, size: int = 1 << 20):
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b" " * piece


def test_a_chunked_body_past_the_cap_is_refused_before_the_signature_is_checked(app):
    headers = {
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + "0" * 64,
    }
    try:
        response = app.client.post(f"{app.url}/webhook", content=_chunks(MAX_BODY_BYTES + (4 << 20)), headers=headers)
    except httpx.TransportError:
        response = None  # the service may close the connection while the sender is still writing
    assert response is None or response.status_code == 413
    # A declared length past the cap is refused at once, without waiting for a byte of the body.
    host, port = app.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(
            f"POST /webhook HTTP/1.1\r\nHost: {host}\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n"
            "X-GitHub-Event: ping\r\n\r\n".encode()
        )
        assert raw.recv(64).startswith(b"HTTP/1.1 413")
    assert app.queue.store.keys("active") == []


def test_unsigned_event_names_never_become_metric_labels(app):
    for index in range(200):
        app.client.post(
            f"{app.url}/webhook",
            content=b"{}",
            headers={"X-GitHub-Event": f"made-up-{index}", "X-GitHub-Delivery": str(uuid.uuid4())},
        )
    body = json.dumps({"zen": "x"}).encode()
    app.client.post(f"{app.url}/webhook", content=body, headers=webhook_headers(SECRET, body, "made-up-signed"))
    text = app.client.get(f"{app.url}/metrics").text
    assert "made-up" not in text
    assert 'pr_check_webhook_deliveries_total{event="unverified",outcome="bad_signature"} 200.0' in text
    assert 'pr_check_webhook_deliveries_total{event="other",outcome="ignored"} 1.0' in text


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"[" * 100_000 + b"]" * 100_000, 400),  # deeper than the JSON parser's recursion
        (b'{"action": "opened", "pull_request": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", 400),
        (b'{"action": "opened", "number": ' + b"9" * 5000 + b"}", 400),  # past Python's int-from-text limit
        (b"\xff\xfe{}", 400),
        (b'{"action": "opened", "number": 1e999999, "pull_request": []}', 202),  # valid JSON: nothing to do
    ],
)
def test_signed_but_malformed_payloads_are_never_a_500(app, body, status):
    response = app.client.post(
        f"{app.url}/webhook", content=body, headers=webhook_headers(SECRET, body, "pull_request")
    )
    assert response.status_code == status, response.text


@pytest.mark.parametrize(
    "payload",
    [
        {"action": "opened", "repository": "pytorch/executorch", "pull_request": []},
        {
            "action": "opened",
            "repository": {"owner": ["x"], "name": 5, "full_name": 7},
            "pull_request": {"number": "9"},
        },
        {"action": "opened", "repository": {"full_name": "a/b"}, "pull_request": {"number": 9, "head": "sha"}},
        {"action": "opened", "repository": {"full_name": "a/b"}, "pull_request": {"number": True, "head": {"sha": 5}}},
        {
            "action": "created",
            "repository": {"full_name": "a/b"},
            "issue": {"pull_request": 1, "number": 3},
            "comment": {"id": 4, "body": ["/pr-check"], "user": "x"},
        },
        {"action": "rerequested", "repository": {"full_name": "a/b"}, "check_run": {"pull_requests": {"n": 1}}},
        {"action": "completed", "repository": {"full_name": "a/b"}, "workflow_run": {"id": 3, "conclusion": {}}},
        {"action": "opened", "repository": {"full_name": "../../etc/passwd"}, "pull_request": {"number": 1}},
    ],
)
def test_signed_payloads_of_the_wrong_shape_are_acknowledged_or_refused_never_a_500(app, payload):
    for event in ("pull_request", "issue_comment", "check_run", "check_suite", "workflow_run"):
        body = json.dumps(payload).encode()
        response = app.client.post(f"{app.url}/webhook", content=body, headers=webhook_headers(SECRET, body, event))
        assert response.status_code in (202, 400), (event, response.text)


def test_a_signature_header_that_is_not_ascii_is_a_401(app):
    body = b"{}"
    headers = {
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + "é" * 64,
    }
    response = app.client.post(
        f"{app.url}/webhook",
        content=body,
        headers={k: v.encode() if k.startswith("X-Hub") else v for k, v in headers.items()},
    )
    assert response.status_code == 401
    assert sign_webhook(SECRET, body).startswith("sha256=")
