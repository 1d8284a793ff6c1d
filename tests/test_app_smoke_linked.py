"""A static finding and the GPU smoke job in one review: the finding's comment carries the job's result.

The fixture PR `link-export-dynamic-missing-xplat` (a real git repository) is served to the App as
GitHub would: a bare repository with the base on `main` and the head at `refs/pull/1/head`. A
maintainer opens it, so the smoke job is dispatched by itself; the test then plays the workflow run
through the stand-in and delivers its `workflow_run` event, signed, as GitHub would.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from fixtures.cases import build_case_repository
from tests.standin import GitHubStandIn, app_key_pair, gitrepos
from tests.test_app_harness import APP_ID, OWNER, start_app, wait_for

CASE = "link-export-dynamic-missing-xplat"
RULE = "link-export-dynamic-missing"
PATH = "backends/cuda/runtime/targets.bzl"
LINE = 10  # `runtime.cxx_library(` of runtime_shims: a context line of the diff's first hunk
SMOKE = "pr-check / cuda-smoke"
INPUTS = {"pr": True, "head_sha": True, "correlation_id": True}
SMOKE_MARKER = re.compile(r"<!-- pr-check:smoke rule=link-export-dynamic-missing head=([0-9a-f]{40}) -->")


def _start(tmp_path_factory, **env: str):
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem).start()
    app = start_app(standin, tmp_path_factory.mktemp("app"), **env)
    app.start_worker()
    return app


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    app = _start(tmp_path_factory, PR_CHECK_SMOKE_TIMEOUT_S="120")
    try:
        yield app
    finally:
        app.stop()
        app.standin.stop()


def _open_case(
    app, tmp_path: Path, name: str, number: int = 1, *, author: str = "maria", association: str = "MEMBER"
) -> str:
    """Serve the fixture case as repository `name` and open it (by maintainer maria); returns the head."""
    work, base, head = build_case_repository(CASE, tmp_path / "work")
    bare = tmp_path / f"{name}.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(work), str(bare)], check=True, capture_output=True)
    gitrepos.set_ref(bare, "refs/heads/main", base)  # the case commits its head on main; GitHub's main is the base
    gitrepos.set_pull_ref(bare, number, head)
    standin = app.standin
    standin.add_repo(OWNER, name, bare_git_path=str(bare), permissions={"maria": "write", "alice": "read"})
    standin.add_workflow(OWNER, name, "gpu-smoke.yml", inputs=INPUTS)
    standin.add_pull(OWNER, name, number, head, base, f"feature-{number}", "main", author, association)
    response = app.deliver("pull_request", standin.pull_request_payload(OWNER, name, number, "opened"))
    assert response.status_code == 202
    return head


def _finding_comments(standin, name: str) -> list[dict]:
    return [
        c
        for c in standin.review_comments(OWNER, name, 1)
        if c["user"]["type"] == "Bot" and c["body"].startswith(f"**{RULE}**")
    ]


def _smoke_runs(standin, name: str, head: str) -> list[dict]:
    return [run for run in standin.check_runs(OWNER, name, head) if run["name"] == SMOKE]


def _reviewed_and_dispatched(app, name: str) -> dict:
    [dispatch] = wait_for(lambda: app.standin.dispatches(OWNER, name), what="the automatic dispatch")
    return dispatch


def _comment_edits(app, name: str) -> int:
    return sum(
        1 for r in app.standin.requests if r.method == "PATCH" and f"/repos/{OWNER}/{name}/pulls/comments/" in r.path
    )


def _without_smoke_line(body: str) -> str:
    return re.sub(r"^.*<!-- pr-check:smoke [^>]*-->$", "", body, flags=re.MULTILINE)


def _drained(app) -> bool:
    return app.queue.store.keys("active") == []


def test_a_failed_smoke_run_lands_in_the_findings_comment_and_links_back(running, tmp_path):
    app, standin = running, running.standin
    head = _open_case(app, tmp_path, "linked-failure")
    dispatch = _reviewed_and_dispatched(app, "linked-failure")
    assert dispatch["inputs"]["head_sha"] == head

    # One review; the finding's inline comment is on its line and says the smoke job is pending.
    [review] = standin.reviews(OWNER, "linked-failure", 1)
    assert review["commit_id"] == head and review["state"] == "COMMENTED"  # major: a comment, not a block
    [comment] = _finding_comments(standin, "linked-failure")
    assert (comment["path"], comment["line"], comment["pull_request_review_id"]) == (PATH, LINE, review["id"])
    assert SMOKE_MARKER.search(comment["body"]).group(1) == head
    assert f"GPU smoke job **pending** on `{head[:7]}`" in comment["body"]
    assert f"`{SMOKE}` check" in comment["body"]

    # The GPU says the link fails.
    payload = standin.complete_run(OWNER, "linked-failure", dispatch["run_id"], "failure")
    run_url = payload["workflow_run"]["html_url"]
    app.deliver("workflow_run", payload)
    done = wait_for(
        lambda: [r for r in _smoke_runs(standin, "linked-failure", head) if r["status"] == "completed"],
        what="the smoke result",
    )
    assert [r["conclusion"] for r in done] == ["failure"]
    summary = done[0]["output"]["summary"]
    assert f"- [`{RULE}` at `{PATH}:{LINE}`]({comment['html_url']})" in summary

    [edited] = _finding_comments(standin, "linked-failure")
    assert edited["id"] == comment["id"] and edited["line"] == LINE
    assert f"GPU smoke job **failed** on `{head[:7]}`: [workflow run]({run_url})." in edited["body"]
    assert "The link contract this finding describes failed on a real GPU" in edited["body"]
    assert "pending" not in edited["body"]
    assert _without_smoke_line(edited["body"]) == _without_smoke_line(comment["body"])  # only that line changed
    assert len(standin.reviews(OWNER, "linked-failure", 1)) == 1

    # The same event delivered again (a redelivery): nothing is edited twice, the check stays as it is.
    edits = _comment_edits(app, "linked-failure")
    assert edits == 1
    app.deliver("workflow_run", standin.workflow_run_payload(OWNER, "linked-failure", dispatch["run_id"]))
    wait_for(lambda: _drained(app), what="the queue to drain")
    assert _comment_edits(app, "linked-failure") == edits
    assert [c["body"] for c in _finding_comments(standin, "linked-failure")] == [edited["body"]]
    assert [(r["status"], r["conclusion"]) for r in _smoke_runs(standin, "linked-failure", head)] == [
        ("completed", "failure")
    ]

    # A re-review of the same head (`/pr-check`) keeps the result: the planner does not fight the line.
    asked = standin.add_issue_comment(OWNER, "linked-failure", 1, "/pr-check", "maria", author_association="MEMBER")
    app.deliver("issue_comment", standin.issue_comment_payload(OWNER, "linked-failure", asked["id"]))
    wait_for(
        lambda: (
            len(
                [
                    r
                    for r in standin.check_runs(OWNER, "linked-failure", head)
                    if r["name"] == "pr-check" and r["status"] == "completed"
                ]
            )
            == 2
        ),
        what="the re-review",
    )
    wait_for(lambda: _drained(app), what="the queue to drain")
    assert [c["body"] for c in _finding_comments(standin, "linked-failure")] == [edited["body"]]
    assert _comment_edits(app, "linked-failure") == edits


def test_a_passed_smoke_run_says_the_failure_did_not_reproduce(running, tmp_path):
    app, standin = running, running.standin
    head = _open_case(app, tmp_path, "linked-pass")
    dispatch = _reviewed_and_dispatched(app, "linked-pass")
    [comment] = _finding_comments(standin, "linked-pass")
    payload = standin.complete_run(OWNER, "linked-pass", dispatch["run_id"], "success")
    app.deliver("workflow_run", payload)
    done = wait_for(
        lambda: [r for r in _smoke_runs(standin, "linked-pass", head) if r["status"] == "completed"],
        what="the smoke result",
    )
    assert done[0]["conclusion"] == "success"
    assert f"({comment['html_url']})" in done[0]["output"]["summary"]
    [edited] = _finding_comments(standin, "linked-pass")
    assert (edited["id"], edited["line"]) == (comment["id"], LINE)
    assert (
        f"GPU smoke job **passed** on `{head[:7]}`: [workflow run]({payload['workflow_run']['html_url']})."
        in edited["body"]
    )
    assert "did not reproduce on a real GPU" in edited["body"]


def test_a_contributors_finding_waits_for_a_maintainer_then_shows_the_run(running, tmp_path):
    app, standin = running, running.standin
    head = _open_case(app, tmp_path, "linked-contrib", author="alice", association="CONTRIBUTOR")
    wait_for(lambda: _smoke_runs(standin, "linked-contrib", head), what="the waiting smoke check")
    [comment] = _finding_comments(standin, "linked-contrib")
    assert f"GPU smoke job **waiting for a maintainer** on `{head[:7]}`" in comment["body"]
    assert standin.dispatches(OWNER, "linked-contrib") == []

    asked = standin.add_issue_comment(
        OWNER, "linked-contrib", 1, "/pr-check smoke", "maria", author_association="MEMBER"
    )
    app.deliver("issue_comment", standin.issue_comment_payload(OWNER, "linked-contrib", asked["id"]))
    [dispatch] = wait_for(lambda: standin.dispatches(OWNER, "linked-contrib"), what="the dispatch")
    pending = wait_for(
        lambda: [c for c in _finding_comments(standin, "linked-contrib") if "**pending**" in c["body"]],
        what="the line to say pending",
    )
    assert pending[0]["id"] == comment["id"]
    app.deliver("workflow_run", standin.complete_run(OWNER, "linked-contrib", dispatch["run_id"], "failure"))
    done = wait_for(
        lambda: [c for c in _finding_comments(standin, "linked-contrib") if "**failed**" in c["body"]],
        what="the result in the comment",
    )
    assert done[0]["id"] == comment["id"] and SMOKE_MARKER.search(done[0]["body"]).group(1) == head


def test_a_smoke_run_that_never_reports_says_so_in_the_comment(tmp_path_factory, tmp_path):
    app = _start(tmp_path_factory, PR_CHECK_SMOKE_TIMEOUT_S="1")
    try:
        standin = app.standin
        head = _open_case(app, tmp_path, "linked-silent")
        _reviewed_and_dispatched(app, "linked-silent")
        done = wait_for(
            lambda: [r for r in _smoke_runs(standin, "linked-silent", head) if r["status"] == "completed"],
            timeout=15,
            what="the smoke check to time out",
        )
        assert (done[0]["conclusion"], done[0]["output"]["title"]) == ("neutral", "GPU smoke job did not report")
        [comment] = _finding_comments(standin, "linked-silent")
        assert f"({comment['html_url']})" in done[0]["output"]["summary"]
        assert f"GPU smoke job **did not report** within 1 second on `{head[:7]}`" in comment["body"]
    finally:
        app.stop()
        app.standin.stop()
