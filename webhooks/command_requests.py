"""Carrying out a `/pr-check` comment: acknowledge, check who asked, answer or act. [I/O]

Parsing and the permission rules are pure (webhooks/commands.py); this is the part that talks to
GitHub. A reply is posted at most once per command comment (recorded in the state store).
"""

from __future__ import annotations

from dataclasses import replace

from webhooks.commands import (
    Command,
    CommandError,
    explain_text,
    help_text,
    may_run,
    needs_permission_lookup,
    parse_command,
    refusal_text,
    usage_reply,
)
from webhooks.fix_push import push_fixes
from webhooks.jobs import CommandCommented
from webhooks.namespaces import Namespace
from webhooks.queue import Attempt
from webhooks.review_job import review_pull
from webhooks.services import Services
from webhooks.smoke_approval import NotApproved, approved_head
from webhooks.smoke_runs import dispatch_smoke, recorded_reasons

REPLY_TTL_S = 30 * 24 * 3600.0


def answer_command(services: Services, job: CommandCommented, attempt: Attempt) -> str:
    """Do what a `/pr-check` comment asks, if its author may."""
    repo = job.repo
    installation = repo.installation_id or services.github.installation_id(repo.owner, repo.name)
    client = services.github.repository(installation, repo.owner, repo.name)
    client.add_reaction(job.comment_id, "eyes")  # seen; GitHub answers 200 to a repeat

    def reply(body: str) -> None:
        _reply_once(services, client, job, body)

    command = parse_command(job.command_line)
    if isinstance(command, CommandError):
        reply(usage_reply(command))
        return "usage"
    if command.action == "help":
        reply(help_text())
        return "help"
    if command.action == "explain":
        reply(explain_text(command.rule or "", _known_checks()))
        return "explained"

    pull = client.pull(job.number)
    permission = "none"
    if needs_permission_lookup(command, commenter=job.commenter, pr_author=pull.author, association=job.association):
        permission = client.collaborator_permission(job.commenter)
    if not may_run(command, commenter=job.commenter, pr_author=pull.author, permission=permission):
        reply(refusal_text(command, job.commenter, pull.author))
        return "refused"
    if pull.state != "open":
        reply(f"@{job.commenter}, this pull request is closed; there is nothing to review.")
        return "closed"
    if command.action == "review":
        return "re-" + review_pull(services, repo, job.number, attempt, expected_head=None, force=True)
    if command.action == "fix":
        return push_fixes(services, client, job, installation, pull, reply)
    return _smoke(services, client, job, installation, pull, command)


def _smoke(services: Services, client, job: CommandCommented, installation: int, pull, command: Command) -> str:
    """Dispatch the head the maintainer approved (smoke_approval.py), never whatever the head is now."""
    key = f"{job.repo.full_name.lower()}:{job.comment_id}"
    approval = approved_head(services.store, job.repo, job.number, job.created_at, command.sha)
    if isinstance(approval, NotApproved):
        _reply_once(services, client, job, f"@{job.commenter}, the GPU smoke job was not started: {approval.reason}")
        return "smoke-not-approved"
    if not services.store.put(Namespace.COMMAND_SMOKE, key, approval.head_sha, only_if_absent=True, ttl_s=REPLY_TTL_S):
        return "smoke-already-dispatched"  # a retried job: one dispatch per comment
    approved = replace(pull, head_sha=approval.head_sha)
    reasons = recorded_reasons(services, job.repo, job.number, approved.head_sha)
    outcome = dispatch_smoke(services, client, job.repo, installation, approved, reasons, requested_by=job.commenter)
    if approved.head_sha != pull.head_sha:
        _reply_once(
            services,
            client,
            job,
            (
                f"@{job.commenter}, the GPU smoke job runs on `{approved.head_sha[:12]}`, the head you approved. "
                f"The pull request has moved on to `{pull.head_sha[:12]}` since; that commit needs an approval of its own."
            ),
        )
    return "smoke-" + outcome


def _reply_once(services: Services, client, job: CommandCommented, body: str) -> None:
    key = f"{job.repo.full_name.lower()}:{job.comment_id}"
    if services.store.get(Namespace.COMMAND_REPLY, key):
        return
    client.create_issue_comment(job.number, body)
    services.store.put(Namespace.COMMAND_REPLY, key, "1", ttl_s=REPLY_TTL_S)


def _known_checks() -> tuple:
    from pr_check.review import CHECKS

    return CHECKS
