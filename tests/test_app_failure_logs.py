"""A failing job's log: one line per attempt naming the pull request and the delivery, and one
traceback, when no retry is left; never huey's traceback per attempt named by its task id.
Real SQLite queue, real huey execution of the queued task and its retries."""

from __future__ import annotations

import datetime
import logging

from webhooks.jobs import PullRequestPushed, RepoRef
from webhooks.queue import TASK_RETRIES, open_queue


def _run_until_done(queue) -> int:
    """Execute the queued task and each retry huey schedules; returns how many attempts ran."""
    runs = 0
    task = queue.huey.dequeue()
    while task is not None:
        queue.huey.execute(task)
        runs += 1
        due = queue.huey.read_schedule(datetime.datetime(2100, 1, 1))  # retries wait for their delay
        task = due[0] if due else None
        if task is not None:
            task.eta = None  # its delay has passed: what the consumer's scheduler does, without the wait
    return runs


def test_each_failed_attempt_is_one_line_by_pull_request_and_the_last_has_the_traceback(tmp_path, caplog):
    def failing(job, attempt):
        raise RuntimeError("GitHub answered 502")

    queue = open_queue(f"sqlite:///{tmp_path / 'queue.sqlite3'}", runner=failing)
    job = PullRequestPushed(RepoRef("pytorch", "executorch", 1), 7, "a" * 40, 1.0, "opened")
    assert queue.submit("delivery-1", job)
    caplog.set_level(logging.INFO)
    assert _run_until_done(queue) == TASK_RETRIES + 1
    assert [r for r in caplog.records if "Unhandled exception" in r.getMessage()] == []
    ours = [r for r in caplog.records if r.name == "pr_check.queue"]
    expected = [
        f"PullRequestPushed for pytorch/executorch#7 (delivery delivery-1), attempt {n} failed, retrying: "
        "RuntimeError: GitHub answered 502"
        for n in range(1, TASK_RETRIES + 1)
    ]
    expected.append(
        f"PullRequestPushed for pytorch/executorch#7 (delivery delivery-1), attempt {TASK_RETRIES + 1} "
        "failed, no retry left: RuntimeError: GitHub answered 502"
    )
    assert [r.getMessage() for r in ours] == expected
    assert [r.levelname for r in ours] == ["WARNING"] * TASK_RETRIES + ["ERROR"]
    assert [r.exc_info is not None for r in ours] == [False] * TASK_RETRIES + [True]
    assert queue.record("delivery-1").state == "failed"
    queue.store.close()
