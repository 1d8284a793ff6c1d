"""GitHub away, and GitHub refusing the App: no review lost, none posted twice, and the state visible.

Real uvicorn, a real `python -m webhooks.worker` process (SQLite queue), the GitHub stand-in over
HTTP refusing connections (its port closed) for a while, real bare git repositories. Times are
scaled by 1/8: the "ten minutes" outage is 75 s, the operator's "hour" of horizon 450 s and the
"five minutes" of longest pause 4 s (shorter than 1/8 of it, so that the test does not idle).
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.standin import GitHubStandIn, app_key_pair
from tests.test_app_harness import (
    APP_ID,
    BUCK_DEFECT,
    BUCK_SHIFTED,
    OWNER,
    completed_check_runs,
    make_repo,
    running_app,
    start_app,
    wait_for,
)
from webhooks.queue import DONE, FAILED, JobRecord
from webhooks.retry import RetryHorizon

pytestmark = pytest.mark.timeout(600)

OUTAGE_S = 75.0  # "ten minutes", at the test's scale: longer than the 54 s the App used to give a job
HORIZON = RetryHorizon(horizon_s=450.0, max_delay_s=4.0)


def _records(app) -> list[JobRecord]:
    """Every job of the ledger (each delivery's)."""
    return [record for key in app.queue.store.keys("job") if (record := app.queue.record(key)) is not None]


def _bot_reviews(standin, repo: str, number: int) -> list[dict]:
    return [r for r in standin.reviews(OWNER, repo, number) if r["user"]["type"] == "Bot"]


def test_a_ten_minute_outage_loses_nothing_and_posts_once_for_the_head_current_when_github_returns(tmp_path):
    with running_app(
        tmp_path / "app",
        PR_CHECK_GITHUB_RETRY_HORIZON_S=str(HORIZON.horizon_s),
        PR_CHECK_GITHUB_RETRY_MAX_DELAY_S=str(HORIZON.max_delay_s),
    ) as app:
        standin = app.standin
        repo = make_repo(standin, tmp_path, "outage")
        standin.go_away()
        away_at = time.monotonic()
        # Opened and pushed to while GitHub's API is unreachable; the webhooks still arrive.
        first = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        opened = app.deliver("pull_request", standin.pull_request_payload(OWNER, "outage", 1, "opened"))
        assert opened.status_code == 202 and opened.json()["outcome"] == "accepted"
        time.sleep(1.0)
        second, pushed = repo.push(1, {"BUCK": BUCK_SHIFTED}, parent=first)
        assert app.deliver("pull_request", pushed).json()["outcome"] == "accepted"

        health = wait_for(
            lambda: (h := app.client.get(f"{app.url}/healthz").json()).get("status") == "degraded" and h,
            timeout=60,
            what="/healthz to say degraded while GitHub is away",
        )
        assert health["github"]["state"] == "unreachable"
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - away_at)))
        # Nothing given up during the outage: both jobs wait in the ledger, with their reason.
        records = _records(app)
        assert records and all(r.state != FAILED for r in records), records
        waiting = [r for r in records if r.outcome.startswith("waiting for GitHub")]
        assert waiting, records
        standin.come_back()
        back_at = time.monotonic()

        runs = wait_for(
            lambda: completed_check_runs(standin, OWNER, "outage", second), timeout=180, what="the check run"
        )
        posted_after_s = time.monotonic() - back_at
        ledger = wait_for(
            lambda: (rs := _records(app)) and all(r.state == DONE for r in rs) and rs,
            timeout=60,
            what="both jobs to finish",
        )
        time.sleep(2.0)  # anything posted twice would be posted by now
        assert len(runs) == 1 and runs[0]["head_sha"] == second
        assert standin.check_runs(OWNER, "outage", first) == []
        assert len(standin.check_runs(OWNER, "outage", second)) == 1
        reviews = _bot_reviews(standin, "outage", 1)
        assert [r["commit_id"] for r in reviews] == [second]
        outcomes = sorted(r.outcome for r in ledger)
        assert outcomes == ["reviewed", "superseded"], outcomes
        health = wait_for(
            lambda: (h := app.client.get(f"{app.url}/healthz").json()).get("status") == "ok" and h,
            timeout=30,
            what="/healthz to say ok again",
        )
        assert "github" not in health
        metrics = app.client.get(f"{app.url}/metrics").text
        waited = re.search(
            r'pr_check_jobs_total\{kind="PullRequestPushed",outcome="waiting-for-github"\} (\S+)', metrics
        )
        assert waited and float(waited.group(1)) == sum(r.waits for r in ledger), metrics
        figures = {
            "outage_s": OUTAGE_S,
            "horizon_s": HORIZON.horizon_s,
            "posted_after_return_s": round(posted_after_s, 1),
            "jobs": [
                {
                    "outcome": r.outcome,
                    "attempts": r.attempts,
                    "waits": r.waits,
                    "pauses_s": [round(HORIZON.delay(i), 2) for i in range(r.waits)],
                }
                for r in ledger
            ],
        }
        print("outage figures:", json.dumps(figures))
        assert all(r.waits >= 1 for r in ledger if r.outcome == "reviewed")
        assert "Traceback" not in app.worker_log()


