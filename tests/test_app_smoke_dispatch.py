"""The GPU smoke job from the App's side: who triggers it, the dispatch, and the check run's life."""

from __future__ import annotations

import pytest

from tests.test_app_harness import OWNER, make_repo, running_app, wait_for

SMOKE = "pr-check / cuda-smoke"
KERNEL = {"backends/cuda/add.cu": "__global__ void add(float* x) { x[0] += 1; }\n"}
INPUTS = {"pr": True, "head_sha": True, "correlation_id": True}


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("app"), PR_CHECK_SMOKE_TIMEOUT_S="4") as app:
        yield app


def _smoke_runs(standin, repo: str, head: str) -> list[dict]:
    return [run for run in standin.check_runs(OWNER, repo, head) if run["name"] == SMOKE]


def _review_done(standin, repo: str, head: str) -> bool:
    return any(r["name"] == "pr-check" and r["status"] == "completed" for r in standin.check_runs(OWNER, repo, head))


def test_a_contributors_cuda_change_waits_for_a_maintainer_then_runs(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "contrib")
    standin.add_workflow(OWNER, "contrib", "gpu-smoke.yml", inputs=INPUTS)
    head = repo.open_pull(1, KERNEL, author="alice")  # alice can only read
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "contrib", 1))
    wait_for(lambda: _review_done(standin, "contrib", head), what="the review")
    [waiting] = wait_for(lambda: _smoke_runs(standin, "contrib", head), what="the smoke check")
    assert (waiting["status"], waiting["conclusion"]) == ("completed", "neutral")
    assert "/pr-check smoke" in waiting["output"]["summary"]
    assert "backends/cuda/add.cu" in waiting["output"]["summary"]
    assert standin.dispatches(OWNER, "contrib") == []

    # Someone without write access cannot start it.
    mallory = standin.add_issue_comment(
        OWNER, "contrib", 1, "/pr-check smoke", "mallory", author_association="CONTRIBUTOR"
    )
    running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "contrib", mallory["id"]))
    wait_for(
        lambda: [c for c in standin.issue_comments(OWNER, "contrib", 1) if c["user"]["login"] == standin.bot_login],
        what="the refusal",
    )
    assert standin.dispatches(OWNER, "contrib") == []

    # A maintainer can.
    maria = standin.add_issue_comment(OWNER, "contrib", 1, "/pr-check smoke", "maria", author_association="MEMBER")
    running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "contrib", maria["id"]))
    [dispatch] = wait_for(lambda: standin.dispatches(OWNER, "contrib"), what="the dispatch")
    assert dispatch["workflow"] == "gpu-smoke.yml" and dispatch["ref"] == "main" and dispatch["return_run_details"]
    assert dispatch["inputs"]["pr"] == "1" and dispatch["inputs"]["head_sha"] == head
    assert dispatch["inputs"]["correlation_id"].startswith("prc-")
    queued = wait_for(
        lambda: [r for r in _smoke_runs(standin, "contrib", head) if r["status"] == "queued"],
        what="the queued smoke check",
    )
    assert queued[0]["external_id"] == dispatch["inputs"]["correlation_id"]

    # The workflow run reports: in progress, then completed.
    running.deliver("workflow_run", standin.set_run_status(OWNER, "contrib", dispatch["run_id"], "in_progress"))
    wait_for(
        lambda: [r for r in _smoke_runs(standin, "contrib", head) if r["status"] == "in_progress"],
        what="the smoke check in progress",
    )
    running.deliver("workflow_run", standin.complete_run(OWNER, "contrib", dispatch["run_id"], "failure"))
    done = wait_for(
        lambda: [
            r
            for r in _smoke_runs(standin, "contrib", head)
            if r["id"] == queued[0]["id"] and r["status"] == "completed"
        ],
        what="the smoke result",
    )
    assert done[0]["conclusion"] == "failure"
    assert str(dispatch["run_id"]) in done[0]["details_url"]


def test_a_maintainers_cuda_change_is_dispatched_and_a_silent_run_ends_neutral(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "trusted")
    standin.add_workflow(OWNER, "trusted", "gpu-smoke.yml", inputs=INPUTS)
    head = repo.open_pull(2, KERNEL, author="maria", association="MEMBER")  # maria has write access
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "trusted", 2))
    [dispatch] = wait_for(lambda: standin.dispatches(OWNER, "trusted"), what="the automatic dispatch")
    assert dispatch["inputs"]["head_sha"] == head
    # The run never reports: after PR_CHECK_SMOKE_TIMEOUT_S the check is neutral, with the reason.
    done = wait_for(
        lambda: [r for r in _smoke_runs(standin, "trusted", head) if r["status"] == "completed"],
        timeout=15,
        what="the smoke check to time out",
    )
    assert done[0]["conclusion"] == "neutral"
    assert "did not report" in done[0]["output"]["title"]
    # A late report changes nothing.
    running.deliver("workflow_run", standin.complete_run(OWNER, "trusted", dispatch["run_id"], "success"))
    wait_for(lambda: running.queue.store.keys("active") == [], what="the queue to drain")
    assert [r["conclusion"] for r in _smoke_runs(standin, "trusted", head)] == ["neutral"]


def test_when_github_returned_the_run_id_only_that_run_counts(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "titled")
    standin.add_workflow(OWNER, "titled", "gpu-smoke.yml", inputs=INPUTS)
    head = repo.open_pull(3, KERNEL, author="maria", association="MEMBER")
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "titled", 3))
    [dispatch] = wait_for(lambda: standin.dispatches(OWNER, "titled"), what="the dispatch")
    correlation = dispatch["inputs"]["correlation_id"]
    # Another run of the same workflow naming the (public) correlation id in its title: not ours.
    impostor = standin.complete_run(OWNER, "titled", dispatch["run_id"], "success")
    impostor["workflow_run"]["id"] = dispatch["run_id"] + 1000
    impostor["workflow_run"]["display_title"] = f"pr-check smoke: PR #3 at {head} [{correlation}]"
    running.deliver("workflow_run", impostor)
    wait_for(lambda: running.queue.store.keys("active") == [], what="the impostor to be handled")
    assert [r["status"] for r in _smoke_runs(standin, "titled", head)] == ["queued"]
    # The run GitHub named at dispatch completes it.
    running.deliver("workflow_run", standin.complete_run(OWNER, "titled", dispatch["run_id"], "success"))
    done = wait_for(
        lambda: [r for r in _smoke_runs(standin, "titled", head) if r["status"] == "completed"], what="the smoke result"
    )
    assert done[0]["conclusion"] == "success" and done[0]["external_id"] == correlation
