"""A pull request's life with the App: opened, pushed with shifted lines, fixed; and `/pr-check`.

Real uvicorn, a real `python -m webhooks.worker` process (SQLite queue), the GitHub stand-in and
real bare git repositories.
"""

from __future__ import annotations

import pytest

from tests.test_app_harness import (
    BUCK_DEFECT,
    BUCK_FIXED,
    BUCK_SHIFTED,
    DEFECT_LINE,
    OWNER,
    RULE,
    SHIFTED_LINE,
    completed_check_runs,
    make_repo,
    running_app,
    wait_for,
)


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("app")) as app:
        yield app


def _bot_comments(standin, repo: str, number: int) -> list[dict]:
    return [c for c in standin.review_comments(OWNER, repo, number) if c["user"]["type"] == "Bot"]


def _app_replies(standin, repo: str, number: int) -> list[dict]:
    return [c for c in standin.issue_comments(OWNER, repo, number) if c["user"]["login"] == standin.bot_login]


def test_a_pull_request_is_reviewed_then_followed_through_pushes(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "lifecycle")
    head = repo.open_pull(1, {"BUCK": BUCK_DEFECT})

    response = running.deliver("pull_request", standin.pull_request_payload(OWNER, "lifecycle", 1, "opened"))
    assert response.status_code == 202 and response.json()["outcome"] == "accepted"

    runs = wait_for(lambda: completed_check_runs(standin, OWNER, "lifecycle", head), what="the check run", timeout=20)
    assert len(runs) == 1
    assert runs[0]["conclusion"] == "neutral"  # minor only
    assert RULE in runs[0]["output"]["summary"]
    reviews = standin.reviews(OWNER, "lifecycle", 1)
    assert [r["state"] for r in reviews] == ["COMMENTED"]
    assert reviews[0]["commit_id"] == head
    comments = _bot_comments(standin, "lifecycle", 1)
    assert [(c["path"], c["line"]) for c in comments] == [("BUCK", DEFECT_LINE)]
    assert comments[0]["body"].startswith(f"**{RULE}** (minor)")
    assert "<!-- pr-check:fp=" in comments[0]["body"]
    assert "```suggestion\n    link_whole = True,\n    supports_python_dlopen = True,\n```" in comments[0]["body"]
    annotations = standin.annotations(OWNER, "lifecycle", runs[0]["id"])
    assert [(a["path"], a["start_line"], a["annotation_level"]) for a in annotations] == [
        ("BUCK", DEFECT_LINE, "warning")
    ]

    # A push that only moves the defect two lines down: still exactly one comment, on the new line.
    shifted, payload = repo.push(1, {"BUCK": BUCK_SHIFTED}, parent=head)
    assert running.deliver("pull_request", payload).status_code == 202
    wait_for(lambda: completed_check_runs(standin, OWNER, "lifecycle", shifted), what="the second check run")
    comments = _bot_comments(standin, "lifecycle", 1)
    visible = [c for c in comments if c["line"] is not None]
    assert [(c["path"], c["line"]) for c in visible] == [("BUCK", SHIFTED_LINE)]
    assert len(comments) == 1  # the outdated one was removed, not left beside a duplicate

    # A push that fixes it: the comment goes, the check run succeeds.
    fixed, payload = repo.push(1, {"BUCK": BUCK_FIXED}, parent=shifted)
    assert running.deliver("pull_request", payload).status_code == 202
    runs = wait_for(lambda: completed_check_runs(standin, OWNER, "lifecycle", fixed), what="the third check run")
    assert [r["conclusion"] for r in runs] == ["success"]
    assert _bot_comments(standin, "lifecycle", 1) == []
    # No review is posted for a clean head once the pull request has one: there is nothing to say.
    assert [r["commit_id"] for r in standin.reviews(OWNER, "lifecycle", 1)] == [head, shifted]


def test_the_same_head_delivered_again_posts_nothing_new(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "again")
    head = repo.open_pull(2, {"BUCK": BUCK_DEFECT})
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "again", 2, "opened"))
    wait_for(lambda: completed_check_runs(standin, OWNER, "again", head), what="the check run")
    # `reopened` has a new delivery id and the same head: the App knows it posted for this head.
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "again", 2, "reopened"))
    wait_for(lambda: running.queue.store.keys("active") == [], what="the queue to drain")
    assert len(standin.reviews(OWNER, "again", 2)) == 1
    assert len(standin.check_runs(OWNER, "again", head)) == 1
    assert len(_bot_comments(standin, "again", 2)) == 1


