"""A job stuck in its worker (not dead, not finishing) is not allowed to hold its pull request forever:
its heartbeat stops renewing after the queue's `max_job_s`, the lease runs out, and the job is reaped
and counted as a crash (two of those and it is given up). Real SQLite queue, a real blocking runner."""

from __future__ import annotations

import threading

from tests.test_app_harness import wait_for
from webhooks.jobs import PullRequestPushed, RepoRef
from webhooks.queue import open_queue


def test_a_stuck_job_stops_renewing_its_lease_and_is_reaped(tmp_path):
    release = threading.Event()
    started = threading.Event()

    def stuck(job, attempt):
        started.set()
        release.wait(30)  # a hang the review child's deadline does not cover (say, a network read)
        return "late"

    queue = open_queue(f"sqlite:///{tmp_path / 'queue.sqlite3'}", lease_s=0.3, runner=stuck, max_job_s=0.6)
    job = PullRequestPushed(RepoRef("pytorch", "executorch", 1), 7, "a" * 40, 1.0, "opened")
    assert queue.submit("delivery-1", job)
    runner = threading.Thread(target=queue._run_message, args=("delivery-1",), daemon=True)  # noqa: SLF001 - huey's entry
    runner.start()
    wait_for(started.is_set, what="the job to start")
    # Past max_job_s the heartbeat lets the lease run out; a sweep then hands the job out again, as a crash.
    assert wait_for(lambda: queue.reap_abandoned(), timeout=10, what="the stuck job to be reaped") == ["delivery-1"]
    record = queue.record("delivery-1")
    assert (record.state, record.crashes) == ("pending", 1)
    release.set()
    runner.join(10)
    queue.store.close()