def test_a_redelivery_of_a_delivery_whose_job_failed_runs_it_again(tmp_path):
    with running_app(
        tmp_path / "app", PR_CHECK_GITHUB_RETRY_HORIZON_S="3", PR_CHECK_GITHUB_RETRY_MAX_DELAY_S="1"
    ) as app:
        standin = app.standin
        repo = make_repo(standin, tmp_path, "again")
        head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        payload = standin.pull_request_payload(OWNER, "again", 1, "opened")
        standin.go_away()
        assert app.deliver("pull_request", payload, delivery_id="guid-1").json()["outcome"] == "accepted"
        failed = wait_for(
            lambda: (r := app.queue.record("guid-1")) is not None and r.state == FAILED and r,
            timeout=90,
            what="the job to be given up past its horizon",
        )
        assert "GitHub was away" in failed.outcome and "PR_CHECK_GITHUB_RETRY_HORIZON_S" in failed.outcome
        standin.come_back()
        # GitHub's "Redeliver": the same delivery id.
        again = app.deliver("pull_request", payload, delivery_id="guid-1")
        assert again.status_code == 202 and again.json()["outcome"] == "run-again"
        runs = wait_for(lambda: completed_check_runs(standin, OWNER, "again", head), timeout=120, what="the check run")
        wait_for(lambda: (r := app.queue.record("guid-1")) and r.state == DONE, timeout=30, what="the job to finish")
        assert len(runs) == 1 and [r["commit_id"] for r in _bot_reviews(standin, "again", 1)] == [head]
        # Once done, the same delivery is a duplicate again.
        assert app.deliver("pull_request", payload, delivery_id="guid-1").json()["outcome"] == "duplicate"


def test_a_wrong_app_id_is_answered_once_with_what_to_check_and_not_retried(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app", PR_CHECK_APP_ID=str(APP_ID + 1))
    try:
        app.start_worker()
        make_repo(standin, tmp_path, "wrong").open_pull(1, {"BUCK": BUCK_DEFECT})
        payload = standin.pull_request_payload(OWNER, "wrong", 1, "opened")
        assert app.deliver("pull_request", payload, delivery_id="guid-401").json()["outcome"] == "accepted"
        failed = wait_for(
            lambda: (r := app.queue.record("guid-401")) is not None and r.state == FAILED and r,
            timeout=60,
            what="the job to fail",
        )
        time.sleep(3.0)  # a retry, if any were made, would have happened by now
        assert failed.attempts == 1
        assert "check the App id (PR_CHECK_APP_ID) and private key (PR_CHECK_PRIVATE_KEY_FILE)" in failed.outcome
        tokens = [r for r in standin.requests if r.path.endswith("/access_tokens")]
        assert [r.status for r in tokens] == [401]  # one token request, refused, not sent again
        log = app.worker_log()
        said = [line for line in log.splitlines() if "guid-401" in line and "check the App id" in line]
        assert len(said) == 1 and "Traceback" not in log, log[-3000:]
        health = app.client.get(f"{app.url}/healthz").json()
        assert health["status"] == "degraded" and "credentials" in health["github"]["state"], health
    finally:
        app.stop()
        standin.stop()
