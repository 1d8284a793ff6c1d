"""`pr-check worker`: run queued jobs, and the periodic upkeep (abandoned jobs, smoke timeouts,
failed deliveries). Start any number of them against one Redis; with SQLite, one per machine.

    pr-check worker [--threads N]      (also `python -m webhooks.worker`, with the `app` extra installed)
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

from bot.errors import PrCheckError
from webhooks.command_requests import answer_command
from webhooks.github_api import GitHubApp, GitHubError, RetryPolicy
from webhooks.github_health import GitHubHealth
from webhooks.isolation import Outcome, ReviewLimits, ReviewRequest, run_review, warm_up
from webhooks.jobs import CommandCommented, Job, PullRequestPushed, ReviewRequested, WorkflowRunChanged
from webhooks.metrics import WORKERS_NAMESPACE, WorkerMetrics
from webhooks.mirror import Mirrors
from webhooks.queue import Attempt, JobQueue, QueueNotDurable, open_queue
from webhooks.redelivery import redeliver_failed
from webhooks.retry import RetryHorizon
from webhooks.review_job import report_given_up, review_pull, review_push
from webhooks.services import Services
from webhooks.settings import Settings, SettingsError, load_settings
from webhooks.smoke_runs import expire_overdue_smoke_runs, follow_workflow_run
from webhooks.store import StoreUnavailable, open_store

log = logging.getLogger("pr_check.worker")


def run_job(services: Services, job: Job, attempt: Attempt) -> str:
    """Route a job to what carries it out; returns the outcome."""
    if isinstance(job, PullRequestPushed):
        return review_push(services, job, attempt)
    if isinstance(job, ReviewRequested):
        return "re-" + review_pull(services, job.repo, job.number, attempt, expected_head=None, force=True)
    if isinstance(job, CommandCommented):
        return answer_command(services, job, attempt)
    if isinstance(job, WorkflowRunChanged):
        return follow_workflow_run(services, job)
    raise TypeError(f"unknown job {job!r}")


def build_worker(
    settings: Settings,
    review: Callable[[ReviewRequest, ReviewLimits], Outcome] = run_review,
) -> tuple[Services, JobQueue]:
    """The services and the queue of one worker process."""
    store = open_store(settings.queue_url)
    metrics = WorkerMetrics(store)
    health = GitHubHealth(store)

    def observe(operation: str, status: str) -> None:
        metrics.github_call(operation, status)
        health.observe(operation, status)

    github = GitHubApp(
        settings.app_id,
        settings.private_key_pem,
        settings.github_api_url,
        write_pause_s=settings.write_pause_s,
        retry=RetryPolicy(max_rate_limit_wait_s=settings.max_rate_limit_wait_s),
        observe=observe,
    )
    services = Services(settings, store, github, Mirrors(settings.mirrors_dir), metrics, review)
    queue = open_queue(
        settings.queue_url,
        lease_s=settings.job_lease_s,
        runner=lambda job, attempt: run_job(services, job, attempt),
        on_finished=lambda kind, outcome, seconds: _count_job(metrics, kind, outcome, seconds),
        give_up=lambda job, reason: report_given_up(services, job, reason),
        max_job_s=settings.job_max_s,
        allow_volatile_redis=settings.allow_volatile_redis,
        retry_horizon=RetryHorizon(settings.github_retry_horizon_s, settings.github_retry_max_delay_s),
    )
    return services, queue


def _count_job(metrics: WorkerMetrics, kind: str, outcome: str, seconds: float) -> None:
    metrics.job_finished(kind, outcome, seconds)
    if outcome in ("failed", "retried", "given-up"):
        metrics.error(f"job {kind}")


def worker_name() -> str:
    """How this worker process is known in the state store (and on /healthz)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def report_alive(services: Services) -> None:
    """Tell /healthz this worker is alive; the entry expires unless renewed each upkeep round."""
    ttl = max(3 * services.settings.maintenance_interval_s, 30.0)
    services.store.put(WORKERS_NAMESPACE, worker_name(), repr(time.time()), ttl_s=ttl)


