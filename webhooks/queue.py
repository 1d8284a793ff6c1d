"""The durable job queue: huey for transport, a ledger in the state store for what huey lacks.

huey removes a message from its queue when a worker takes it, so a worker killed mid-job would
lose the job. The ledger closes that gap: every job is recorded (keyed by its delivery id, which
also drops duplicate deliveries) and holds a lease while it runs; the lease is the per-PR lock,
renewed by a heartbeat. A job whose lease ran out without finishing is handed to huey again by
`reap_abandoned`, which workers call on start and periodically. Running a job twice is harmless:
finished jobs are skipped, and everything a job posts is idempotent (see webhooks/review_job.py).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from huey import RedisHuey, SqliteHuey
from huey.api import Huey
from huey.exceptions import RetryTask

from bot.errors import PrCheckError
from webhooks.jobs import (
    CommandCommented,
    Job,
    PullRequestPushed,
    ReviewRequested,
    WorkflowRunChanged,
    job_from_json,
    job_to_json,
    pull_request_key,
)
from webhooks.namespaces import Namespace
from webhooks.retry import Next, RetryHorizon, next_step
from webhooks.smoke_approval import record_head_seen
from webhooks.store import StateStore, StoreUnavailable, open_store, queue_prefix, store_failures, unavailable_reason

log = logging.getLogger("pr_check.queue")

TASK_NAME = "pr-check.run-job"
LEDGER_TTL_S = 7 * 24 * 3600.0  # longer than GitHub's redelivery window, so a redelivery is still a duplicate
TASK_RETRIES = 4
LOCK_BUSY_DELAY_S = 0.5
ABANDONED_PENDING_S = 600.0  # a pending job with no progress this long gets a fresh message
MAX_CRASHES = 2  # a job that took its worker down this often is given up, with a message on the PR

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job's entry in the ledger."""

    job_id: str
    job: str  # job_to_json
    state: str
    attempts: int = 0
    lease_until: float = 0.0
    updated_at: float = 0.0
    outcome: str = ""
    crashes: int = 0  # attempts that ended with their worker gone (lease run out), not with an answer
    created_at: float = 0.0
    waits: int = 0  # attempts that found GitHub away, each followed by a pause (webhooks/retry.py)
    waiting_since: float = 0.0  # the first of them: the horizon counts from here
    retry_at: float = 0.0  # when the next attempt is due, while waiting for GitHub

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> JobRecord:
        return JobRecord(**json.loads(text))


@dataclass(frozen=True, slots=True)
class Attempt:
    """What a job runner learns about the attempt it is making."""

    job_id: str
    number: int  # 1 for the first attempt
    final: bool  # no retry follows if this one fails


class Submitted(StrEnum):
    """What became of a delivery handed to the queue (the webhook's answer says it)."""

    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"  # seen before, and its job is queued, running or done
    RUN_AGAIN = "run-again"  # seen before, and its job had failed: a redelivery runs it again


JobRunner = Callable[[Job, Attempt], str]  # returns the outcome (reviewed, superseded, ...)
GiveUp = Callable[[Job, str], None]  # tells the pull request that its job was given up, and why


def job_subject(job: Job) -> str:
    """What a job is about, for logs: `owner/name#number`, or the workflow run."""
    number = getattr(job, "number", None)
    if number is not None:
        return f"{job.repo.full_name}#{number}"
    return f"{job.repo.full_name} workflow run {getattr(job, 'run_id', '?')}"


