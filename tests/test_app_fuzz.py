"""Fuzzing the App's edge (hypothesis): the webhook parser and the service's endpoints.

Properties, for any input:
- job_from_delivery returns a Job or an Ignored, never raises; a Job survives its ledger round trip
  and carries well-typed fields;
- the service answers every request to any path, method, header set and body without a 5xx.

`make test` runs a few examples per property; `make fuzz` (HYPOTHESIS_PROFILE=fuzz) runs many.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.standin import sign_webhook
from webhooks.app import create_app
from webhooks.jobs import Ignored, job_from_delivery, job_from_json, job_to_json
from webhooks.queue import open_queue

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "fuzz",
    max_examples=4000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

SECRET = b"fuzz secret"
EVENTS = st.sampled_from(
    ["pull_request", "issue_comment", "check_run", "check_suite", "workflow_run", "ping", "installation", "push", ""]
) | st.text(max_size=20)
SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=30)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)
# Payloads near the real shapes, so that the fuzzer reaches past the first `isinstance`.
KEYS = st.sampled_from(
    [
        "action",
        "number",
        "pull_request",
        "repository",
        "installation",
        "issue",
        "comment",
        "check_run",
        "check_suite",
        "workflow_run",
        "sender",
        "head",
        "sha",
        "id",
        "name",
        "owner",
        "login",
        "full_name",
        "body",
        "user",
        "type",
        "pull_requests",
        "external_id",
        "draft",
        "updated_at",
        "created_at",
        "event",
        "workflow_id",
        "status",
        "conclusion",
    ]
)
VALUES = (
    st.sampled_from(
        [
            "opened",
            "synchronize",
            "created",
            "rerequested",
            "completed",
            "pr-check",
            "/pr-check",
            "/pr-check smoke",
            "Bot",
            "a/b",
            "pr=3;head=" + "a" * 40,
            "2026-08-01T10:00:00Z",
            "workflow_dispatch",
            "9999-99-99T00:00:00Z",
        ]
    )
    | SCALARS
)
SHAPED = st.recursive(
    VALUES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=6), max_leaves=40
)


@given(EVENTS, st.dictionaries(KEYS, SHAPED, max_size=8) | st.dictionaries(st.text(max_size=8), JSON, max_size=4))
def test_job_from_delivery_never_raises_and_its_jobs_round_trip(event, payload):
    job = job_from_delivery(event, payload)
    if isinstance(job, Ignored):
        assert isinstance(job.reason, str) and len(job.reason) < 400
        return
    assert job_from_json(job_to_json(job)) == job
    assert isinstance(job.repo.owner, str) and isinstance(job.repo.name, str)
    number = getattr(job, "number", None)
    assert number is None or (isinstance(number, int) and not isinstance(number, bool) and number > 0)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-app")
    queue = open_queue(f"sqlite:///{data / 'queue.sqlite3'}")
    with TestClient(create_app(SECRET, queue), raise_server_exceptions=False) as test_client:
        yield test_client
    queue.store.close()


HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
PATHS = st.sampled_from(["/webhook", "/healthz", "/metrics", "/", "/openapi.json", "/docs"]) | st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="?#%"), max_size=20
).map(lambda t: "/" + t)
BODIES = (
    st.binary(max_size=300)
    | JSON.map(lambda v: json.dumps(v).encode())
    | st.dictionaries(KEYS, SHAPED, max_size=8).map(lambda v: json.dumps(v).encode())
)


@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
    path=PATHS,
    event=HEADER_TEXT,
    body=BODIES,
    signed=st.booleans(),
    delivery=st.one_of(st.just(None), HEADER_TEXT),
)
def test_no_request_gets_a_5xx(client, method, path, event, body, signed, delivery):
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery if delivery is not None else str(uuid.uuid4())}
    if signed:
        headers["X-Hub-Signature-256"] = sign_webhook(SECRET, body)
    response = client.request(method, path, content=body, headers=headers)
    assert response.status_code < 500, (method, path, response.status_code, response.text[:200])