def do_upkeep(services: Services, queue: JobQueue, now: float | None = None) -> None:
    """One round of periodic work. Redelivery runs once per interval across all workers."""
    for name, step in (
        ("alive", lambda: report_alive(services)),
        ("reap", lambda: queue.reap_abandoned(now)),
        ("smoke-timeout", lambda: expire_overdue_smoke_runs(services, now)),
        ("expiry", services.store.drop_expired),
    ):
        try:
            step()
        except StoreUnavailable as error:
            queue.outage.failed(str(error))  # said once per outage; the next round tries again
            return
        except Exception:
            log.exception("upkeep step %s failed", name)
            services.metrics.error(name)
        else:
            if name == "alive":
                queue.outage.answered()
    try:
        _redeliver(services, now)
    except StoreUnavailable as error:
        queue.outage.failed(str(error))


def _redeliver(services: Services, now: float | None) -> None:
    # The lease is never released: it expires after the interval, which is what spaces the runs.
    if services.store.acquire_lease(
        "redelivery", f"{os.getpid()}:{time.time()}", services.settings.redelivery_interval_s
    ):
        try:
            asked = redeliver_failed(services.github, services.store, now)
            if asked:
                log.info("asked GitHub to redeliver %d failed deliveries", len(asked))
        except StoreUnavailable:
            raise
        except GitHubError as error:  # GitHub away or refusing: one line; the next interval tries again
            log.warning("redelivery of failed deliveries: %s", error)
            services.metrics.error("redelivery")
        except Exception:
            log.exception("redelivery failed")
            services.metrics.error("redelivery")


def _upkeep_loop(services: Services, queue: JobQueue, stop: threading.Event) -> None:
    while not stop.wait(services.settings.maintenance_interval_s):
        do_upkeep(services, queue)


def _watch_parent(parent: int) -> None:
    """An embedded worker stops when `pr-check serve` is gone (where the OS cannot tell it)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    log.error("the serving process is gone; stopping")
    os.kill(os.getpid(), signal.SIGTERM)


def wait_for_queue(services: Services, queue: JobQueue, max_pause_s: float = 30.0) -> None:
    """Return once the queue answers (and passed the checks put off at start): a worker started
    while Redis is away waits for it, one log line per try, the pause doubling to `max_pause_s`."""
    pause = 1.0
    while True:
        try:
            queue.ready()
            report_alive(services)
            queue.reap_abandoned()
            return
        except StoreUnavailable as error:
            log.warning("the queue is unavailable (%s); trying again in %.0f s", error, pause)
        time.sleep(pause)
        pause = min(pause * 2, max_pause_s)


def main(argv: list[str] | None = None, review: Callable[[ReviewRequest, ReviewLimits], Outcome] = run_review) -> int:
    """Run a worker until SIGTERM (finish the jobs in hand first) or SIGINT (stop now)."""
    parser = argparse.ArgumentParser(prog="pr-check worker", description="Run pr-check's queued jobs.")
    parser.add_argument(
        "--threads", type=int, default=None, help="jobs run at once (default PR_CHECK_WORKER_THREADS or 2)"
    )
    parser.add_argument("--exit-with-parent", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"pr-check worker: {error}", file=sys.stderr)
        return error.exit_code
    try:
        services, queue = build_worker(settings, review)
    except PrCheckError as error:
        print(f"pr-check worker: {error}", file=sys.stderr)
        return error.exit_code
    warm_up()  # the review children's server: started now, so that a broken install fails here
    try:
        wait_for_queue(services, queue)
    except QueueNotDurable as error:  # Redis answered at last, but would lose jobs
        print(f"pr-check worker: {error}", file=sys.stderr)
        return error.exit_code
    stop = threading.Event()
    threading.Thread(target=_upkeep_loop, args=(services, queue, stop), daemon=True, name="upkeep").start()
    if args.exit_with_parent:
        threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True, name="parent-watch").start()
    consumer = queue.huey.create_consumer(
        workers=args.threads or settings.worker_threads,
        worker_type="thread",
        periodic=False,
        initial_delay=0.05,
        backoff=1.15,
        max_delay=0.5,  # SQLite is polled; keep an idle worker's pickup time short
        graceful_signal="TERM",  # `docker stop`: finish the jobs in hand, then exit
    )
    try:
        consumer.run()
    finally:
        stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
