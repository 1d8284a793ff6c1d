"""One hostile pull request must not stop the App: it gets a failed check with the reason, the worker
lives on, and the next pull request is reviewed. Also: a job that keeps killing its worker is given up,
and /healthz tells when queued work has nobody to do it.

Real uvicorn, real `python -m webhooks.worker` processes, the GitHub stand-in, real git repositories.
"""

from __future__ import annotations

import signal
import time

from tests.standin import GitHubStandIn, app_key_pair
from tests.test_app_harness import (
    APP_ID,
    BUCK_DEFECT,
    OWNER,
    completed_check_runs,
    deadline_from,
    make_repo,
    start_app,
    wait_for,
)

NESTED_BUCK = "X = " + "[" * 5000 + "]" * 5000 + "\n"


def _text(run: dict) -> str:
    return f"{run['output']['title']}\n{run['output']['summary']}"


def test_a_hostile_build_file_fails_its_own_check_and_the_next_pull_request_is_reviewed(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app")
    try:
        worker = app.start_worker()
        repo = make_repo(standin, tmp_path, "hostile")
        poison = repo.open_pull(1, {"BUCK": NESTED_BUCK})
        honest = repo.open_pull(2, {"BUCK": BUCK_DEFECT})
        assert app.deliver("pull_request", standin.pull_request_payload(OWNER, "hostile", 1)).status_code == 202
        [failed] = wait_for(
            lambda: completed_check_runs(standin, OWNER, "hostile", poison),
            timeout=60,
            what="the hostile pull request's check",
        )
        assert failed["conclusion"] == "failure"
        assert "BUCK" in _text(failed) or any(
            a["path"] == "BUCK" for a in standin.annotations(OWNER, "hostile", failed["id"])
        )
        assert worker.poll() is None  # the worker is alive

        assert app.deliver("pull_request", standin.pull_request_payload(OWNER, "hostile", 2)).status_code == 202
        [reviewed] = wait_for(
            lambda: completed_check_runs(standin, OWNER, "hostile", honest),
            timeout=60,
            what="the next pull request's check",
        )
        assert reviewed["conclusion"] == "neutral" and "link-whole-without-python-dlopen" in _text(reviewed)
        assert [r["commit_id"] for r in standin.reviews(OWNER, "hostile", 2)] == [honest]
        # The hostile one was told in a review too, and the failure is not retried: one check run, one job.
        assert [r["commit_id"] for r in standin.reviews(OWNER, "hostile", 1)] == [poison]
        wait_for(lambda: app.queue.store.keys("active") == [], what="the queue to drain")
        assert len(standin.check_runs(OWNER, "hostile", poison)) == 1
    finally:
        app.stop()
        standin.stop()


def test_a_review_past_its_deadline_is_stopped_and_reported(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app", PR_CHECK_REVIEW_DEADLINE_S="2")
    try:
        app.start_worker(entry=("tests.app_faults", "hang"))  # every review's child stalls
        repo = make_repo(standin, tmp_path, "stalling")
        head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        app.deliver("pull_request", standin.pull_request_payload(OWNER, "stalling", 1))
        [run] = wait_for(
            lambda: completed_check_runs(standin, OWNER, "stalling", head),
            timeout=60,
            what="the stalled review's check",
        )
        assert run["conclusion"] == "failure"
        assert "did not finish within 2 s" in run["output"]["summary"]
        # The one changed file is named as the suspect, inline where the diff allows.
        assert "`BUCK`" in run["output"]["summary"]
    finally:
        app.stop()
        standin.stop()


def test_a_job_that_kills_its_worker_twice_is_given_up_with_a_failed_check(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    # GitHub hangs on the diff each attempt asks for after creating its check run and fetching the
    # head, so the test can kill the worker mid-job.
    held = standin.stall_next("GET", r"/pulls/1$", 60, accept="diff", times=2)
    app = start_app(standin, tmp_path / "app", PR_CHECK_JOB_LEASE_S="2")
    try:
        repo = make_repo(standin, tmp_path, "deadly")
        head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        app.deliver("pull_request", standin.pull_request_payload(OWNER, "deadly", 1))
        [job_id] = app.queue.store.keys("active")
        slowest_attempt_s = 0.0
        for attempt in (1, 2):
            started = time.monotonic()
            worker = app.start_worker()
            # A job marked running has not reached GitHub yet (the worker may still be starting its
            # review): the kill waits until the attempt is held on the diff, mid-job.
            wait_for(
                lambda attempt=attempt: held() == attempt,
                timeout=60,
                what=f"attempt {attempt} to wait on GitHub's diff",
            )
            slowest_attempt_s = max(slowest_attempt_s, time.monotonic() - started)
            assert app.queue.record(job_id).attempts == attempt
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
        app.start_worker()
        [run] = wait_for(
            lambda: completed_check_runs(standin, OWNER, "deadly", head),
            timeout=deadline_from(slowest_attempt_s),
            what="the job to be given up",
        )
        assert run["conclusion"] == "failure" and "gave up" in run["output"]["title"]
        assert len(standin.check_runs(OWNER, "deadly", head)) == 1  # the interrupted attempts' run, completed
        record = (wait_for(lambda: (r := app.queue.record(job_id)) and r.state == "failed" and r),)
        assert record[0].crashes == 2 and record[0].outcome.startswith("given up")
        assert app.queue.store.keys("active") == []
        assert standin.reviews(OWNER, "deadly", 1) == []  # never reviewed, never retried forever
    finally:
        app.stop()
        standin.stop()


def test_healthz_tells_when_queued_work_has_no_live_worker(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app", stalled_after_s=0)
    try:
        repo = make_repo(standin, tmp_path, "unattended")
        head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
        app.deliver("pull_request", standin.pull_request_payload(OWNER, "unattended", 1))
        health = app.client.get(f"{app.url}/healthz")
        assert health.status_code == 503
        assert health.json()["status"] == "stalled" and health.json()["workers_alive"] == 0
        assert health.json()["jobs_active"] == 1 and health.json()["oldest_job_age_s"] >= 0

        app.start_worker()
        wait_for(lambda: completed_check_runs(standin, OWNER, "unattended", head), timeout=30, what="the review")
        # The check run is completed before the worker acknowledges the job, so healthz can be
        # 200 with the job still active for a moment (seen under load): wait for both.
        health = wait_for(
            lambda: (
                (h := app.client.get(f"{app.url}/healthz")).status_code == 200
                and h.json()["jobs_active"] == 0
                and h.json()
            ),
            what="healthz to recover and the job to be acknowledged",
        )
        assert health == {"status": "ok", "workers_alive": 1, "jobs_active": 0, "oldest_job_age_s": 0.0}
    finally:
        app.stop()
        standin.stop()


DEEP_CMAKE = (
    "if(TRUE)\n" * 5000
    + "endif()\n" * 5000
    + "add_library(aoti_common_shims_slim STATIC common_shims_slim.cpp)\n"
    + "add_library(aoti_cuda_shims SHARED memory.cpp)\n"
    + "target_link_libraries(aoti_cuda_shims PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive)\n"
)


def test_cmake_nested_5000_deep_keeps_its_whole_archive_finding_in_the_app(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app")
    try:
        worker = app.start_worker()
        repo = make_repo(standin, tmp_path, "deep")
        head = repo.open_pull(1, {"CMakeLists.txt": DEEP_CMAKE})
        assert app.deliver("pull_request", standin.pull_request_payload(OWNER, "deep", 1)).status_code == 202
        [run] = wait_for(lambda: completed_check_runs(standin, OWNER, "deep", head), timeout=60, what="the check")
        assert run["conclusion"] == "failure"  # a major finding, not a crash
        annotations = standin.annotations(OWNER, "deep", run["id"])
        rules = {(a["path"], a["title"].split(":")[0], a["start_line"]) for a in annotations}
        assert ("CMakeLists.txt", "link-whole-archive-public", 10003) in rules
        assert ("CMakeLists.txt", "cmake-eval-limit", 33) in rules
        assert "internal-error" not in _text(run) and worker.poll() is None
    finally:
        app.stop()
        standin.stop()


def test_a_finding_in_a_package_whose_name_is_not_utf8_is_reported_in_the_app(tmp_path):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path / "app")
    try:
        app.start_worker()
        repo = make_repo(standin, tmp_path, "bytes")
        # `pkg-\xff/` and `notes-\xff.h`: names git holds as bytes, no UTF-8 decoder reads.
        head = repo.open_pull(
            1,
            {
                "pkg-\udcff/BUCK": BUCK_DEFECT,
                "pkg-\udcff/shims.cpp": "int shim() { return 1; }\n",
                "notes-\udcff.h": "int notes(void);\n",
            },
        )
        assert app.deliver("pull_request", standin.pull_request_payload(OWNER, "bytes", 1)).status_code == 202
        [run] = wait_for(lambda: completed_check_runs(standin, OWNER, "bytes", head), timeout=60, what="the check")
        assert run["conclusion"] == "neutral"  # the minor finding, not a failed review
        assert "`pkg-\\xff/BUCK:4`" in run["output"]["summary"]
        assert "link-whole-without-python-dlopen" in run["output"]["summary"]
        # GitHub cannot name the file: no annotation or inline comment on it, the summary has it.
        assert standin.annotations(OWNER, "bytes", run["id"]) == []
        [review] = standin.reviews(OWNER, "bytes", 1)
        assert review["commit_id"] == head
    finally:
        app.stop()
        standin.stop()