class _WithoutHueyTracebacks(logging.Filter):
    """Drops huey's "Unhandled exception in task <uuid>" record (a traceback at ERROR on every
    attempt, named by huey's task id): the queue logs each failed attempt itself, by pull request."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unhandled exception in task")


_HUEY_FILTER = _WithoutHueyTracebacks()


def lock_name(job: Job) -> str:
    """Jobs that must not overlap share a lock: one pull request, or one workflow run."""
    if isinstance(job, (PullRequestPushed, ReviewRequested, CommandCommented)):
        return "pr:" + pull_request_key(job.repo, job.number)
    if isinstance(job, WorkflowRunChanged):
        return f"run:{job.repo.full_name.lower()}:{job.run_id}"
    raise TypeError(f"not a job: {job!r}")


class QueueOutage:
    """Whether the queue answers a worker: one log line when it stops (Redis away, a full disk), one
    when it answers again; meanwhile the worker's polls pause, 0.5 s doubling to `max_pause_s`."""

    def __init__(self, max_pause_s: float = 5.0) -> None:
        self.max_pause_s = max_pause_s
        self.since: float | None = None  # monotonic time the outage began; None while it answers
        self._pause = 0.5
        self._lock = threading.Lock()

    def failed(self, reason: str) -> float:
        """Note a failure; returns how long to pause before the next try."""
        with self._lock:
            first = self.since is None
            if first:
                self.since, self._pause = time.monotonic(), 0.5
            else:
                self._pause = min(self._pause * 2, self.max_pause_s)
            pause = self._pause
        if first:
            log.warning(
                "the queue is unavailable (%s); retrying every 0.5 s, backing off to %.0f s, until it answers",
                reason,
                self.max_pause_s,
            )
        return pause

    def answered(self) -> None:
        """Note a success: the end of an outage, if one was going on."""
        if self.since is None:
            return
        with self._lock:
            since, self.since = self.since, None
        if since is not None:
            log.info("the queue answers again, after %.0f s", time.monotonic() - since)

    def attempt(self, call: Callable[[], object], fallback: object) -> object:
        """`call()`; when the queue is unavailable, `fallback` after the pause (a huey poll that
        raised would log a traceback per poll, many a second). Only a result (a job taken, which
        wrote) ends an outage: on a full disk the empty polls, which only read, still work."""
        try:
            result = call()
        except Exception as error:
            reason = unavailable_reason(error)
            if reason is None:
                raise
            time.sleep(self.failed(reason))
            return fallback
        if result:
            self.answered()
        return result


def _consumer_storage(storage_class: type, outage: QueueOutage) -> type:
    """huey's storage with the consumer's polls (dequeue, the schedule) waiting out an outage."""

    class WaitingStorage(storage_class):  # type: ignore[misc, valid-type]
        def dequeue(self):
            return outage.attempt(super().dequeue, None)

        def read_schedule(self, timestamp):
            return outage.attempt(lambda: super(WaitingStorage, self).read_schedule(timestamp), [])

    return WaitingStorage


