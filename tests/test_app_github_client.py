"""webhooks/github_api.py, webhooks/mirror.py and the redelivery job against the stand-in over real HTTP."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from bot.diff import parse_diff
from tests.standin import SECONDARY_RATE_LIMIT_BODY, GitHubStandIn, app_key_pair, gitrepos
from tests.test_app_harness import APP_ID, BUCK_DEFECT, OWNER, make_repo
from webhooks.github_api import GitHubApp, GitHubError, RetryPolicy
from webhooks.mirror import Mirrors
from webhooks.redelivery import redeliver_failed
from webhooks.store import SqliteStateStore


@pytest.fixture()
def standin():
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as server:
        yield server


def _app(standin, calls=None, **policy) -> GitHubApp:
    observe = (lambda operation, status: calls.append((operation, status))) if calls is not None else None
    return GitHubApp(
        str(APP_ID),
        app_key_pair().private_pem.decode(),
        standin.base_url,
        write_pause_s=0,
        retry=RetryPolicy(backoff_s=0.01, **policy),
        observe=observe,
    )


def test_reads_and_writes_with_one_cached_installation_token(standin, tmp_path):
    repo = make_repo(standin, tmp_path, "client")
    head = repo.open_pull(4, {"BUCK": BUCK_DEFECT}, author="alice")
    client = _app(standin).repository(1, OWNER, "client")
    pull = client.pull(4)
    assert (pull.head_sha, pull.base_sha, pull.author, pull.default_branch) == (head, repo.base, "alice", "main")
    assert pull.clone_url.startswith("file://")
    assert parse_diff(client.pull_diff(4)).get("BUCK").added == frozenset({4})
    review = client.create_review(
        4,
        commit_id=head,
        event="COMMENT",
        body="hello",
        comments=[{"path": "BUCK", "line": 4, "side": "RIGHT", "body": "x"}],
    )
    assert [r.id for r in client.reviews(4)] == [review]
    [comment] = client.review_comments(4)
    assert (comment.path, comment.line, comment.author_is_bot) == ("BUCK", 4, True)
    client.edit_review_comment(comment.id, "y")
    assert client.review_comments(4)[0].body == "y"
    assert client.collaborator_permission("alice") == "read"
    assert client.collaborator_permission("maria") == "write"
    run = client.create_check_run("pr-check", head, status="in_progress")
    client.update_check_run(run.id, status="completed", conclusion="success", output={"title": "t", "summary": "s"})
    assert [(r.id, r.status) for r in client.check_runs(head, "pr-check")] == [(run.id, "completed")]
    assert standin.tokens_issued == 1


def test_server_errors_are_retried_for_reads_but_not_for_creating_a_review(standin, tmp_path):
    repo = make_repo(standin, tmp_path, "flaky")
    head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
    calls: list = []
    client = _app(standin, calls).repository(1, OWNER, "flaky")
    standin.fail_next("GET", r"/pulls/1$", 502, times=2)
    assert client.pull(1).head_sha == head
    assert [s for o, s in calls if o == "get pull request"] == ["502", "502", "ok"]
    standin.fail_next("POST", r"/pulls/1/reviews$", 502)
    with pytest.raises(GitHubError) as error:
        client.create_review(1, commit_id=head, event="COMMENT", body="b", comments=[])
    assert error.value.status == 502
    standin.fail_next("GET", r"/pulls/1$", 503, times=10)
    with pytest.raises(GitHubError):
        client.pull(1)  # bounded: four attempts, then the job's own retry takes over


def test_rate_limits_are_waited_out_as_github_says(standin, tmp_path):
    repo = make_repo(standin, tmp_path, "limited")
    repo.open_pull(1, {"BUCK": BUCK_DEFECT})
    client = _app(standin).repository(1, OWNER, "limited")
    standin.fail_next("POST", r"/issues/1/comments$", 403, body=SECONDARY_RATE_LIMIT_BODY, headers={"retry-after": "1"})
    started = time.monotonic()
    client.create_issue_comment(1, "after the limit")  # a limited write was not carried out: sent again
    assert time.monotonic() - started >= 1.0
    assert len(standin.issue_comments(OWNER, "limited", 1)) == 1
    reset = str(int(time.time()) + 1)
    standin.fail_next("GET", r"/pulls/1$", 429, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset})
    client.pull(1)
    # A wait longer than allowed fails the call instead of blocking the worker.
    impatient = _app(standin, max_rate_limit_wait_s=5).repository(1, OWNER, "limited")
    standin.fail_next("GET", r"/pulls/1$", 403, body=SECONDARY_RATE_LIMIT_BODY, headers={"retry-after": "600"})
    with pytest.raises(GitHubError, match="rate limited"):
        impatient.pull(1)
    # A 403 that is not a limit (a missing permission) is not retried.
    standin.fail_next("GET", r"/pulls/1$", 403, body={"message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError) as error:
        client.pull(1)
    assert error.value.status == 403


def test_a_diff_too_large_for_github_is_rebuilt_from_the_files_endpoint(standin, tmp_path):
    repo = make_repo(standin, tmp_path, "large")
    repo.open_pull(1, {"BUCK": BUCK_DEFECT, "docs/new.md": "one\ntwo\n"})
    client = _app(standin).repository(1, OWNER, "large")
    direct = parse_diff(client.pull_diff(1))
    standin.set_diff_limits(max_files=1)
    rebuilt = parse_diff(client.pull_diff(1))
    assert {f.path: (f.added, f.commentable) for f in rebuilt.files} == {
        f.path: (f.added, f.commentable) for f in direct.files
    }


def test_mirrors_fetch_pull_heads_into_one_bare_repository(standin, tmp_path):
    repo = make_repo(standin, tmp_path, "mirrored")
    first = repo.open_pull(1, {"BUCK": BUCK_DEFECT})
    second = repo.open_pull(2, {"shims.cpp": "int shim() { return 2; }\n"})
    mirrors = Mirrors(tmp_path / "mirrors")
    fetched = mirrors.fetch_pull(
        OWNER, "mirrored", f"file://{repo.path}", 1, base_ref="main", base_sha=repo.base, head_sha=first
    )
    assert fetched.base_sha == repo.base and fetched.path == tmp_path / "mirrors" / "pytorch" / "mirrored.git"
    again = mirrors.fetch_pull(
        OWNER, "mirrored", f"file://{repo.path}", 2, base_ref="main", base_sha=repo.base, head_sha=second
    )
    assert again.path == fetched.path
    assert gitrepos.rev_parse(fetched.path, "refs/pr-check/pull/1/head") == first
    with pytest.raises(Exception, match="refs/pull/3/head"):
        mirrors.fetch_pull(
            OWNER, "mirrored", f"file://{repo.path}", 3, base_ref="main", base_sha=repo.base, head_sha="0" * 40
        )
    with pytest.raises(Exception, match="refusing"):
        mirrors.path_for("..", "x")


def test_failed_deliveries_are_redelivered_once(standin, tmp_path):
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    old = (datetime.now(UTC) - timedelta(days=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
    failed = standin.add_delivery("failed-guid", "pull_request", 502, action="opened")
    standin.add_delivery("ok-guid", "pull_request", 202, action="opened")
    standin.add_delivery("recovered-guid", "pull_request", 500)
    standin.add_delivery("recovered-guid", "pull_request", 202, redelivery=True)
    standin.add_delivery("too-old-guid", "pull_request", 500, delivered_at=old)
    standin.add_delivery("received-guid", "issue_comment", 504)
    store.put("job", "received-guid", "{}")  # the service did accept it, though GitHub saw a timeout
    app = _app(standin)
    assert redeliver_failed(app, store) == ["failed-guid"]
    assert standin.delivery_attempts == [failed]
    assert redeliver_failed(app, store) == []
    assert standin.delivery_attempts == [failed]


def test_a_rebuilt_diff_says_which_files_were_deleted_and_added(standin, tmp_path):
    # Past GitHub's diff limits the diff is rebuilt from the files endpoint: a deletion must still
    # read as one (unidiff takes `--- a/x` + `+++ /dev/null` without `deleted file mode` for an edit).
    repo = make_repo(standin, tmp_path, "deleting")
    repo.open_pull(1, {"shims.cpp": None, "docs/new.md": "one\n"})
    client = _app(standin).repository(1, OWNER, "deleting")
    direct = {f.path: f.status for f in parse_diff(client.pull_diff(1)).files}
    standin.set_diff_limits(max_files=1)
    rebuilt = client.pull_diff(1)
    assert "deleted file mode 100644" in rebuilt and "new file mode 100644" in rebuilt
    assert (
        {f.path: f.status for f in parse_diff(rebuilt).files}
        == direct
        == {"shims.cpp": "deleted", "docs/new.md": "added"}
    )


def test_a_server_without_run_details_gets_the_dispatch_without_them(tmp_path):
    with GitHubStandIn(APP_ID, app_key_pair().public_pem, run_details=False) as older:
        make_repo(older, tmp_path, "enterprise")
        older.add_workflow(OWNER, "enterprise", "gpu-smoke.yml")
        app = _app(older)
        assert app.repository(1, OWNER, "enterprise").dispatch_workflow("gpu-smoke.yml", "main", {"pr": "1"}) is None
        # The server is remembered: the next dispatch is sent without the parameter at once.
        assert app.repository(1, OWNER, "enterprise").dispatch_workflow("gpu-smoke.yml", "main", {"pr": "2"}) is None
        sent = [r for r in older.request_log if r["method"] == "POST" and r["path"].endswith("/dispatches")]
        assert [r["status"] for r in sent] == [422, 204, 204]
        assert [d["inputs"]["pr"] for d in older.dispatches(OWNER, "enterprise")] == ["1", "2"]
        assert not any(d["return_run_details"] for d in older.dispatches(OWNER, "enterprise"))
