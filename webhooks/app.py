"""The webhook service: verify, deduplicate, persist, answer 202. The work happens in workers.

    POST /webhook   a GitHub delivery (X-Hub-Signature-256 over the raw body)
    GET  /healthz   200 while the state store answers and queued jobs have a live worker
    GET  /metrics   Prometheus text

Nothing a sender controls costs memory before the signature is checked: the body is read in chunks
up to GitHub's 25 MB cap (413 past it), and no header becomes a metric label until the signature
holds, and then only from a fixed set. A signed payload of the wrong shape is a 400, never a 500.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from webhooks.jobs import Ignored, job_from_delivery
from webhooks.metrics import WORKERS_NAMESPACE, WebMetrics, new_web_metrics
from webhooks.queue import JobQueue

log = logging.getLogger("pr_check.web")

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub does not send payloads over 25 MB
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")
# The events a metric may be labelled with; any other (signed) name counts as "other".
KNOWN_EVENTS = frozenset({
    "check_run", "check_suite", "installation", "installation_repositories", "issue_comment", "ping",
    "pull_request", "pull_request_review", "pull_request_review_comment", "push", "workflow_run",
})
UNVERIFIED = "unverified"  # the event label of a delivery whose signature was not (yet) checked
STALLED_AFTER_S = 300.0  # /healthz fails when jobs wait this long with no live worker


class _TooLarge(Exception):
    pass


def signature_is_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """`sha256=<hex HMAC-SHA256 of the raw body>`, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode(errors="replace"))


def event_label(event: str) -> str:
    """The metric label of a verified delivery's event: its name if known, else "other"."""
    return event if event in KNOWN_EVENTS else "other"


async def _read_capped(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk; _TooLarge as soon as it passes `limit` (chunked bodies too)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(webhook_secret: bytes, queue: JobQueue, metrics: WebMetrics | None = None, *,
               max_body_bytes: int = MAX_BODY_BYTES, stalled_after_s: float = STALLED_AFTER_S) -> FastAPI:
    """The FastAPI application over a queue."""
    metrics = metrics or new_web_metrics(queue.store)
    app = FastAPI(title="pr-check", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.metrics = metrics
    app.state.queue = queue

    def answer(status: int, label: str, outcome: str, started: float, **extra) -> JSONResponse:
        metrics.deliveries.labels(label, outcome).inc()
        metrics.ack_seconds.observe(time.perf_counter() - started)
        return JSONResponse({"outcome": outcome, **extra}, status_code=status)

    @app.post("/webhook")
    async def webhook(request: Request) -> JSONResponse:
        started = time.perf_counter()
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > max_body_bytes:
            return answer(413, UNVERIFIED, "too_large", started)
        try:
            body = await _read_capped(request, max_body_bytes)
        except _TooLarge:
            return answer(413, UNVERIFIED, "too_large", started)
        if not signature_is_valid(webhook_secret, body, request.headers.get("x-hub-signature-256")):
            return answer(401, UNVERIFIED, "bad_signature", started, message="bad or missing X-Hub-Signature-256")
        event = request.headers.get("x-github-event", "")
        label = event_label(event)
        delivery = request.headers.get("x-github-delivery", "")
        if not event or not _DELIVERY_ID.match(delivery):
            return answer(400, label, "malformed", started, message="missing X-GitHub-Event or X-GitHub-Delivery")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return answer(400, label, "malformed", started, message="body is not JSON")
        if not isinstance(payload, dict):
            return answer(400, label, "malformed", started, message="body is not a JSON object")
        try:
            job = job_from_delivery(event, payload)
        except Exception as error:  # job_from_delivery takes any shape (fuzzed); this is the last guard
            log.warning("delivery %s: payload could not be read (%s)", delivery, type(error).__name__)
            return answer(400, label, "malformed", started, message="payload has an unexpected shape")
        if isinstance(job, Ignored):
            return answer(202, label, "ignored", started, reason=job.reason)
        try:
            accepted = await run_in_threadpool(queue.submit, delivery, job)
        except Exception:
            log.exception("could not persist delivery %s", delivery)
            metrics.web_errors.labels("submit").inc()
            return answer(503, label, "unavailable", started)
        return answer(202, label, "accepted" if accepted else "duplicate", started)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        try:
            state = await run_in_threadpool(_health, queue)
        except Exception:
            log.exception("state store is unreachable")
            return JSONResponse({"status": "unavailable"}, status_code=503)
        # Jobs waiting long with nobody to run them: the service accepts work it will never do.
        oldest = state.pop("oldest")
        stalled = state["jobs_active"] and not state["workers_alive"] and oldest >= stalled_after_s
        state["status"] = "stalled" if stalled else "ok"
        return JSONResponse(state, status_code=503 if stalled else 200)

    @app.get("/metrics")
    async def metrics_text() -> Response:
        text = await run_in_threadpool(metrics.render)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    return app


def _health(queue: JobQueue) -> dict:
    queue.store.get("health", "probe")
    active, oldest = queue.oldest_active_age()
    return {"workers_alive": len(queue.store.keys(WORKERS_NAMESPACE)), "jobs_active": active,
            "oldest_job_age_s": round(oldest, 1), "oldest": oldest}