def make_huey(queue_url: str, outage: QueueOutage | None = None) -> Huey:
    """The huey instance for a PR_CHECK_QUEUE URL; a worker's (with `outage`) waits out outages."""
    parsed = urlparse(queue_url)
    if parsed.scheme == "sqlite":
        path = Path(parsed.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        storage: dict[str, Any] = (
            {"storage_class": _consumer_storage(SqliteHuey.storage_class, outage)} if outage else {}
        )
        return SqliteHuey(name="pr-check", filename=str(path), results=False, strict_fifo=True, **storage)
    storage: dict[str, Any] = {"storage_class": _consumer_storage(RedisHuey.storage_class, outage)} if outage else {}
    return RedisHuey(name=queue_prefix(queue_url), url=parsed._replace(query="").geturl(), results=False, **storage)


class JobQueue:
    """Submit jobs (web side) and run them under leases (worker side)."""

    def __init__(
        self,
        huey: Huey,
        store: StateStore,
        *,
        lease_s: float = 120.0,
        runner: JobRunner | None = None,
        on_finished: Callable[[str, str, float], None] | None = None,
        give_up: GiveUp | None = None,
        max_job_s: float = 1800.0,
        verify: Callable[[], None] | None = None,
        outage: QueueOutage | None = None,
        retry_horizon: RetryHorizon | None = None,
    ) -> None:
        self.huey = huey
        self.retry_horizon = retry_horizon or RetryHorizon()
        self.store = store
        self.outage = outage or QueueOutage()
        self._verify = verify  # what must hold before the first job is taken (a Redis that was away at start)
        self.lease_s = lease_s
        self.max_job_s = max_job_s
        self._runner = runner
        self._give_up = give_up
        self._on_finished = on_finished or (lambda kind, outcome, seconds: None)
        self._task = huey.task(name=TASK_NAME, retries=TASK_RETRIES, retry_delay=2, retry_backoff=2, context=True)(
            self._run_message
        )
        self._owner_prefix = f"{socket.gethostname()}:{os.getpid()}"
        huey_log = logging.getLogger("huey")
        if _HUEY_FILTER not in huey_log.filters:
            huey_log.addFilter(_HUEY_FILTER)

    def ready(self) -> None:
        """Raise StoreUnavailable (the queue does not answer) or QueueNotDurable until the checks
        put off at start (the queue was away) have passed."""
        verify = self._verify
        if verify is not None:
            verify()
            self._verify = None

    # -- web side ------------------------------------------------------------------------
    def submit(self, job_id: str, job: Job) -> Submitted:
        """Record and enqueue a job, unless this id was seen before and its job did not fail (a
        duplicate delivery). StoreUnavailable when the queue cannot take it now."""
        self.ready()
        with store_failures():  # huey's own storage (the enqueue) fails the same ways as the store
            return self._submit(job_id, job)

    def _submit(self, job_id: str, job: Job) -> Submitted:
        now = time.time()
        record = JobRecord(job_id, job_to_json(job), PENDING, updated_at=now, created_at=now)
        answer = Submitted.ACCEPTED
        if not self.store.put(Namespace.JOB, job_id, record.to_json(), only_if_absent=True, ttl_s=LEDGER_TTL_S):
            previous = self.record(job_id)
            if previous is None or previous.state != FAILED:
                return Submitted.DUPLICATE
            # GitHub's "Redeliver" (or ours) of a delivery whose job failed: the one way to ask again.
            log.info("delivery %s: its job had failed (%s); running it again", job_id, previous.outcome[:200])
            self._save(replace(record, attempts=previous.attempts))
            answer = Submitted.RUN_AGAIN
        if isinstance(job, PullRequestPushed):
            # The newest push per pull request, by GitHub's own clock: older jobs are dropped unrun.
            self.store.put_if_newer(
                Namespace.LATEST_PUSH, pull_request_key(job.repo, job.number), job.pushed_at, job.head_sha
            )
            # By GitHub's clock too: a smoke approval covers the head current when it was written.
            record_head_seen(self.store, job.repo, job.number, job.head_sha, job.pushed_at or now)
        self.store.put(Namespace.ACTIVE, job_id, "1")
        self._task(job_id)
        return answer

    def record(self, job_id: str) -> JobRecord | None:
        text = self.store.get(Namespace.JOB, job_id)
        return JobRecord.from_json(text) if text else None

    def _save(self, record: JobRecord) -> None:
        self.store.put(Namespace.JOB, record.job_id, record.to_json(), ttl_s=LEDGER_TTL_S)

    # -- worker side ---------------------------------------------------------------------
    def _run_message(self, job_id: str, task=None) -> None:
        try:
            self._run_recorded(job_id, task)
        except StoreUnavailable as error:
            # The ledger still has the job: once the store answers, its lease runs out (or it is
            # overdue) and the reaper hands it out again. Nothing to retry from here meanwhile.
            self.outage.failed(str(error))

    def _run_recorded(self, job_id: str, task) -> None:
        record = self.record(job_id)
        if record is None or record.state in (DONE, FAILED):
            return
        job = job_from_json(record.job)
        name = lock_name(job)
        owner = f"{self._owner_prefix}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"
        if not self.store.acquire_lease(name, owner, self.lease_s):
            raise RetryTask(delay=LOCK_BUSY_DELAY_S)  # another job of this pull request is running
        started = time.monotonic()
        kind = type(job).__name__
        if record.crashes >= MAX_CRASHES:
            self._abandon(record, job, name, owner, kind)
            return
        attempt = Attempt(job_id, record.attempts + 1, final=task is None or task.retries <= 0)
        record = replace(
            record,
            state=RUNNING,
            attempts=attempt.number,
            lease_until=time.time() + self.lease_s,
            updated_at=time.time(),
        )
        self._save(record)
        heartbeat = _Heartbeat(self, name, owner, record)
        heartbeat.start()
        try:
            if self._runner is None:
                raise RuntimeError("this process only submits jobs")
            outcome = self._runner(job, attempt)
        except Exception as error:
            heartbeat.stop()
            step = next_step(error)
            if step is not Next.RETRY:
                self._wait_or_stop(record, job, error, step, time.monotonic() - started)
                return
            state = FAILED if attempt.final else PENDING
            # One line naming the pull request and the delivery; the traceback once, when the job is given up.
            what = f"{kind} for {job_subject(job)} (delivery {job_id}), attempt {attempt.number}"
            if attempt.final:
                log.error("%s failed, no retry left: %s: %s", what, type(error).__name__, error, exc_info=error)
            else:
                log.warning("%s failed, retrying: %s: %s", what, type(error).__name__, error)
            self._save(
                replace(
                    record,
                    state=state,
                    lease_until=0.0,
                    updated_at=time.time(),
                    outcome=f"error: {type(error).__name__}: {error}"[:500],
                )
            )
            if state == FAILED:
                self.store.delete(Namespace.ACTIVE, job_id)
            self._on_finished(kind, "failed" if attempt.final else "retried", time.monotonic() - started)
            raise
        finally:
            heartbeat.stop()
            self.store.release_lease(name, owner)
        self._save(replace(record, state=DONE, lease_until=0.0, updated_at=time.time(), outcome=outcome))
        self.store.delete(Namespace.ACTIVE, job_id)
        self._on_finished(kind, outcome, time.monotonic() - started)

    def _wait_or_stop(self, record: JobRecord, job: Job, error: Exception, step: Next, seconds: float) -> None:
        """GitHub away: a new message after a pause, until the horizon. Else (and past it): failed,
        with the reason in the ledger; a redelivery of the same delivery runs it again."""
        now, kind, horizon = time.time(), type(job).__name__, self.retry_horizon
        what = f"{kind} for {job_subject(job)} (delivery {record.job_id}), attempt {record.attempts}"
        since = record.waiting_since or now
        if step is Next.WAIT_FOR_GITHUB:
            at = horizon.next_attempt_at(since, record.waits, now)
            if at is not None:
                level = logging.WARNING if not record.waits else logging.INFO  # the outage, said once per job
                left = since + horizon.horizon_s - now
                log.log(
                    level,
                    "%s: GitHub is away (%s); trying again in %.1f s, for up to %.0f s",
                    what,
                    error,
                    at - now,
                    left,
                )
                waiting = replace(
                    record,
                    state=PENDING,
                    lease_until=0.0,
                    updated_at=now,
                    waits=record.waits + 1,
                    waiting_since=since,
                    retry_at=at,
                    outcome=f"waiting for GitHub: {error}"[:500],
                )
                self._save(waiting)
                self._task.schedule(args=(record.job_id,), delay=at - now)
                self._on_finished(kind, "waiting-for-github", seconds)
                return
            reason = (
                f"GitHub was away for {now - since:.0f} s ({record.waits} waits; "
                f"PR_CHECK_GITHUB_RETRY_HORIZON_S is {horizon.horizon_s:g}): {error}"
            )
        else:
            reason = str(error)
        log.error("%s failed, not retried: %s", what, reason)
        self._save(replace(record, state=FAILED, lease_until=0.0, updated_at=now, outcome=f"failed: {reason}"[:500]))
        self.store.delete(Namespace.ACTIVE, record.job_id)
        self._on_finished(kind, "failed", seconds)

    def _abandon(self, record: JobRecord, job: Job, name: str, owner: str, kind: str) -> None:
        """Give up a job that keeps taking its worker down: say so on the pull request, never run it again."""
        reason = (
            f"the job was started {record.attempts} times and its worker stopped answering "
            f"{record.crashes} times (crashed, killed or stuck past {self.max_job_s:g} s)"
        )
        log.error("giving up job %s (%s): %s", record.job_id, kind, reason)
        try:
            if self._give_up is not None:
                self._give_up(job, reason)
        except Exception:
            log.exception("could not report giving up job %s", record.job_id)
        finally:
            self.store.release_lease(name, owner)
        self._save(
            replace(record, state=FAILED, lease_until=0.0, updated_at=time.time(), outcome=f"given up: {reason}"[:500])
        )
        self.store.delete(Namespace.ACTIVE, record.job_id)
        self._on_finished(kind, "given-up", 0.0)

    def oldest_active_age(self, now: float | None = None) -> tuple[int, float]:
        """How many jobs are waiting or running, and the age in seconds of the oldest."""
        now = time.time() if now is None else now
        ages = []
        for job_id in self.store.keys(Namespace.ACTIVE):
            record = self.record(job_id)
            if record is not None:
                ages.append(now - (record.created_at or record.updated_at))
        return len(ages), max(ages, default=0.0)

    def reap_abandoned(self, now: float | None = None) -> list[str]:
        """Give jobs whose worker died (lease run out) a fresh message; returns their ids."""
        now = time.time() if now is None else now
        revived = []
        for job_id in self.store.keys(Namespace.ACTIVE):
            record = self.record(job_id)
            if record is None:
                self.store.delete(Namespace.ACTIVE, job_id)
                continue
            stale_run = record.state == RUNNING and record.lease_until < now
            stale_wait = record.state == PENDING and max(record.updated_at, record.retry_at) + ABANDONED_PENDING_S < now
            if not (stale_run or stale_wait):
                continue
            self._save(
                replace(
                    record,
                    state=PENDING,
                    lease_until=0.0,
                    updated_at=now,
                    crashes=record.crashes + (1 if stale_run else 0),
                )
            )
            self._task(job_id)
            revived.append(job_id)
            log.warning("job %s was abandoned (%s); queued again", job_id, record.state)
        return revived


class _Heartbeat:
    """Renews a running job's lease until stopped, so that only a dead worker's lease runs out."""

    def __init__(self, queue: JobQueue, name: str, owner: str, record: JobRecord) -> None:
        self.queue, self.name, self.owner, self.record = queue, name, owner, record
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"lease {name}")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _beat(self) -> None:
        interval = max(self.queue.lease_s / 3, 0.05)
        give_up_at = time.monotonic() + self.queue.max_job_s
        while not self._stop.wait(interval):
            if time.monotonic() > give_up_at:
                # Never renew forever: a job stuck this long loses its lease and is reaped like a dead one.
                log.error(
                    "job %s has run %.0f s; no longer renewing its lease", self.record.job_id, self.queue.max_job_s
                )
                return
            try:
                if not self.queue.store.renew_lease(self.name, self.owner, self.queue.lease_s):
                    log.error("lost the lease %s while running job %s", self.name, self.record.job_id)
                    return
                current = self.queue.record(self.record.job_id)
                if current is not None and current.state == RUNNING:
                    self.queue._save(replace(current, lease_until=time.time() + self.queue.lease_s))
            except StoreUnavailable as error:
                self.queue.outage.failed(str(error))  # renewed on the next beat, if the store is back


