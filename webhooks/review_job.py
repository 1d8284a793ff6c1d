"""The review lifecycle of one pull request head: fetch, review, post, record. [I/O]

Every step may run twice (a worker killed mid-job is run again), so each is idempotent:
- the check run: an in-progress `pr-check` run for the head, left by an interrupted attempt, is
  reused rather than a second one created; a completed one is not written again;
- inline comments: the bot's own comments are found by their hidden fingerprint markers, so a
  repeat keeps them instead of posting them again (bot/render/github_review.py decides); their smoke line
  says what is known of the GPU smoke job for the head (webhooks/smoke_runs.py keeps it current);
- the review: its body carries a head marker, and no second review is posted for that head;
- the smoke job: one dispatch per head, recorded before dispatching.
Only then is the (pull request, head) pair recorded as posted.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from bot.diff import ChangeSet
from bot.errors import PrCheckError
from bot.model import Severity
from bot.render.github_review import (
    CHECK_RUN_NAME,
    FIXED_REPLY_PREFIX,
    INLINE_LEVEL,
    PostedComment,
    PostedReview,
    SmokeNote,
    check_run_external_id,
    in_progress_output,
    marked_fingerprint,
    marked_review_head,
    plan_review,
    render_check_run,
    render_failed_check_run,
)
from pr_check.review import SMOKE_VERIFIED_RULES
from webhooks.failures import failure_finding
from webhooks.github_api import GitHubError, PullRequest, RepositoryClient, ReviewComment, utc_now
from webhooks.isolation import Outcome, ReviewFailed, ReviewLimits, ReviewRefused, ReviewRequest
from webhooks.jobs import CommandCommented, Job, PullRequestPushed, RepoRef, ReviewRequested, pull_request_key
from webhooks.mirror import remote_url
from webhooks.namespaces import Namespace
from webhooks.queue import Attempt
from webhooks.services import Services
from webhooks.smoke_approval import record_head_seen
from webhooks.smoke_runs import smoke_outlook, start_smoke_if_needed
from webhooks.store import StoreUnavailable

log = logging.getLogger("pr_check.review")

POSTED_TTL_S = 30 * 24 * 3600.0


def review_push(services: Services, job: PullRequestPushed, attempt: Attempt) -> str:
    """Review a pushed head, unless a newer push to the same pull request is known."""
    latest = services.store.get_ordered(Namespace.LATEST_PUSH, pull_request_key(job.repo, job.number))
    if latest is not None and latest[0] > job.pushed_at and latest[1] != job.head_sha:
        return "superseded"
    return review_pull(services, job.repo, job.number, attempt, expected_head=job.head_sha, force=False)


def review_pull(
    services: Services,
    repo: RepoRef,
    number: int,
    attempt: Attempt,
    *,
    expected_head: str | None,
    force: bool,
) -> str:
    """Review the pull request at its current head and bring GitHub in line with the result.

    `expected_head`: drop the job when the pull request has moved on. `force`: review again even
    if this head was reviewed (a `/pr-check` or a re-run), with a new check run.
    """
    installation = repo.installation_id or services.github.installation_id(repo.owner, repo.name)
    client = services.github.repository(installation, repo.owner, repo.name)
    pull = client.pull(number)
    if pull.state != "open":
        return "closed"
    if expected_head is not None and pull.head_sha != expected_head:
        return "superseded"
    posted_key = f"{pull_request_key(repo, number)}@{pull.head_sha}"
    if not force and services.store.get(Namespace.POSTED, posted_key):
        return "already-posted"

    check, check_completed = _open_check_run(services, client, number, pull.head_sha, force)
    try:
        outcome, changed = _review(services, repo, installation, client, pull)
        if isinstance(outcome, ReviewRefused):
            # A repository the engine cannot read will not read better on a retry: say so and stop.
            log.warning("review of %s#%s failed: %s", repo.full_name, number, outcome.message)
            services.metrics.error("review")
            if not check_completed:
                _complete_neutral(
                    client, check, "pr-check could not review this commit", f"The review failed: {outcome.message}"
                )
            return "review-error"
        if isinstance(outcome, ReviewFailed):
            # The pull request crashed, stalled or exhausted the review: that is its result, posted as such.
            log.error(
                "review of %s#%s at %s: %s (%s) while %s",
                repo.full_name,
                number,
                pull.head_sha[:12],
                outcome.kind,
                outcome.detail,
                outcome.phase,
            )
            services.metrics.error(f"review-{outcome.kind}")
            failure = failure_finding(outcome, changed)
            _post_review(client, number, pull, (failure,), ChangeSet(()), None)
            if not check_completed:
                _complete_failed_check(client, check, pull, outcome, failure)
            services.store.put(Namespace.POSTED, posted_key, pull.head_sha, ttl_s=POSTED_TTL_S)
            return f"review-{outcome.kind}"
        report, changes = outcome.report, outcome.changes
        outlook = smoke_outlook(services, client, repo, pull, report.smoke.required)
        plan = _post_review(client, number, pull, report.findings, changes, outlook, report.inline_level)
        if not check_completed:
            _complete_check(services, client, check, repo, report, plan.off_diff)
        start_smoke_if_needed(
            services,
            client,
            repo,
            installation,
            pull,
            report.smoke.required,
            report.smoke.reasons,
            requested_by=None,
            outlook=outlook,
        )
    except StoreUnavailable:
        raise  # the store is away for now, not this commit unreadable: the job is run again once it is back
    except PrCheckError as error:
        # A repository the engine cannot read (a fetch that fails for good) will not read better on a retry.
        log.warning("review of %s#%s failed: %s", repo.full_name, number, error)
        services.metrics.error("review")
        if isinstance(error, GitHubError):
            if attempt.final and not check_completed:
                _give_up_on_check(client, check)
            raise
        if not check_completed:
            _complete_neutral(client, check, "pr-check could not review this commit", f"The review failed: {error}")
        return "review-error"
    except Exception:
        if attempt.final and not check_completed:
            _give_up_on_check(client, check)
        raise
    services.store.put(Namespace.POSTED, posted_key, pull.head_sha, ttl_s=POSTED_TTL_S)
    return "reviewed"


def _open_check_run(
    services: Services, client: RepositoryClient, number: int, head_sha: str, force: bool
) -> tuple[int, bool]:
    """The check run to fill in, and whether an earlier attempt already completed it.

    Jobs of one pull request never overlap, so a `pr-check` run still in progress for this head was
    left by an interrupted attempt: it is reused. A completed one is reused too, unless a fresh
    review was asked for. Its external id names the pull request: GitHub's "Re-run" of a fork's
    check run arrives with no pull request in the payload.
    """
    ours = [
        run
        for run in client.check_runs(head_sha, CHECK_RUN_NAME)
        if run.app_id is None or str(run.app_id) == services.github.app_id
    ]
    running = [run for run in ours if run.status != "completed"]
    if running:
        return max(running, key=lambda run: run.id).id, False
    if ours and not force:
        return max(ours, key=lambda run: run.id).id, True
    run = client.create_check_run(
        CHECK_RUN_NAME,
        head_sha,
        status="in_progress",
        started_at=utc_now(),
        external_id=check_run_external_id(number, head_sha),
        output=in_progress_output(head_sha),
    )
    return run.id, False


def _review(
    services: Services, repo: RepoRef, installation: int, client: RepositoryClient, pull: PullRequest
) -> tuple[Outcome, tuple[str, ...]]:
    outcome, changed, _ = review_head(services, repo, installation, client, pull)
    return outcome, changed


def review_head(
    services: Services,
    repo: RepoRef,
    installation: int,
    client: RepositoryClient,
    pull: PullRequest,
    *,
    judge_fixes: bool = False,
) -> tuple[Outcome, tuple[str, ...], Path]:
    """Fetch (here, with the token), then review in a child process (isolation.py); `judge_fixes`:
    the child also judges the commit of the review's fixes (`/pr-check fix`, webhooks/fix_judgment.py).

    Also returns the changed paths when the review failed, to blame the failure on a file, and the
    mirror the head was fetched into (to read its files, as `/pr-check fix` does).
    """
    url = remote_url(pull.clone_url)
    token = services.github.installation_token(installation) if url.startswith("https://") else None
    fetched = services.mirrors.fetch_pull(
        repo.owner,
        repo.name,
        url,
        pull.number,
        base_ref=pull.base_ref,
        base_sha=pull.base_sha,
        head_sha=pull.head_sha,
        token=token,
    )
    record_head_seen(services.store, repo, pull.number, pull.head_sha, time.time())
    # Comments go where GitHub's own diff says lines are; the local diff stands in if it cannot be had.
    try:
        github_diff: str | None = client.pull_diff(pull.number)
    except GitHubError as error:
        log.warning("using the local diff for %s#%s: %s", repo.full_name, pull.number, error)
        github_diff = None
    settings = services.settings
    where = Path(repo.owner.lower()) / repo.name.lower()
    request = ReviewRequest(
        repo_path=str(fetched.path),
        base_sha=fetched.base_sha,
        head_sha=pull.head_sha,
        cache_dir=str(settings.cache_dir / where),
        report_path=str(settings.reports_dir / where / f"{pull.head_sha}.json"),
        github_diff=github_diff,
        judge_fixes=judge_fixes,
    )
    outcome = services.review(request, ReviewLimits(settings.review_deadline_s, settings.review_memory_bytes))
    if not isinstance(outcome, ReviewFailed):
        return outcome, (), fetched.path
    return outcome, services.mirrors.changed_paths(fetched.path, fetched.base_sha, pull.head_sha), fetched.path


def _post_review(
    client: RepositoryClient,
    number: int,
    pull: PullRequest,
    findings,
    changes: ChangeSet,
    smoke: SmokeNote | None,
    inline_level: Severity = INLINE_LEVEL,
):
    comments = client.review_comments(number)
    reviews = client.reviews(number)
    posted = bot_comments(comments)
    posted_reviews = [
        PostedReview(r.id, r.state, marked_review_head(r.body))
        for r in reviews
        if r.author_is_bot and marked_review_head(r.body)
    ]
    plan = plan_review(
        findings, changes, posted, posted_reviews, pull.head_sha, smoke, SMOKE_VERIFIED_RULES, inline_level
    )
    for comment_id in plan.deletions:
        client.delete_review_comment(comment_id)
    for comment_id, body in plan.edits:
        client.edit_review_comment(comment_id, body)
    for comment_id, body in plan.replies:
        client.reply_to_review_comment(number, comment_id, body)
    if plan.post_review:
        inline = [comment.to_api() for comment in plan.comments]
        try:
            client.create_review(number, commit_id=pull.head_sha, event=plan.event, body=plan.body, comments=inline)
        except GitHubError as error:
            if error.status != 422 or not inline:
                raise
            # GitHub disagreed with our reading of the diff: keep the review, list the findings in its body.
            log.warning("review with inline comments refused (%s); posting it without them", error.message)
            listed = "\n".join(f"- `{c.path}:{c.line}`: {c.body.splitlines()[0]}" for c in plan.comments)
            client.create_review(
                number,
                commit_id=pull.head_sha,
                event=plan.event,
                comments=[],
                body=plan.body.replace("<!-- pr-check:review", listed + "\n\n<!-- pr-check:review", 1),
            )
    for review_id in plan.dismissals:
        try:
            client.dismiss_review(number, review_id, f"No blocker remains at {pull.head_sha[:12]}.")
        except GitHubError as error:  # protected branches may forbid it; the new review still says so
            log.warning("could not dismiss review %s: %s", review_id, error)
    return plan


def bot_comments(comments: list[ReviewComment]) -> list[PostedComment]:
    """The bot's own top-level comments with their threads' state."""
    replies: dict[int, list[ReviewComment]] = {}
    for comment in comments:
        if comment.in_reply_to is not None:
            replies.setdefault(comment.in_reply_to, []).append(comment)
    posted = []
    for comment in comments:
        if comment.in_reply_to is not None or not comment.author_is_bot or marked_fingerprint(comment.body) is None:
            continue
        thread = replies.get(comment.id, [])
        posted.append(
            PostedComment(
                id=comment.id,
                path=comment.path,
                line=comment.line,
                start_line=comment.start_line,
                body=comment.body,
                human_replied=any(not reply.author_is_bot for reply in thread),
                fixed_reply_posted=any(
                    reply.author_is_bot and reply.body.startswith(FIXED_REPLY_PREFIX) for reply in thread
                ),
            )
        )
    return posted


def _complete_check(services: Services, client: RepositoryClient, check: int, repo: RepoRef, report, off_diff) -> None:
    pointer = (
        f"The full JSON report: `pr-check review --repo . --base {report.base} --head {report.head} "
        f"--format json` (the App keeps a copy at `reports/{repo.owner}/{repo.name}/{report.head}.json`)."
    )
    output = render_check_run(
        findings=report.findings,
        off_diff=off_diff,
        suppressed_count=len(report.suppressed),
        base_sha=report.base,
        head_sha=report.head,
        smoke_reasons=report.smoke.reasons,
        full_report_pointer=pointer,
        fail_level=report.fail_level,
        unevaluated=report.stats.unevaluated,
        shim_stand_ins=report.stats.shim_stand_ins,
    )
    last = output.requests_needed - 1
    for batch in range(last):
        client.update_check_run(check, output=output.output(batch))
    client.update_check_run(
        check, status="completed", conclusion=output.conclusion, completed_at=utc_now(), output=output.output(last)
    )


def _complete_failed_check(
    client: RepositoryClient, check: int, pull: PullRequest, failed: ReviewFailed, failure
) -> None:
    """The check run of a review that did not finish: failed (never green by silence), with the reason."""
    output = render_failed_check_run(failure, base_sha=pull.base_sha, head_sha=pull.head_sha, phase=str(failed.phase))
    client.update_check_run(
        check, status="completed", conclusion=output.conclusion, completed_at=utc_now(), output=output.output(0)
    )


def _give_up_on_check(client: RepositoryClient, check: int) -> None:
    """The last attempt failed: leave the check neutral with a reason, never in progress forever."""
    try:
        _complete_neutral(
            client,
            check,
            "pr-check could not finish",
            "Posting the review failed repeatedly; comment `/pr-check` to try again.",
        )
    except GitHubError:
        log.exception("could not complete check run %s", check)


def _complete_neutral(client: RepositoryClient, check: int, title: str, summary: str) -> None:
    """Complete a check run as neutral: the review said nothing either way, and why is the summary."""
    client.update_check_run(
        check,
        status="completed",
        conclusion="neutral",
        completed_at=utc_now(),
        output={"title": title, "summary": summary},
    )


def report_given_up(services: Services, job: Job, reason: str) -> None:
    """A job that kept taking its worker down is not run again: its pull request's check says so, failed."""
    if not isinstance(job, (PullRequestPushed, ReviewRequested, CommandCommented)):
        return
    repo = job.repo
    installation = repo.installation_id or services.github.installation_id(repo.owner, repo.name)
    client = services.github.repository(installation, repo.owner, repo.name)
    head = job.head_sha if isinstance(job, PullRequestPushed) else client.pull(job.number).head_sha
    check, completed = _open_check_run(services, client, job.number, head, force=False)
    if completed:
        return  # the crash came after the review was posted: it stands
    client.update_check_run(
        check,
        status="completed",
        conclusion="failure",
        completed_at=utc_now(),
        output={
            "title": "pr-check gave up on this commit",
            "summary": (
                f"Reviewing `{head[:12]}` failed repeatedly: {reason}. It will not be retried by itself; "
                "a new push, or a `/pr-check` comment, starts a fresh review. The App's log has the details."
            ),
        },
    )
    services.store.put(Namespace.POSTED, f"{pull_request_key(repo, job.number)}@{head}", head, ttl_s=POSTED_TTL_S)
