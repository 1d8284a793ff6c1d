"""The App's logic without a server or a network: deliveries verified and read (webhooks/delivery.py),
`/pr-check` commands answered (webhooks/command_requests.py), and reviews planned and posted, driven
through the recording client (tests/recording_client.py) and a real SQLite state store.

Every expected reply, call and placement below is written from the rule it checks, by hand.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
from pathlib import Path

import pytest

import checks
from bot.diff import parse_diff
from bot.model import Finding, Severity
from bot.render.github_review import (
    PostedComment,
    fingerprint_marker,
    plan_review,
    review_marker,
)
from tests.recording_client import BOT_LOGIN, RecordingApp, RecordingRepository
from webhooks.command_requests import answer_command
from webhooks.commands import help_text
from webhooks.delivery import TOO_LARGE, Delivery, Rejection, accept_delivery, declared_too_large
from webhooks.github_api import AppClient, PullRequest, RepositoryClient
from webhooks.jobs import (
    CommandCommented,
    Ignored,
    PullRequestPushed,
    RepoRef,
    ReviewRequested,
    WorkflowRunChanged,
)
from webhooks.metrics import WorkerMetrics
from webhooks.mirror import Mirrors
from webhooks.queue import Attempt
from webhooks.review_job import _post_review, bot_comments
from webhooks.services import Services
from webhooks.settings import Settings
from webhooks.smoke_approval import record_head_seen
from webhooks.store import open_store

SECRET = b"unit-test-secret"
EXAMPLES = Path("/work/shared/github/webhook-examples")  # GitHub's documented example payloads
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="GitHub example payloads not on this machine")
HEAD = "c" * 40
BASE = "b" * 40


# -- deliveries ------------------------------------------------------------------------------
def signed(body: bytes, event: str, delivery: str = "72d3162e-cc78-11e3-81ab-4c9367dc0958") -> dict[str, str]:
    """The headers GitHub sends with `body` (names in GitHub's own mixed case)."""
    digest = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": f"sha256={digest}",
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/044aadd",
    }


def example(name: str) -> bytes:
    return (EXAMPLES / name).read_bytes()


def pr_comment(body: str, **user) -> bytes:
    """The real issue_comment-on-a-pull-request delivery, with another comment body (and user fields)."""
    payload = json.loads(example("issue_comment.created.on-pull-request.json"))
    payload["comment"]["body"] = body
    payload["comment"]["user"].update(user)
    return json.dumps(payload).encode()


@needs_examples
def test_a_signed_pull_request_delivery_becomes_a_push_to_review():
    body = example("pull_request.opened.json")
    result = accept_delivery(SECRET, signed(body, "pull_request"), body)
    assert isinstance(result, Delivery)
    assert (result.delivery_id, result.event_label) == ("72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request")
    assert isinstance(result.work, PullRequestPushed)
    assert result.work.repo == RepoRef("Codertocat", "Hello-World", 1)
    assert (result.work.number, result.work.head_sha, result.work.action) == (
        2,
        "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        "opened",
    )


@needs_examples
def test_each_example_event_becomes_the_job_of_its_kind():
    suite = example("check_suite.rerequested.json")
    rerun = accept_delivery(SECRET, signed(suite, "check_suite"), suite)
    assert rerun.work == ReviewRequested(RepoRef("Codertocat", "Hello-World", 957387), 2, "octocoders-linter[bot]")

    run = example("workflow_run.completed.json")
    followed = accept_delivery(SECRET, signed(run, "workflow_run"), run).work
    assert isinstance(followed, WorkflowRunChanged)
    assert (followed.repo, followed.run_id, followed.status, followed.conclusion, followed.event) == (
        RepoRef("octo-org", "octo-repo", None),
        289782451,
        "completed",
        "success",
        "repository_dispatch",
    )

    command = pr_comment("Looks right.\n/pr-check smoke\nthanks")
    asked = accept_delivery(SECRET, signed(command, "issue_comment"), command).work
    assert asked == CommandCommented(
        RepoRef("parthasarathi189897", "todo-list", 35919945),
        8,
        1556378739,
        "/pr-check smoke",
        "parthasarathi189897",
        "OWNER",
        asked.created_at,
    )
    assert asked.created_at > 0  # GitHub's clock, read from the comment