def open_queue(
    queue_url: str,
    *,
    lease_s: float = 120.0,
    runner: JobRunner | None = None,
    on_finished: Callable[[str, str, float], None] | None = None,
    give_up: GiveUp | None = None,
    max_job_s: float = 1800.0,
    allow_volatile_redis: bool = False,
    retry_horizon: RetryHorizon | None = None,
) -> JobQueue:
    """The queue and its state store for a PR_CHECK_QUEUE URL; a Redis that may lose jobs is refused.

    A Redis that does not answer yet is no reason to stop: the queue is returned with the check
    put off until it answers (`JobQueue.ready`), and meanwhile /healthz and deliveries answer 503.
    """
    verify = None
    if urlparse(queue_url).scheme != "sqlite":
        try:
            check_redis_durability(queue_url, allow_volatile=allow_volatile_redis)
        except StoreUnavailable as error:
            log.warning("the queue does not answer (%s); it is checked again until it does", error)
            verify = functools.partial(check_redis_durability, queue_url, allow_volatile=allow_volatile_redis)
    outage = QueueOutage()
    huey = make_huey(queue_url, outage if runner is not None else None)
    return JobQueue(
        huey,
        open_store(queue_url),
        lease_s=lease_s,
        runner=runner,
        on_finished=on_finished,
        give_up=give_up,
        max_job_s=max_job_s,
        verify=verify,
        outage=outage,
        retry_horizon=retry_horizon,
    )