def test_pr_check_commands_are_answered_by_permission(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "commands")
    head = repo.open_pull(3, {"BUCK": BUCK_DEFECT}, author="alice")
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "commands", 3, "opened"))
    wait_for(lambda: completed_check_runs(standin, OWNER, "commands", head), what="the first check run")

    # Someone who is neither the author nor a writer: a polite refusal, and no review.
    refused = standin.add_issue_comment(OWNER, "commands", 3, "/pr-check", "mallory", author_association="CONTRIBUTOR")
    running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "commands", refused["id"]))
    replies = wait_for(lambda: _app_replies(standin, "commands", 3), what="the refusal")
    assert "Thanks, @mallory" in replies[0]["body"] and "author" in replies[0]["body"]
    assert [r["content"] for r in standin.reactions(OWNER, "commands", refused["id"])] == ["eyes"]
    assert len(completed_check_runs(standin, OWNER, "commands", head)) == 1

    # The author may ask for a re-review: a fresh check run for the head.
    asked = standin.add_issue_comment(
        OWNER, "commands", 3, "please look again\n/pr-check", "alice", author_association="CONTRIBUTOR"
    )
    running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "commands", asked["id"]))
    runs = wait_for(
        lambda: (
            len(completed_check_runs(standin, OWNER, "commands", head)) == 2
            and completed_check_runs(standin, OWNER, "commands", head)
        ),
        what="the re-review",
    )
    assert [r["conclusion"] for r in runs] == ["neutral", "neutral"]
    assert [r["content"] for r in standin.reactions(OWNER, "commands", asked["id"])] == ["eyes"]
    assert len(_bot_comments(standin, "commands", 3)) == 1  # the standing comment is kept, not repeated

    # Bad arguments: usage; explain: the rule's documentation; a bot's command: ignored.
    bad = standin.add_issue_comment(OWNER, "commands", 3, "/pr-check smok", "maria")
    running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "commands", bad["id"]))
    explain = standin.add_issue_comment(
        OWNER, "commands", 3, f"/pr-check explain {RULE}", "mallory", author_association="NONE"
    )
    running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "commands", explain["id"]))
    bot = standin.add_issue_comment(OWNER, "commands", 3, "/pr-check", "other-app[bot]", user_type="Bot")
    assert (
        running.deliver("issue_comment", standin.issue_comment_payload(OWNER, "commands", bot["id"])).json()["outcome"]
        == "ignored"
    )
    replies = wait_for(
        lambda: len(_app_replies(standin, "commands", 3)) == 3 and _app_replies(standin, "commands", 3),
        what="usage and explanation",
    )
    # The two commands run as separate jobs on concurrent worker threads: their replies may land
    # in either order, so each is found by what it answers.
    later = [reply["body"] for reply in replies[1:]]
    assert sum("usage: /pr-check [smoke [SHA] | fix | explain RULE | help]" in body for body in later) == 1
    assert sum(body.startswith(f"**{RULE}** (minor)") for body in later) == 1
    wait_for(lambda: running.queue.store.keys("active") == [], what="the queue to drain")
    assert len(_app_replies(standin, "commands", 3)) == 3  # nothing answered the other bot


def test_a_rerun_of_the_check_reviews_again_and_a_refused_review_still_lands(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "rerun")
    head = repo.open_pull(4, {"BUCK": BUCK_DEFECT})
    # GitHub refuses the inline comments once (it does, when it reads a diff differently).
    standin.fail_next(
        "POST",
        r"/pulls/4/reviews$",
        422,
        body={"message": "Unprocessable Entity", "errors": ["Line could not be resolved"]},
    )
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "rerun", 4))
    [run] = wait_for(lambda: completed_check_runs(standin, OWNER, "rerun", head), what="the check run")
    [review] = standin.reviews(OWNER, "rerun", 4)
    assert "`BUCK:4`" in review["body"] and _bot_comments(standin, "rerun", 4) == []

    running.deliver("check_run", standin.check_run_payload(OWNER, "rerun", run["id"], "rerequested"))
    runs = wait_for(
        lambda: (
            len(completed_check_runs(standin, OWNER, "rerun", head)) == 2
            and completed_check_runs(standin, OWNER, "rerun", head)
        ),
        what="the re-run",
    )
    assert [r["conclusion"] for r in runs] == ["neutral", "neutral"]
    # The re-run placed the comment the refused review could not carry.
    assert [(c["path"], c["line"]) for c in _bot_comments(standin, "rerun", 4)] == [("BUCK", DEFECT_LINE)]
    assert len(standin.reviews(OWNER, "rerun", 4)) == 2
