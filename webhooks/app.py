"""The webhook service: verify, deduplicate, persist, answer 202. The work happens in workers.

    POST /webhook   a GitHub delivery (X-Hub-Signature-256 over the raw body)
    GET  /healthz   200 while the state store answers
    GET  /metrics   Prometheus text
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
from webhooks.metrics import WebMetrics, new_web_metrics
from webhooks.queue import JobQueue

log = logging.getLogger("pr_check.web")

MAX_BODY_BYTES = 26 * 1024 * 1024  # GitHub does not send payloads over 25 MB
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")


def signature_is_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """`sha256=<hex HMAC-SHA256 of the raw body>`, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def create_app(webhook_secret: bytes, queue: JobQueue, metrics: WebMetrics | None = None) -> FastAPI:
    """The FastAPI application over a queue."""
    metrics = metrics or new_web_metrics(queue.store)
    app = FastAPI(title="pr-check", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.metrics = metrics
    app.state.queue = queue

    def answer(status: int, event: str, outcome: str, started: float, **extra) -> JSONResponse:
        metrics.deliveries.labels(event or "-", outcome).inc()
        metrics.ack_seconds.observe(time.perf_counter() - started)
        return JSONResponse({"outcome": outcome, **extra}, status_code=status)

    @app.post("/webhook")
    async def webhook(request: Request) -> JSONResponse:
        started = time.perf_counter()
        event = request.headers.get("x-github-event", "")
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            return answer(413, event, "too_large", started)
        body = await request.body()
        if not signature_is_valid(webhook_secret, body, request.headers.get("x-hub-signature-256")):
            return answer(401, event, "bad_signature", started, message="bad or missing X-Hub-Signature-256")
        delivery = request.headers.get("x-github-delivery", "")
        if not event or not _DELIVERY_ID.match(delivery):
            return answer(400, event, "malformed", started, message="missing X-GitHub-Event or X-GitHub-Delivery")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return answer(400, event, "malformed", started, message="body is not JSON")
        if not isinstance(payload, dict):
            return answer(400, event, "malformed", started, message="body is not a JSON object")
        job = job_from_delivery(event, payload)
        if isinstance(job, Ignored):
            return answer(202, event, "ignored", started, reason=job.reason)
        try:
            accepted = await run_in_threadpool(queue.submit, delivery, job)
        except Exception:
            log.exception("could not persist delivery %s", delivery)
            metrics.web_errors.labels("submit").inc()
            return answer(503, event, "unavailable", started)
        return answer(202, event, "accepted" if accepted else "duplicate", started)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        try:
            await run_in_threadpool(queue.store.get, "health", "probe")
        except Exception:
            log.exception("state store is unreachable")
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics")
    async def metrics_text() -> Response:
        text = await run_in_threadpool(metrics.render)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    return app
