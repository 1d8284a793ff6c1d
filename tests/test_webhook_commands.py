"""`/pr-check` parsing and permission rules, and deliveries -> jobs, on GitHub's example payloads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checks
from webhooks.commands import (
    Command,
    CommandError,
    explain_text,
    find_command_line,
    may_run,
    needs_permission_lookup,
    parse_command,
    refusal_text,
)
from webhooks.jobs import (
    CommandCommented,
    Ignored,
    PullRequestPushed,
    ReviewRequested,
    WorkflowRunChanged,
    job_from_delivery,
    job_from_json,
    job_to_json,
)

EXAMPLES = Path("/work/shared/github/webhook-examples")  # GitHub's documented examples, where present
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="GitHub example payloads not on this machine")


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("/pr-check", Command("review")),
        ("/pr-check smoke", Command("smoke")),
        ("/pr-check smoke 0123ABCdef", Command("smoke", sha="0123abcdef")),
        ("/pr-check explain cuda-guard-missing", Command("explain", "cuda-guard-missing")),
        ("/pr-check help", Command("help")),
        ("/pr-check fix", Command("fix")),
    ],
)
def test_commands_parse(line, parsed):
    assert parse_command(line) == parsed


@pytest.mark.parametrize(
    "line",
    [
        "/pr-check smok",
        "/pr-check explain",
        "/pr-check smoke now",
        '/pr-check "x',
        "/pr-check --help",
        "/pr-check fix now",
    ],
)
def test_bad_arguments_give_usage(line):
    result = parse_command(line)
    assert isinstance(result, CommandError)
    assert result.usage == "usage: /pr-check [smoke [SHA] | fix | explain RULE | help]"


def test_the_command_is_found_on_its_own_line():
    assert find_command_line("thanks!\n  /pr-check smoke  \nbye") == "/pr-check smoke"
    assert find_command_line("see /pr-check for details") is None
    assert find_command_line("/pr-checker") is None


def test_who_may_run_what():
    review, smoke = Command("review"), Command("smoke")
    assert may_run(review, commenter="alice", pr_author="alice", permission="read")
    assert not may_run(review, commenter="mallory", pr_author="alice", permission="read")
    assert may_run(review, commenter="maria", pr_author="alice", permission="write")
    assert not may_run(smoke, commenter="alice", pr_author="alice", permission="read")
    assert may_run(smoke, commenter="maria", pr_author="alice", permission="maintain")
    assert may_run(Command("help"), commenter="anyone", pr_author="alice", permission="none")
    # The permission API is asked only when the answer can matter.
    assert not needs_permission_lookup(review, commenter="alice", pr_author="alice", association="CONTRIBUTOR")
    assert not needs_permission_lookup(smoke, commenter="mallory", pr_author="alice", association="NONE")
    assert needs_permission_lookup(smoke, commenter="maria", pr_author="alice", association="MEMBER")
    assert "write access" in refusal_text(smoke, "mallory")


def test_only_writers_may_have_fixes_pushed():
    fix = Command("fix")
    assert may_run(fix, commenter="maria", pr_author="alice", permission="write")
    assert may_run(fix, commenter="maria", pr_author="alice", permission="maintain")
    assert may_run(fix, commenter="root", pr_author="alice", permission="admin")
    assert not may_run(fix, commenter="alice", pr_author="alice", permission="read")  # the author, without write
    assert not may_run(fix, commenter="mallory", pr_author="alice", permission="read")
    assert not may_run(fix, commenter="triager", pr_author="alice", permission="triage")
    # The author is asked about: a CONTRIBUTOR cannot hold write, so no API call is needed to refuse.
    assert not needs_permission_lookup(fix, commenter="alice", pr_author="alice", association="CONTRIBUTOR")
    assert needs_permission_lookup(fix, commenter="alice", pr_author="alice", association="COLLABORATOR")
    to_author = refusal_text(fix, "alice", "alice")
    assert to_author.startswith("Thanks, @alice. `/pr-check fix` pushes to this branch as the App, so it needs write")
    assert "run `pr-check fix` in your checkout" in to_author
    assert "`pr-check fix` in your checkout" not in refusal_text(fix, "mallory", "alice")
    assert "needs write access" in refusal_text(fix, "mallory", "alice")


def test_explain_uses_the_checks_documentation():
    known = checks.ALL[0]
    text = explain_text(known.id, checks.ALL)
    assert text.startswith(f"**{known.id}** ({known.severity.label})")
    assert known.doc.strip().splitlines()[0] in text
    unknown = explain_text("no-such-rule", checks.ALL)
    assert unknown.startswith("Unknown rule `no-such-rule`.") and f"`{known.id}`" in unknown


def _example(name: str) -> dict:
    return json.loads((EXAMPLES / name).read_text())


@needs_examples
def test_deliveries_become_jobs():
    opened = job_from_delivery("pull_request", _example("pull_request.opened.json"))
    assert isinstance(opened, PullRequestPushed)
    assert (opened.repo.full_name, opened.number, opened.head_sha[:7], opened.repo.installation_id) == (
        "Codertocat/Hello-World",
        2,
        "ec26c3e",
        1,
    )
    assert job_from_json(job_to_json(opened)) == opened
    assert isinstance(job_from_delivery("pull_request", _example("pull_request.synchronize.json")), PullRequestPushed)
    run = job_from_delivery("workflow_run", _example("workflow_run.completed.json"))
    assert isinstance(run, WorkflowRunChanged) and run.conclusion == "success" and run.repo.installation_id is None
    suite = job_from_delivery("check_suite", _example("check_suite.rerequested.json"))
    assert isinstance(suite, ReviewRequested) and suite.number == 2

    comment = _example("issue_comment.created.on-pull-request.json")
    assert isinstance(job_from_delivery("issue_comment", comment), Ignored)  # "/review" is not ours
    comment["comment"]["body"] = "/pr-check smoke"
    command = job_from_delivery("issue_comment", comment)
    assert isinstance(command, CommandCommented) and command.command_line == "/pr-check smoke"
    assert job_from_json(job_to_json(command)) == command
    comment["sender"]["type"] = "Bot"
    assert job_from_delivery("issue_comment", comment) == Ignored("comment from a bot")


@needs_examples
def test_deliveries_that_need_no_work():
    assert isinstance(job_from_delivery("issue_comment", _example("issue_comment.created.on-issue.json")), Ignored)
    assert isinstance(job_from_delivery("ping", _example("ping.json")), Ignored)
    assert isinstance(job_from_delivery("installation", _example("installation.created.json")), Ignored)
    draft = _example("pull_request.opened.json")
    draft["pull_request"]["draft"] = True
    assert job_from_delivery("pull_request", draft) == Ignored("draft pull request")
    closed = _example("pull_request.opened.json")
    closed["action"] = "closed"
    assert isinstance(job_from_delivery("pull_request", closed), Ignored)