class QueueNotDurable(PrCheckError):
    """The Redis server would lose accepted deliveries on a restart."""

    exit_code = 2


def check_redis_durability(queue_url: str, *, allow_volatile: bool) -> None:
    """Refuse a Redis without the append-only file: at default settings a killed Redis loses the
    deliveries it acknowledged since its last snapshot, and GitHub never sends them again."""
    import redis

    client = redis.Redis.from_url(
        urlparse(queue_url)._replace(query="").geturl(), socket_connect_timeout=5, socket_timeout=10
    )
    try:
        try:
            with store_failures():  # not answering (yet) is StoreUnavailable, one line, not a traceback
                appendonly = client.config_get("appendonly").get("appendonly")
        except redis.ResponseError as error:  # CONFIG renamed or forbidden, as on some managed services
            appendonly = None
            unknown = f"CONFIG GET appendonly was refused ({error})"
        else:
            unknown = ""
    finally:
        client.close()
    if appendonly in ("yes", b"yes") or allow_volatile:
        if appendonly not in ("yes", b"yes"):
            log.warning(
                "Redis persistence is not appendonly; accepted deliveries may be lost on a Redis restart "
                "(PR_CHECK_ALLOW_VOLATILE_REDIS is set)"
            )
        return
    said = unknown or f"appendonly is {appendonly.decode() if isinstance(appendonly, bytes) else appendonly!r}"
    raise QueueNotDurable(
        f"PR_CHECK_QUEUE: the Redis server does not keep an append-only file ({said}), so a Redis restart "
        "would lose accepted deliveries that GitHub will not send again. Run it with `appendonly yes` "
        "(redis-server --appendonly yes, or CONFIG SET appendonly yes and CONFIG REWRITE), or set "
        "PR_CHECK_ALLOW_VOLATILE_REDIS=1 if its durability is assured another way."
    )