@needs_examples
def test_deliveries_that_need_no_work_are_ignored_with_a_reason():
    from_bot = pr_comment("/pr-check", type="Bot", login="other-app[bot]")
    assert accept_delivery(SECRET, signed(from_bot, "issue_comment"), from_bot).work == Ignored("comment from a bot")
    not_ours = pr_comment("/review")
    assert accept_delivery(SECRET, signed(not_ours, "issue_comment"), not_ours).work == Ignored("no /pr-check command")
    on_issue = example("issue_comment.created.on-issue.json")
    assert accept_delivery(SECRET, signed(on_issue, "issue_comment"), on_issue).work == Ignored(
        "comment on an issue, not a pull request"
    )
    ping = example("ping.json")
    assert accept_delivery(SECRET, signed(ping, "ping"), ping) == Delivery(
        "72d3162e-cc78-11e3-81ab-4c9367dc0958", "ping", Ignored("event 'ping' action None needs no work")
    )


@needs_examples
def test_an_unknown_event_is_ignored_and_counted_as_other():
    body = example("pull_request.opened.json")
    result = accept_delivery(SECRET, signed(body, "gollum"), body)
    assert result == Delivery(
        "72d3162e-cc78-11e3-81ab-4c9367dc0958", "other", Ignored("event 'gollum' action 'opened' needs no work")
    )


@needs_examples
def test_a_bad_or_missing_signature_is_refused_before_anything_is_read():
    body = example("pull_request.opened.json")
    headers = signed(body, "pull_request")
    refused = Rejection(401, "bad_signature", "unverified", "bad or missing X-Hub-Signature-256")
    assert accept_delivery(SECRET, headers, body + b" ") == refused  # one byte more than was signed
    assert accept_delivery(b"another-secret", headers, body) == refused
    unsigned = {name: value for name, value in headers.items() if name != "X-Hub-Signature-256"}
    assert accept_delivery(SECRET, unsigned, body) == refused
    sha1 = {**headers, "X-Hub-Signature-256": headers["X-Hub-Signature-256"].replace("sha256=", "sha1=")}
    assert accept_delivery(SECRET, sha1, body) == refused


def test_signed_deliveries_of_the_wrong_shape_are_malformed_under_their_event_label():
    def outcome(body: bytes, headers: dict[str, str]) -> tuple:
        result = accept_delivery(SECRET, headers, body)
        assert isinstance(result, Rejection)
        return result.status, result.outcome, result.event_label, result.message

    assert outcome(b"{not json", signed(b"{not json", "push")) == (400, "malformed", "push", "body is not JSON")
    assert outcome(b"[1, 2]", signed(b"[1, 2]", "push")) == (400, "malformed", "push", "body is not a JSON object")
    no_id = {**signed(b"{}", "push"), "X-GitHub-Delivery": "../../etc"}
    assert outcome(b"{}", no_id) == (400, "malformed", "push", "missing X-GitHub-Event or X-GitHub-Delivery")


def test_header_names_are_read_in_any_case_and_the_first_of_a_repeat_counts():
    body = b'{"zen": "Keep it logically awesome."}'
    lower = [(name.lower(), value) for name, value in signed(body, "ping").items()]
    assert accept_delivery(SECRET, lower, body).event_label == "ping"
    repeated = [*lower, ("x-hub-signature-256", "sha256=" + "0" * 64)]
    assert isinstance(accept_delivery(SECRET, repeated, body), Delivery)
    forged_first = [("x-hub-signature-256", "sha256=" + "0" * 64), *lower]
    assert isinstance(accept_delivery(SECRET, forged_first, body), Rejection)


def test_a_body_past_the_cap_is_too_large_whether_declared_or_counted():
    body = b'{"zen": "x"}'
    assert accept_delivery(SECRET, signed(body, "ping"), body, max_body_bytes=len(body) - 1) is TOO_LARGE
    assert Rejection(413, "too_large", "unverified") == TOO_LARGE
    assert declared_too_large({"Content-Length": "11"}, 10) is TOO_LARGE
    assert declared_too_large({"Content-Length": "10"}, 10) is None
    assert declared_too_large({"Content-Length": "-5"}, 10) is None  # not a length: the read counts instead
    assert declared_too_large({}, 10) is None


