"""`/pr-check fix`: push one commit with the review's fixes to the pull request's branch. [I/O]

Who may ask is decided in webhooks/commands.py (write access only). Here: whether the App may push
(the setting, and for a fork the author's "Allow edits by maintainers"), then a review of the head
exactly as a push gets one (review_job.review_head: fetched here, evaluated in the isolated child),
the fixes applied to the head's files as text (bot/fix_commit.py; nothing of the pull request is
run), and one commit through the Git Data API whose parent is the head that was reviewed. The
branch is moved without force, so a push that lands in between makes GitHub refuse ours.

Before it is pushed, the commit is judged as `pr-check fix` judges a round: the review child builds
the base, the head and the head with each planned file (webhooks/fix_judgment.py), and a file whose
fixes take a target off a platform where it built at the base is not pushed; its findings are
named under "Not applied" with the reason. When the child cannot finish that judgment, nothing is
pushed: a commit on someone's branch is only made of fixes known not to do that.
"""

from __future__ import annotations

import logging

from bot.fix_commit import FixCommit, fix_commit_message
from bot.repo import GitRepository
from webhooks.fix_judgment import plan_head_fixes, withhold
from webhooks.github_api import BranchMoved, FileUpdate, GitHubError, PullRequest, RepositoryClient
from webhooks.isolation import ReviewDone, ReviewFailed, Step
from webhooks.jobs import CommandCommented
from webhooks.namespaces import Namespace
from webhooks.review_job import review_head
from webhooks.services import Services

log = logging.getLogger("pr_check.fix")

PUSHED_TTL_S = 30 * 24 * 3600.0
_LISTED = 30  # findings named in a reply; the commit message has them all

ENABLE_HINT = (
    "An administrator of the App can turn it on with `PR_CHECK_FIX_PUSH=1`, after granting the App "
    "**Contents: write** (see docs/deploy.md)."
)


def push_fixes(
    services: Services, client: RepositoryClient, job: CommandCommented, installation: int, pull: PullRequest, reply
) -> str:
    """Carry out `/pr-check fix` for someone already allowed to ask; every answer goes through `reply`."""
    who = f"@{job.commenter}"
    if not services.settings.fix_push:
        reply(
            f"{who}, pushing fixes is turned off for this App, so I did not push anything. {ENABLE_HINT} "
            "Meanwhile the suggestions and patches in the review can be applied by hand, or with `pr-check fix` "
            "in a checkout."
        )
        return "fix-disabled"
    if not pull.head_repo:
        reply(
            f"{who}, the branch of this pull request belongs to a fork that no longer exists, so there is "
            "nowhere to push the fixes."
        )
        return "fix-no-head-repo"
    if pull.head_is_fork and not pull.maintainer_can_modify:
        reply(
            f"{who}, this pull request comes from the fork `{pull.head_repo}`, whose author has not allowed edits "
            "by maintainers, so the App may not push to its branch. The author can apply the suggestions and "
            'patches in the review, run `pr-check fix` in their checkout, or tick "Allow edits by maintainers" '
            "and ask again."
        )
        return "fix-fork-closed"
    key = f"{job.repo.full_name.lower()}:{job.comment_id}"
    pushed = services.store.get(Namespace.COMMAND_FIX, key)
    if pushed:  # a retried job whose push went through: say so again, do not push twice
        reply(f"{who}, pushed `{pushed}` with the fixes to `{pull.head_ref}`.")
        return "fix-already-pushed"

    outcome, _, mirror = review_head(services, job.repo, installation, client, pull, judge_fixes=True)
    if isinstance(outcome, ReviewFailed) and outcome.phase.step is Step.JUDGING_FIXES:
        # Reviewed, but the fixes are not known to keep every target on its platforms: push none of
        # them (a partial commit would leave out fixes the maintainer asked for without a reason).
        log.warning(
            "fixes of %s at %s not judged: %s (%s)", pull.head_repo, pull.head_sha[:12], outcome.kind, outcome.detail
        )
        reply(
            f"{who}, I reviewed `{pull.head_sha[:12]}` but could not check where its fixes would take "
            f"targets ({outcome.detail}), so I pushed nothing: a fix is pushed only once it is known not to "
            "take a target off a platform where it built before. The suggestions and patches in the review "
            "can be applied by hand, or with `pr-check fix` in a checkout; `/pr-check fix` again tries anew."
        )
        return "fix-unjudged"
    if not isinstance(outcome, ReviewDone):
        detail = getattr(outcome, "detail", None) or getattr(outcome, "message", "")
        reply(f"{who}, I could not review `{pull.head_sha[:12]}`, so I have no fixes to push: {detail}.")
        return "fix-review-failed"
    with GitRepository(mirror) as repository:
        tree = repository.tree(pull.head_sha)
        # The child planned the same commit and judged each file; only files it cleared are kept.
        plan = withhold(plan_head_fixes(outcome.report.findings, tree), outcome.fix_verdicts or ())
        # every planned file was read from the head, so it has an entry there
        modes = {path: entry.mode for path, _ in plan.files if (entry := tree.entry(path)) is not None}
    if not plan.files:
        reply(
            f"{who}, the review of `{pull.head_sha[:12]}` has no fix that applies, so there is nothing to push."
            + _left_text(plan)
        )
        return "fix-nothing"

    owner, _, name = pull.head_repo.partition("/")
    target = services.github.repository(installation, owner, name)
    updates = [FileUpdate(path, modes[path], text) for path, text in plan.files]
    message = fix_commit_message(plan, pull.number, pull.head_sha, job.commenter)
    try:
        sha = target.push_commit(pull.head_ref, pull.head_sha, updates, message)
    except BranchMoved:
        reply(
            f"{who}, the branch `{pull.head_ref}` moved on while I was reviewing `{pull.head_sha[:12]}`, so I did "
            "not push fixes computed for an older head. Comment `/pr-check fix` again to fix the new head."
        )
        return "fix-head-moved"
    except GitHubError as error:
        if error.status not in (403, 404):
            raise
        log.warning("push of fixes to %s:%s refused: %s", pull.head_repo, pull.head_ref, error)
        reply(
            f"{who}, GitHub refused the push to `{pull.head_repo}` ({error.status} {error.message}). The App "
            f"needs **Contents: write** on that repository. {ENABLE_HINT}"
        )
        return "fix-refused"
    services.store.put(Namespace.COMMAND_FIX, key, sha, ttl_s=PUSHED_TTL_S)
    reply(_pushed_text(who, sha, pull, plan))
    return "fix-pushed"


def _pushed_text(who: str, sha: str, pull: PullRequest, plan: FixCommit) -> str:
    count = len(plan.fixed)
    lines = [
        f"{who}, pushed `{sha}` to `{pull.head_ref}`: it fixes {count} finding{'s' if count != 1 else ''} "
        f"of the review of `{pull.head_sha[:12]}`:"
    ]
    lines += [f"- **{f.rule}** at `{f.path}:{f.line}`: {f.title}" for f in plan.fixed[:_LISTED]]
    if count > _LISTED:
        lines.append(f"- ... and {count - _LISTED} more (see the commit message)")
    return "\n".join(lines) + _left_text(plan)


def _left_text(plan: FixCommit) -> str:
    if not plan.left:
        return ""
    lines = ["", "", "Not applied:"]
    lines += [f"- **{f.rule}** at `{f.path}:{f.line}`: {why}" for f, why in plan.left[:_LISTED]]
    return "\n".join(lines)
