"""A worker killed (SIGKILL) in the middle of a review: the restarted worker finishes it, once."""

from __future__ import annotations

import signal
import time

from tests.standin import GitHubStandIn, app_key_pair
from tests.test_app_harness import (
    APP_ID,
    BUCK_DEFECT,
    DEFECT_LINE,
    OWNER,
    deadline_from,
    make_repo,
    start_app,
    wait_for,
)


def test_a_job_interrupted_by_a_killed_worker_is_finished_once_after_restart(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    # GitHub hangs on the pull request's diff, which a review asks for after creating its check
    # run and fetching the head: the worker is mid-job while it waits, and is killed there.
    held = standin.stall_next("GET", r"/pulls/5$", 30, accept="diff")
    app = start_app(standin, tmp_path / "app", PR_CHECK_JOB_LEASE_S="2")
    try:
        repo = make_repo(standin, tmp_path, "killed")
        head = repo.open_pull(5, {"BUCK": BUCK_DEFECT})
        started = time.monotonic()
        first = app.start_worker()
        assert app.deliver("pull_request", standin.pull_request_payload(OWNER, "killed", 5)).status_code == 202

        # Killed only once GitHub holds its diff request: the in-progress check run comes before the
        # fetch, and a kill then would leave the hang armed for the restarted worker instead.
        wait_for(lambda: held() == 1, timeout=60, what="the worker to wait on GitHub's diff")
        to_the_diff_s = time.monotonic() - started
        assert [r["status"] for r in standin.check_runs(OWNER, "killed", head)] == ["in_progress"]
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        assert standin.reviews(OWNER, "killed", 5) == []  # it died before posting

        # The restarted worker goes through the same start-up and steps, then the review itself.
        app.start_worker()
        runs = wait_for(
            lambda: [r for r in standin.check_runs(OWNER, "killed", head) if r["status"] == "completed"],
            what="the job to be finished after the restart",
            timeout=deadline_from(to_the_diff_s),
        )
        wait_for(lambda: app.queue.store.keys("active") == [], what="the ledger to settle")
        assert held() == 1  # the restarted worker's diff was answered at once
        assert len(standin.check_runs(OWNER, "killed", head)) == 1  # the interrupted run was reused
        assert [r["conclusion"] for r in runs] == ["neutral"]
        reviews = standin.reviews(OWNER, "killed", 5)
        assert len(reviews) == 1
        comments = standin.review_comments(OWNER, "killed", 5)
        assert [(c["path"], c["line"]) for c in comments] == [("BUCK", DEFECT_LINE)]
        assert app.queue.record(next(iter(_job_ids(app)))).attempts == 2
    finally:
        app.stop()
        standin.stop()


def _job_ids(app) -> list[str]:
    return list(app.queue.store.keys("job"))