# -- the recording client keeps up with the protocols -----------------------------------------
@pytest.mark.parametrize(("protocol", "fake"), [(RepositoryClient, RecordingRepository), (AppClient, RecordingApp)])
def test_the_recording_client_has_every_protocol_method_with_its_parameters(protocol, fake):
    for name, member in vars(protocol).items():
        if name.startswith("_") or not callable(member):
            continue
        assert list(inspect.signature(getattr(fake, name)).parameters) == list(inspect.signature(member).parameters), (
            name
        )


# -- `/pr-check` commands ----------------------------------------------------------------------
REPO = RepoRef("octo", "engine", 7)


@pytest.fixture
def app(tmp_path):
    """Services over a recording GitHub with one open pull request (#12 by alice) and a SQLite store."""
    settings = Settings(
        webhook_secret=SECRET,
        app_id="4242",
        private_key_pem="",
        github_api_url="http://github.invalid",
        data_dir=tmp_path,
        queue_url=f"sqlite:///{tmp_path / 'queue.sqlite3'}",
    )
    store = open_store(settings.queue_url)
    github = RecordingApp(settings.app_id)
    repo = github.add_repository("octo", "engine", installation_id=7)
    repo.add_pull(
        PullRequest(
            12, "open", False, HEAD, "feature", BASE, "main", "alice", "https://github.invalid/octo/engine.git", "main"
        )
    )
    repo.permissions.update({"maria": "write", "rita": "read"})
    services = Services(settings, store, github, Mirrors(settings.mirrors_dir), WorkerMetrics(store))
    yield services, github, repo
    store.close()


def command(
    line: str, commenter: str, association: str = "COLLABORATOR", created_at: float = 200.0
) -> CommandCommented:
    return CommandCommented(REPO, 12, 501, line, commenter, association, created_at)


def answer(services: Services, job: CommandCommented) -> str:
    return answer_command(services, job, Attempt("job-1", 1, True))


def replies(repo: RecordingRepository) -> list[str]:
    return [comment.body for comment in repo.issue_comments]


def test_help_is_answered_once_without_reading_the_pull_request(app):
    services, github, repo = app
    assert answer(services, command("/pr-check help", "rita")) == "help"
    assert [call.method for call in github.calls] == ["repository", "add_reaction", "create_issue_comment"]
    assert github.calls_to("add_reaction") == [{"comment_id": 501, "content": "eyes"}]
    assert replies(repo) == [help_text()]
    answer(services, command("/pr-check help", "rita"))  # the job run again (a retry): seen again, not answered
    assert replies(repo) == [help_text()]
    assert repo.reactions == [(501, "eyes")]


def test_explain_answers_with_the_rules_documentation_or_names_the_known_ones(app):
    services, _, repo = app
    rule = checks.ALL[0]
    assert answer(services, command(f"/pr-check explain {rule.id}", "rita")) == "explained"
    assert replies(repo)[0].startswith(f"**{rule.id}** ({rule.severity.label}): {rule.title}\n\n")
    unknown = CommandCommented(REPO, 12, 502, "/pr-check explain no-such-rule", "rita", "NONE", 200.0)
    answer(services, unknown)
    assert replies(repo)[1].startswith("Unknown rule `no-such-rule`. Known rules: `")


def test_a_command_that_does_not_parse_gets_the_usage(app):
    services, _, repo = app
    assert answer(services, command("/pr-check smok", "rita")) == "usage"
    assert replies(repo)[0].startswith("Sorry, I could not read that command: ")
    assert "```\nusage: /pr-check [smoke [SHA] | fix | explain RULE | help]\n```" in replies(repo)[0]


def test_a_read_only_collaborator_is_refused_a_review_and_a_smoke_run(app):
    services, github, repo = app
    assert answer(services, command("/pr-check", "rita")) == "refused"
    assert github.calls_to("collaborator_permission") == [{"login": "rita"}]
    assert replies(repo) == [
        "Thanks, @rita. A re-review can be asked for by the pull request's author or by anyone "
        "with write access. A maintainer can run it for you."
    ]
    smoke = CommandCommented(REPO, 12, 503, "/pr-check smoke", "rita", "COLLABORATOR", 200.0)
    assert answer(services, smoke) == "refused"
    assert replies(repo)[1] == (
        "Thanks, @rita. The GPU smoke job runs this pull request's code on our GPU machines, "
        "so it needs write access to the repository. A maintainer can run it for you."
    )
    assert github.calls_to("dispatch_workflow") == [] and github.calls_to("create_check_run") == []


