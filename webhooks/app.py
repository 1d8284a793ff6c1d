"""The webhook service: the HTTP transport over webhooks/delivery.py. The work happens in workers.

    POST /webhook   a GitHub delivery (X-Hub-Signature-256 over the raw body)
    GET  /healthz   200 while the state store answers and takes writes, and queued jobs have a live worker
                    ("degraded", with why, while GitHub's API fails the workers' calls)
    GET  /metrics   Prometheus text

What a delivery means (verified or not, which job) is decided in webhooks/delivery.py, without I/O;
this module reads the body, answers, counts and queues. Nothing a sender controls costs memory
before the signature is checked: the body is read in chunks up to GitHub's 25 MB cap (413 past it).
"""

from __future__ import annotations

import logging
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from webhooks.delivery import (  # noqa: F401 - signature_is_valid and event_label: the service's surface
    MAX_BODY_BYTES,
    TOO_LARGE,
    Rejection,
    accept_delivery,
    declared_too_large,
    event_label,
    signature_is_valid,
)
from webhooks.github_health import github_status
from webhooks.jobs import Ignored
from webhooks.metrics import WORKERS_NAMESPACE, WebMetrics, new_web_metrics
from webhooks.namespaces import Namespace
from webhooks.queue import JobQueue, QueueNotDurable
from webhooks.store import StoreUnavailable

log = logging.getLogger("pr_check.web")

STALLED_AFTER_S = 300.0  # /healthz fails when jobs wait this long with no live worker


class _TooLarge(Exception):
    pass


async def _read_capped(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk; _TooLarge as soon as it passes `limit` (chunked bodies too)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(
    webhook_secret: bytes,
    queue: JobQueue,
    metrics: WebMetrics | None = None,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    stalled_after_s: float = STALLED_AFTER_S,
) -> FastAPI:
    """The FastAPI application over a queue."""
    metrics = metrics or new_web_metrics(queue.store)
    app = FastAPI(title="pr-check", docs_url=None, redoc_url=None, openapi_url=None)
    store_state = _StoreState()
    app.state.metrics = metrics
    app.state.queue = queue

    def answer(status: int, label: str, outcome: str, started: float, **extra) -> JSONResponse:
        metrics.deliveries.labels(label, outcome).inc()
        metrics.ack_seconds.observe(time.perf_counter() - started)
        return JSONResponse({"outcome": outcome, **extra}, status_code=status)

    @app.post("/webhook")
    async def webhook(request: Request) -> JSONResponse:
        started = time.perf_counter()
        verdict = declared_too_large(request.headers, max_body_bytes)
        if verdict is None:
            try:
                body = await _read_capped(request, max_body_bytes)
            except _TooLarge:
                verdict = TOO_LARGE
            else:
                verdict = accept_delivery(webhook_secret, request.headers, body, max_body_bytes=max_body_bytes)
        if isinstance(verdict, Rejection):
            if verdict.detail:
                log.warning("%s", verdict.detail)
            extra = {"message": verdict.message} if verdict.message else {}
            return answer(verdict.status, verdict.event_label, verdict.outcome, started, **extra)
        label, delivery, job = verdict.event_label, verdict.delivery_id, verdict.work
        if isinstance(job, Ignored):
            return answer(202, label, "ignored", started, reason=job.reason)
        try:
            accepted = await run_in_threadpool(queue.submit, delivery, job)
        except (StoreUnavailable, QueueNotDurable) as error:
            # One line per refused delivery: GitHub's redelivery (and ours, webhooks/redelivery.py) sends it again.
            log.error("could not persist delivery %s: %s", delivery, error)
            metrics.web_errors.labels("submit").inc()
            return answer(503, label, "unavailable", started)
        except Exception:
            log.exception("could not persist delivery %s", delivery)
            metrics.web_errors.labels("submit").inc()
            return answer(503, label, "unavailable", started)
        return answer(202, label, str(accepted), started)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        try:
            state = await run_in_threadpool(_health, queue)
        except _Unhealthy as unhealthy:
            store_state.seen(unhealthy.store, unhealthy.reason)
            return JSONResponse(
                {"status": "unavailable", "store": unhealthy.store, "reason": unhealthy.reason}, status_code=503
            )
        except Exception:
            log.exception("state store is unreachable")
            return JSONResponse({"status": "unavailable"}, status_code=503)
        store_state.seen("ok", "")
        # Jobs waiting long with nobody to run them: the service accepts work it will never do.
        oldest = state.pop("oldest")
        stalled = state["jobs_active"] and not state["workers_alive"] and oldest >= stalled_after_s
        # GitHub away is no fault of this service (restarting it would not help): 200, and it says so.
        state["status"] = "stalled" if stalled else "degraded" if state.get("github") else "ok"
        return JSONResponse(state, status_code=503 if stalled else 200)

    @app.get("/metrics")
    async def metrics_text() -> Response:
        try:
            text = await run_in_threadpool(metrics.render)
        except StoreUnavailable as error:  # the workers' counts live in the store
            log.error("metrics: %s", error)
            return Response(f"store unavailable: {error}\n", status_code=503, media_type="text/plain")
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    return app


class _Unhealthy(Exception):
    """The store cannot serve: `store` is "unreachable", "unwritable" or "refused" (not durable)."""

    def __init__(self, store: str, reason: str) -> None:
        super().__init__(reason)
        self.store, self.reason = store, reason


class _StoreState:
    """What /healthz last found, so that a change is logged once (probes come every few seconds)."""

    def __init__(self) -> None:
        self.last = "ok"

    def seen(self, state: str, reason: str) -> None:
        if state == self.last:
            return
        previous, self.last = self.last, state
        if state == "ok":
            log.info("/healthz: the store answers and takes writes again (it was %s)", previous)
        else:
            log.error("/healthz: the store is %s: %s", state, reason)


def _health(queue: JobQueue) -> dict:
    try:
        queue.ready()
        queue.store.get(Namespace.HEALTH, "probe")
    except StoreUnavailable as error:
        raise _Unhealthy("unreachable", str(error)) from None
    except QueueNotDurable as error:
        raise _Unhealthy("refused", str(error)) from None
    try:
        # Reads go on when a disk is full; deliveries need writes, so /healthz writes too.
        queue.store.put(Namespace.HEALTH, "probe", repr(time.time()), ttl_s=300)
    except StoreUnavailable as error:
        raise _Unhealthy("unwritable", str(error)) from None
    active, oldest = queue.oldest_active_age()
    github = github_status(queue.store)
    return {
        **({"github": github} if github else {}),
        "workers_alive": len(queue.store.keys(WORKERS_NAMESPACE)),
        "jobs_active": active,
        "oldest_job_age_s": round(oldest, 1),
        "oldest": oldest,
    }