def test_a_stranger_is_refused_without_asking_github_for_a_permission(app):
    services, github, repo = app
    assert answer(services, command("/pr-check", "mallory", association="NONE")) == "refused"
    assert github.calls_to("collaborator_permission") == []
    assert replies(repo)[0].startswith("Thanks, @mallory. A re-review")


def test_the_author_and_a_maintainer_pass_the_permission_rule(app):
    # On a closed pull request the answer after the permission rule is "closed", with no review to run.
    services, github, repo = app
    repo.pulls[12] = PullRequest(12, "closed", False, HEAD, "feature", BASE, "main", "alice", "", "main")
    assert answer(services, command("/pr-check", "alice", association="CONTRIBUTOR")) == "closed"
    assert github.calls_to("collaborator_permission") == []  # the author needs no lookup
    maintainer = CommandCommented(REPO, 12, 504, "/pr-check", "maria", "MEMBER", 200.0)
    assert answer(services, maintainer) == "closed"
    assert github.calls_to("collaborator_permission") == [{"login": "maria"}]
    assert replies(repo) == [
        "@alice, this pull request is closed; there is nothing to review.",
        "@maria, this pull request is closed; there is nothing to review.",
    ]


def test_a_maintainers_smoke_request_dispatches_the_head_seen_before_the_comment_once(app):
    services, _github, repo = app
    repo.workflows["gpu-smoke.yml"] = 77
    repo.refs["main"] = "d" * 40
    record_head_seen(services.store, REPO, 12, HEAD, 100.0)
    job = command("/pr-check smoke", "maria", created_at=200.0)
    assert answer(services, job) == "smoke-dispatched"
    [(workflow, ref, inputs)] = repo.dispatches
    assert (workflow, ref, inputs["pr"], inputs["head_sha"]) == ("gpu-smoke.yml", "main", "12", HEAD)
    [check] = repo.check_run_list
    assert (check.name, check.head_sha, check.status, check.external_id) == (
        "pr-check / cuda-smoke",
        HEAD,
        "queued",
        inputs["correlation_id"],
    )
    assert answer(services, job) == "smoke-already-dispatched"  # a retried job does not dispatch again
    assert len(repo.dispatches) == 1 and replies(repo) == []


def test_a_smoke_request_with_no_head_known_before_it_is_not_approved(app):
    services, _, repo = app
    record_head_seen(services.store, REPO, 12, HEAD, 300.0)  # pushed after the comment was written
    assert answer(services, command("/pr-check smoke", "maria", created_at=200.0)) == "smoke-not-approved"
    assert replies(repo)[0].startswith(
        "@maria, the GPU smoke job was not started: no head commit of this pull "
        "request is known from before your comment"
    )
    assert repo.dispatches == []


# -- planning and posting a review -----------------------------------------------------------
# BUCK: head lines 3-6 in one hunk (4 and 5 added), lines 20-22 in another (21 added).
DIFF_TEXT = (
    "diff --git a/BUCK b/BUCK\n--- a/BUCK\n+++ b/BUCK\n@@ -3,2 +3,4 @@\n a\n+b\n+c\n d\n@@ -18,2 +20,3 @@\n x\n+y\n z\n"
)
DIFF = parse_diff(DIFF_TEXT)


def finding(line: int, fingerprint: str, severity: Severity = Severity.MAJOR) -> Finding:
    return Finding(
        rule="dep-undeclared-header",
        severity=severity,
        title="Header from an undeclared dep",
        path="BUCK",
        line=line,
        end_line=line,
        message="why",
        fingerprint=fingerprint,
    )


def test_a_finding_inside_the_diff_is_inline_and_one_outside_it_is_in_the_body():
    plan = plan_review([finding(21, "in"), finding(10, "out", Severity.MINOR)], DIFF, [], [], HEAD)
    assert [(c.path, c.line, c.start_line, c.fingerprint) for c in plan.comments] == [("BUCK", 21, None, "in")]
    assert plan.comments[0].body.endswith(fingerprint_marker("in"))
    assert [f.fingerprint for f in plan.off_diff] == ["out"]
    assert plan.body.splitlines() == [
        f"pr-check found 2 issues (1 major, 1 minor) at `{HEAD[:12]}`.",
        "1 inline comment below, for the findings at major or above on the lines this pull request changes.",
        "",
        "<details>",
        "<summary>1 minor finding below major, not posted inline (1 rule)</summary>",
        "",
        "**`dep-undeclared-header`** (minor): 1 finding",
        "- `BUCK:10`: Header from an undeclared dep",
        "",
        "Each with its message, evidence and fix: the `pr-check` check run.",
        "</details>",
        "",
        "Comment `/pr-check help` for commands.",
        review_marker(HEAD),
    ]
    assert (plan.event, plan.post_review) == ("COMMENT", True)


def test_a_fixed_findings_discussed_thread_is_answered_and_an_undiscussed_one_removed():
    discussed = PostedComment(31, "BUCK", 4, None, "old\n\n" + fingerprint_marker("gone-1"), human_replied=True)
    quiet = PostedComment(32, "BUCK", 5, None, "old\n\n" + fingerprint_marker("gone-2"))
    answered = PostedComment(
        33, "BUCK", 21, None, "old\n\n" + fingerprint_marker("gone-3"), human_replied=True, fixed_reply_posted=True
    )
    plan = plan_review([], DIFF, [discussed, quiet, answered], [], HEAD)
    assert plan.replies == ((31, f"Fixed in {HEAD}."),)
    assert plan.deletions == (32,)
    assert set(plan.kept) == {31, 33}
    assert (plan.comments, plan.post_review) == ((), False)  # nothing found, nothing reviewed before: no review


@pytest.fixture
def pull_with_threads():
    """A recording repository where the bot commented on BUCK:4 and 5 at an earlier head; a person answered on 4."""
    github = RecordingApp()
    repo = github.add_repository("octo", "engine")
    pull = repo.add_pull(PullRequest(12, "open", False, HEAD, "feature", BASE, "main", "alice", "", "main"), DIFF_TEXT)
    discussed = repo.add_review_comment(
        12, path="BUCK", line=4, body="was\n\n" + fingerprint_marker("gone-1"), author=BOT_LOGIN
    )
    repo.add_review_comment(12, path="BUCK", line=4, body="fixed it, thanks", author="alice", in_reply_to=discussed.id)
    quiet = repo.add_review_comment(
        12, path="BUCK", line=5, body="was\n\n" + fingerprint_marker("gone-2"), author=BOT_LOGIN
    )
    return github, repo, pull, discussed.id, quiet.id


def test_posting_a_plan_sends_it_and_a_second_posting_sends_nothing_new(pull_with_threads):
    github, repo, pull, discussed, quiet = pull_with_threads
    findings = (finding(21, "in"), finding(10, "out"))
    _post_review(repo, 12, pull, findings, DIFF, None)
    assert github.calls_to("delete_review_comment") == [{"comment_id": quiet}]
    assert github.calls_to("reply_to_review_comment") == [
        {"number": 12, "comment_id": discussed, "body": f"Fixed in {HEAD}."}
    ]
    [review] = github.calls_to("create_review")
    assert (review["commit_id"], review["event"]) == (HEAD, "COMMENT")
    assert [(c["path"], c["line"], c["side"]) for c in review["comments"]] == [("BUCK", 21, "RIGHT")]
    assert "`BUCK:10`" in review["body"]

    before = len(github.calls)
    _post_review(repo, 12, pull, findings, DIFF, None)  # the job run again: everything already stands
    writes = [call.method for call in github.calls[before:] if call.method not in ("review_comments", "reviews")]
    assert writes == []
    assert [p.fingerprint for p in bot_comments(repo.review_comments(12))] == ["gone-1", "in"]


def test_a_change_request_is_dismissed_once_no_blocker_backs_it(pull_with_threads):
    github, repo, pull, _, _ = pull_with_threads
    _post_review(repo, 12, pull, (finding(21, "in", Severity.BLOCKER),), DIFF, None)
    [request] = repo.review_list[12]
    assert request.state == "CHANGES_REQUESTED"
    _post_review(repo, 12, pull, (), DIFF, None)  # the blocker is fixed at the same head (a forced re-review)
    assert github.calls_to("dismiss_review") == [
        {"number": 12, "review_id": request.id, "message": f"No blocker remains at {HEAD[:12]}."}
    ]
    assert repo.review_list[12][0].state == "DISMISSED"
